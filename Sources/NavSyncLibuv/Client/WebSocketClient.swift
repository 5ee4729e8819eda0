import NavSync
import CUV
@preconcurrency import Glibc

/// One client WebSocket connection on a `ClientLoop`: the libuv shell around a
/// `ClientConnectionMachine` (which holds the protocol: handshake, frames, pings, the
/// close handshake) and a `SocketStream` (which holds the bytes: TLS, the output queue).
/// This file connects, reads, performs the machine's actions and reports. Output is
/// flushed once per loop iteration, like the server's.
public final class WebSocketClient {
    public enum State: Equatable {
        case idle, connecting, handshaking, open, closing, closed
    }

    public let url: WebSocketURL
    public var subprotocol: String? { machine.options.subprotocol }
    public var headers: [(String, String)] { machine.options.headers }
    /// Whether permessage-deflate is offered (RFC 7692): the server may then send
    /// compressed messages, which this client inflates. It sends its own uncompressed.
    public var offersCompression: Bool { machine.options.offersCompression }
    /// What the server agreed to, once open: nil when it sends uncompressed.
    public var deflate: PerMessageDeflate.ClientAgreement? { machine.deflate }
    public var state: State {
        switch machine.state {
        case .connecting: return started ? .connecting : .idle
        case .handshaking: return .handshaking
        case .open: return .open
        case .closing: return .closing
        case .closed: return .closed
        }
    }
    /// Bytes read from the socket (compressed and encrypted as they came).
    public private(set) var bytesIn = 0
    /// The subprotocol the server chose.
    public private(set) var agreedSubprotocol: String?
    /// Why a connection that never opened could not be made, for a client to branch on:
    /// `.offline` (the name, the port, the network, dropped before the answer), `.tls`
    /// (the handshake or the certificate), `.rejected` (the server answered the upgrade
    /// with an HTTP error, or broke it). Nil once it opened.
    public private(set) var failure: ErrorCode?

    /// Called once the WebSocket is open.
    public var onOpen: (() -> Void)?
    /// Called for each text message.
    public var onText: (([UInt8]) -> Void)?
    /// Called once when the connection ends, on a later loop turn than the call that
    /// ended it: the close code (nil without a close frame) and a reason (the
    /// server's, or what failed).
    public var onClose: ((UInt16?, String) -> Void)?

    unowned let owner: ClientLoop
    private var machine: ClientConnectionMachine
    private var stream: SocketStream
    private var tcp: UnsafeMutablePointer<uv_tcp_t>?
    private var started = false
    var isQueuedForFlush = false
    /// The end, once the machine decided it: reported after what is queued is written.
    private var pendingClose: (code: UInt16?, reason: String)?
    private var pendingFailure = ErrorCode.offline
    private var closeReported = false
    private var wasOpened = false
    /// The machine's next deadline (the upgrade's answer, the close reply).
    private var deadline: ClientLoop.Timer?

    public init(loop: ClientLoop, url: WebSocketURL, subprotocol: String? = "navsync.v1",
                headers: [(String, String)] = [], maxMessage: Int = 64 << 20, compression: Bool = true) {
        owner = loop
        self.url = url
        let options = ClientConnectionMachine.Options(url: url, subprotocol: subprotocol, headers: headers,
                                                      offersCompression: compression, maxMessage: maxMessage)
        // A server that keeps its context needs an inflater of this connection's own;
        // one that does not (navsyncd) is served by the loop's.
        machine = ClientConnectionMachine(options, masks: { [unowned loop] in loop.mask() }, inflater: { [unowned loop] agreed in
            agreed.serverNoContextTakeover ? loop.sharedInflater : Inflater(windowBits: agreed.serverWindowBits, keepsContext: true)
        }, acceptValue: Digests.webSocketAccept)
        stream = SocketStream(tls: nil)
    }

    public var queuedBytes: Int { stream.queuedBytes }

    // MARK: Connecting

    public func connect() {
        guard !started, case .connecting = machine.state else { return }
        started = true
        if url.secure {
            do { stream = SocketStream(tls: TLSStream(context: try owner.clientTLS(), host: url.host)) } catch { return finish(nil, "\(error)", failure: .tls) }
        }
        // A DNS name is looked up without blocking the loop (libuv's thread pool).
        UV.resolve(url.host, port: url.port, on: owner.loop) { [self] result in
            guard case .connecting = machine.state else { return }
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
        guard case .connecting = machine.state else { return }
        guard status == 0 else { return finish(nil, "cannot connect to \(url): \(UV.error(status))") }
        stream.tls?.start()
        perform(machine.connected(now: owner.now))
        armDeadline(machine.options.handshakeTimeout)
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
                me.read(UnsafeRawBufferPointer(start: buf!.pointee.base, count: nread))
            }
        })
    }

    /// Stops reading (the server's output then piles up: a slow reader, for benchmarks
    /// and tests); `resumeReading` reads again.
    public func pauseReading() {
        guard let tcp, machine.isOpen else { return }
        uv_read_stop(UV.stream(tcp))
    }

    public func resumeReading() {
        guard machine.isOpen else { return }
        startReading()
    }

    private func read(_ bytes: UnsafeRawBufferPointer) {
        guard stream.isTLS else { return perform(machine.received(bytes, now: owner.now)) }
        var plain: [UInt8] = []
        do {
            if try stream.open(bytes, into: &plain) { scheduleFlush() }
        } catch {
            if case .closed = error { return finish(nil, "the server closed the connection") }
            return finish(nil, "\(error) (\(url))", failure: .tls)
        }
        if !plain.isEmpty { perform(machine.received(plain, now: owner.now)) }
    }

    // MARK: The machine's actions

    private func perform(_ actions: [ClientConnectionMachine.Action]) {
        for action in actions {
            switch action {
            case .write(let bytes):
                queue(bytes)
            case .opened(let subprotocol, _):
                deadline?.cancel()
                deadline = nil
                agreedSubprotocol = subprotocol
                wasOpened = true
                onOpen?()
            case .text(let message):
                if !closed && !closing { onText?(message) }
            case .closeSocket(let code, let reason):
                // Before it opened, the machine ends a connection for what the server
                // answered to the upgrade (an HTTP error, a broken answer) or for its silence.
                let kind: ErrorCode = reason.hasPrefix("the server did not answer") ? .offline : .rejected
                if queuedBytes == 0 { finish(code, reason, failure: kind) } else { pendingClose = (code, reason); pendingFailure = kind }
            }
        }
    }

    // MARK: Sending

    /// Queues a text message (masked, as every client frame must be).
    @discardableResult
    public func send(text: [UInt8]) -> Bool {
        guard machine.isOpen else { return false }
        perform(machine.send(text: text))
        return true
    }

    /// Starts the close handshake (messages that arrive meanwhile are not delivered).
    public func close(code: UInt16 = CloseCode.normal, reason: String = "") {
        closing = true
        let wasOpen = machine.isOpen
        perform(machine.close(code: code, reason: reason, now: owner.now))
        if wasOpen { armDeadline(machine.options.closeTimeout) }
    }

    private func armDeadline(_ delay: Int64) {
        deadline?.cancel()
        deadline = owner.after(delay) { [weak self] in
            guard let self else { return }
            deadline = nil
            perform(machine.tick(now: owner.now))
        }
    }

    private func queue(_ bytes: [UInt8]) {
        guard tcp != nil, !closed else { return }
        stream.append(OutgoingBuffer(bytes))
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
        guard let tcp, !closed else { return }
        let written = stream.flush(to: UV.stream(tcp), owner: self) { request, status in
            let me = Unmanaged<WebSocketClient>.fromOpaque(request!.pointee.data).takeRetainedValue()
            _ = me.stream.finished()
            me.wrote(status: status)
        }
        if written < 0 {
            finish(nil, "write failed: \(UV.error(Int32(written)))")
        } else if written > 0 && !stream.isWriting {
            wrote(status: 0)   // all of it at once: no callback comes
        }
    }

    private func wrote(status: Int32) {
        if status < 0 { return finish(nil, "write failed: \(UV.error(status))") }
        if stream.hasMoreToWrite { flush() } else if let (code, reason) = pendingClose { finish(code, reason, failure: pendingFailure) }
    }

    // MARK: Closing

    /// Closes at once, without the close handshake.
    public func abort() { finish(nil, "closed") }

    /// The socket's handle is closed (or closing).
    private var closed = false
    /// The owner called `close()`.
    private var closing = false

    /// Ends the connection; `failure` says why when it never opened.
    private func finish(_ code: UInt16?, _ reason: String, failure: ErrorCode = .offline) {
        guard !closed else { return }
        closed = true
        if !wasOpened { self.failure = failure }
        machine.socketClosed()
        deadline?.cancel()
        deadline = nil
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
