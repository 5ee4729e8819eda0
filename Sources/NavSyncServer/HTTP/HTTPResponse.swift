import NavSync
/// An HTTP/1.1 response, serialized with `Content-Length` (no chunking).
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public static func == (a: HTTPResponse, b: HTTPResponse) -> Bool {
        a.status == b.status && a.body == b.body && a.headers.map { $0.0 + ":" + $0.1 } == b.headers.map { $0.0 + ":" + $0.1 }
    }

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func text(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array(text.utf8))
    }

    public static func json(_ status: Int, _ value: JSON) -> HTTPResponse {
        var body = value.encoded()
        body.append(0x0A)
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: body)
    }

    /// A refusal: the status and its reason as plain text.
    public static func error(_ e: HTTPError) -> HTTPResponse { text(e.status, e.reason + "\n") }

    /// The response bytes. `keepAlive` false adds `Connection: close`; HEAD requests
    /// keep the length but send no body.
    public func serialized(keepAlive: Bool, headOnly: Bool = false) -> [UInt8] {
        // Bytes appended to one array made at about its size (building the head as a
        // string by interpolation cost more than the rest of a WebSocket handshake's
        // answer).
        var out: [UInt8] = []
        out.reserveCapacity(64 + headers.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + 4 } + (headOnly ? 0 : body.count))
        func put(_ text: String) { out.append(contentsOf: text.utf8) }
        put("HTTP/1.1 "); out.append(decimal: status); put(" "); put(Self.reasonPhrase(status)); put("\r\n")
        for (name, value) in headers { put(name); put(": "); put(value); put("\r\n") }
        if status != 101 && status != 204 && status != 304 { put("Content-Length: "); out.append(decimal: body.count); put("\r\n") }
        if !keepAlive { put("Connection: close\r\n") }
        put("\r\n")
        if !headOnly { out += body }
        return out
    }

    public static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 422: return "Unprocessable Content"
        case 426: return "Upgrade Required"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default: return "Status \(status)"
        }
    }
}
