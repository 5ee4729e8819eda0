import NavSync

/// What the app client needs of a WebSocket, and nothing more: open one to a URL, send
/// text messages, close it, and hear what happens. Reconnecting, resending by id,
/// moving through several servers and pinging a silent one are the client machine's
/// (`SessionMachine`), never a transport's, so every transport behaves the same.
///
/// Two ship: `URLSessionTransport` (Apple platforms) and the libuv transport of
/// `NavSyncRuntime` (Linux: navclient and the tests). A test passes a fake.
public protocol WebSocketTransport: Sendable {
    /// Opens a connection to `url` (offering the `navsync.v1` subprotocol) with extra
    /// request headers. Every event of that connection goes to `events`, in order,
    /// ending with exactly one `.closed`, or `.failed` when it never opened.
    func connect(to url: WebSocketURL, headers: [(String, String)],
                 events: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection
}

/// One open (or opening) WebSocket. Calls after `.closed` are ignored.
public protocol TransportConnection: Sendable {
    /// Sends one text message (UTF-8 JSON).
    func send(text: [UInt8])
    /// The close handshake (RFC 6455 section 7.1.2, code 1000); `.closed` follows.
    func close()
    /// Drops the connection at once, without the handshake (a silent server); `.closed`
    /// follows.
    func abort()
}

/// What a connection reports.
public enum TransportEvent: Sendable, Equatable {
    /// The handshake is done: messages may be sent.
    case opened
    /// One text message from the server.
    case text([UInt8])
    /// The connection is gone, with the close code when the server sent one and why.
    case closed(code: UInt16?, reason: String)
    /// The connection could not be made (it never opened), with a code an app can
    /// branch on: `.offline` (no network, a refused port, a name that does not resolve,
    /// dropped before the upgrade was answered), `.tls` (the TLS handshake or the
    /// certificate), `.rejected` (the server answered the upgrade with an HTTP error).
    /// It ends the connection, as `.closed` does.
    case failed(NavError)
}
