/// The timing and size limits of one connection (DESIGN.md section 8). Times are in
/// milliseconds of a monotonic clock the caller passes in.
public struct ConnectionLimits: Sendable, Equatable {
    /// Largest WebSocket message, all fragments together; larger closes with 1009.
    public var maxMessage = 1 << 20
    /// An HTTP connection (before or instead of the upgrade) that sends nothing for
    /// this long is closed: the handshake must complete in 10 s.
    public var handshakeTimeout: Int64 = 10_000
    /// A WebSocket connection silent this long gets a ping.
    public var pingInterval: Int64 = 30_000
    /// A WebSocket connection silent this long (no pong, nothing) is dropped.
    public var deadTimeout: Int64 = 60_000
    /// After sending a close frame, how long to wait for the peer's before dropping it.
    public var closeTimeout: Int64 = 5_000
    public var http = HTTPLimits()

    public init() {}
}

/// Why a connection ended, for logs and metrics.
public enum CloseReason: Sendable, Equatable, CustomStringConvertible {
    /// The WebSocket close handshake, with the code sent or received.
    case closed(code: UInt16)
    /// The HTTP exchange is over (`Connection: close`, or an error response).
    case httpDone
    case handshakeTimeout
    case deadPeer
    case closeTimeout

    public var description: String {
        switch self {
        case .closed(let code): return "close \(code)"
        case .httpDone: return "http done"
        case .handshakeTimeout: return "handshake timeout"
        case .deadPeer: return "no answer to ping"
        case .closeTimeout: return "no close reply"
        }
    }
}

/// One connection as a state machine: bytes and clock ticks in, actions out; the libuv
/// shell performs the actions. No sockets, no clock of its own.
///
/// The same port speaks HTTP and WebSocket: requests are answered by `http`, and an
/// upgrade request is checked by `admit` and then handshaken (RFC 6455 section 4).
public struct ConnectionMachine: Sendable {
    public enum State: Sendable {
        /// Reading HTTP requests: before the upgrade, or a plain HTTP keep-alive client.
        case http(HTTPParser)
        /// WebSocket open.
        case open(WebSocketDecoder)
        /// We sent a close frame at `since` and wait for the peer's.
        case closing(WebSocketDecoder, since: Int64)
        case closed(CloseReason)
    }

    public enum Action: Sendable, Equatable {
        /// Queue these bytes for the socket.
        case write([UInt8])
        /// The WebSocket opened on this request, with this subprotocol.
        case opened(HTTPRequest, subprotocol: String?)
        /// A whole text or binary message arrived.
        case text([UInt8])
        case binary([UInt8])
        /// Flush what is queued, then close the socket.
        case closeSocket(CloseReason)
    }

    /// The application's side of HTTP: the answer to a plain request, and, for an
    /// upgrade request at `webSocketPath`, nil to admit it or a refusal.
    public struct Handlers {
        public var respond: (HTTPRequest) -> HTTPResponse
        public var admit: (HTTPRequest) -> HTTPResponse?
        public init(respond: @escaping (HTTPRequest) -> HTTPResponse, admit: @escaping (HTTPRequest) -> HTTPResponse? = { _ in nil }) {
            self.respond = respond
            self.admit = admit
        }
    }

    public let limits: ConnectionLimits
    public let webSocketPath: String
    public let subprotocols: [String]
    public private(set) var state: State
    /// When bytes last arrived.
    private var lastHeard: Int64
    /// When our last unanswered ping went out.
    private var pingSentAt: Int64?

    public init(limits: ConnectionLimits = ConnectionLimits(), webSocketPath: String = "/ws",
                subprotocols: [String] = ["navsync.v1"], now: Int64) {
        self.limits = limits
        self.webSocketPath = webSocketPath
        self.subprotocols = subprotocols
        state = .http(HTTPParser(limits: limits.http))
        lastHeard = now
    }

    public var isOpen: Bool { if case .open = state { return true } else { return false } }
    public var isClosed: Bool { if case .closed = state { return true } else { return false } }

    // MARK: Events

    public mutating func received(_ bytes: [UInt8], now: Int64, _ handlers: Handlers) -> [Action] {
        lastHeard = now
        switch state {
        case .http(var parser):
            parser.feed(bytes)
            state = .http(parser)
            return serveHTTP(now: now, handlers)
        case .open(var decoder):
            let (events, error) = decoder.feed(bytes)
            state = .open(decoder)
            return handle(events, error, now: now)
        case .closing(var decoder, let since):
            let (events, error) = decoder.feed(bytes)
            if events.contains(where: { if case .close = $0 { return true } else { return false } }) || error != nil {
                return finish(.closed(code: closeCodeSent ?? CloseCode.normal))
            }
            state = .closing(decoder, since: since)
            return []
        case .closed:
            return []
        }
    }

    /// Timers: handshake and idle timeouts, heartbeat pings, the close handshake's wait.
    public mutating func tick(now: Int64) -> [Action] {
        switch state {
        case .http:
            return now - lastHeard >= limits.handshakeTimeout ? finish(.handshakeTimeout) : []
        case .open:
            let silent = now - lastHeard
            if silent >= limits.deadTimeout { return finish(.deadPeer) }
            if silent >= limits.pingInterval && (pingSentAt.map { now - $0 >= limits.pingInterval } ?? true) {
                pingSentAt = now
                return [.write(WebSocketEncoder.frame(.ping, Array("navsync".utf8)))]
            }
            return []
        case .closing(_, let since):
            return now - since >= limits.closeTimeout ? finish(.closeTimeout) : []
        case .closed:
            return []
        }
    }

    /// Starts the close handshake (server shutdown: 1001; policy: 1008; too slow: 1013…).
    public mutating func close(code: UInt16, reason: String, now: Int64) -> [Action] {
        switch state {
        case .open(let decoder):
            closeCodeSent = code
            state = .closing(decoder, since: now)
            return [.write(WebSocketEncoder.close(code, reason: reason))]
        case .http:
            return finish(.httpDone)
        case .closing, .closed:
            return []
        }
    }

    /// The code of the close frame we sent, for logs.
    public private(set) var closeCodeSent: UInt16?

    // MARK: HTTP

    private mutating func serveHTTP(now: Int64, _ handlers: Handlers) -> [Action] {
        var actions: [Action] = []
        while case .http(var parser) = state {
            let result = parser.next()
            state = .http(parser)
            switch result {
            case .needMore:
                return actions
            case .failed(let e):
                actions.append(.write(HTTPResponse.error(e).serialized(keepAlive: false)))
                return actions + finish(.httpDone)
            case .request(let request):
                if WebSocketHandshake.isUpgrade(request) {
                    return actions + upgrade(request, &parser, now: now, handlers)
                }
                let response = handlers.respond(request)
                let keepAlive = request.keepAlive && response.status < 500
                actions.append(.write(response.serialized(keepAlive: keepAlive, headOnly: request.method == "HEAD")))
                if !keepAlive { return actions + finish(.httpDone) }
            }
        }
        return actions
    }

    private mutating func upgrade(_ request: HTTPRequest, _ parser: inout HTTPParser, now: Int64, _ handlers: Handlers) -> [Action] {
        guard request.path == webSocketPath else {
            return [.write(HTTPResponse.text(404, "no WebSocket endpoint at \(request.path); use \(webSocketPath)\n").serialized(keepAlive: false))]
                + finish(.httpDone)
        }
        if let refusal = handlers.admit(request) {
            return [.write(refusal.serialized(keepAlive: false))] + finish(.httpDone)
        }
        switch WebSocketHandshake.accept(request, subprotocols: subprotocols) {
        case .refused(let refusal):
            return [.write(refusal.serialized(keepAlive: false))] + finish(.httpDone)
        case .accepted(let agreement):
            let early = parser.takeRemaining()
            state = .open(WebSocketDecoder(role: .server, maxMessage: limits.maxMessage))
            var actions: [Action] = [.write(agreement.response.serialized(keepAlive: true)),
                                     .opened(request, subprotocol: agreement.subprotocol)]
            if !early.isEmpty { actions += received(early, now: now, handlers) }
            return actions
        }
    }

    // MARK: WebSocket

    private mutating func handle(_ events: [WebSocketDecoder.Event], _ error: WebSocketError?, now: Int64) -> [Action] {
        var actions: [Action] = []
        for event in events {
            switch event {
            case .text(let bytes): actions.append(.text(bytes))
            case .binary(let bytes): actions.append(.binary(bytes))
            case .ping(let payload): actions.append(.write(WebSocketEncoder.frame(.pong, payload)))
            case .pong: pingSentAt = nil
            case .close(let code, _):
                // Section 5.5.1: answer with the same code; the server closes TCP first.
                let reply = code ?? CloseCode.normal
                closeCodeSent = reply
                actions.append(.write(code.map { WebSocketEncoder.close($0) } ?? WebSocketEncoder.frame(.close, [])))
                return actions + finish(.closed(code: reply))
            }
        }
        if let error {
            // Section 7.1.7, failing the connection: a close frame with the code, then TCP.
            closeCodeSent = error.closeCode
            actions.append(.write(WebSocketEncoder.close(error.closeCode, reason: error.description)))
            actions += finish(.closed(code: error.closeCode))
        }
        return actions
    }

    private mutating func finish(_ reason: CloseReason) -> [Action] {
        state = .closed(reason)
        return [.closeSocket(reason)]
    }
}
