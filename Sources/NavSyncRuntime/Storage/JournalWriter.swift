import NavSync
import NavSyncServer
import NavSyncLibuv
import CUV

/// The journal's writer thread (docs/protocol.md, "Durable sessions (--data DIR)": journal I/O never blocks the loop).
///
/// The loop thread queues one batch per loop iteration; the writer takes every batch
/// queued since it last looked, writes them as one (`JournalFiles.run`: one write and,
/// with `--fsync batch`, one sync per session) and hands the outcome back through a
/// `uv_async_t`. While it syncs, the next iterations' batches queue up behind it, so
/// the more writers wait, the more each sync covers (group commit), and a busy loop
/// never delays the next sync.
///
/// The queue and the results are guarded by a libuv mutex; `files` belongs to the
/// writer thread once the writer has started. The async handle keeps the loop alive
/// only while batches are outstanding, so a server that stops waits for its last
/// writes and no longer.
final class JournalWriter: @unchecked Sendable {
    struct Result {
        /// The newest batch this outcome covers, and how many batches it merged.
        var through: Int
        var batches: Int
        var outcome: JournalFiles.Outcome
    }

    private let files: JournalFiles
    private let lock = UnsafeMutablePointer<uv_mutex_t>.allocate(capacity: 1)
    private let wake = UnsafeMutablePointer<uv_cond_t>.allocate(capacity: 1)
    private let async = UnsafeMutablePointer<uv_async_t>.allocate(capacity: 1)
    private var thread = uv_thread_t()
    /// Guarded by `lock`.
    private var queue: [(number: Int, ops: [JournalFiles.Op])] = []
    private var results: [Result] = []
    private var stopping = false
    /// Loop thread only: batches queued and not yet answered.
    private var outstanding = 0
    private let onResults: ([Result]) -> Void

    init(files: JournalFiles, loop: UnsafeMutablePointer<uv_loop_t>, onResults: @escaping ([Result]) -> Void) {
        self.files = files
        self.onResults = onResults
        uv_mutex_init(lock)
        uv_cond_init(wake)
        uv_async_init(loop, async) { h in
            Unmanaged<JournalWriter>.fromOpaque(h!.pointee.data).takeUnretainedValue().deliver()
        }
        async.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_unref(UV.handle(async))
        uv_thread_create(&thread, { arg in
            Unmanaged<JournalWriter>.fromOpaque(arg!).takeUnretainedValue().work()
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Stops the thread once the queue is written.
    deinit {
        uv_mutex_lock(lock)
        stopping = true
        uv_cond_signal(wake)
        uv_mutex_unlock(lock)
        uv_thread_join(&thread)
        uv_mutex_destroy(lock)
        uv_cond_destroy(wake)
        lock.deallocate()
        wake.deallocate()
    }

    /// Loop thread, when the server stops: the async handle closes once the batches
    /// outstanding are answered (the loop lives until then).
    func close() {
        closing = true
        if outstanding == 0 { closeHandle() }
    }

    private var closing = false

    private func closeHandle() {
        guard uv_is_closing(UV.handle(async)) == 0 else { return }
        uv_close(UV.handle(async)) { h in UnsafeMutableRawPointer(h!).assumingMemoryBound(to: uv_async_t.self).deallocate() }
    }

    /// Loop thread: queues a batch for the writer.
    func enqueue(_ number: Int, _ ops: [JournalFiles.Op]) {
        uv_mutex_lock(lock)
        queue.append((number, ops))
        uv_cond_signal(wake)
        uv_mutex_unlock(lock)
        if outstanding == 0 { uv_ref(UV.handle(async)) }
        outstanding += 1
    }

    /// Loop thread, from the async handle, and before the loop sleeps (so an outcome
    /// that arrived while the loop was busy goes out in this iteration's flush, not
    /// the next one's): the outcomes written since the last call.
    func deliver() {
        uv_mutex_lock(lock)
        let ready = results
        results = []
        uv_mutex_unlock(lock)
        guard !ready.isEmpty else { return }
        outstanding -= ready.reduce(0) { $0 + $1.batches }
        if outstanding == 0 { uv_unref(UV.handle(async)) }
        onResults(ready)
        if closing && outstanding == 0 { closeHandle() }
    }

    /// The writer thread.
    private func work() {
        while true {
            uv_mutex_lock(lock)
            while queue.isEmpty && !stopping { uv_cond_wait(wake, lock) }
            if queue.isEmpty {
                uv_mutex_unlock(lock)
                return
            }
            let batches = queue
            queue = []
            uv_mutex_unlock(lock)

            let outcome = files.run(batches.flatMap(\.ops))
            uv_mutex_lock(lock)
            results.append(Result(through: batches.last!.number, batches: batches.count, outcome: outcome))
            uv_mutex_unlock(lock)
            uv_async_send(async)
        }
    }
}
