/// permessage-deflate (RFC 7692): the negotiation, as values. The compression itself is
/// the runtime's (zlib), given to the decoder as a `WebSocketInflating`.
///
/// navsyncd compresses a broadcast once and sends the same bytes to every member, so
/// its side never takes over context between messages (`server_no_context_takeover`,
/// which a server may always answer with, RFC 7692 7.1.1.1); it asks clients not to
/// either (`client_no_context_takeover`, 7.1.1.1), so one inflater serves every
/// connection. Only the window differs between members: the server's is
/// `server_max_window_bits` when the offer names one, else 15.
public struct PerMessageDeflate: Sendable, Equatable {
    /// The window the server compresses with: 9 to 15.
    public var serverWindowBits: Int

    public init(serverWindowBits: Int = 15) { self.serverWindowBits = serverWindowBits }

    /// The `Sec-WebSocket-Extensions` value of the 101 response.
    public var responseHeader: String {
        "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
            + (serverWindowBits == 15 ? "" : "; server_max_window_bits=\(serverWindowBits)")
    }

    /// The first offer in `Sec-WebSocket-Extensions` (every header, comma-separated
    /// offers, in order) that navsyncd can honour; nil when there is none. An offer is
    /// passed over when it has an unknown or repeated parameter or a bad value (section
    /// 7.1: the server declines it), or asks for `server_max_window_bits=8` (zlib's raw
    /// deflate cannot keep to a 256-byte window).
    public static func negotiate(_ headers: [String]) -> PerMessageDeflate? {
        for offer in headers.flatMap(splitOffers) {
            guard let (name, params) = parse(offer), name == "permessage-deflate" else { continue }
            var seen = Set<String>()
            var agreed = PerMessageDeflate()
            var ok = true
            for (key, value) in params {
                guard seen.insert(key).inserted else { ok = false; break }
                switch key {
                case "server_no_context_takeover", "client_no_context_takeover":
                    ok = value == nil
                case "server_max_window_bits":
                    guard let bits = value.flatMap({ Int($0) }), (8...15).contains(bits), value!.allSatisfy(\.isNumber) else { ok = false; break }
                    if bits == 8 { ok = false }
                    agreed.serverWindowBits = bits
                case "client_max_window_bits":
                    if let value { ok = Int(value).map { (8...15).contains($0) } == true && value.allSatisfy(\.isNumber) }
                default:
                    ok = false
                }
                if !ok { break }
            }
            if ok { return agreed }
        }
        return nil
    }

    // MARK: The client's side

    /// What a client offers: permessage-deflate with its defaults. The client sends
    /// uncompressed messages (always allowed), so it needs nothing for its own side.
    public static let clientOffer = "permessage-deflate; client_max_window_bits"

    /// What the server's answer lets a client's inflater do: keep its context between
    /// messages or not, with which window. nil: the answer is not one the offer allows
    /// (the client must then fail the connection, RFC 7692 7.1).
    public struct ClientAgreement: Sendable, Equatable {
        public var serverNoContextTakeover = false
        public var serverWindowBits = 15
    }

    public static func accepted(response header: String) -> ClientAgreement? {
        let offers = splitOffers(header)
        guard offers.count == 1, let (name, params) = parse(offers[0]), name == "permessage-deflate" else { return nil }
        var agreement = ClientAgreement()
        var seen = Set<String>()
        for (key, value) in params {
            guard seen.insert(key).inserted else { return nil }
            switch key {
            case "server_no_context_takeover", "client_no_context_takeover":
                guard value == nil else { return nil }
                if key == "server_no_context_takeover" { agreement.serverNoContextTakeover = true }
            case "server_max_window_bits", "client_max_window_bits":
                guard let bits = value.flatMap({ Int($0) }), (8...15).contains(bits) else { return nil }
                if key == "server_max_window_bits" { agreement.serverWindowBits = bits }
            default:
                return nil
            }
        }
        return agreement
    }

    // MARK: Parsing (RFC 6455 section 9.1's grammar, quoted values unquoted)

    /// Offers split at commas outside quotes.
    static func splitOffers(_ header: String) -> [String] {
        var offers: [String] = [], current = "", quoted = false
        for c in header {
            if c == "\"" { quoted.toggle() }
            if c == ",", !quoted {
                offers.append(current)
                current = ""
            } else {
                current.append(c)
            }
        }
        offers.append(current)
        return offers.map { Substring($0).trimmingSpaces }.filter { !$0.isEmpty }
    }

    /// An extension's name and its parameters, lowercased names, values unquoted; nil
    /// for a malformed one.
    static func parse(_ offer: String) -> (String, [(String, String?)])? {
        let parts = offer.split(separator: ";", omittingEmptySubsequences: false).map { Substring($0).trimmingSpaces }
        guard let name = parts.first, !name.isEmpty else { return nil }
        var params: [(String, String?)] = []
        for part in parts.dropFirst() {
            guard !part.isEmpty else { return nil }
            if let eq = part.firstIndex(of: "=") {
                let key = part[..<eq].trimmingSpaces.lowercased()
                var value = part[part.index(after: eq)...].trimmingSpaces
                if value.hasPrefix("\"") {
                    guard value.count >= 2, value.hasSuffix("\"") else { return nil }
                    value = String(value.dropFirst().dropLast())
                }
                guard !key.isEmpty, !value.isEmpty else { return nil }
                params.append((key, value))
            } else {
                params.append((part.lowercased(), nil))
            }
        }
        return (name.lowercased(), params)
    }
}

/// Inflates compressed messages for a decoder (the runtime's zlib).
public protocol WebSocketInflating: AnyObject, Sendable {
    /// A compressed message's payload, inflated (RFC 7692 section 7.2.2: the
    /// implementation appends the 00 00 FF FF the sender removed). Fails with
    /// `.messageTooLarge(limit)` past `limit` bytes, `.badCompression` for data that is
    /// not deflate.
    func inflate(_ payload: [UInt8], limit: Int) -> Result<[UInt8], WebSocketError>
}
