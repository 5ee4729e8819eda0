import NavSync
import NavSyncServer
import NavSyncLibuv
import CUV

/// One client connection: the libuv shell around a `ConnectionMachine`.
///
/// Output is queued (`OutputQueue`) and the server flushes every connection with
/// queued output once per loop iteration, before the loop blocks.
///
/// Lifetime (libuv's rules): the `uv_tcp_t` holds a +1 reference to this object from
/// `uv_tcp_init` until its close callback, where the handle memory is freed. A
/// connection is never freed inside its own callbacks: `close` only starts `uv_close`.
public final class Connection {
    // What a broadcast reads and writes per member comes first, declared together so
    // it shares the object's first cache lines (stored properties are laid out in
    // order): with 1,000 members, fetching each connection's lines is most of a
    // broadcast's time. Loop-thread state: exclusivity is checked statically (no
    // overlapping access is possible), not at run time, where every access would go
    // through swift_beginAccess and its thread-local set.

    /// The server that owns this connection, and outlives it (`unowned(unsafe)`: no
    /// reference counting on the path of every send).
    public unowned(unsafe) let server: Server
    /// Whether messages may be sent: the WebSocket opened and no close frame is queued.
    /// Not the machine's state: when one read holds a valid message and then a protocol
    /// error, the machine is already closed while the message is handled, and what the
    /// application answers must still go out before the close frame (RFC 6455 section
    /// 7.1.7 fails the connection after what was sent before). Kept as it changes, one
    /// byte to read per send.
    @exclusivity(unchecked) public private(set) var isOpen = false
    @exclusivity(unchecked) private var handleClosed = false
    @exclusivity(unchecked) var isQueuedForFlush = false
    /// Set by the application to be told (`drained`) once all queued output has been
    /// written; cleared as it is told. (Told after every write, each member of a
    /// broadcast cost a call and a cast of its context per flush.)
    @exclusivity(unchecked) public var wantsDrained = false
    /// On the server's list of connections flushed first (`Server.flushFirst`).
    @exclusivity(unchecked) var isAnswered = false
    /// The WebSocket is open and no close frame was queued (the application's close).
    @exclusivity(unchecked) private var acceptsMessages = false {
        didSet { isOpen = acceptsMessages && closeReason == nil }
    }
    /// With permessage-deflate agreed: the window bits the server compresses with for
    /// this connection (`deflateWindow`); 0 when its messages go uncompressed. One
    /// byte beside the flags: the small fields are kept together, since a member of a
    /// busy node is its connection object first (docs/architecture.md, "Measured reasons
    /// in the code").
    @exclusivity(unchecked) private var deflateBits: UInt8 = 0
    /// `--max-queue`, read once: the send path touches nothing but this connection.
    private let maxQueueBytes: Int
    /// Queued and in-flight output, and the socket's input, through TLS with
    /// `--tls-cert`.
    @exclusivity(unchecked) private var stream: SocketStream
    /// With permessage-deflate agreed: the window the server compresses with for this
    /// connection; nil when its messages go uncompressed. (The machine's, copied when
    /// the WebSocket opens.)
    public var deflateWindow: Int? { deflateBits == 0 ? nil : Int(deflateBits) }

    /// Why the connection is ending, once it is; output still queued is flushed first.
    @exclusivity(unchecked) public private(set) var closeReason: CloseReason? {
        didSet { isOpen = acceptsMessages && closeReason == nil }
    }

    /// Unique per server run, in accept order.
    public let id: Int
    /// The peer's address, `127.0.0.1:50312`; behind a trusted proxy, the client's
    /// with the proxy's after it (`203.0.113.7 via 127.0.0.1:50312`).
    public var peer: String { proxied?.peer ?? socketPeer }
    /// What a trusted proxy said of the client (its address, scheme and host); nil for
    /// a connection that did not come through one.
    public var forwarded: ProxyTrust.Client? { proxied?.client }
    /// Both, boxed: set only behind a proxy, so a connection without one does not
    /// carry them inline.
    private var proxied: Proxied?
    private final class Proxied {
        let client: ProxyTrust.Client
        let peer: String
        init(_ client: ProxyTrust.Client, peer: String) { self.client = client; self.peer = peer }
    }
    /// The socket's own peer (the proxy's, behind one), and its address alone (taken
    /// from the peer when a proxy's headers are checked, not kept in every connection).
    let socketPeer: String
    var socketHost: String { UV.Address.host(ofPeer: socketPeer) }
    /// The address this connection is counted against (`--max-connections-per-ip`):
    /// the socket's, or the client's behind a trusted proxy; nil once uncounted. The
    /// server's to keep (not in a server table keyed by connection).
    var countedIP: String?
    /// Free for the application: its per-connection state.
    public var context: AnyObject?

    let tcp: UnsafeMutablePointer<uv_tcp_t>
    @exclusivity(unchecked) private(set) var machine: ConnectionMachine

    /// After our last bytes are flushed and our side is shut down, input is read and
    /// discarded until the peer closes or this time (ms) passes: closing a socket with
    /// unread input sends a RST, which can destroy the close frame we just sent.
    private var lingerUntil: Int64?

    /// Bytes read from / written to the socket.
    public private(set) var bytesIn = 0
    public private(set) var bytesOut = 0

    init(server: Server, id: Int, tcp: UnsafeMutablePointer<uv_tcp_t>, peer: String, host: String, now: Int64) {
        self.server = server
        self.id = id
        self.tcp = tcp
        socketPeer = peer
        countedIP = host
        maxQueueBytes = server.configuration.maxQueueBytes
        stream = SocketStream(tls: server.tlsContext.map { TLSStream(context: $0) })
        machine = ConnectionMachine(setup: server.connectionSetup, now: now)
    }

    /// The loop's time, read through the handle: `server.now` through the unowned
    /// reference was a retain and a release around it, per member per flush.
    private var now: Int64 { Int64(uv_now(tcp.pointee.loop)) }

    /// Output bytes queued or in flight.
    public var queuedBytes: Int { stream.queuedBytes }

    /// Served over TLS and still in its handshake: nothing can be said to the peer yet.
    var isAwaitingTLS: Bool { stream.isAwaitingTLS }

    // MARK: Sending

    /// Queues bytes (a whole frame). Returns false when the queue would pass the hard
    /// cap; then nothing is queued and the application decides (drop, resync, close).
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool { send(OutgoingBuffer(bytes)) }

    @discardableResult
    public func send(_ buffer: OutgoingBuffer) -> Bool {
        guard !handleClosed else { return false }
        guard queuedBytes + buffer.count <= maxQueueBytes else { return false }
        stream.append(buffer)
        if !isQueuedForFlush { server.needsFlush(self) }
        return true
    }

    /// One frame queued as the buffers it is made of, in order (`JoinedFrames`): all
    /// of them or, past the cap, none. (Not the one-buffer `send` through a collection
    /// of one: that was no longer inlined in a broadcast's loop over its members.)
    @discardableResult
    func send(_ parts: [OutgoingBuffer]) -> Bool {
        guard !handleClosed else { return false }
        var total = 0
        for part in parts { total += part.count }
        guard queuedBytes + total <= maxQueueBytes else { return false }
        for part in parts { stream.append(part) }
        if !isQueuedForFlush { server.needsFlush(self) }
        return true
    }

    /// A text message, framed (and compressed when that was agreed and it is worth it).
    @discardableResult
    public func sendText(_ bytes: [UInt8]) -> Bool { sendMessage(OutgoingBuffer(frame: .text, bytes)) }

    /// A whole message's frame, sent compressed when permessage-deflate was agreed and
    /// the message reaches the threshold, else as it is.
    @discardableResult
    public func sendMessage(_ frame: OutgoingBuffer) -> Bool {
        guard let window = deflateWindow, let deflater = server.deflater, frame.payload.count >= deflater.threshold else { return send(frame) }
        return send(deflater.frame(compressing: frame, windowBits: window))
    }

    /// What is queued here is written ahead of the other connections' output this
    /// iteration: for a direct answer (a command's ack), so that its sender does not wait
    /// behind the writes of the broadcast the command made (a thousand members are a
    /// thousand writes), and a client pipelining commands sends its next ones sooner.
    public func writeFirst() {
        if isQueuedForFlush { server.flushFirst(self) }
    }

    /// Starts the WebSocket close handshake (or ends an HTTP connection).
    public func close(code: UInt16, reason: String) {
        acceptsMessages = false
        perform(machine.close(code: code, reason: reason, now: now))
    }

    /// Ends the connection: flushes what is queued, then closes after a linger.
    public func drop(_ reason: CloseReason) {
        guard closeReason == nil else { return }
        closeReason = reason
        // Over TLS, close_notify after what is queued (an HTTP answer to `Connection: close`).
        if stream.shutdown() { server.needsFlush(self) }
        if queuedBytes == 0 && !stream.tlsHasOutput { linger() }
    }

    /// Closes at once, dropping queued output: for a peer that cannot be served
    /// (its queue is over the cap, the socket failed, shutdown's grace is over).
    public func abort(_ reason: CloseReason) {
        closeReason = closeReason ?? reason
        discardOutput()
        closeHandle()
    }

    /// Shuts down our side (FIN after the queued bytes) and waits for the peer's EOF.
    private func linger() {
        guard lingerUntil == nil, !handleClosed else { return }
        lingerUntil = now + server.configuration.lingerTimeout
        let req = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
        if uv_shutdown(req, UV.stream(tcp), { req, _ in req!.deallocate() }) != 0 {
            req.deallocate()
            closeHandle()
        }
    }

    // MARK: Events from the server

    func start() {
        let rc = uv_read_start(UV.stream(tcp), { handle, _, buf in
            let server = Unmanaged<Connection>.fromOpaque(handle!.pointee.data).takeUnretainedValue().server
            buf!.pointee = uv_buf_init(server.readBuffer.assumingMemoryBound(to: CChar.self), UInt32(server.readBufferSize))
        }, { stream, nread, buf in
            let connection = Unmanaged<Connection>.fromOpaque(stream!.pointee.data).takeUnretainedValue()
            connection.didRead(nread, buf!.pointee)
        })
        if rc != 0 { abort(.ioError(UV.error(rc))) }
    }

    private func didRead(_ nread: Int, _ buf: uv_buf_t) {
        if nread < 0 {
            // EOF or a reset: the peer is gone, perhaps mid-frame. Nothing to flush to it.
            closeReason = closeReason ?? (Int32(nread) == UV_EOF.rawValue ? .peerGone : .ioError(UV.error(Int32(nread))))
            discardOutput()
            closeHandle()
            return
        }
        // While closing, input is read and dropped (see `lingerUntil`).
        guard nread > 0, closeReason == nil else { return }
        bytesIn += nread
        server.bytesIn += nread
        let raw = UnsafeRawBufferPointer(start: buf.base, count: nread)
        guard stream.isTLS else { return perform(machine.received(Array(raw), now: now)) }
        var plain: [UInt8] = []
        do {
            if try stream.open(raw, into: &plain) { server.needsFlush(self) }
        } catch {
            if !plain.isEmpty { perform(machine.received(plain, now: now)) }
            return tlsFailed(error)
        }
        if !plain.isEmpty { perform(machine.received(plain, now: now)) }
    }

    /// A TLS peer that broke the protocol, failed the handshake or ended TLS. One that
    /// spoke plain HTTP is told in plain HTTP where to go instead.
    private func tlsFailed(_ failure: TLSStream.Failure) {
        server.logger.info("#\(id) \(peer): \(failure)")
        switch failure {
        case .plainHTTP:
            let r = HTTPResponse.text(400, "this port speaks TLS: use https:// or wss://\n")
            discardOutput()
            stream.appendRaw(OutgoingBuffer(r.serialized(keepAlive: false)))
            server.needsFlush(self)
            closeReason = .tls(failure.description)
        case .closed:
            closeReason = closeReason ?? .peerGone
            closeHandle()
        case .failed:
            // An alert may be in the output; it goes out before the close.
            closeReason = closeReason ?? .tls(failure.description)
            discardOutput()
            if stream.tlsHasOutput { server.needsFlush(self) } else { closeHandle() }
        }
    }

    /// Heartbeats and timeouts; called about once a second.
    func tick(now: Int64) {
        guard !handleClosed else { return }
        if let deadline = lingerUntil {
            if now >= deadline { closeHandle() }
            return
        }
        stream.trim()
        perform(machine.tick(now: now))
    }

    /// From a trusted proxy, the client it forwards for: named in the logs, counted
    /// against its own per-address limit (a refusal answers 503 and closes). False
    /// when the connection was refused.
    /// (Each request on its own: a proxy may send several clients' requests over one
    /// connection.)
    private func believeProxy(_ request: HTTPRequest) -> Bool {
        let trust = server.configuration.trustedProxies
        guard !trust.isEmpty, trust.trusts(socketHost) else { return true }
        let client = trust.client(peer: socketHost, headers: request.headers)
        guard client.address != server.peerIP(of: self) else {
            proxied = Proxied(client, peer: peer)
            return true
        }
        proxied = Proxied(client, peer: client.address == socketHost ? socketPeer : "\(client.address) via \(socketPeer)")
        server.logger.info("#\(id) \(socketPeer) forwards for \(client.address)")
        return server.reassign(self, to: client.address)
    }

    /// The application's answer to an HTTP request it did not answer at once.
    public func answer(_ request: HTTPRequest, with response: HTTPResponse) {
        guard !handleClosed else { return }
        server.logger.debug("#\(id) \(peer) \(request.method) \(redactedTarget(request.target)) \(response.status)")
        answering += 1
        defer { answering -= 1 }
        perform(machine.respond(to: request, with: response, now: now))
    }

    /// Inside `answer`: a pipelined request it releases is not handed to the
    /// application from within that call (the application may be in the middle of
    /// handling something: the hub's effects, for an answer that came later), but at
    /// the top of the loop's next flush (`Server.serveLater`).
    private var answering = 0
    /// Requests waiting for that.
    private var deferredRequests: [ConnectionMachine.Action] = []

    /// Hands the deferred requests to the application (from the loop's top).
    func serveDeferred() {
        let actions = deferredRequests
        deferredRequests = []
        guard !handleClosed else { return }
        perform(actions)
    }

    private func perform(_ actions: [ConnectionMachine.Action]) {
        for action in actions {
            switch action {
            case .write(let bytes):
                if !send(bytes) { abort(.overflow) }
            case .request where answering > 0, .upgradeRequest where answering > 0:
                deferredRequests.append(action)
                server.serveLater(self)
            case .request(let request):
                guard believeProxy(request) else { return }
                if let response = server.application.respond(to: request, on: self) { answer(request, with: response) }
            case .upgradeRequest(let request):
                guard believeProxy(request) else { return }
                let refusal = server.application.admit(request, on: self)
                perform(machine.admit(request, refusal: refusal, now: now))
            case .opened(let request, let subprotocol):
                deflateBits = machine.deflate.map { UInt8($0.serverWindowBits) } ?? 0
                acceptsMessages = true
                server.logger.info("#\(id) \(peer) websocket open \(redactedTarget(request.target))\(subprotocol.map { " (\($0))" } ?? "")")
                server.application.opened(self, request: request, subprotocol: subprotocol)
            case .text(let bytes):
                if isOpen { server.application.received(text: bytes, from: self) }
            case .binary(let bytes):
                if isOpen { server.application.received(binary: bytes, from: self) }
            case .closeSocket(let reason):
                acceptsMessages = false
                drop(reason)
            case .abortSocket(let reason):
                acceptsMessages = false
                server.logger.warn("#\(id) \(peer): \(reason) with \(queuedBytes) bytes queued (no write progress for \(machine.limits.writeTimeout) ms)")
                abort(reason)
            }
        }
    }

    // MARK: Writing

    /// Hands everything queued to libuv in one write (writev), if no write is in flight.
    func flush() {
        isQueuedForFlush = false
        guard !handleClosed else { return }
        let callback: uv_write_cb = { request, status in
            let connection = Unmanaged<Connection>.fromOpaque(request!.pointee.data).takeRetainedValue()
            connection.wrote(connection.stream.finished(), status: status)
        }
        let written = stream.flush(to: UV.stream(tcp), owner: self, callback: callback)
        if written < 0 {
            closeReason = closeReason ?? .ioError(UV.error(Int32(written)))
            closeHandle()
        } else if stream.isWriting {
            machine.outputQueued(now: now)   // the socket is full: the write timeout runs
        } else if written > 0 {
            wrote(written, status: 0)        // all of it at once: no callback comes
        }
    }

    /// `written` bytes went to the socket, all that was queued when the write began,
    /// or the write failed (`status`).
    private func wrote(_ written: Int, status: Int32) {
        bytesOut += written
        server.bytesOut += written
        machine.outputWritten(remaining: queuedBytes, now: now)
        if status < 0 {
            closeReason = closeReason ?? .ioError(UV.error(status))
            discardOutput()
            closeHandle()
            return
        }
        if stream.hasMoreToWrite {
            flush()
        } else if closeReason != nil {
            linger()
        } else if wantsDrained, queuedBytes == 0 {
            wantsDrained = false
            server.application.drained(self)
        }
    }

    private func discardOutput() { stream.discard() }

    // MARK: Closing

    private func closeHandle() {
        guard !handleClosed else { return }
        handleClosed = true
        lingerUntil = nil
        uv_read_stop(UV.stream(tcp))
        uv_close(UV.handle(tcp)) { handle in
            let connection = Unmanaged<Connection>.fromOpaque(handle!.pointee.data).takeRetainedValue()
            connection.tcp.deallocate()
            connection.server.connectionClosed(connection)
        }
    }
}
