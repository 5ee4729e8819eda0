/// One client WebSocket connection as a state machine (RFC 6455, client side): the
/// socket's events, bytes and clock ticks in, actions out; a shell with a socket
/// (`WebSocketClient` on libuv) performs them. No socket, no clock and no randomness of
/// its own: times are passed in, and the handshake key and every frame's mask come
/// from the `masks` the shell gives (RFC 6455 5.3 wants them unpredictable; tests pass
/// fixed ones).
///
/// The server's side is `ConnectionMachine`; this one is what a client adds: the
/// upgrade request and the check of its answer, masked frames, and a close handshake
/// that either side starts.
public struct ClientConnectionMachine {
    public struct Options {
        public var url: WebSocketURL
        public var subprotocol: String?
        /// Extra request headers (`Authorization`, …).
        public var headers: [(String, String)]
        /// Whether permessage-deflate is offered (RFC 7692): the server may then send
        /// compressed messages, which `inflater` inflates. Sent messages go uncompressed.
        public var offersCompression: Bool
        /// Largest message taken, all fragments together; larger fails with 1009.
        public var maxMessage: Int
        /// How long the server may take to answer the upgrade (from `connected`).
        public var handshakeTimeout: Int64 = 10_000
        /// After our close frame, how long to wait for the server's.
        public var closeTimeout: Int64 = 3_000

        public init(url: WebSocketURL, subprotocol: String? = "navsync.v1", headers: [(String, String)] = [],
                    offersCompression: Bool = true, maxMessage: Int = 64 << 20) {
            self.url = url
            self.subprotocol = subprotocol
            self.headers = headers
            self.offersCompression = offersCompression
            self.maxMessage = maxMessage
        }
    }

    public enum State {
        /// Waiting for the socket (`connected`).
        case connecting
        /// The upgrade request is out; the answer so far, and since when.
        case handshaking(response: [UInt8], since: Int64)
        case open
        /// We sent a close frame at `since` and wait for the server's.
        case closing(since: Int64, code: UInt16)
        case closed
    }

    public enum Action: Equatable {
        /// Queue these bytes for the socket.
        case write([UInt8])
        /// The WebSocket is open, with this subprotocol and, when the server took the
        /// offer, permessage-deflate as it answered.
        case opened(subprotocol: String?, deflate: PerMessageDeflate.ClientAgreement?)
        /// A whole text message arrived.
        case text([UInt8])
        /// Flush what is queued, then close the socket: the connection ended, with the
        /// close code (nil without a close frame) and a reason (the server's, or what
        /// failed).
        case closeSocket(code: UInt16?, reason: String)
    }

    public typealias Mask = (UInt8, UInt8, UInt8, UInt8)

    public let options: Options
    public private(set) var state = State.connecting
    /// What the server agreed to, once open: nil when it sends uncompressed.
    public private(set) var deflate: PerMessageDeflate.ClientAgreement?
    /// The frames in, once open. Beside the state, not in it: a decoder taken out of an
    /// enum case and put back shares its buffers with the case meanwhile, so each
    /// message it assembled would be copied.
    private var decoder: WebSocketDecoder
    private let masks: () -> Mask
    /// The inflater for an agreement: the shell's choice (one shared by every
    /// connection whose server keeps no context, else one of the connection's own).
    private let inflater: (PerMessageDeflate.ClientAgreement) -> (any WebSocketInflating)?
    private let acceptValue: WebSocketHandshake.AcceptValue
    private var key = ""

    public init(_ options: Options, masks: @escaping () -> Mask,
                inflater: @escaping (PerMessageDeflate.ClientAgreement) -> (any WebSocketInflating)? = { _ in nil },
                acceptValue: @escaping WebSocketHandshake.AcceptValue = WebSocketHandshake.acceptValue(forKey:)) {
        self.options = options
        self.masks = masks
        self.inflater = inflater
        self.acceptValue = acceptValue
        decoder = WebSocketDecoder(role: .client, maxMessage: options.maxMessage)
    }

    public var isOpen: Bool { if case .open = state { return true } else { return false } }
    public var isClosed: Bool { if case .closed = state { return true } else { return false } }

    // MARK: Events

    /// The socket is connected: the upgrade request goes out (with a key of 16 bytes
    /// from `masks`, RFC 6455 4.1).
    public mutating func connected(now: Int64) -> [Action] {
        guard case .connecting = state else { return [] }
        var nonce: [UInt8] = []
        for _ in 0..<4 {
            let m = masks()
            nonce += [m.0, m.1, m.2, m.3]
        }
        key = Base64.encode(nonce)
        state = .handshaking(response: [], since: now)
        let offer = options.offersCompression ? [("Sec-WebSocket-Extensions", PerMessageDeflate.clientOffer)] : []
        return [.write(ClientHandshake.request(options.url, key: key, subprotocol: options.subprotocol, headers: options.headers + offer))]
    }

    /// Bytes from the socket (plaintext).
    public mutating func received(_ bytes: [UInt8], now: Int64) -> [Action] {
        bytes.withUnsafeBytes { received($0, now: now) }
    }

    /// Bytes from the socket (plaintext), where the socket's read left them: a load
    /// generator reads megabytes a second, and copying each read first was most of a
    /// client's cost.
    public mutating func received(_ bytes: UnsafeRawBufferPointer, now: Int64) -> [Action] {
        switch state {
        case .connecting, .closed:
            return []
        case .handshaking(var response, let since):
            response.append(contentsOf: bytes)
            switch ClientHandshake.response(response, key: key, offeredDeflate: options.offersCompression, acceptValue: acceptValue) {
            case .needMore:
                state = .handshaking(response: response, since: since)
                return []
            case .refused(let status, let reason):
                return finish(nil, status == 0 ? reason : "the server refused the upgrade: \(status) \(reason)")
            case .accepted(let subprotocol, let remaining, let agreed):
                deflate = agreed
                if let agreed { decoder = WebSocketDecoder(role: .client, maxMessage: options.maxMessage, inflater: inflater(agreed)) }
                state = .open
                let opened = Action.opened(subprotocol: subprotocol, deflate: agreed)
                return remaining.isEmpty ? [opened] : [opened] + received(remaining, now: now)
            }
        case .open, .closing:
            let (events, error) = decoder.feed(bytes)
            return handle(events, error)
        }
    }

    /// The frame of a text message, when open (else nothing: the message is not sent).
    public mutating func send(text: [UInt8]) -> [Action] {
        guard case .open = state else { return [] }
        return [.write(WebSocketEncoder.frame(.text, text, mask: masks()))]
    }

    /// Starts the close handshake; before the WebSocket is open, just ends.
    public mutating func close(code: UInt16 = CloseCode.normal, reason: String = "", now: Int64) -> [Action] {
        switch state {
        case .open:
            state = .closing(since: now, code: code)
            return [.write(WebSocketEncoder.close(code, reason: reason, mask: masks()))]
        case .connecting, .handshaking:
            return finish(code, reason)
        case .closing, .closed:
            return []
        }
    }

    /// Timers: the server's answer to the upgrade, and to our close frame.
    public mutating func tick(now: Int64) -> [Action] {
        switch state {
        case .handshaking(_, let since) where now - since >= options.handshakeTimeout:
            return finish(nil, "the server did not answer the upgrade in \(options.handshakeTimeout / 1000) s")
        case .closing(let since, let code) where now - since >= options.closeTimeout:
            return finish(code, "no close reply")
        default:
            return []
        }
    }

    /// The socket is gone (or failed): nothing more to do.
    public mutating func socketClosed() {
        state = .closed
    }

    // MARK: Frames

    private mutating func handle(_ events: consuming [WebSocketDecoder.Event], _ error: WebSocketError?) -> [Action] {
        var actions: [Action] = []
        actions.reserveCapacity(events.count + 2)
        for event in events {
            switch event {
            case .text(let message):
                if case .open = state { actions.append(.text(message)) }
            case .binary, .pong:
                break
            case .ping(let payload):
                actions.append(.write(WebSocketEncoder.frame(.pong, payload, mask: masks())))
            case .close(let code, let reason):
                // RFC 6455 5.5.1: a close answered with the same code; the server then
                // closes TCP, and so do we once our reply is out.
                if case .open = state { actions.append(.write(WebSocketEncoder.frame(.close, code.map { [UInt8($0 >> 8), UInt8($0 & 0xFF)] } ?? [], mask: masks()))) }
                return actions + finish(code, reason)
            }
        }
        if let error {
            // RFC 6455 7.1.7, failing the connection: a close frame with the code, then TCP.
            actions.append(.write(WebSocketEncoder.close(error.closeCode, reason: error.description, mask: masks())))
            actions += finish(error.closeCode, "the server broke the protocol: \(error)")
        }
        return actions
    }

    private mutating func finish(_ code: UInt16?, _ reason: String) -> [Action] {
        state = .closed
        return [.closeSocket(code: code, reason: reason)]
    }
}
