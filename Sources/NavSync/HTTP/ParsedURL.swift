/// A URL's path segments and query, percent-decoded: what deep links match against
/// (`Flow+DeepLink`) and what the HTTP routes dispatch on.
public struct ParsedURL: Sendable, Equatable {
    /// Path segments, percent-decoded, empty ones dropped.
    public var segments: [String]
    /// Query items in order, percent-decoded (`+` stays `+`).
    public var query: [(String, String)]

    public static func == (a: ParsedURL, b: ParsedURL) -> Bool {
        a.segments == b.segments && a.query.map { $0.0 + "=" + $0.1 } == b.query.map { $0.0 + "=" + $0.1 }
    }

    /// Takes a path (`/product/42?ref=tv`) or a full URL. `http`/`https` URLs match
    /// their path; with another scheme (`app://product/42`) the host is the first segment.
    public init?(_ text: String) {
        // Byte searches on the UTF-8 view: every delimiter is ASCII, and a UTF-8 view
        // index is a valid index of the substring.
        var rest = Substring(text)
        if let hash = rest.utf8.firstIndex(of: UInt8(ascii: "#")) { rest = rest[..<hash] }
        var queryText: Substring = ""
        if let q = rest.utf8.firstIndex(of: UInt8(ascii: "?")) {
            queryText = rest[rest.utf8.index(after: q)...]
            rest = rest[..<q]
        }
        if let schemeEnd = Self.schemeEnd(rest) {
            let scheme = rest[..<schemeEnd].lowercased()
            guard !scheme.isEmpty, scheme.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }) else { return nil }
            rest = rest[rest.utf8.index(schemeEnd, offsetBy: 3)...]
            if scheme == "http" || scheme == "https" {
                rest = rest.utf8.firstIndex(of: UInt8(ascii: "/")).map { rest[$0...] } ?? ""
            }
        }
        var segments: [String] = []
        for part in rest.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            guard let decoded = Self.percentDecode(Substring(part)) else { return nil }
            segments.append(decoded)
        }
        var query: [(String, String)] = []
        for item in queryText.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let pair = item.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = Self.percentDecode(Substring(pair[0])),
                  let value = Self.percentDecode(pair.count > 1 ? Substring(pair[1]) : "") else { return nil }
            query.append((key, value))
        }
        self.segments = segments
        self.query = query
    }

    /// Where `://` starts, if anywhere.
    private static func schemeEnd(_ s: Substring) -> Substring.Index? {
        let bytes = s.utf8
        var i = bytes.startIndex
        while let colon = bytes[i...].firstIndex(of: UInt8(ascii: ":")) {
            let slash1 = bytes.index(after: colon)
            if slash1 < bytes.endIndex, bytes[slash1] == UInt8(ascii: "/") {
                let slash2 = bytes.index(after: slash1)
                if slash2 < bytes.endIndex, bytes[slash2] == UInt8(ascii: "/") { return colon }
            }
            i = slash1
        }
        return nil
    }

    /// `%XX` escapes decoded as UTF-8; a malformed escape or invalid UTF-8 is nil.
    static func percentDecode(_ s: Substring) -> String? {
        guard s.utf8.contains(UInt8(ascii: "%")) else { return String(s) }
        var bytes: [UInt8] = []
        var utf8 = s.utf8[...]
        while let b = utf8.popFirst() {
            guard b == UInt8(ascii: "%") else { bytes.append(b); continue }
            guard utf8.count >= 2, let hi = hexValue(utf8.popFirst()!), let lo = hexValue(utf8.popFirst()!) else { return nil }
            bytes.append(hi << 4 | lo)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: return c - 48
        case 65...70: return c - 55
        case 97...102: return c - 87
        default: return nil
        }
    }
}
