import NavSync
import NavSyncServer
import NavSyncLibuv
/// What runs on top of the transport: answers HTTP, admits upgrades, and handles the
/// messages of open WebSocket connections. Called on the loop thread only.
public protocol ServerApplication: AnyObject {
    /// The answer to a plain HTTP request; nil when it comes later, through
    /// `connection.answer(request, with:)` (the connection reads nothing more meanwhile).
    func respond(to request: HTTPRequest, on connection: Connection) -> HTTPResponse?
    /// nil admits the upgrade; a response refuses it (403 for a bad Origin, 401…).
    func admit(_ request: HTTPRequest, on connection: Connection) -> HTTPResponse?
    func opened(_ connection: Connection, request: HTTPRequest, subprotocol: String?)
    func received(text: [UInt8], from connection: Connection)
    func received(binary: [UInt8], from connection: Connection)
    func closed(_ connection: Connection)
    /// The connection's queued output has all been written, after the application set
    /// its `wantsDrained`.
    func drained(_ connection: Connection)
    /// SIGHUP: reload what can be reloaded without dropping connections.
    func reload(on server: Server)
    /// Once per loop iteration, before output is flushed and the loop blocks.
    func beforeSleep(on server: Server)
    /// The server is stopping: every connection is closed; close what keeps the loop alive.
    func stopping(on server: Server)
}

extension ServerApplication {
    public func admit(_ request: HTTPRequest, on connection: Connection) -> HTTPResponse? { nil }
    public func opened(_ connection: Connection, request: HTTPRequest, subprotocol: String?) {}
    public func closed(_ connection: Connection) {}
    public func drained(_ connection: Connection) {}
    public func reload(on server: Server) {}
    public func beforeSleep(on server: Server) {}
    public func stopping(on server: Server) {}
}

/// `--ws-echo`: every text and binary message comes back as it came, through the same
/// listener, codec and connection code as the real server (what conformance suites
/// such as Autobahn need).
public final class EchoApplication: ServerApplication {
    public init() {}

    public func respond(to request: HTTPRequest, on connection: Connection) -> HTTPResponse? {
        switch request.path {
        case "/healthz": return .text(200, "ok\n")
        case "/metrics":
            var r = HTTPResponse.text(200, connection.server.transportMetrics())
            r.headers = [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")]
            return r
        default: return .text(404, "navsyncd --ws-echo: WebSocket echo at /ws\n")
        }
    }

    public func received(text: [UInt8], from connection: Connection) {
        echo(WebSocketEncoder.frame(.text, text), on: connection)
    }

    public func received(binary: [UInt8], from connection: Connection) {
        echo(WebSocketEncoder.frame(.binary, binary), on: connection)
    }

    /// A client whose echoes pass the output cap does not read them: it is dropped.
    private func echo(_ frame: [UInt8], on connection: Connection) {
        if !connection.sendMessage(OutgoingBuffer(frame)) { connection.abort(.overflow) }
    }
}
