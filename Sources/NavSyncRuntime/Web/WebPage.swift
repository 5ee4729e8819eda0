import NavSync
import NavSyncServer
import NavSyncLibuv
/// What navsyncd serves from its own binary, with no build step and no outside URLs
/// (sources in `web/`, embedded by `scripts/embed-web`):
/// - `GET /`: the web device page;
/// - `GET /navsync.js`: the browser client module (docs/javascript.md, "The surface"), which pages
///   of any origin may import;
/// - `GET /navsync.d.ts`: its TypeScript declarations.
public struct WebPage: Sendable {
    public let bytes: [UInt8]
    public let contentType: String
    /// `Access-Control-Allow-Origin: *`: for files other origins may load.
    public let shared: Bool

    public static let index = WebPage(indexHTML, type: "text/html; charset=utf-8", shared: false)
    public static let module = WebPage(moduleJS, type: "text/javascript; charset=utf-8", shared: true)
    public static let types = WebPage(moduleTypes, type: "application/typescript; charset=utf-8", shared: true)

    init(_ text: String, type: String, shared: Bool) {
        bytes = Array(text.utf8)
        contentType = type
        self.shared = shared
        etag = "\"" + Digests.sha1(bytes).prefix(8).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() + "\""
    }

    /// The file the API names.
    public static func of(_ page: HTTPAPI.Page) -> WebPage {
        switch page {
        case .index: index
        case .module: module
        case .types: types
        }
    }

    /// A strong validator: it changes only when the file does.
    public let etag: String

    /// The file, or 304 when the browser's copy is current.
    public func response(for request: HTTPRequest) -> HTTPResponse {
        var headers = [("Cache-Control", "no-cache"), ("ETag", etag)]
        if shared { headers.append(("Access-Control-Allow-Origin", "*")) }
        if request.header("If-None-Match") == etag { return HTTPResponse(status: 304, headers: headers) }
        headers += [("Content-Type", contentType), ("X-Content-Type-Options", "nosniff")]
        return HTTPResponse(status: 200, headers: headers, body: bytes)
    }
}
