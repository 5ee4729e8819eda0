import NavSync
import NavSyncClient
import NavSyncLibuv
import Dispatch

/// The app client's transport on Linux: WebSocket connections on a `ClientLoop` that
/// runs on a thread of its own (the navigator lives on the main actor). Calls from any
/// thread are posted to the loop's thread; events come from it, in order.
///
/// URLSession cannot be used on Linux (Debian's libcurl has no WebSocket support), so
/// navclient, the tests and Linux agents use this one.
public final class LibuvTransport: WebSocketTransport, @unchecked Sendable {
    /// Touched only on the loop's thread, once `init` has handed it over.
    private let loop: ClientLoop

    /// Starts the loop's thread; it ends with `shutdown()`.
    public init() {
        loop = ClientLoop.onThreadOfItsOwn { $0 }
    }

    /// Lets the loop's thread end once its connections are gone; with `waitingUpTo`,
    /// waits that long at most for it to have ended. A program that exits right after
    /// must wait: exiting while the thread still frees its connections corrupted the
    /// heap (the headless shop crashed in about one run of 20).
    public func shutdown(waitingUpTo seconds: Double = 0) {
        loop.post { [self] in loop.keepsRunningForPosts(false) }
        if seconds > 0 { _ = loop.threadEnded.wait(timeout: .now() + seconds) }
    }

    public func connect(to url: WebSocketURL, headers: [(String, String)],
                        events: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        let connection = LibuvConnection(loop: loop)
        let posted = loop.post { [self] in
            let socket = WebSocketClient(loop: loop, url: url, headers: headers)
            connection.socket = socket
            socket.onOpen = { events(.opened) }
            socket.onText = { events(.text($0)) }
            socket.onClose = { code, reason in
                connection.socket = nil
                // (The socket is held here until its end is reported.)
                if let failure = socket.failure { events(.failed(NavError(failure, reason))) } else { events(.closed(code: code, reason: reason)) }
            }
            socket.connect()
        }
        if !posted { events(.failed(NavError(.closed, "the transport is shut down"))) }
        return connection
    }
}

/// One connection; its socket is touched only on the loop's thread.
final class LibuvConnection: TransportConnection, @unchecked Sendable {
    private let loop: ClientLoop
    var socket: WebSocketClient?

    init(loop: ClientLoop) { self.loop = loop }

    func send(text: [UInt8]) { loop.post { [self] in _ = socket?.send(text: text) } }
    func close() { loop.post { [self] in socket?.close() } }
    func abort() { loop.post { [self] in socket?.abort() } }
}
