import NavSync
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
        guard a.method == b.method, a.target == b.target, a.minorVersion == b.minorVersion, a.body == b.body,
              a.headers.count == b.headers.count else { return false }
        for i in a.headers.indices where a.headers[i].name != b.headers[i].name || a.headers[i].value != b.headers[i].value {
            return false
        }
        return true
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
        guard a.utf8.count == b.utf8.count else { return false }
        return withBytes(a) { x in withBytes(b) { y in
            for i in x.indices where !sameLetter(x[i], y[i]) { return false }
            return true
        } }
    }

    /// Whether two bytes are equal, ignoring the case of ASCII letters.
    @inline(__always) static func sameLetter(_ p: UInt8, _ q: UInt8) -> Bool {
        p == q || (p | 0x20 == q | 0x20 && (p | 0x20) >= 0x61 && (p | 0x20) <= 0x7A)
    }

    /// A string's UTF-8 bytes in place (a copy only for a string not stored as UTF-8).
    static func withBytes<R>(_ s: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let r = s.utf8.withContiguousStorageIfAvailable(body) { return r }
        return Array(s.utf8).withUnsafeBufferPointer(body)
    }

    /// Whether a header whose value is a comma-separated list (`Connection: keep-alive,
    /// Upgrade`) has `token` (lowercase) among its items, in any case, in any of its
    /// fields: the bytes are scanned in place, with no lowercased copy or list of items
    /// (a handshake asks this of three headers).
    public func lists(_ name: String, _ token: StaticString) -> Bool {
        let want = UnsafeBufferPointer(start: token.utf8Start, count: token.utf8CodeUnitCount)
        for field in headers where Self.sameName(field.name, name) {
            let found = Self.withBytes(field.value) { v in
                var start = 0
                while start <= v.count {
                    var end = start
                    while end < v.count, v[end] != UInt8(ascii: ",") { end += 1 }
                    var lo = start, hi = end
                    while lo < hi, v[lo] == 0x20 || v[lo] == 0x09 { lo += 1 }
                    while hi > lo, v[hi - 1] == 0x20 || v[hi - 1] == 0x09 { hi -= 1 }
                    if hi - lo == want.count, (0..<want.count).allSatisfy({ Self.sameLetter(v[lo + $0], want[$0]) }) { return true }
                    start = end + 1
                }
                return false
            }
            if found { return true }
        }
        return false
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
        minorVersion == 1 ? !lists("Connection", "close") : lists("Connection", "keep-alive")
    }
}
