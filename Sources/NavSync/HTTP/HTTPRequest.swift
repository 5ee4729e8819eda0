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
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Every value of a header, by case-insensitive name.
    public func headers(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
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
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
