import NavSync
import CUV
import Dispatch
@preconcurrency import Glibc

/// A libuv loop for clients (navclient, the load generator, embedders): WebSocket
/// connections whose output is flushed once per iteration before the loop blocks, and
/// repeating timers. One thread owns it.
public final class ClientLoop {
    package let loop: UnsafeMutablePointer<uv_loop_t>
    private let prepare: UnsafeMutablePointer<uv_prepare_t>
    var flushList: [WebSocketClient] = []
    package let readBuffer: UnsafeMutableRawPointer
    let readBufferSize = 256 * 1024
    /// Masking keys, handshake nonces and reconnect jitter (RFC 6455 section 5.3 wants
    /// masking keys unpredictable: the default is the system's generator; tests may
    /// pass a seeded one).
    var random: any RandomNumberGenerator
    /// Live timers, by identity: a thousand connections each with a close timer must
    /// not make cancelling one a search of all (closing them all was quadratic).
    private var timers: [ObjectIdentifier: Timer] = [:]
    /// What `wss://` connections trust: set it for `--cacert`; by default the
    /// system's CAs (made at the first `wss://` connection).
    public var tls: TLSContext?
    /// Inflates the compressed messages of every connection whose server does not take
    /// over context between messages (permessage-deflate as navsyncd speaks it).
    lazy var sharedInflater = Inflater()
    /// Connections with an open handle, kept alive until their close callback.
    var clients: [ObjectIdentifier: WebSocketClient] = [:]
    /// Work posted from other threads (`post`), guarded by `postLock`, run on the loop's
    /// thread when `wakeup` fires.
    private let wakeup: UnsafeMutablePointer<uv_async_t>
    private let postLock: UnsafeMutablePointer<uv_mutex_t>
    private var posted: [@Sendable () -> Void] = []
    /// Set once `run()` is over for good (`endPosts`): posts are refused.
    private var postsEnded = false

    public init(random: any RandomNumberGenerator = SystemRandomNumberGenerator()) {
        self.random = random
        loop = .allocate(capacity: 1)
        uv_loop_init(loop)
        prepare = .allocate(capacity: 1)
        uv_prepare_init(loop, prepare)
        readBuffer = .allocate(byteCount: readBufferSize, alignment: 16)
        postLock = .allocate(capacity: 1)
        uv_mutex_init(postLock)
        wakeup = .allocate(capacity: 1)
        prepare.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_prepare_start(prepare) { h in
            let me = Unmanaged<ClientLoop>.fromOpaque(h!.pointee.data).takeUnretainedValue()
            // A write done at once may lead to more (a close, a reconnect): flushed too.
            while !me.flushList.isEmpty {
                let list = me.flushList
                me.flushList.removeAll(keepingCapacity: true)
                for client in list { client.flush() }
            }
        }
        uv_unref(UV.handle(prepare))   // the flush hook alone does not keep the loop running
        uv_async_init(loop, wakeup) { h in
            Unmanaged<ClientLoop>.fromOpaque(h!.pointee.data).takeUnretainedValue().runPosted()
        }
        wakeup.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_unref(UV.handle(wakeup))    // nor does the door for other threads
    }

    /// The context for a `wss://` connection, the system's CAs unless `tls` was set.
    func clientTLS() throws(TLSError) -> TLSContext {
        if let tls { return tls }
        let made = try TLSContext.client()
        tls = made
        return made
    }

    /// Runs `body` on the loop's thread, from any thread (`uv_async_send` is the one
    /// libuv call that is thread-safe). Posted work runs in order, on a running loop.
    /// Returns false, and `body` never runs, once the owner has called `endPosts()`.
    @discardableResult
    public func post(_ body: @escaping @Sendable () -> Void) -> Bool {
        uv_mutex_lock(postLock)
        guard !postsEnded else {
            uv_mutex_unlock(postLock)
            return false
        }
        posted.append(body)
        uv_mutex_unlock(postLock)
        uv_async_send(wakeup)
        return true
    }

    /// The loop's thread is done with it (`run()` returned for good): work posted so far
    /// runs now, on this thread, and later posts are refused.
    public func endPosts() {
        uv_mutex_lock(postLock)
        postsEnded = true
        uv_mutex_unlock(postLock)
        runPosted()
    }

    /// Whether posted work alone keeps the loop running (a loop serving async callers
    /// on a thread of its own stays up until they are done with it).
    public func keepsRunningForPosts(_ on: Bool) {
        if on { uv_ref(UV.handle(wakeup)) } else { uv_unref(UV.handle(wakeup)) }
    }

    private func runPosted() {
        uv_mutex_lock(postLock)
        let work = posted
        posted = []
        uv_mutex_unlock(postLock)
        for body in work { body() }
    }

    /// A loop on a thread of its own: `setUp` runs there first and its result comes
    /// back to the caller; then the loop runs, kept up by `keepsRunningForPosts(true)`
    /// until the owner lets it go (`keepsRunningForPosts(false)`, posted) and nothing is
    /// left to do. Used by `SessionClient.running` and `LibuvTransport`.
    /// Signalled when a loop on a thread of its own (`onThreadOfItsOwn`) has ended.
    package let threadEnded = DispatchSemaphore(value: 0)

    public static func onThreadOfItsOwn<T>(_ setUp: sending @escaping (ClientLoop) -> T) -> T {
        let handoff = LoopHandoff<T>()
        startThread {
            let loop = ClientLoop()
            loop.keepsRunningForPosts(true)
            handoff.value = setUp(loop)
            handoff.ready.signal()
            loop.run()
            loop.endPosts()
            loop.shutdown()
            loop.threadEnded.signal()
        }
        handoff.ready.wait()
        return handoff.value!
    }

    /// Call `shutdown()` first. If handles are still open here, running the loop would
    /// call back into a half-destroyed object, so the loop's memory is left as it is.
    deinit {
        guard clients.isEmpty && timers.isEmpty else { return }
        uv_close(UV.handle(prepare), nil)
        uv_close(UV.handle(wakeup), nil)
        uv_run(loop, UV_RUN_NOWAIT)
        uv_loop_close(loop)
        loop.deallocate()
        prepare.deallocate()
        wakeup.deallocate()
        uv_mutex_destroy(postLock)
        postLock.deallocate()
        readBuffer.deallocate()
    }

    /// Cancels every timer, closes every connection at once, and runs the loop until
    /// their close callbacks are done. The loop can then be released.
    public func shutdown() {
        for t in Array(timers.values) { t.cancel() }
        for c in Array(clients.values) { c.abort() }
        uv_run(loop, UV_RUN_DEFAULT)
    }

    /// Runs until `stop()` or until nothing is left to do.
    public func run() {
        signal(SIGPIPE, SIG_IGN)
        uv_run(loop, UV_RUN_DEFAULT)
    }

    /// Ends `run()` after the current iteration.
    public func stop() { uv_stop(loop) }

    /// A fresh masking key (or 4 bytes of a handshake nonce).
    func mask() -> ClientConnectionMachine.Mask {
        let r: UInt64 = random.next()
        return (UInt8(truncatingIfNeeded: r), UInt8(truncatingIfNeeded: r >> 8), UInt8(truncatingIfNeeded: r >> 16), UInt8(truncatingIfNeeded: r >> 24))
    }

    /// Monotonic milliseconds of the loop clock.
    public var now: Int64 { Int64(uv_now(loop)) }

    /// Calls `body` every `interval` ms until the returned timer is cancelled.
    @discardableResult
    public func every(_ interval: Int64, _ body: @escaping () -> Void) -> Timer {
        let t = Timer(self, interval: interval, repeating: true, body)
        timers[ObjectIdentifier(t)] = t
        return t
    }

    /// Calls `body` once after `delay` ms.
    @discardableResult
    public func after(_ delay: Int64, _ body: @escaping () -> Void) -> Timer {
        let t = Timer(self, interval: delay, repeating: false, body)
        timers[ObjectIdentifier(t)] = t
        return t
    }

    func forget(_ timer: Timer) { timers[ObjectIdentifier(timer)] = nil }

    public final class Timer {
        package let handle: UnsafeMutablePointer<uv_timer_t>
        let body: () -> Void
        let repeating: Bool
        unowned let owner: ClientLoop
        private var cancelled = false

        init(_ owner: ClientLoop, interval: Int64, repeating: Bool, _ body: @escaping () -> Void) {
            self.owner = owner
            self.body = body
            self.repeating = repeating
            handle = .allocate(capacity: 1)
            uv_timer_init(owner.loop, handle)
            handle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
            uv_timer_start(handle, { h in
                let t = Unmanaged<Timer>.fromOpaque(h!.pointee.data).takeUnretainedValue()
                t.body()
                if !t.repeating { t.cancel() }
            }, UInt64(max(interval, 0)), repeating ? UInt64(max(interval, 1)) : 0)
        }

        /// Stops the timer; its memory goes in the close callback.
        public func cancel() {
            guard !cancelled else { return }
            cancelled = true
            uv_timer_stop(handle)
            handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
            uv_close(UV.handle(handle)) { h in
                let t = Unmanaged<Timer>.fromOpaque(h!.pointee.data).takeRetainedValue()
                t.handle.deallocate()
            }
            owner.forget(self)
        }
    }
}

/// What a loop's new thread hands back to the thread that started it.
private final class LoopHandoff<T>: @unchecked Sendable {
    var value: T?
    let ready = DispatchSemaphore(value: 0)
}
