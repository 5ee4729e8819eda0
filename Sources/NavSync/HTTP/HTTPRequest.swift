/// One parsed HTTP/1.1 request (RFC 9112).
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    /// The request target as sent: `/api/sessions?x=1`.
    public var target: String
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    public var minorVersion: Int
    /// Header fields in order; names as sent.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public static func == (a: HTTPRequest, b: HTTPRequest) -> Bool {
        a.method == b.method && a.target == b.target && a.minorVersion == b.minorVersion && a.body == b.body
            && a.headers.map { $0.name + ":" + $0.value } == b.headers.map { $0.name + ":" + $0.value }
    }

    /// The first value of a header, by case-insensitive name.
    public func header(_ name: String) -> String? {
        headers.first { Self.sameName($0.name, name) }?.value
    }

    /// Every value of a header, by case-insensitive name.
    public func headers(_ name: String) -> [String] {
        headers.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    /// Header names are ASCII tokens: compared byte by byte, ignoring ASCII case, with
    /// no lowercased copies (a handshake looks up several headers).
    static func sameName(_ a: String, _ b: String) -> Bool {
        let x = a.utf8, y = b.utf8
        guard x.count == y.count else { return false }
        return zip(x, y).allSatisfy { p, q in p == q || (p | 0x20 == q | 0x20 && (p | 0x20) >= 0x61 && (p | 0x20) <= 0x7A) }
    }

    /// The path part of the target, percent-decoding left to the caller.
    public var path: String {
        String(target.prefix { $0 != "?" && $0 != "#" })
    }

    /// Query items of the target, percent-decoded; first one wins per name in `query(_:)`.
    public var queryItems: [(String, String)] {
        ParsedURL(target)?.query ?? []
    }

    public func query(_ name: String) -> String? { queryItems.first { $0.0 == name }?.1 }

    /// RFC 9112 section 9.3: HTTP/1.1 stays open unless `Connection: close`; 1.0 closes
    /// unless `Connection: keep-alive`.
    public var keepAlive: Bool {
        let tokens = headers("Connection").flatMap { $0.lowercased().split(separator: ",").map { $0.trimmingSpaces } }
        return minorVersion == 1 ? !tokens.contains("close") : tokens.contains("keep-alive")
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        let bytes = utf8
        var start = bytes.startIndex, end = bytes.endIndex
        func blank(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }
        while start < end, blank(bytes[start]) { start = bytes.index(after: start) }
        while start < end, blank(bytes[bytes.index(before: end)]) { end = bytes.index(before: end) }
        return String(self[start..<end])
    }
}
