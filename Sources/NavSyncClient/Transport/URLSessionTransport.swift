import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NavSync

/// The transport for Apple platforms: `URLSessionWebSocketTask`, which takes `wss://`
/// as it is and honours App Transport Security.
///
/// It compiles on Linux too, where FoundationNetworking has the same API, but it does
/// not run there: Debian's libcurl is built without WebSocket support, so the task
/// fails at once. On Linux use the libuv transport of `NavSyncRuntime`
/// (`LibuvTransport`), as navclient and the tests do.
public struct URLSessionTransport: WebSocketTransport {
    let configuration: URLSessionConfiguration

    /// `configuration`: e.g. `.ephemeral` (the default) or one with a proxy.
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        self.configuration = configuration
    }

    public func connect(to url: WebSocketURL, headers: [(String, String)],
                        events: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        let connection = URLSessionConnection(events: events)
        guard let target = URL(string: url.description) else {
            events(.failed(NavError(.badParams, "not a URL: \(url)")))
            return connection
        }
        var request = URLRequest(url: target)
        request.setValue("navsync.v1", forHTTPHeaderField: "Sec-WebSocket-Protocol")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        connection.start(URLSession(configuration: configuration, delegate: connection.delegate, delegateQueue: nil), request)
        return connection
    }
}

/// One task and its delegate. The task's callbacks come on URLSession's queue; `events`
/// is called in their order, and `.closed` once.
final class URLSessionConnection: TransportConnection, @unchecked Sendable {
    /// Guards `task`, `session` and `finished` (URLSession's queue and the caller's).
    private let lock = NSLock()
    private var task: URLSessionWebSocketTask?
    private var session: URLSession?
    private var finished = false
    private let events: @Sendable (TransportEvent) -> Void
    let delegate: Delegate

    init(events: @escaping @Sendable (TransportEvent) -> Void) {
        self.events = events
        delegate = Delegate()
        delegate.connection = self
    }

    func start(_ session: URLSession, _ request: URLRequest) {
        let task = session.webSocketTask(with: request)
        lock.withLock { self.task = task; self.session = session }
        task.resume()
    }

    func send(text: [UInt8]) {
        guard let task = lock.withLock({ finished ? nil : self.task }) else { return }
        task.send(.string(String(decoding: text, as: UTF8.self))) { [weak self] error in
            if let error { self?.finish(code: nil, reason: error.localizedDescription) }
        }
    }

    func close() {
        lock.withLock { task }?.cancel(with: .normalClosure, reason: nil)
    }

    func abort() {
        lock.withLock { task }?.cancel()
        finish(code: nil, reason: "closed")
    }

    fileprivate func opened() {
        lock.withLock { didOpen = true }
        events(.opened)
        receive()
    }

    private func receive() {
        guard let task = lock.withLock({ finished ? nil : self.task }) else { return }
        task.receive { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(.string(let text)):
                events(.text(Array(text.utf8)))
                receive()
            case .success(.data):
                finish(code: 1003, reason: "binary message")
            case .success:
                receive()
            case .failure(let error):
                let code = task.closeCode == .invalid ? nil : UInt16(truncatingIfNeeded: task.closeCode.rawValue)
                finish(code: code, reason: task.closeReason.map { String(decoding: $0, as: UTF8.self) } ?? error.localizedDescription, error: error)
            }
        }
    }

    fileprivate func finish(code: UInt16?, reason: String, error: (any Error)? = nil) {
        let (session, task): (URLSession?, URLSessionWebSocketTask?) = lock.withLock {
            guard !finished else { return (nil, nil) }
            finished = true
            return (self.session, self.task)
        }
        guard let session else { return }
        session.invalidateAndCancel()   // breaks the session's strong hold on its delegate
        if !wasOpened, let failure = Self.failure(error, response: task?.response) {
            events(.failed(NavError(failure, reason)))
        } else {
            events(.closed(code: code, reason: reason))
        }
    }

    /// Whether it ever opened (set on URLSession's queue before any later event).
    private var wasOpened: Bool { lock.withLock { didOpen } }
    private var didOpen = false

    /// What kind of failure kept a connection from opening.
    static func failure(_ error: (any Error)?, response: URLResponse?) -> ErrorCode? {
        if let http = response as? HTTPURLResponse, http.statusCode >= 300 { return .rejected }
        guard let error = error as? URLError else { return .offline }
        switch error.code {
        case .secureConnectionFailed, .serverCertificateHasBadDate, .serverCertificateUntrusted,
             .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid, .clientCertificateRejected,
             .clientCertificateRequired: return .tls
        case .badServerResponse, .userAuthenticationRequired: return .rejected
        case .cancelled: return nil
        default: return .offline
        }
    }

    final class Delegate: NSObject, URLSessionWebSocketDelegate, @unchecked Sendable {
        weak var connection: URLSessionConnection?

        func urlSession(_ session: URLSession, webSocketTask: URLSessionWebSocketTask, didOpenWithProtocol protocol: String?) {
            connection?.opened()
        }

        func urlSession(_ session: URLSession, webSocketTask: URLSessionWebSocketTask,
                        didCloseWith closeCode: URLSessionWebSocketTask.CloseCode, reason: Data?) {
            connection?.finish(code: UInt16(truncatingIfNeeded: closeCode.rawValue),
                               reason: reason.map { String(decoding: $0, as: UTF8.self) } ?? "")
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
            connection?.finish(code: nil, reason: error?.localizedDescription ?? "closed", error: error)
        }
    }
}
