import NavSync
import NavSyncServer
import NavSyncLibuv
import CHiredis
import CUV
@preconcurrency import Glibc

/// A reply from Redis (RESP2), copied out of hiredis's reader.
public enum RedisReply: Sendable, Equatable {
    case string([UInt8])
    case status(String)
    case error(String)
    case int(Int64)
    case array([RedisReply])
    case null

    public var text: String? {
        switch self {
        case .string(let b): String(decoding: b, as: UTF8.self)
        case .status(let s): s
        case .int(let i): String(i)
        default: nil
        }
    }

    public var array: [RedisReply]? { if case .array(let a) = self { a } else { nil } }
    public var int: Int64? { if case .int(let i) = self { i } else { text.flatMap { Int64($0) } } }

    init(_ r: UnsafeMutablePointer<redisReply>) {
        switch r.pointee.type {
        case REDIS_REPLY_STRING: self = .string(Array(UnsafeRawBufferPointer(start: r.pointee.str, count: r.pointee.len)))
        case REDIS_REPLY_STATUS: self = .status(String(cString: r.pointee.str))
        case REDIS_REPLY_ERROR: self = .error(String(cString: r.pointee.str))
        case REDIS_REPLY_INTEGER: self = .int(r.pointee.integer)
        case REDIS_REPLY_ARRAY: self = .array((0..<r.pointee.elements).map { RedisReply(r.pointee.element[$0]!) })
        default: self = .null
        }
    }
}

/// Why a command got no reply.
public enum RedisFailure: Error, Sendable, Equatable {
    /// It was never sent (not connected): it did not run.
    case notSent(String)
    /// It was sent and no answer came (the connection broke, or the timeout passed): it
    /// may or may not have run.
    case unknown(String)

    public var reason: String {
        switch self { case .notSent(let r), .unknown(let r): r }
    }
}

/// One connection to Redis on the server's libuv loop. navsync drives the socket
/// itself and uses only hiredis's RESP reader and its command formatter, which gives it
/// what the 0.14 libuv adapter lacks: a timeout on every command, a heartbeat that
/// notices a silent link, poll errors that are not swallowed, reconnects with backoff,
/// DNS names resolved off the loop at every connect, and TLS (`rediss://`) through the
/// one socket stream every connection of navsync has (`SocketStream`: its output queue,
/// TLS). Commands sent during one loop iteration go out together in one write just
/// before the loop waits (pipelined, as the server's output is), so nothing is written,
/// and no failure reported, from inside `send`. Replies are matched to commands in
/// order; in `subscriber` mode, messages (`message`, `pmessage`) go to `onMessage` instead.
///
/// Connecting is: TCP, TLS, `AUTH` (when a password is given), `SELECT` (data nodes),
/// and `ROLE` (when `primaryOnly`: a replica is refused, so a stale address after a
/// failover is noticed), pipelined; the first error drops the link with the reason.
final class RedisConnection {
    /// Where it connects; `retarget` moves it (Sentinel named a new primary).
    private(set) var target: RedisURL.Host
    /// The database to select (nil: none, for Sentinels).
    let db: Int?
    let subscriber: Bool
    let primaryOnly: Bool
    /// TLS (`rediss://`): the context, checked against `target`'s name.
    let tls: TLSContext?
    /// User and password, asked at every connect (the password file is re-read on SIGHUP).
    var credentials: () -> (user: String?, password: String?) = { (nil, nil) }
    /// What the command timeout and the heartbeat wait for an answer, ms.
    var timeout: UInt64 = 2_000

    /// Connected (and the database selected): send the subscriptions, read what was missed.
    var onReady: (() -> Void)?
    /// The connection was lost or could not be made (every pending command has failed
    /// with `.unknown`); a reconnect is scheduled.
    var onDown: ((String) -> Void)?
    /// A pub/sub message (subscriber connections).
    var onMessage: ((RedisReply) -> Void)?

    private(set) var isReady = false
    /// Why the last attempt failed or the link dropped (nil once ready).
    private(set) var lastError: String?
    /// Round-trip time of the last answered command, ms (for metrics).
    private(set) var lastRoundTrip: Double = 0

    private let loop: UnsafeMutablePointer<uv_loop_t>
    /// The socket of this attempt, and its stream; a new one for every connect.
    private var link: Link?
    private var tcp: UnsafeMutablePointer<uv_tcp_t>? { link?.tcp }
    private var resolving = false
    private var reader: UnsafeMutablePointer<redisReader>?
    private var pending: [(sent: UInt64, deadline: UInt64, done: (Result<RedisReply, RedisFailure>) -> Void)] = []
    private var pendingHead = 0
    /// Runs just before the loop waits, while output is queued: the iteration's commands
    /// go out in one write.
    private let flusher = UnsafeMutablePointer<uv_prepare_t>.allocate(capacity: 1)
    private var flushScheduled = false
    private let timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
    /// Fires on the next loop turn to hand out `failed`: a command that cannot be sent
    /// is answered from there, never inside `send` (the caller may be in the middle of
    /// handling something, the hub's own effects for one).
    private let later = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
    private var failed: [(done: (Result<RedisReply, RedisFailure>) -> Void, failure: RedisFailure)] = []
    private var backoff: UInt64 = 100
    private var reconnectAt: UInt64?
    private var lastActivity: UInt64 = 0
    private var lastTick: UInt64 = 0
    private var stopped = false
    private let readBuffer = UnsafeMutableRawPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    init(loop: UnsafeMutablePointer<uv_loop_t>, target: RedisURL.Host, db: Int?, subscriber: Bool,
         primaryOnly: Bool = false, tls: TLSContext? = nil) {
        self.loop = loop
        self.target = target
        self.db = db
        self.subscriber = subscriber
        self.primaryOnly = primaryOnly
        self.tls = tls
        uv_timer_init(loop, timer)
        uv_timer_init(loop, later)
        uv_prepare_init(loop, flusher)
        flusher.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        timer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        // One timer does the timeouts, the heartbeat and the reconnects.
        uv_timer_start(timer, { h in Unmanaged<RedisConnection>.fromOpaque(h!.pointee.data).takeUnretainedValue().tick() }, 100, 100)
    }

    var now: UInt64 { uv_now(loop) }

    // MARK: Connecting

    func connect() {
        guard tcp == nil, !resolving, !stopped else { return }
        resolving = true
        lastActivity = now
        // `localhost` is Redis's default bind, 127.0.0.1 (the resolver may say ::1 first);
        // TLS still checks the certificate against the name as written.
        let wanted = target
        UV.resolve(wanted.name == "localhost" ? "127.0.0.1" : wanted.name, port: wanted.port, on: loop) { [weak self] result in
            guard let self else { return }
            resolving = false
            // Retargeted meanwhile: the next tick connects to the new one.
            guard !stopped, tcp == nil, wanted == target else { return }
            switch result {
            case .success(let address): connect(to: address)
            case .failure(let why): down("cannot resolve \(target.name): \(why)")
            }
        }
    }

    /// Points the connection elsewhere: dropped and made again at once when it was
    /// connected to another host.
    /// The Sentinels named another primary: the connection leaves the old one (its end
    /// reported with `target` still the old one, as `Self.moving` and the new host) and
    /// connects to `host`.
    func retarget(_ host: RedisURL.Host) {
        guard host != target else { return }
        if tcp != nil {
            down(Self.moving + "\(host)")
            backoff = 100
        }
        target = host
        reconnectAt = now
    }

    /// How `onDown`'s reason starts when the connection left for a new primary.
    static let moving = "moving to the new primary "

    /// One connection attempt's socket and stream. It outlives its connection's use of it
    /// until libuv closes the handle: a write in flight is answered (cancelled) first, and
    /// its bytes and request live in the stream.
    private final class Link {
        let tcp = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
        var socket = SocketStream(tls: nil)
        unowned let owner: RedisConnection

        init(_ owner: RedisConnection, loop: UnsafeMutablePointer<uv_loop_t>) {
            self.owner = owner
            uv_tcp_init(loop, tcp)
            uv_tcp_nodelay(tcp, 1)
            tcp.pointee.data = Unmanaged.passRetained(self).toOpaque()   // released when closed
        }

        func close() {
            uv_read_stop(UV.stream(tcp))
            socket.discard()
            uv_close(UV.handle(tcp)) { h in
                let link = Unmanaged<Link>.fromOpaque(h!.pointee.data).takeRetainedValue()
                link.tcp.deallocate()
            }
        }
    }

    private func connect(to address: UV.Address) {
        let link = Link(self, loop: loop)
        let tcp = link.tcp
        self.link = link
        reader = redisReaderCreate()
        lastActivity = now
        let req = UnsafeMutablePointer<uv_connect_t>.allocate(capacity: 1)
        let rc = address.withSockaddr { uv_tcp_connect(req, tcp, $0) { req, status in
            let link = Unmanaged<Link>.fromOpaque(req!.pointee.handle!.pointee.data).takeUnretainedValue()
            req!.deallocate()
            link.owner.connected(status, on: link)
        } }
        if rc != 0 {
            req.deallocate()
            down("cannot connect to \(target): \(UV.error(rc))")
        }
    }

    private func connected(_ status: Int32, on link: Link) {
        guard link === self.link else { return }   // a connection given up on meanwhile
        let tcp = link.tcp
        guard status == 0 else { return down("cannot connect to \(target): \(UV.error(status))") }
        uv_read_start(UV.stream(tcp), { h, _, buf in
            let me = Unmanaged<Link>.fromOpaque(h!.pointee.data).takeUnretainedValue().owner
            buf!.pointee = uv_buf_init(me.readBuffer.assumingMemoryBound(to: CChar.self), 64 * 1024)
        }, { stream, nread, _ in
            let me = Unmanaged<Link>.fromOpaque(stream!.pointee.data).takeUnretainedValue().owner
            if nread < 0 {
                me.down(Int32(nread) == UV_EOF.rawValue ? "Redis at \(me.target) closed the connection" : "Redis at \(me.target): \(UV.error(Int32(nread)))")
            } else if nread > 0 {
                me.received(count: nread)
            }
        })
        if let tls {
            link.socket = SocketStream(tls: TLSStream(context: tls, host: target.name))
            link.socket.tls!.start()
            scheduleFlush()   // the ClientHello
        }
        // The setup, pipelined (behind the TLS handshake when there is one).
        var steps: [([String], (RedisReply) -> String?)] = []
        let (user, password) = credentials()
        if let password {
            steps.append((["AUTH"] + (user.map { [$0] } ?? []) + [password], { _ in nil }))
        }
        if let db { steps.append((["SELECT", String(db)], { _ in nil })) }
        if primaryOnly {
            steps.append((["ROLE"], { r in
                let role = r.array?.first?.text ?? "?"
                return role == "master" ? nil : "Redis at \(self.target) is a \(role == "slave" ? "replica" : role), not the primary"
            }))
        }
        if steps.isEmpty { steps.append((["PING"], { _ in nil })) }
        for (i, (args, check)) in steps.enumerated() {
            enqueue(args.map { Array($0.utf8) }, timeout: nil) { [unowned self] result in
                guard case .success(let r) = result, self.link === link else { return }
                if case .error(let e) = r { return down(Self.explain(e, target: target, user: user)) }
                if let refusal = check(r) { return down(refusal) }
                guard i == steps.count - 1 else { return }
                isReady = true
                lastError = nil
                backoff = 100
                onReady?()
            }
        }
    }

    /// Redis's refusal, said for the operator.
    static func explain(_ error: String, target: RedisURL.Host, user: String?) -> String {
        if error.hasPrefix("WRONGPASS") || error.hasPrefix("ERR invalid password") || error.hasPrefix("ERR AUTH") {
            return "Redis at \(target) refused the password\(user.map { " of user '\($0)'" } ?? "") (\(error))"
        }
        if error.hasPrefix("NOAUTH") { return "Redis at \(target) wants a password (\(error)): give it in the URL or --redis-password-file" }
        if error.hasPrefix("NOPERM") { return "Redis at \(target): the user\(user.map { " '\($0)'" } ?? "") lacks a permission navsync needs (\(error))" }
        return "Redis at \(target): \(error)"
    }

    /// Drops the connection: pending commands fail as `.unknown` (they may have run),
    /// and a reconnect is scheduled with backoff.
    private func down(_ reason: String) {
        isReady = false
        lastError = reason
        link?.close()
        link = nil
        if let reader { redisReaderFree(reader) }
        reader = nil
        let failed = pending[pendingHead...]
        pending = []
        pendingHead = 0
        for p in failed { p.done(.failure(.unknown(reason))) }
        guard !stopped else { return }
        // Jittered, capped exponential backoff.
        let wait = backoff / 2 + UInt64.random(in: 0...backoff / 2)
        backoff = min(backoff * 2, 2_000)
        reconnectAt = now + wait
        onDown?(reason)
    }

    /// Drops the link (a step after connecting failed): reconnected with backoff.
    func drop(_ reason: String) {
        guard tcp != nil else { return }
        down(reason)
    }

    func stop() {
        stopped = true
        down("stopping")
        uv_timer_stop(timer)
        uv_timer_stop(later)
        uv_prepare_stop(flusher)
        failed = []
        for t in [timer, later] {
            uv_close(UV.handle(t)) { h in UnsafeMutablePointer<uv_timer_t>(OpaquePointer(h!)).deallocate() }
        }
        uv_close(UV.handle(flusher)) { h in UnsafeMutablePointer<uv_prepare_t>(OpaquePointer(h!)).deallocate() }
    }

    private func tick() {
        let t = now
        // After the loop was busy (a long catch-up), answers may be waiting unread in
        // the socket: timers run before I/O in libuv's loop, so judge nothing this time.
        defer { lastTick = t }
        if t - lastTick > 500 { return }
        if let at = reconnectAt, t >= at, tcp == nil, !resolving {
            reconnectAt = nil
            return connect()
        }
        guard tcp != nil else { return }
        if pendingHead < pending.count, pending[pendingHead].deadline <= t {
            return down("no answer from Redis in \(timeout) ms")
        }
        if !isReady, t - lastActivity > timeout { return down("cannot connect to \(target): timed out") }
        // Heartbeat: a silent link shows up within a second or two.
        if isReady, pendingHead == pending.count, t - lastActivity >= 1_000 {
            send(["PING"]) { _ in }
        }
    }

    // MARK: Commands

    /// Sends a command; `done` gets its reply, or why none came.
    func send(_ args: [String], timeout: UInt64? = nil, _ done: @escaping (Result<RedisReply, RedisFailure>) -> Void) {
        send(args.map { Array($0.utf8) }, timeout: timeout, done)
    }

    func send(_ args: [[UInt8]], timeout: UInt64? = nil, _ done: @escaping (Result<RedisReply, RedisFailure>) -> Void) {
        guard isReady, tcp != nil else { return failLater(done, .notSent(lastError ?? "not connected to Redis at \(target)")) }
        enqueue(args, timeout: timeout, done)
    }

    /// Answers `done` with `failure` on the next loop turn (libuv's rule: a failed call
    /// never calls back from within itself).
    private func failLater(_ done: @escaping (Result<RedisReply, RedisFailure>) -> Void, _ failure: RedisFailure) {
        failed.append((done, failure))
        guard failed.count == 1 else { return }
        later.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_timer_start(later, { h in
            let me = Unmanaged<RedisConnection>.fromOpaque(h!.pointee.data).takeUnretainedValue()
            let due = me.failed
            me.failed = []
            for f in due { f.done(.failure(f.failure)) }
        }, 0, 0)
    }

    private func enqueue(_ args: [[UInt8]], timeout: UInt64?, _ done: @escaping (Result<RedisReply, RedisFailure>) -> Void) {
        var command: UnsafeMutablePointer<CChar>?
        let length = withArgv(args) { argc, argv, lengths in redisFormatCommandArgv(&command, argc, argv, lengths) }
        guard length > 0, let command, let link else { return failLater(done, .notSent("could not format a Redis command")) }
        link.socket.append(OutgoingBuffer(copying: UnsafeRawBufferPointer(start: command, count: Int(length))))
        redisFreeCommand(command)
        let t = now
        pending.append((t, t + (timeout ?? self.timeout), done))
        scheduleFlush()
    }

    private func withArgv<R>(_ args: [[UInt8]], _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) -> R) -> R {
        let buffers = args.map { a -> UnsafeMutableRawBufferPointer in
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: max(a.count, 1), alignment: 1)
            b.copyBytes(from: a)
            return b
        }
        defer { buffers.forEach { $0.deallocate() } }
        var argv = buffers.map { UnsafePointer<CChar>?($0.baseAddress!.assumingMemoryBound(to: CChar.self)) }
        let lengths = args.map(\.count)
        return argv.withUnsafeMutableBufferPointer { av in lengths.withUnsafeBufferPointer { body(Int32(args.count), av.baseAddress!, $0.baseAddress!) } }
    }

    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        uv_prepare_start(flusher) { h in
            uv_prepare_stop(h)
            let me = Unmanaged<RedisConnection>.fromOpaque(h!.pointee.data).takeUnretainedValue()
            me.flushScheduled = false
            me.flush()
        }
    }

    /// What is queued, in one write (sealed first over TLS, once its handshake is done).
    private func flush() {
        guard let link, !link.socket.isWriting else { return }
        let written = link.socket.flush(to: UV.stream(link.tcp), owner: link) { request, status in
            let link = Unmanaged<Link>.fromOpaque(request!.pointee.data).takeRetainedValue()
            _ = link.socket.finished()
            link.owner.written(status, on: link)
        }
        if written < 0 { return down("writing to Redis: \(UV.error(Int32(written)))") }
        if !link.socket.isWriting && link.socket.hasMoreToWrite { scheduleFlush() }
    }

    private func written(_ status: Int32, on link: Link) {
        guard link === self.link else { return }
        guard status == 0 else { return down("writing to Redis: \(UV.error(status))") }
        if link.socket.hasMoreToWrite { scheduleFlush() }
    }

    private func received(count: Int) {
        guard reader != nil, let link else { return }
        lastActivity = now
        let bytes = UnsafeRawBufferPointer(start: readBuffer, count: count)
        guard link.socket.isTLS else { return replies(in: bytes) }
        var plain: [UInt8] = []
        do {
            // Handshake replies, and what waited for the handshake, go out next.
            if try link.socket.open(bytes, into: &plain) { scheduleFlush() }
        } catch {
            if case .closed = error { return down("Redis at \(target) closed the connection") }
            return down("Redis at \(target): \(error)")
        }
        if !plain.isEmpty { plain.withUnsafeBytes { replies(in: $0) } }
    }

    /// Plaintext from Redis into hiredis's reader; each reply it completes delivered.
    private func replies(in bytes: UnsafeRawBufferPointer) {
        guard let reader, redisReaderFeed(reader, bytes.baseAddress!.assumingMemoryBound(to: CChar.self), bytes.count) == REDIS_OK else {
            return down("bad reply from Redis")
        }
        while let r = self.reader {
            var raw: UnsafeMutableRawPointer?
            guard redisReaderGetReply(r, &raw) == REDIS_OK else {
                return down("bad reply from Redis: \(withUnsafeBytes(of: r.pointee.errstr) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) })")
            }
            guard let raw else { return }
            let reply = RedisReply(raw.assumingMemoryBound(to: redisReply.self))
            freeReplyObject(raw)
            deliver(reply)
        }
    }

    private func deliver(_ reply: RedisReply) {
        if subscriber, let kind = reply.array?.first?.text, kind == "message" || kind == "pmessage" {
            onMessage?(reply)
            return
        }
        guard pendingHead < pending.count else { return down("an answer from Redis that nothing asked for") }
        let p = pending[pendingHead]
        pendingHead += 1
        if pendingHead > 64, pendingHead * 2 > pending.count {
            pending.removeFirst(pendingHead)
            pendingHead = 0
        }
        lastRoundTrip = Double(now - p.sent)
        p.done(.success(reply))
    }
}
