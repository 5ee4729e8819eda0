import NavSync
import NavSyncServer
import CUV
@preconcurrency import Glibc

/// One client WebSocket connection on a `ClientLoop`: connect, handshake, masked
/// frames out, messages in (RFC 6455, client side). Output is queued and flushed once
/// per loop iteration, like the server's.
public final class WebSocketClient {
    public enum State: Equatable {
        case idle, connecting, handshaking, open, closing, closed
    }

    public let url: WebSocketURL
    public let subprotocol: String?
    public let headers: [(String, String)]
    /// Whether permessage-deflate is offered (RFC 7692): the server may then send
    /// compressed messages, which this client inflates. It sends its own uncompressed.
    public let offersCompression: Bool
    /// What the server agreed to, once open: nil when it sends uncompressed.
    public private(set) var deflate: PerMessageDeflate.ClientAgreement?
    public private(set) var state = State.idle
    /// Bytes read from the socket (compressed and encrypted as they came).
    public private(set) var bytesIn = 0
    /// The subprotocol the server chose.
    public private(set) var agreedSubprotocol: String?

    /// Called once the WebSocket is open.
    public var onOpen: (() -> Void)?
    /// Called for each text message.
    public var onText: (([UInt8]) -> Void)?
    /// Called once when the connection ends: the close code (nil without a close
    /// frame) and a reason (the server's, or what failed).
    public var onClose: ((UInt16?, String) -> Void)?

    unowned let owner: ClientLoop
    private var tcp: UnsafeMutablePointer<uv_tcp_t>?
    private var key = ""
    private var handshakeBuffer: [UInt8] = []
    private var decoder: WebSocketDecoder
    private var output = OutputQueue()
    /// `wss://`: the TLS session, and `output` sealed into records (what the socket
    /// gets). The upgrade request waits in `output` until the TLS handshake is done.
    private var tls: TLSStream?
    var isQueuedForFlush = false
    private var closeReported = false
    /// Waits for the server's close reply; cancelled once the connection is done.
    private var closeTimer: ClientLoop.Timer?

    public init(loop: ClientLoop, url: WebSocketURL, subprotocol: String? = "navsync.v1",
                headers: [(String, String)] = [], maxMessage: Int = 64 << 20, compression: Bool = true) {
        owner = loop
        self.url = url
        self.subprotocol = subprotocol
        self.headers = headers
        offersCompression = compression
        decoder = WebSocketDecoder(role: .client, maxMessage: maxMessage)
    }

    public var queuedBytes: Int { output.queuedBytes + (tls?.sealed.queuedBytes ?? 0) }

    // MARK: Connecting

    public func connect() {
        guard state == .idle else { return }
        state = .connecting
        if url.secure {
            do { tls = TLSStream(context: try owner.clientTLS(), host: url.host) } catch { return finish(nil, "\(error)") }
        }
        // A DNS name is looked up without blocking the loop (libuv's thread pool).
        UV.resolve(url.host, port: url.port, on: owner.loop) { [self] result in
            guard state == .connecting else { return }
            switch result {
            case .success(let address): connect(to: address)
            case .failure(let why): finish(nil, "cannot resolve \(url.host): \(why)")
            }
        }
    }

    private func connect(to address: UV.Address) {
        let tcp = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
        uv_tcp_init(owner.loop, tcp)
        uv_tcp_nodelay(tcp, 1)
        tcp.pointee.data = Unmanaged.passRetained(self).toOpaque()   // released in the close callback
        self.tcp = tcp
        owner.clients[ObjectIdentifier(self)] = self
        let req = UnsafeMutablePointer<uv_connect_t>.allocate(capacity: 1)
        let rc = address.withSockaddr { uv_tcp_connect(req, tcp, $0) { req, status in
            let stream = req!.pointee.handle!
            req!.deallocate()
            Unmanaged<WebSocketClient>.fromOpaque(stream.pointee.data).takeUnretainedValue().connected(status)
        } }
        if rc != 0 {
            req.deallocate()
            finish(nil, "cannot connect to \(url): \(UV.error(rc))")
        }
    }

    private func connected(_ status: Int32) {
        guard state == .connecting else { return }
        guard status == 0 else { return finish(nil, "cannot connect to \(url): \(UV.error(status))") }
        state = .handshaking
        key = ClientHandshake.key(using: &owner.random)
        tls?.start()
        let offer = offersCompression ? [("Sec-WebSocket-Extensions", PerMessageDeflate.clientOffer)] : []
        queue(ClientHandshake.request(url, key: key, subprotocol: subprotocol, headers: headers + offer))
        startReading()
    }

    private func startReading() {
        guard let tcp else { return }
        uv_read_start(UV.stream(tcp), { handle, _, buf in
            let me = Unmanaged<WebSocketClient>.fromOpaque(handle!.pointee.data).takeUnretainedValue()
            buf!.pointee = uv_buf_init(me.owner.readBuffer.assumingMemoryBound(to: CChar.self), UInt32(me.owner.readBufferSize))
        }, { stream, nread, buf in
            let me = Unmanaged<WebSocketClient>.fromOpaque(stream!.pointee.data).takeUnretainedValue()
            if nread < 0 {
                me.finish(nil, Int32(nread) == UV_EOF.rawValue ? "the server closed the connection" : UV.error(Int32(nread)))
            } else if nread > 0 {
                me.bytesIn += nread
                me.decrypt(UnsafeRawBufferPointer(start: buf!.pointee.base, count: nread))
            }
        })
    }

    /// Stops reading (the server's output then piles up: a slow reader, for benchmarks
    /// and tests); `resumeReading` reads again.
    public func pauseReading() {
        guard let tcp, state == .open else { return }
        uv_read_stop(UV.stream(tcp))
    }

    public func resumeReading() {
        guard state == .open else { return }
        startReading()
    }

    /// With TLS, the socket's bytes become plaintext first.
    private func decrypt(_ bytes: UnsafeRawBufferPointer) {
        guard let tls else { return received(bytes) }
        var plain: [UInt8] = []
        do {
            try tls.receive(bytes, into: &plain)
        } catch {
            if case .closed = error { return finish(nil, "the server closed the connection") }
            return finish(nil, "\(error) (\(url))")
        }
        if tls.hasOutput || (tls.isEstablished && output.hasPending) { scheduleFlush() }
        if !plain.isEmpty { plain.withUnsafeBytes { received($0) } }
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        switch state {
        case .handshaking:
            handshakeBuffer.append(contentsOf: bytes)
            switch ClientHandshake.response(handshakeBuffer, key: key, offeredDeflate: offersCompression, acceptValue: Digests.webSocketAccept) {
            case .needMore: return
            case .refused(let status, let reason):
                finish(nil, status == 0 ? reason : "the server refused the upgrade: \(status) \(reason)")
            case .accepted(let sub, let remaining, let agreed):
                handshakeBuffer = []
                agreedSubprotocol = sub
                if let agreed {
                    // A server that keeps its context needs an inflater of our own;
                    // one that does not (navsyncd) is served by the loop's.
                    deflate = agreed
                    let inflater = agreed.serverNoContextTakeover
                        ? owner.sharedInflater : Inflater(windowBits: agreed.serverWindowBits, keepsContext: true)
                    decoder = WebSocketDecoder(role: .client, maxMessage: decoder.maxMessage, inflater: inflater)
                }
                state = .open
                onOpen?()
                if !remaining.isEmpty { remaining.withUnsafeBytes { frames($0) } }
            }
        case .open, .closing:
            frames(bytes)
        default:
            return
        }
    }

    private func frames(_ bytes: UnsafeRawBufferPointer) {
        let (events, error) = decoder.feed(bytes)
        for event in events {
            guard state == .open || state == .closing else { return }
            switch event {
            case .text(let message): if state == .open { onText?(message) }
            case .binary: break
            case .ping(let payload): queue(frame(.pong, payload))
            case .pong: break
            case .close(let code, let reason):
                if state == .open { queue(frame(.close, code.map { [UInt8($0 >> 8), UInt8($0 & 0xFF)] } ?? [])) }
                state = .closing
                closeAfterFlush(code, reason)
                return
            }
        }
        if let error {
            queue(WebSocketEncoder.close(error.closeCode, reason: error.description, mask: mask()))
            closeAfterFlush(error.closeCode, "the server broke the protocol: \(error)")
        }
    }

    // MARK: Sending

    /// Queues a text message (masked, as every client frame must be).
    @discardableResult
    public func send(text: [UInt8]) -> Bool {
        guard state == .open else { return false }
        queue(frame(.text, text))
        return true
    }

    /// Starts the close handshake.
    public func close(code: UInt16 = CloseCode.normal, reason: String = "") {
        switch state {
        case .open:
            queue(WebSocketEncoder.close(code, reason: reason, mask: mask()))
            state = .closing
            closeTimer = owner.after(3_000) { [weak self] in self?.finish(code, "no close reply") }
        case .idle, .connecting, .handshaking:
            finish(code, reason)
        case .closing, .closed:
            return
        }
    }

    private func mask() -> (UInt8, UInt8, UInt8, UInt8) {
        let r: UInt64 = owner.random.next()
        return (UInt8(truncatingIfNeeded: r), UInt8(truncatingIfNeeded: r >> 8), UInt8(truncatingIfNeeded: r >> 16), UInt8(truncatingIfNeeded: r >> 24))
    }

    private func frame(_ opcode: Opcode, _ payload: [UInt8]) -> [UInt8] {
        WebSocketEncoder.frame(opcode, payload, mask: mask())
    }

    private func queue(_ bytes: [UInt8]) {
        guard tcp != nil, state != .closed else { return }
        output.append(OutgoingBuffer(bytes))
        scheduleFlush()
    }

    private func scheduleFlush() {
        if !isQueuedForFlush {
            isQueuedForFlush = true
            owner.flushList.append(self)
        }
    }

    func flush() {
        isQueuedForFlush = false
        guard let tcp, state != .closed else { return }
        let callback: uv_write_cb = { request, status in
            let me = Unmanaged<WebSocketClient>.fromOpaque(request!.pointee.data).takeRetainedValue()
            _ = me.tls?.sealed.finished() ?? me.output.finished()
            me.wrote(status: status)
        }
        let written: Int
        if let tls {
            if tls.isEstablished && output.hasPending { _ = output.drain { tls.write($0) } }
            if tls.hasOutput { tls.sealed.append(OutgoingBuffer(tls.takeOutput())) }
            written = tls.sealed.flush(to: UV.stream(tcp), owner: self, callback: callback)
        } else {
            written = output.flush(to: UV.stream(tcp), owner: self, callback: callback)
        }
        if written < 0 {
            finish(nil, "write failed: \(UV.error(Int32(written)))")
        } else if written > 0 && !(tls?.sealed.isWriting ?? output.isWriting) {
            wrote(status: 0)   // all of it at once: no callback comes
        }
    }

    private func wrote(status: Int32) {
        if status < 0 { return finish(nil, "write failed: \(UV.error(status))") }
        let more = tls.map { $0.sealed.hasPending || $0.hasOutput || $0.isEstablished && output.hasPending } ?? output.hasPending
        if more { flush() } else if let (code, reason) = pendingClose { finish(code, reason) }
    }

    private var pendingClose: (UInt16?, String)?

    private func closeAfterFlush(_ code: UInt16?, _ reason: String) {
        if queuedBytes == 0 { finish(code, reason) } else { pendingClose = (code, reason) }
    }

    // MARK: Closing

    /// Closes at once, without the close handshake.
    public func abort() { finish(nil, "closed") }

    private func finish(_ code: UInt16?, _ reason: String) {
        guard state != .closed else { return }
        state = .closed
        closeTimer?.cancel()
        closeTimer = nil
        if let tcp {
            uv_read_stop(UV.stream(tcp))
            uv_close(UV.handle(tcp)) { h in
                let me = Unmanaged<WebSocketClient>.fromOpaque(h!.pointee.data).takeRetainedValue()
                me.tcp?.deallocate()
                me.tcp = nil
                me.owner.clients[ObjectIdentifier(me)] = nil
            }
        }
        if !closeReported {
            closeReported = true
            // Never inside the call that ended it (`close()` before the socket opened, a
            // `connect()` that failed at once): the owner hears it on a later loop turn,
            // as libuv reports a failed call's outcome, not from within the call.
            if let report = onClose { owner.after(0) { report(code, reason) } }
        }
        // Done for good: let go of the callbacks, which often capture this client.
        onOpen = nil
        onText = nil
        onClose = nil
    }
}
