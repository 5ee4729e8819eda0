import NavSync
/// Who a request is really from, behind reverse proxies (`--trusted-proxy`).
///
/// Only a connection from a trusted proxy is believed, and only in the one header
/// family the operator names (`--forwarded-header`): `X-Forwarded-For` with
/// `X-Forwarded-Proto` and `X-Forwarded-Host` (the default: what nginx's recipe sets),
/// or `Forwarded` (RFC 7239). The other family is ignored whatever it says: a proxy
/// passes on headers it does not set, so a client could write them itself (nginx hands
/// a client's own `Forwarded` through untouched).
/// Of a list of hops, the client is the right-most address that is not a trusted proxy
/// (each proxy appends the address it received the request from, so everything left of
/// the first untrusted one could be forged by that client). The scheme and host are
/// those of the same hop: what the client asked for.
public struct ProxyTrust: Sendable, Equatable {
    public var proxies: [IPRange]
    /// The header family the proxies set.
    public var header: Header
    /// `--trusted-hops N` (Envoy's `xff_num_trusted_hops`): how many proxies stand in
    /// front, each appending the address it got the request from; the client is the
    /// N-th hop from the right, whatever its address. Needed when a client can reach
    /// the proxy from a trusted address (a process on the proxy's own machine): by
    /// addresses alone, the hop it wrote itself would be taken. Nil: by addresses.
    public var hops: Int?

    /// `--forwarded-header`.
    public enum Header: String, Sendable, Equatable, CaseIterable {
        case xForwardedFor = "x-forwarded-for"
        case forwarded
    }

    public init(_ proxies: [IPRange] = [], header: Header = .xForwardedFor) {
        self.proxies = proxies
        self.header = header
    }

    public var isEmpty: Bool { proxies.isEmpty }

    public func trusts(_ address: String) -> Bool {
        guard let ip = IPAddress(address) else { return false }
        return proxies.contains { $0.contains(ip) }
    }

    /// What the client asked for, as the proxies tell it.
    public struct Client: Sendable, Equatable {
        /// The client's address (without port).
        public var address: String
        /// `http` or `https`, when a proxy said.
        public var scheme: String?
        /// The `Host` the client sent, when a proxy said.
        public var host: String?
    }

    /// The client of a request that arrived from `peer` (an address without port).
    public func client(peer: String, headers: [(String, String)]) -> Client {
        guard trusts(peer) else { return Client(address: peer) }
        func values(_ name: String) -> [String] {
            headers.filter { $0.0.lowercased() == name }.flatMap { $0.1.split(separator: ",").map { $0.trimmingSpaces } }
        }
        if header == .forwarded {
            let hops = values("forwarded").map(Self.forwardedElement)
            guard let i = pick(hops.map(\.for)) else { return Client(address: peer) }
            return Client(address: hops[i].for!, scheme: hops[i].proto, host: hops[i].host)
        }
        let chain = values("x-forwarded-for").map { Self.address(of: $0) }
        guard let i = pick(chain) else { return Client(address: peer) }
        let protos = values("x-forwarded-proto"), hosts = values("x-forwarded-host")
        // One value for the whole chain (what a single proxy sets), or one per hop.
        func at(_ list: [String]) -> String? { list.count == chain.count ? list[i] : list.first }
        return Client(address: chain[i]!, scheme: at(protos)?.lowercased(), host: at(hosts))
    }

    /// The right-most hop whose address is not a trusted proxy; the left-most when all
    /// are; nil when a hop has no usable address before one is found.
    private func pick(_ chain: [String?]) -> Int? {
        if let hops {
            // Fewer hops than proxies: the chain is not what they write; none is believed.
            let i = chain.count - hops
            return i >= 0 && chain[i] != nil ? i : nil
        }
        for i in chain.indices.reversed() {
            guard let a = chain[i] else { return nil }   // `unknown`, obfuscated, or garbage
            if !trusts(a) || i == chain.startIndex { return i }
        }
        return nil
    }

    /// One element of `Forwarded`: `for=…;proto=…;host=…` (quoted values unquoted).
    static func forwardedElement(_ text: String) -> (for: String?, proto: String?, host: String?) {
        var result: (for: String?, proto: String?, host: String?) = (nil, nil, nil)
        for pair in text.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            var value = parts[1].trimmingSpaces
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            switch parts[0].trimmingSpaces.lowercased() {
            case "for": result.for = address(of: value)
            case "proto": result.proto = value.lowercased()
            case "host": result.host = value
            default: break
            }
        }
        return result
    }

    /// The address of a hop: `192.0.2.1`, `192.0.2.1:4711`, `[2001:db8::1]:4711` or
    /// `2001:db8::1`; nil for `unknown`, an obfuscated name or anything else.
    static func address(of hop: String) -> String? {
        var text = hop
        if text.hasPrefix("["), let end = text.firstIndex(of: "]") {
            text = String(text[text.index(after: text.startIndex)..<end])
        } else if text.filter({ $0 == ":" }).count == 1 {
            text = String(text.split(separator: ":")[0])
        }
        return IPAddress(text).map { _ in text }
    }
}

/// An IPv4 or IPv6 address as its 4 or 16 bytes.
public struct IPAddress: Sendable, Equatable {
    public var bytes: [UInt8]

    public init?(_ text: String) {
        if let v4 = Self.v4(Substring(text)) { bytes = v4; return }
        guard let v6 = Self.v6(text) else { return nil }
        bytes = v6
    }

    static func v4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var out: [UInt8] = []
        for p in parts {
            guard !p.isEmpty, p.count <= 3, p.allSatisfy({ $0.isASCII && $0.isNumber }), let n = UInt8(p),
                  p.count == 1 || p.first != "0" else { return nil }
            out.append(n)
        }
        return out
    }

    static func v6(_ text: String) -> [UInt8]? {
        guard text.contains(":") else { return nil }
        let halves = text.components(separatedByString: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ s: String) -> [UInt8]? {
            if s.isEmpty { return [] }
            var out: [UInt8] = []
            let parts = s.split(separator: ":", omittingEmptySubsequences: false)
            for (i, p) in parts.enumerated() {
                if i == parts.count - 1, p.contains(".") {   // an IPv4 tail: ::ffff:192.0.2.1
                    guard let v4 = v4(p) else { return nil }
                    out += v4
                    continue
                }
                guard (1...4).contains(p.count), let n = UInt16(p, radix: 16) else { return nil }
                out += [UInt8(n >> 8), UInt8(n & 0xff)]
            }
            return out
        }
        guard let head = groups(halves[0]) else { return nil }
        if halves.count == 1 { return head.count == 16 ? head : nil }
        guard let tail = groups(halves[1]), head.count + tail.count <= 14 else { return nil }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}

/// `--trusted-proxy ADDR[/BITS]`: an address, or a network of them.
public struct IPRange: Sendable, Equatable, CustomStringConvertible {
    public var network: IPAddress
    public var bits: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1)
        guard let first = parts.first, let address = IPAddress(String(first)) else { return nil }
        let width = address.bytes.count * 8
        if parts.count == 2 {
            guard let b = Int(parts[1]), (0...width).contains(b) else { return nil }
            bits = b
        } else {
            bits = width
        }
        network = address
    }

    public func contains(_ ip: IPAddress) -> Bool {
        guard ip.bytes.count == network.bytes.count else { return false }
        var left = bits
        for (a, b) in zip(ip.bytes, network.bytes) where left > 0 {
            let mask: UInt8 = left >= 8 ? 0xff : ~(0xff >> UInt8(left))
            guard a & mask == b & mask else { return false }
            left -= 8
        }
        return true
    }

    public var description: String {
        let text = network.bytes.count == 4
            ? network.bytes.map(String.init).joined(separator: ".")
            : stride(from: 0, to: 16, by: 2).map { String(UInt16(network.bytes[$0]) << 8 | UInt16(network.bytes[$0 + 1]), radix: 16) }.joined(separator: ":")
        return text + "/\(bits)"
    }
}

extension String {
    /// Splits on a separator of several characters (the core has no Foundation).
    fileprivate func components(separatedByString separator: String) -> [String] {
        var out: [String] = []
        var rest = Substring(self)
        while let r = rest.firstRange(of: separator) {
            out.append(String(rest[..<r.lowerBound]))
            rest = rest[r.upperBound...]
        }
        out.append(String(rest))
        return out
    }
}
