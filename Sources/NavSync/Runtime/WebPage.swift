/// The web device page (`GET /`): plain HTML, CSS and JavaScript with no build step and
/// no outside URLs, embedded in the binary (source: `web/index.html`).
public enum WebPage {
    public static let bytes: [UInt8] = Array(indexHTML.utf8)

    /// A strong validator for the page: it changes only when the page does.
    public static let etag: String = {
        "\"" + SHA1.hash(bytes).prefix(8).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() + "\""
    }()

    /// The page, or 304 when the browser's copy is current.
    public static func response(for request: HTTPRequest) -> HTTPResponse {
        if request.header("If-None-Match") == etag {
            return HTTPResponse(status: 304, headers: [("ETag", etag), ("Cache-Control", "no-cache")])
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-cache"),
                                                   ("ETag", etag), ("X-Content-Type-Options", "nosniff")], body: bytes)
    }
}
