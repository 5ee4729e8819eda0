import NavSyncLibuv
/// Where a cluster's Redis is and how to reach it: navsyncd's `--cluster` URL.
///
///     redis://[USER[:PASSWORD]@]HOST[:PORT][/DB][?…]
///     rediss://…                       TLS (?cacert=FILE, ?cert=FILE&key=FILE)
///     redis+sentinel://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT…]/MASTER[?sentinel_password=…&db=N]
///     rediss+sentinel://…              the same, over TLS to the Sentinels and the data nodes
///
/// User and password are percent-decoded (RFC 3986) and are the data nodes'; HOST is a
/// DNS name (resolved at every connect), an IPv4 address or a bracketed IPv6 one.
public struct RedisURL: Sendable, Equatable, CustomStringConvertible {
    public struct Host: Sendable, Equatable, CustomStringConvertible {
        public var name: String
        public var port: Int
        public init(name: String, port: Int) { self.name = name; self.port = port }
        public var description: String { name.contains(":") ? "[\(name)]:\(port)" : "\(name):\(port)" }
    }

    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public var description: String
        init(_ d: String) { description = d }
    }

    /// `rediss`: TLS with the server's certificate checked against the host named here.
    public var tls = false
    /// The data node, or the Sentinels (one or more) when `master` is set.
    public var hosts: [Host] = []
    /// Sentinel mode: the name the Sentinels monitor the primary under.
    public var master: String?
    /// The data nodes' ACL user (nil: `default`) and password (nil: none, or the file's).
    public var user: String?
    public var password: String?
    public var db = 0
    /// `?cacert=` (PEM; else the system's CAs), `?cert=` and `?key=` (a client certificate).
    public var caFile: String?
    public var certificateFile: String?
    public var keyFile: String?
    /// `?sentinel_password=`: the Sentinels' own password (`requirepass` of sentinel.conf).
    public var sentinelPassword: String?

    public var isSentinel: Bool { master != nil }

    public init(_ text: String) throws(Invalid) {
        let schemes = ["redis://": (false, false), "rediss://": (true, false),
                       "redis+sentinel://": (false, true), "rediss+sentinel://": (true, true)]
        guard let (scheme, (tls, sentinel)) = schemes.first(where: { text.hasPrefix($0.key) }) else {
            throw Invalid("a Redis URL starts with redis://, rediss://, redis+sentinel:// or rediss+sentinel://")
        }
        self.tls = tls
        var rest = Substring(text.dropFirst(scheme.count))
        var query: Substring = ""
        if let q = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: q)...]
            rest = rest[..<q]
        }
        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        if let at = rest.lastIndex(of: "@") {
            let info = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let (u, p) = info.firstIndex(of: ":").map { (info[..<$0], Optional(info[info.index(after: $0)...])) } ?? (info, nil)
            user = u.isEmpty ? nil : try Self.decode(u, "user")
            if let p { password = try Self.decode(p, "password") }
        }
        for part in rest.split(separator: ",", omittingEmptySubsequences: false) {
            hosts.append(try Self.host(part))
        }
        guard !hosts.isEmpty else { throw Invalid("no host in \(scheme)…") }
        if sentinel {
            guard !path.isEmpty, !path.contains("/") else { throw Invalid("\(scheme)…/MASTER needs the master's name after the hosts") }
            master = try Self.decode(path, "master name")
        } else {
            guard hosts.count == 1 else { throw Invalid("\(scheme) takes one host; several are for \(tls ? "rediss" : "redis")+sentinel://") }
            if !path.isEmpty { db = try Self.db(path) }
        }
        for pair in query.split(separator: "&") {
            let (k, v) = pair.firstIndex(of: "=").map { (pair[..<$0], pair[pair.index(after: $0)...]) } ?? (pair, "")
            let value = try Self.decode(v, String(k))
            switch k {
            case "cacert", "cert", "key":
                guard tls else { throw Invalid("?\(k)= is for rediss:// (TLS)") }
                guard !value.isEmpty else { throw Invalid("?\(k)= needs a file") }
                if k == "cacert" { caFile = value } else if k == "cert" { certificateFile = value } else { keyFile = value }
            case "sentinel_password" where sentinel: sentinelPassword = value
            case "db" where sentinel: db = try Self.db(Substring(value))
            default:
                throw Invalid("unknown parameter ?\(k)= (known: \(tls ? "cacert, cert, key" : "")\(tls && sentinel ? ", " : "")\(sentinel ? "sentinel_password, db" : ""))")
            }
        }
        guard (certificateFile == nil) == (keyFile == nil) else { throw Invalid("?cert= and ?key= go together (a client certificate and its key)") }
    }

    /// `redis://user@host:port/0`: the password never shown.
    public var description: String {
        let scheme = (tls ? "rediss" : "redis") + (isSentinel ? "+sentinel" : "")
        let who = user.map { "\($0)@" } ?? (password != nil ? ":***@" : "")
        return "\(scheme)://\(who)\(hosts.map(\.description).joined(separator: ","))/\(master ?? String(db))"
    }

    private static func host(_ s: Substring) throws(Invalid) -> Host {
        var name = s, port = 6379
        if s.hasPrefix("[") {
            guard let close = s.firstIndex(of: "]") else { throw Invalid("'\(s)': an IPv6 address needs its closing ]") }
            name = s[s.index(after: s.startIndex)..<close]
            let after = s[s.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let p = Int(after.dropFirst()), (1...65535).contains(p) else { throw Invalid("'\(s)': bad port") }
                port = p
            }
            guard UV.Address(host: String(name), port: port) != nil else { throw Invalid("'\(name)' is not an IPv6 address") }
            return Host(name: String(name), port: port)
        }
        if let colon = s.lastIndex(of: ":") {
            guard let p = Int(s[s.index(after: colon)...]), (1...65535).contains(p) else { throw Invalid("'\(s)': the port must be 1-65535") }
            port = p
            name = s[..<colon]
        }
        guard !name.isEmpty, name.utf8.count <= 253,
              name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_") }) else {
            throw Invalid("'\(name)' is not a host name or an IP address")
        }
        return Host(name: String(name), port: port)
    }

    private static func db(_ s: Substring) throws(Invalid) -> Int {
        guard let d = Int(s), (0...15).contains(d) else { throw Invalid("the database must be 0-15, not '\(s)'") }
        return d
    }

    /// RFC 3986 percent-decoding (`%40` is `@`); a bad escape is an error.
    static func decode(_ s: Substring, _ what: String) throws(Invalid) -> String {
        var out: [UInt8] = []
        var bytes = s.utf8.makeIterator()
        while let b = bytes.next() {
            guard b == UInt8(ascii: "%") else { out.append(b); continue }
            guard let h = bytes.next().flatMap(Self.hex), let l = bytes.next().flatMap(Self.hex) else {
                throw Invalid("the \(what) has a bad %-escape (write % as %25)")
            }
            out.append(h << 4 | l)
        }
        guard let text = String(validating: out, as: UTF8.self) else { throw Invalid("the \(what) is not UTF-8") }
        return text
    }

    private static func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
