import NavSync
/// The timing and size limits of one connection (docs/protocol.md, "Transport"). Times are in
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
    /// Queued output that makes no progress for this long means a peer that does not
    /// read: the connection is dropped with its output (docs/protocol.md, "Transport").
    public var writeTimeout: Int64 = 30_000
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
    /// Decided by the runtime, not the machine:
    /// the peer closed the TCP connection (possibly mid-frame).
    case peerGone
    /// Queued output made no progress for the write timeout.
    case writeTimeout
    /// Queued output passed the hard cap.
    case overflow
    case ioError(String)
    /// Over a connection limit.
    case refused
    /// TLS failed (a broken handshake, plain HTTP on the TLS port, a bad record).
    case tls(String)

    public var description: String {
        switch self {
        case .closed(let code): return "close \(code)"
        case .httpDone: return "http done"
        case .handshakeTimeout: return "handshake timeout"
        case .deadPeer: return "no answer to ping"
        case .closeTimeout: return "no close reply"
        case .peerGone: return "peer gone"
        case .writeTimeout: return "write timeout"
        case .overflow: return "output queue over its cap"
        case .ioError(let e): return "i/o error \(e)"
        case .refused: return "refused (too many connections)"
        case .tls(let why): return why
        }
    }
}

/// One connection as a state machine: bytes and clock ticks in, actions out; the libuv
/// shell performs the actions. No sockets, no clock of its own.
///
/// The same port speaks HTTP and WebSocket. A request comes out as an action and the
/// machine waits for the application's answer (`respond` or `admit`), so it never
/// calls out while it changes (RFC 6455 section 4 for the handshake).
public struct ConnectionMachine: Sendable {
    public enum State: Sendable {
        /// Reading HTTP requests: before the upgrade, or a plain HTTP keep-alive client;
        /// `awaiting` is the request whose answer parsing waits for. (Held here, not
        /// beside the state: an open WebSocket carried its 56 empty bytes.)
        case http(HTTPParser, awaiting: HTTPRequest?)
        /// WebSocket open.
        case open(WebSocketDecoder)
        /// We sent a close frame at `since` and wait for the peer's.
        case closing(WebSocketDecoder, since: Int64)
        case closed(CloseReason)
    }

    public enum Action: Sendable, Equatable {
        /// Queue these bytes for the socket.
        case write([UInt8])
        /// A plain HTTP request: answer it with `respond(to:with:now:)`. Parsing of
        /// pipelined requests waits for the answer.
        case request(HTTPRequest)
        /// An upgrade request at `webSocketPath`: answer with `admit(_:refusal:now:)`.
        case upgradeRequest(HTTPRequest)
        /// The WebSocket opened on this request, with this subprotocol.
        case opened(HTTPRequest, subprotocol: String?)
        /// A whole text or binary message arrived.
        case text([UInt8])
        case binary([UInt8])
        /// Flush what is queued, then close the socket.
        case closeSocket(CloseReason)
        /// Close the socket at once, dropping queued output (a peer that does not read).
        case abortSocket(CloseReason)
    }

    /// What every connection of a server shares: made once and referenced, so each
    /// connection holds one pointer instead of its own copy.
    public final class Setup: Sendable {
        public let limits: ConnectionLimits
        public let webSocketPath: String
        public let subprotocols: [String]
        /// How `Sec-WebSocket-Accept` is computed (the runtime's is OpenSSL's).
        let acceptValue: WebSocketHandshake.AcceptValue
        /// permessage-deflate is offered to clients when this is set (`--compression
        /// on`): it inflates what they send compressed.
        let inflater: (any WebSocketInflating)?

        public init(limits: ConnectionLimits = ConnectionLimits(), webSocketPath: String = "/ws",
                    subprotocols: [String] = ["navsync.v1"],
                    acceptValue: @escaping WebSocketHandshake.AcceptValue = WebSocketHandshake.acceptValue(forKey:),
                    inflater: (any WebSocketInflating)? = nil) {
            self.limits = limits
            self.webSocketPath = webSocketPath
            self.subprotocols = subprotocols
            self.acceptValue = acceptValue
            self.inflater = inflater
        }
    }

    private let setup: Setup
    public var limits: ConnectionLimits { setup.limits }
    public var webSocketPath: String { setup.webSocketPath }
    public var subprotocols: [String] { setup.subprotocols }
    private var acceptValue: WebSocketHandshake.AcceptValue { setup.acceptValue }
    private var inflater: (any WebSocketInflating)? { setup.inflater }
    /// What the handshake agreed: compressed messages both ways; nil for none.
    public private(set) var deflate: PerMessageDeflate?
    public private(set) var state: State
    /// When bytes last arrived.
    private var lastHeard: Int64
    /// When our last unanswered ping went out.
    private var pingSentAt: Int64?
    /// Since when queued output has waited without any of it being written; nil while
    /// nothing is queued.
    private var stalledSince: Int64?

    public init(setup: Setup, now: Int64) {
        self.setup = setup
        state = .http(HTTPParser(limits: setup.limits.http), awaiting: nil)
        lastHeard = now
    }

    public init(limits: ConnectionLimits = ConnectionLimits(), webSocketPath: String = "/ws",
                subprotocols: [String] = ["navsync.v1"], acceptValue: @escaping WebSocketHandshake.AcceptValue = WebSocketHandshake.acceptValue(forKey:),
                inflater: (any WebSocketInflating)? = nil, now: Int64) {
        self.init(setup: Setup(limits: limits, webSocketPath: webSocketPath, subprotocols: subprotocols,
                               acceptValue: acceptValue, inflater: inflater), now: now)
    }

    public var isOpen: Bool { if case .open = state { return true } else { return false } }
    public var isClosed: Bool { if case .closed = state { return true } else { return false } }

    // MARK: Events

    public mutating func received(_ bytes: [UInt8], now: Int64) -> [Action] {
        lastHeard = now
        switch state {
        case .http(var parser, let awaiting):
            parser.feed(bytes)
            state = .http(parser, awaiting: awaiting)
            return awaiting == nil ? serveHTTP(now: now) : []
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

    /// Output waits for the socket (it did not take all of a write): the write timeout
    /// starts, if it has not.
    public mutating func outputQueued(now: Int64) {
        if stalledSince == nil { stalledSince = now }
    }

    /// A write finished; `remaining` bytes are still queued (0: the timeout stops).
    public mutating func outputWritten(remaining: Int, now: Int64) {
        stalledSince = remaining > 0 ? now : nil
    }

    /// Timers: handshake and idle timeouts, heartbeat pings, the close handshake's wait,
    /// and queued output that makes no progress.
    public mutating func tick(now: Int64) -> [Action] {
        if let since = stalledSince, now - since >= limits.writeTimeout {
            // Also once closed: output still flushing before the close can stall too.
            stalledSince = nil
            state = .closed(.writeTimeout)
            return [.abortSocket(.writeTimeout)]
        }
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

    /// The application's answer to a `.request`.
    public mutating func respond(to request: HTTPRequest, with response: HTTPResponse, now: Int64) -> [Action] {
        guard case .http(let parser, let awaiting) = state, awaiting == request else { return [] }
        state = .http(parser, awaiting: nil)
        let keepAlive = request.keepAlive && response.status < 500
        let write = Action.write(response.serialized(keepAlive: keepAlive, headOnly: request.method == "HEAD"))
        return keepAlive ? [write] + serveHTTP(now: now) : [write] + finish(.httpDone)
    }

    /// The application's decision on an `.upgradeRequest`: nil admits it, and the
    /// handshake is then checked and answered (RFC 6455 section 4.2.2).
    public mutating func admit(_ request: HTTPRequest, refusal: HTTPResponse?, now: Int64) -> [Action] {
        guard case .http(var parser, let awaiting) = state, awaiting == request else { return [] }
        state = .http(parser, awaiting: nil)
        if let refusal { return [.write(refusal.serialized(keepAlive: false))] + finish(.httpDone) }
        switch WebSocketHandshake.accept(request, subprotocols: subprotocols, acceptValue: acceptValue) {
        case .refused(let response):
            return [.write(response.serialized(keepAlive: false))] + finish(.httpDone)
        case .accepted(var agreement):
            let early = parser.takeRemaining()
            if inflater != nil, let agreed = PerMessageDeflate.negotiate(request.headers("Sec-WebSocket-Extensions")) {
                deflate = agreed
                agreement.response.headers.append(("Sec-WebSocket-Extensions", agreed.responseHeader))
            }
            state = .open(WebSocketDecoder(role: .server, maxMessage: limits.maxMessage, inflater: deflate == nil ? nil : inflater))
            var actions: [Action] = [.write(agreement.response.serialized(keepAlive: true)),
                                     .opened(request, subprotocol: agreement.subprotocol)]
            if !early.isEmpty { actions += received(early, now: now) }
            return actions
        }
    }

    /// Parses the next buffered request, if any, and hands it to the application.
    private mutating func serveHTTP(now: Int64) -> [Action] {
        guard case .http(var parser, nil) = state else { return [] }
        let result = parser.next()
        state = .http(parser, awaiting: nil)
        switch result {
        case .needMore:
            return []
        case .failed(let e):
            return [.write(HTTPResponse.error(e).serialized(keepAlive: false))] + finish(.httpDone)
        case .request(let request):
            guard WebSocketHandshake.isUpgrade(request) else {
                state = .http(parser, awaiting: request)
                return [.request(request)]
            }
            guard request.path == webSocketPath else {
                return [.write(HTTPResponse.text(404, "no WebSocket endpoint at \(request.path); use \(webSocketPath)\n").serialized(keepAlive: false))]
                    + finish(.httpDone)
            }
            state = .http(parser, awaiting: request)
            return [.upgradeRequest(request)]
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
                // RFC 6455 5.5.1: answer with the same code; the server closes TCP first.
                let reply = code ?? CloseCode.normal
                closeCodeSent = reply
                actions.append(.write(code.map { WebSocketEncoder.close($0) } ?? WebSocketEncoder.frame(.close, [])))
                return actions + finish(.closed(code: reply))
            }
        }
        if let error {
            // RFC 6455 7.1.7, failing the connection: a close frame with the code, then TCP.
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
