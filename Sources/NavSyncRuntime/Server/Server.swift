import NavSync
import NavSyncServer
import NavSyncLibuv
import CUV
@preconcurrency import Glibc

public struct ServerError: Error, CustomStringConvertible {
    public var description: String
}

/// The libuv runtime: one loop thread owns the listener, every connection and the
/// application. Writes are flushed once per loop iteration, just before the loop
/// blocks (a `uv_prepare_t`, Redis's `beforeSleep`), so output queued in any phase —
/// reads, timers, close callbacks — leaves before the loop sleeps. Timers
/// tick every connection once a second, SIGINT/SIGTERM shut down gracefully.
public final class Server {
    public let configuration: ServerConfiguration
    public let logger: Logger
    public let application: ServerApplication
    /// The address actually bound (the real port when 0 was asked for).
    public private(set) var host: String
    public private(set) var port: Int

    package let loop: UnsafeMutablePointer<uv_loop_t>
    private let listener: UnsafeMutablePointer<uv_tcp_t>
    private let prepare: UnsafeMutablePointer<uv_prepare_t>
    private let timer: UnsafeMutablePointer<uv_timer_t>
    private let graceTimer: UnsafeMutablePointer<uv_timer_t>
    private let signals: [UnsafeMutablePointer<uv_signal_t>]
    private let hangup: UnsafeMutablePointer<uv_signal_t>
    /// permessage-deflate's compressor and decompressor, shared by every connection of
    /// this loop (neither side takes over context); nil with `--compression off`.
    public let deflater: Deflater?
    let inflater: Inflater?
    /// What every connection's machine shares (limits, the handshake's digest, the inflater).
    let connectionSetup: ConnectionMachine.Setup
    /// TLS for new connections (`configuration.tls`, then what SIGHUP reloaded).
    public private(set) var tlsContext: TLSContext?
    /// Open connections per peer address, for `maxConnectionsPerIP`.
    private var connectionsPerIP: [String: Int] = [:]
    public private(set) var connectionsRefused = 0
    private let wakeup: UnsafeMutablePointer<uv_async_t>

    /// One read buffer for every connection: reads are handled before the next one.
    package let readBuffer: UnsafeMutableRawPointer
    let readBufferSize = 64 * 1024

    public private(set) var connections: [Int: Connection] = [:]
    /// Appended per connection per loop iteration: exclusivity checked statically only
    /// (see `Connection.output`).
    @exclusivity(unchecked) private var flushList: [Connection] = []
    /// Connections answered directly this iteration (a command's ack): written before the
    /// rest of `flushList`, so a sender does not wait behind a broadcast's writes.
    @exclusivity(unchecked) private var answeredList: [Connection] = []
    private var nextConnectionID = 1
    public private(set) var shuttingDown = false
    /// Timers applications asked for (`every`), closed at shutdown.
    private var timers: [RepeatingTimer] = []

    /// Totals since start, for /metrics.
    public internal(set) var bytesIn = 0
    public internal(set) var bytesOut = 0
    public private(set) var connectionsAccepted = 0

    /// Binds and listens at once, so `port` is known before `run()`.
    public init(configuration: ServerConfiguration, application: ServerApplication) throws(ServerError) {
        self.configuration = configuration
        self.application = application
        logger = Logger(level: configuration.logLevel)
        host = configuration.host
        port = configuration.port
        tlsContext = configuration.tls
        deflater = configuration.compressionThreshold.map { Deflater(threshold: $0) }
        inflater = configuration.compressionThreshold.map { _ in Inflater() }
        connectionSetup = ConnectionMachine.Setup(limits: configuration.connection, acceptValue: Digests.webSocketAccept, inflater: inflater)
        guard let address = UV.Address(host: configuration.host, port: configuration.port) else {
            throw ServerError(description: "'\(configuration.host)' is not an IPv4 or IPv6 address")
        }

        loop = .allocate(capacity: 1)
        uv_loop_init(loop)
        navsync_uv_measure_idle_time(loop)
        listener = .allocate(capacity: 1)
        prepare = .allocate(capacity: 1)
        timer = .allocate(capacity: 1)
        graceTimer = .allocate(capacity: 1)
        signals = [.allocate(capacity: 1), .allocate(capacity: 1)]
        hangup = .allocate(capacity: 1)
        wakeup = .allocate(capacity: 1)
        readBuffer = .allocate(byteCount: readBufferSize, alignment: 16)

        let me = Unmanaged.passUnretained(self).toOpaque()
        uv_tcp_init(loop, listener)
        listener.pointee.data = me
        var rc = address.withSockaddr { uv_tcp_bind(listener, $0, 0) }
        if rc == 0 {
            rc = uv_listen(UV.stream(listener), configuration.backlog) { server, status in
                Unmanaged<Server>.fromOpaque(server!.pointee.data).takeUnretainedValue().accept(status)
            }
        }
        if rc != 0 {
            let reason = UV.error(rc)
            uv_close(UV.handle(listener), nil)
            uv_run(loop, UV_RUN_DEFAULT)
            uv_loop_close(loop)
            throw ServerError(description: "cannot listen on \(address.description): \(reason)")
        }
        var bound = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &bound) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getsockname(listener, $0, &length) }
        }
        let actual = UV.Address(storage: bound)
        host = actual.host
        port = actual.port

        uv_prepare_init(loop, prepare)
        prepare.pointee.data = me
        uv_prepare_start(prepare) { h in Unmanaged<Server>.fromOpaque(h!.pointee.data).takeUnretainedValue().flushAll() }
        uv_timer_init(loop, timer)
        timer.pointee.data = me
        uv_timer_start(timer, { h in Unmanaged<Server>.fromOpaque(h!.pointee.data).takeUnretainedValue().tickAll() }, 1000, 1000)
        uv_timer_init(loop, graceTimer)
        graceTimer.pointee.data = me
        for (handle, signum) in zip(signals, [SIGINT, SIGTERM]) {
            uv_signal_init(loop, handle)
            handle.pointee.data = me
            uv_signal_start(handle, { h, signum in
                let server = Unmanaged<Server>.fromOpaque(h!.pointee.data).takeUnretainedValue()
                server.logger.info("signal \(signum == SIGINT ? "SIGINT" : "SIGTERM"): shutting down")
                server.shutdown()
            }, signum)
        }
        uv_signal_init(loop, hangup)
        hangup.pointee.data = me
        uv_signal_start(hangup, { h, _ in
            let server = Unmanaged<Server>.fromOpaque(h!.pointee.data).takeUnretainedValue()
            server.reloadTLS()
            server.application.reload(on: server)
        }, SIGHUP)
        uv_async_init(loop, wakeup) { h in Unmanaged<Server>.fromOpaque(h!.pointee.data).takeUnretainedValue().shutdown() }
        wakeup.pointee.data = me
    }

    deinit {
        uv_loop_close(loop)
        loop.deallocate()
        listener.deallocate()
        prepare.deallocate()
        timer.deallocate()
        graceTimer.deallocate()
        signals.forEach { $0.deallocate() }
        hangup.deallocate()
        wakeup.deallocate()
        readBuffer.deallocate()
    }

    /// `ws://127.0.0.1:7420/ws` (brackets for IPv6); `wss://` with TLS.
    public var webSocketURL: String { "\(tlsContext == nil ? "ws" : "wss")://\(hostForURL):\(port)/ws" }
    public var httpURL: String { "\(tlsContext == nil ? "http" : "https")://\(hostForURL):\(port)/" }

    /// SIGHUP: the certificate and key are read again from the same paths; new
    /// connections use them, open ones keep theirs. One that does not load is logged
    /// and the old one stays in force.
    func reloadTLS() {
        guard let current = tlsContext, current.files != nil else { return }
        do {
            tlsContext = try current.reloaded()
            logger.info("SIGHUP: TLS certificate reloaded from \(current.files!.certificate)")
        } catch {
            logger.error("SIGHUP: \(error); the certificate loaded before stays in force")
        }
    }
    private var hostForURL: String { host.contains(":") ? "[\(host)]" : host }

    /// Monotonic milliseconds of the loop clock (updated once per iteration).
    public var now: Int64 { Int64(uv_now(loop)) }

    /// Runs the loop until shutdown completes. SIGPIPE is ignored first: a client that
    /// disconnects while being written to must not kill the server.
    public func run() {
        signal(SIGPIPE, SIG_IGN)
        uv_run(loop, UV_RUN_DEFAULT)
    }

    /// A handle another thread may use to stop the server (tests, embedders).
    public var stopHandle: StopHandle { StopHandle(async: wakeup) }

    public struct StopHandle: @unchecked Sendable {
        let async: UnsafeMutablePointer<uv_async_t>
        /// Thread-safe (`uv_async_send`): starts a graceful shutdown on the loop thread.
        public func stop() { uv_async_send(async) }
    }

    /// Transport metrics in the Prometheus text format (version 0.0.4); applications
    /// append their own.
    public func transportMetrics() -> String {
        var m = PrometheusText()
        m.gauge("navsync_connections", "Open connections (HTTP and WebSocket).", connections.count)
        m.gauge("navsync_websockets", "Open WebSocket connections.", connections.values.filter(\.isOpen).count)
        m.counter("navsync_connections_accepted_total", "Connections accepted since start.", connectionsAccepted)
        m.counter("navsync_connections_refused_total", "Connections refused over a connection limit.", connectionsRefused)
        m.counter("navsync_bytes_received_total", "Bytes read from sockets.", bytesIn)
        m.counter("navsync_bytes_sent_total", "Bytes written to sockets.", bytesOut)
        m.gauge("navsync_output_queued_bytes", "Output bytes queued or in flight, all connections.", connections.values.reduce(0) { $0 + $1.queuedBytes })
        return m.text
    }

    // MARK: Accepting

    private func accept(_ status: Int32) {
        guard status == 0 else {
            logger.warn("accept failed: \(UV.error(status))")
            return
        }
        let tcp = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
        uv_tcp_init(loop, tcp)
        guard uv_accept(UV.stream(listener), UV.stream(tcp)) == 0 else {
            uv_close(UV.handle(tcp)) { h in UnsafeMutablePointer<uv_tcp_t>(OpaquePointer(h!)).deallocate() }
            return
        }
        uv_tcp_nodelay(tcp, 1)
        if let size = configuration.socketSendBuffer {
            var value = Int32(clamping: size)
            uv_send_buffer_size(UV.handle(tcp), &value)
        }
        var peerStorage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &peerStorage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getpeername(tcp, $0, &length) }
        }
        // A client that reset before it was accepted has no address left to name (it
        // was logged as ":0"): said as what it is, and let go.
        guard named == 0 else {
            logger.info("a connection reset before it was accepted (\(UV.error(named))): let go")
            uv_close(UV.handle(tcp)) { h in UnsafeMutablePointer<uv_tcp_t>(OpaquePointer(h!)).deallocate() }
            return
        }
        let address = UV.Address(storage: peerStorage)
        let host = address.host    // formatted once (five times was some 10,000 instructions per accept)
        let peer = address.description(host: host)
        let connection = Connection(server: self, id: nextConnectionID, tcp: tcp, peer: peer, host: host, now: now)
        nextConnectionID += 1
        connectionsAccepted += 1
        tcp.pointee.data = Unmanaged.passRetained(connection).toOpaque()
        connections[connection.id] = connection
        connectionsPerIP[host, default: 0] += 1
        logger.info("#\(connection.id) \(peer) connected")
        if shuttingDown {
            connection.drop(.closed(code: CloseCode.goingAway))
            return
        }
        connection.start()
        // Over a limit: a clean refusal the client can read, then close. (A trusted
        // proxy's connections are counted per client once their request says who it is.)
        let perIP = connectionsPerIP[host]!
        let overIP = perIP > configuration.maxConnectionsPerIP && !configuration.trustedProxies.trusts(host)
        if connections.count > configuration.maxConnections || overIP {
            // Nothing can be said before a TLS handshake: closed at once.
            if connection.isAwaitingTLS { return connection.abort(.refused) }
            refuse(connection, overIP ? "from \(host) (\(configuration.maxConnectionsPerIP))" : "(\(configuration.maxConnections))")
        }
    }

    // MARK: The loop's hooks

    /// Connections with requests released by an answer, served at the top of the next
    /// flush, outside any call (`Connection.answer`).
    private var serveList: [Connection] = []

    func serveLater(_ connection: Connection) {
        serveList.append(connection)
    }

    private func serveDeferred() {
        while !serveList.isEmpty {
            let list = serveList
            serveList.removeAll(keepingCapacity: true)
            for connection in list { connection.serveDeferred() }
        }
    }

    func needsFlush(_ connection: Connection) {
        guard !connection.isQueuedForFlush else { return }
        connection.isQueuedForFlush = true
        flushList.append(connection)
    }

    /// Writes `connection` first in this iteration's flush (`Connection.writeFirst`).
    func flushFirst(_ connection: Connection) {
        guard !connection.isAnswered else { return }
        connection.isAnswered = true
        answeredList.append(connection)
    }

    /// Once per loop iteration, before it blocks: every connection with queued output
    /// writes it, those answered directly first.
    private func flushAll() {
        // Pipelined requests an answer released, each connection's in order; answering
        // one may release the next, served in this same pass (nothing is left for a
        // loop that is about to block).
        serveDeferred()
        application.beforeSleep(on: self)
        serveDeferred()   // released by answers the application gave just now
        guard !flushList.isEmpty else { return }
        let first = answeredList
        answeredList.removeAll(keepingCapacity: true)
        for connection in first {
            connection.isAnswered = false
            if connection.isQueuedForFlush { connection.flush() }
        }
        // A write done at once tells the application the connection drained, which may
        // queue more (a lagging member's catch-up): flushed in this pass too, as the
        // loop is about to block.
        while !flushList.isEmpty {
            let list = flushList
            flushList.removeAll(keepingCapacity: true)
            for connection in list where connection.isQueuedForFlush { connection.flush() }
        }
    }

    private func tickAll() {
        let now = self.now
        for connection in Array(connections.values) { connection.tick(now: now) }
        trimHeapIfIdle(now: now)
    }

    /// When did the heap last go back to the system.
    private var lastTrim: Int64 = 0

    /// A burst (thousands of joins, a catch-up) frees its buffers when written, but
    /// glibc keeps the pages: hand them back once nothing is queued, at most every 2 s.
    /// This is what keeps an idle server's memory near what its connections hold.
    private func trimHeapIfIdle(now: Int64) {
        guard now - lastTrim >= 2_000, flushList.isEmpty,
              !connections.values.contains(where: { $0.queuedBytes > 0 }) else { return }
        lastTrim = now
        malloc_trim(0)
    }

    func peerIP(of connection: Connection) -> String? { connection.countedIP }

    /// Counts the connection against `address` (the client a trusted proxy forwards
    /// for) instead of the proxy's; over that address's limit it is refused, 503.
    func reassign(_ connection: Connection, to address: String) -> Bool {
        if let old = connection.countedIP {
            connectionsPerIP[old]! -= 1
            if connectionsPerIP[old] == 0 { connectionsPerIP[old] = nil }
        }
        connection.countedIP = address
        connectionsPerIP[address, default: 0] += 1
        guard connectionsPerIP[address]! > configuration.maxConnectionsPerIP else { return true }
        refuse(connection, "from \(address) (\(configuration.maxConnectionsPerIP))")
        return false
    }

    /// Over a connection limit: a clean refusal the client can read (503), then close.
    private func refuse(_ connection: Connection, _ which: String) {
        connectionsRefused += 1
        logger.warn("#\(connection.id) refused: too many connections \(which)")
        var r = HTTPResponse.text(503, "too many connections \(which); try again later\n")
        r.headers.append(("Retry-After", "5"))
        connection.send(r.serialized(keepAlive: false))
        connection.drop(.refused)
    }

    func connectionClosed(_ connection: Connection) {
        connections[connection.id] = nil
        if let ip = connection.countedIP.take() {
            connectionsPerIP[ip]! -= 1
            if connectionsPerIP[ip] == 0 { connectionsPerIP[ip] = nil }
        }
        let reason = connection.closeReason.map { "\($0)" } ?? "closed"
        logger.info("#\(connection.id) \(connection.peer) closed: \(reason) (in \(connection.bytesIn) B, out \(connection.bytesOut) B)")
        application.closed(connection)
        if shuttingDown && connections.isEmpty { finishShutdown() }
    }

    // MARK: Shutdown

    /// Stops accepting, closes every WebSocket with 1001 and every HTTP connection,
    /// waits for the close handshakes (at most `shutdownGrace`), then ends the loop.
    public func shutdown() {
        guard !shuttingDown else { return }
        shuttingDown = true
        uv_close(UV.handle(listener), nil)
        for connection in Array(connections.values) {
            connection.close(code: CloseCode.goingAway, reason: "server shutting down")
        }
        if connections.isEmpty { return finishShutdown() }
        uv_timer_start(graceTimer, { h in
            let server = Unmanaged<Server>.fromOpaque(h!.pointee.data).takeUnretainedValue()
            for connection in Array(server.connections.values) { connection.abort(.closeTimeout) }
        }, UInt64(configuration.shutdownGrace), 0)
    }

    /// Nanoseconds the loop has spent waiting for events since it started: what it did
    /// not spend working.
    public var idleTime: UInt64 { uv_metrics_idle_time(loop) }

    /// Calls `body` every `interval` ms on the loop thread until the server stops (the
    /// session server's presence interval).
    public func every(_ interval: Int64, _ body: @escaping () -> Void) {
        let timer = RepeatingTimer(body)
        uv_timer_init(loop, timer.handle)
        timer.handle.pointee.data = Unmanaged.passUnretained(timer).toOpaque()
        uv_timer_start(timer.handle, { h in
            Unmanaged<RepeatingTimer>.fromOpaque(h!.pointee.data).takeUnretainedValue().body()
        }, UInt64(max(1, interval)), UInt64(max(1, interval)))
        timers.append(timer)
    }

    private func finishShutdown() {
        flushAll()
        for timer in timers { timer.close() }
        timers = []
        application.stopping(on: self)
        for handle in [UV.handle(prepare), UV.handle(timer), UV.handle(graceTimer), UV.handle(wakeup)] + (signals + [hangup]).map({ UV.handle($0) })
        where uv_is_closing(handle) == 0 {
            uv_close(handle, nil)
        }
    }
}

/// A uv timer that calls a closure; its memory goes in the close callback (libuv's rule).
final class RepeatingTimer {
    package let handle = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }

    func close() {
        uv_timer_stop(handle)
        uv_close(UV.handle(handle)) { h in UnsafeMutablePointer<uv_timer_t>(OpaquePointer(h!)).deallocate() }
    }
}

import Dispatch

extension Server {
    /// A server running on a thread of its own, as tests and embedding programs use it.
    public struct Running: Sendable {
        public let host: String
        public let port: Int
        public let stopHandle: StopHandle
        /// Signalled when the loop has ended.
        let finished: DispatchSemaphore

        /// Starts a graceful shutdown and waits (at most `timeout` seconds) for it.
        @discardableResult
        public func stop(timeout: Double = 10) -> Bool {
            stopHandle.stop()
            return finished.wait(timeout: .now() + timeout) == .success
        }
    }

    /// Creates the application and the server on a new thread, which then runs the
    /// loop: everything the loop owns is made on the thread that owns it.
    public static func startInBackground(configuration: ServerConfiguration,
                                         application: @escaping @Sendable () -> ServerApplication) throws(ServerError) -> Running {
        final class Handoff: @unchecked Sendable {
            var result: Result<(String, Int, StopHandle), ServerError>?
            let ready = DispatchSemaphore(value: 0)
            let finished = DispatchSemaphore(value: 0)
        }
        let handoff = Handoff()
        startThread {
            do {
                let server = try Server(configuration: configuration, application: application())
                handoff.result = .success((server.host, server.port, server.stopHandle))
                handoff.ready.signal()
                server.run()
            } catch {
                handoff.result = .failure(error as! ServerError)
                handoff.ready.signal()
            }
            handoff.finished.signal()
        }
        handoff.ready.wait()
        switch handoff.result! {
        case .success(let (host, port, stop)): return Running(host: host, port: port, stopHandle: stop, finished: handoff.finished)
        case .failure(let e): throw e
        }
    }
}
