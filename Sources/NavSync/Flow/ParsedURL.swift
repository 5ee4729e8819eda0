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
        // One pass over the bytes: every delimiter is ASCII. (Every deep link opened is
        // parsed here; generic collection code cost more than the link's operations.)
        var text = text
        guard let (segments, query) = text.withUTF8(Self.parse) else { return nil }
        self.segments = segments
        self.query = query
    }

    private static func parse(_ b: UnsafeBufferPointer<UInt8>) -> ([String], [(String, String)])? {
        guard let (path, query) = bounds(b) else { return nil }
        // Room for a typical link's parts up front: growing 1, 2, 4 was an allocation each.
        var segments: [String] = []
        segments.reserveCapacity(4)
        let pathOK = forEachPart(of: b[path], separatedBy: UInt8(ascii: "/")) { part in
            guard let decoded = percentDecode(part) else { return false }
            segments.append(decoded)
            return true
        }
        guard pathOK else { return nil }
        var items: [(String, String)] = []
        if let query {
            items.reserveCapacity(4)
            let queryOK = forEachPart(of: b[query], separatedBy: UInt8(ascii: "&")) { item in
                let (k, v) = keyAndValue(item)
                guard let key = percentDecode(k), let value = percentDecode(v) else { return false }
                items.append((key, value))
                return true
            }
            guard queryOK else { return nil }
        }
        return (segments, items)
    }

    /// Where a URL's path and query (without its `?`) are in its bytes; nil for a
    /// malformed scheme. `http`/`https` URLs start their path after the host; with
    /// another scheme the host is the path's first segment.
    static func bounds(_ b: UnsafeBufferPointer<UInt8>) -> (path: Range<Int>, query: Range<Int>?)? {
        let end = b.firstIndex(of: UInt8(ascii: "#")) ?? b.count
        let pathEnd = b[..<end].firstIndex(of: UInt8(ascii: "?")) ?? end
        var start = 0
        if let colon = schemeEnd(b, before: pathEnd) {
            let scheme = String(decoding: UnsafeBufferPointer(rebasing: b[..<colon]), as: UTF8.self).lowercased()
            guard !scheme.isEmpty, scheme.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }) else { return nil }
            start = colon + 3
            if scheme == "http" || scheme == "https" {
                start = b[start..<pathEnd].firstIndex(of: UInt8(ascii: "/")) ?? pathEnd
            }
        }
        return (start..<pathEnd, pathEnd < end ? (pathEnd + 1)..<end : nil)
    }

    /// A query item's key and value (empty when it has no `=`), escapes left in.
    static func keyAndValue(_ item: Slice<UnsafeBufferPointer<UInt8>>)
        -> (key: Slice<UnsafeBufferPointer<UInt8>>, value: Slice<UnsafeBufferPointer<UInt8>>) {
        let eq = item.firstIndex(of: UInt8(ascii: "=")) ?? item.endIndex
        return (item[..<eq], eq < item.endIndex ? item[(eq + 1)...] : item[eq...])
    }

    /// Calls `body` with each non-empty part between separators, in order, until it
    /// answers false (then false). No array of parts is made.
    static func forEachPart(of s: Slice<UnsafeBufferPointer<UInt8>>, separatedBy separator: UInt8,
                            _ body: (Slice<UnsafeBufferPointer<UInt8>>) -> Bool) -> Bool {
        var partStart = s.startIndex
        var i = s.startIndex
        while i < s.endIndex {   // (`s.indices` is generic code in the standard library here)
            if s[i] == separator {
                if i > partStart, !body(s[partStart..<i]) { return false }
                partStart = i + 1
            }
            i += 1
        }
        return s.endIndex <= partStart || body(s[partStart..<s.endIndex])
    }

    /// Where the first `://` before `end` starts, if anywhere.
    private static func schemeEnd(_ b: UnsafeBufferPointer<UInt8>, before end: Int) -> Int? {
        var i = 0
        while let colon = b[i..<end].firstIndex(of: UInt8(ascii: ":")) {
            if colon + 2 < end, b[colon + 1] == UInt8(ascii: "/"), b[colon + 2] == UInt8(ascii: "/") { return colon }
            i = colon + 1
        }
        return nil
    }

    /// `%XX` escapes decoded as UTF-8; a malformed escape or invalid UTF-8 is nil.
    static func percentDecode(_ s: Slice<UnsafeBufferPointer<UInt8>>) -> String? {
        // The bytes come from a String: without escapes they are valid UTF-8 already.
        guard s.contains(UInt8(ascii: "%")) else { return String(decoding: UnsafeBufferPointer(rebasing: s), as: UTF8.self) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.count)
        var i = s.startIndex
        while i < s.endIndex {
            let c = s[i]
            i += 1
            guard c == UInt8(ascii: "%") else { bytes.append(c); continue }
            guard i + 2 <= s.endIndex, let hi = hexValue(s[i]), let lo = hexValue(s[i + 1]) else { return nil }
            bytes.append(hi << 4 | lo)
            i += 2
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
