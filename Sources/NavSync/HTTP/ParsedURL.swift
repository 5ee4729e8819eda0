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
        var rest = Substring(text)
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var queryText: Substring = ""
        if let q = rest.firstIndex(of: "?") {
            queryText = rest[rest.index(after: q)...]
            rest = rest[..<q]
        }
        if let schemeEnd = rest.firstRange(of: "://") {
            let scheme = rest[..<schemeEnd.lowerBound].lowercased()
            guard !scheme.isEmpty, scheme.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }) else { return nil }
            rest = rest[schemeEnd.upperBound...]
            if scheme == "http" || scheme == "https" {
                rest = rest.firstIndex(of: "/").map { rest[$0...] } ?? ""
            }
        }
        var segments: [String] = []
        for part in rest.split(separator: "/", omittingEmptySubsequences: true) {
            guard let decoded = Self.percentDecode(part) else { return nil }
            segments.append(decoded)
        }
        var query: [(String, String)] = []
        for item in queryText.split(separator: "&", omittingEmptySubsequences: true) {
            let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = Self.percentDecode(pair[0]),
                  let value = Self.percentDecode(pair.count > 1 ? pair[1] : "") else { return nil }
            query.append((key, value))
        }
        self.segments = segments
        self.query = query
    }

    /// `%XX` escapes decoded as UTF-8; a malformed escape or invalid UTF-8 is nil.
    static func percentDecode(_ s: Substring) -> String? {
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
