import NavSync
import CUV

/// The output of one stream, server connection or client WebSocket alike: what was
/// queued since the last flush, and the one write in flight.
///
/// Output is never written from inside the code that produced it: the loop flushes
/// every stream with queued output once per iteration, before it blocks, all of it in
/// one writev (`uv_try_write`, then `uv_write` for what the socket did not take), as
/// Redis's `handleClientsWithPendingWrites` does. While a write is in flight, what
/// arrives waits for the next flush, which batches it.
///
/// Queued frames are references: a broadcast is encoded once and the same buffer is
/// queued on every member, counted by a plain per-buffer holder count rather than an
/// atomic retain per member (`OutgoingBuffer.holders`; the queues of one buffer all
/// live on one loop thread). Copying it into a contiguous buffer per connection instead
/// (Redis's way) is slower here: the copies of many members no longer fit in the cache
/// the kernel then copies them from (docs/architecture.md, "Fan-out, per member and
/// patch").
///
/// A value in its owner: one write request and its buffer lists, reused by every flush
/// while the stream is busy (only one write is ever in flight), so a flush allocates
/// nothing. The owner passes a C callback that takes back the retained reference the
/// request holds.
package struct OutputQueue: ~Copyable {
    // In the order a send reads them (the owner's first cache lines): the byte
    // counts, then the lists it appends to.
    private var pendingBytes = 0
    private(set) var inFlightBytes = 0
    /// Queued since the last flush, and their descriptors for `uv_write` (made as they
    /// are queued, so a flush walks nothing).
    private var pending = RawList<Unmanaged<OutgoingBuffer>>()
    private var pendingBufs = RawList<uv_buf_t>()
    /// Handed to libuv and not yet written (kept alive until the callback). Their
    /// descriptors are not kept: `uv_write` copies them.
    private var inFlight = RawList<Unmanaged<OutgoingBuffer>>()
    /// Made by the first flush, freed by `trim()` when the stream is idle.
    private var request: UnsafeMutablePointer<uv_write_t>?
    private(set) var isWriting = false

    package init() {}

    deinit {
        request?.deallocate()
        Self.letGo(of: pending.elements)
        Self.letGo(of: inFlight.elements)
    }

    /// Takes this queue's hold off each buffer and empties the list.
    private static func letGo(_ list: inout RawList<Unmanaged<OutgoingBuffer>>, keepingCapacity: Bool) {
        letGo(of: list.elements)
        list.removeAll(keepingCapacity: keepingCapacity)
    }

    /// Takes this queue's hold off each buffer; the last holder releases it.
    private static func letGo(of list: UnsafeBufferPointer<Unmanaged<OutgoingBuffer>>) {
        for held in list {
            var last = false
            held._withUnsafeGuaranteedRef { b in
                b.holders -= 1
                last = b.holders == 0
            }
            if last { held.release() }
        }
    }

    /// Frees the write request and the lists' storage while nothing is queued or in
    /// flight (the owner calls this from its once-a-second tick): an idle stream
    /// holds no output memory, a busy one allocates nothing per flush.
    package mutating func trim() {
        guard !isWriting, pending.isEmpty else { return }
        request?.deallocate()
        request = nil
        pending.removeAll(keepingCapacity: false); pendingBufs.removeAll(keepingCapacity: false)
        inFlight.removeAll(keepingCapacity: false)
    }

    /// The longest lists kept for the next flush (6 KiB for the two; a burst's longer
    /// ones are freed). A busy member reuses them, and `trim()` frees them once it is
    /// idle: at 64, members of a session sent 64 commands at a time grew theirs from 4
    /// again at every flush (malloc showed in fan-out profiles).
    package static var listsKept: Int { 256 }

    /// Bytes queued or in flight.
    package var queuedBytes: Int { pendingBytes + inFlightBytes }
    package var hasPending: Bool { !pending.isEmpty }

    package mutating func append(_ buffer: OutgoingBuffer) {
        if buffer.holders == 0 { _ = Unmanaged.passRetained(buffer) }
        buffer.holders += 1
        pending.append(Unmanaged.passUnretained(buffer))
        // Made in place: uv_buf_init is a call through the PLT per member.
        pendingBufs.append(uv_buf_t(base: buffer.bytes.baseAddress!.assumingMemoryBound(to: CChar.self), len: buffer.count))
        pendingBytes += buffer.count
    }

    /// Hands each queued buffer to `body`, in order, and lets go of them as if written
    /// (TLS seals them into a queue of its own). Returns the bytes handed over.
    package mutating func drain(_ body: (UnsafeRawBufferPointer) -> Void) -> Int {
        for held in pending.elements {
            held._withUnsafeGuaranteedRef { body(UnsafeRawBufferPointer($0.bytes)) }
        }
        let drained = pendingBytes
        discard()
        return drained
    }

    /// Drops what is queued (not what is in flight: libuv owns it until its callback).
    package mutating func discard() {
        letGoPending(keepingStorage: false)
    }

    /// Lets go of everything queued. With `keepingStorage`, the lists keep their storage
    /// for the next flush, unless a burst made them longer than `listsKept`.
    private mutating func letGoPending(keepingStorage: Bool) {
        let keep = keepingStorage && pending.count <= Self.listsKept
        Self.letGo(&pending, keepingCapacity: keep)
        pendingBufs.removeAll(keepingCapacity: keep)
        pendingBytes = 0
    }

    /// Writes everything queued, if no write is in flight. First as much as the socket
    /// takes at once (`uv_try_write`): usually all of it, and then the buffers are let
    /// go while they are still in cache, with no request and no callback in the next
    /// iteration to come back to this stream (as the C limit server and Redis do). What
    /// the socket did not take goes in one `uv_write`, whose request holds a retained
    /// reference to `owner` that `callback` takes back (the request's `data`), so the
    /// owner and this queue live until libuv is done with the bytes.
    /// Returns the bytes written at once (the rest, if any, is then in flight:
    /// `isWriting`), or libuv's error, when nothing was started and no callback comes.
    package mutating func flush(to stream: UnsafeMutablePointer<uv_stream_t>, owner: AnyObject, callback: uv_write_cb) -> Int {
        guard !isWriting, !pending.isEmpty else { return 0 }
        let tried = Int(uv_try_write(stream, pendingBufs.base, UInt32(pendingBufs.count)))
        if tried < 0 && tried != Int(UV_EAGAIN.rawValue) { return tried }
        let written = max(tried, 0)
        if written == pendingBytes {
            letGoPending(keepingStorage: true)
            return written
        }
        if written > 0 { dropWritten(written) }
        let request = self.request ?? .allocate(capacity: 1)
        self.request = request
        let retained = Unmanaged.passRetained(owner)
        request.pointee.data = retained.toOpaque()
        // libuv copies the buffer descriptors; the bytes stay in `inFlight` until the callback.
        let rc = uv_write(request, stream, pendingBufs.base, UInt32(pendingBufs.count), callback)
        pending.exchange(with: &inFlight)
        pendingBufs.removeAll(keepingCapacity: pendingBufs.count <= Self.listsKept)
        inFlightBytes = pendingBytes
        pendingBytes = 0
        isWriting = true
        if rc != 0 {
            retained.release()
            _ = finished()
            return Int(rc)
        }
        return written
    }

    /// Takes the first `written` bytes off what is queued: the buffers written whole
    /// are let go, and the one written in part is queued from where the write stopped.
    private mutating func dropWritten(_ written: Int) {
        var whole = 0, left = written
        while left >= pendingBufs.elements[whole].len {
            left -= pendingBufs.elements[whole].len
            whole += 1
        }
        Self.letGo(of: UnsafeBufferPointer(rebasing: pending.elements[..<whole]))
        pending.removeFirst(whole)
        pendingBufs.removeFirst(whole)
        pendingBufs.modifyFirst { $0.base += left; $0.len -= left }
        pendingBytes -= written
    }

    /// The write in flight is done; returns the bytes it carried.
    package mutating func finished() -> Int {
        let written = inFlightBytes
        Self.letGo(&inFlight, keepingCapacity: inFlight.count <= Self.listsKept)
        inFlightBytes = 0
        isWriting = false
        return written
    }
}

/// A growable list of plain values in memory it owns: appending checks the capacity
/// and stores, without an array's uniqueness check and storage header, which showed
/// in the per-member loop of a broadcast (the count lives in the owner, which the loop
/// touches anyway).
package struct RawList<Element: BitwiseCopyable>: ~Copyable {
    private(set) var base: UnsafeMutablePointer<Element>?
    private(set) var count = 0
    private var capacity = 0

    package init() {}

    deinit { base?.deallocate() }

    package var isEmpty: Bool { count == 0 }
    package var elements: UnsafeBufferPointer<Element> { UnsafeBufferPointer(start: base, count: count) }

    @inline(__always)
    package mutating func append(_ element: Element) {
        if count == capacity { grow() }
        base.unsafelyUnwrapped[count] = element
        count += 1
    }

    @inline(never)
    private mutating func grow() {
        capacity = max(4, capacity * 2)
        let larger = UnsafeMutablePointer<Element>.allocate(capacity: capacity)
        if let base {
            larger.initialize(from: base, count: count)
            base.deallocate()
        }
        base = larger
    }

    package mutating func removeAll(keepingCapacity: Bool) {
        count = 0
        guard !keepingCapacity else { return }
        base?.deallocate()
        base = nil
        capacity = 0
    }

    /// Removes the first `n` elements, moving the rest to the front.
    package mutating func removeFirst(_ n: Int) {
        guard n > 0, let base else { return }
        base.update(from: base + n, count: count - n)
        count -= n
    }

    package mutating func modifyFirst(_ body: (inout Element) -> Void) {
        precondition(count > 0)
        body(&base.unsafelyUnwrapped[0])
    }

    package mutating func exchange(with other: inout RawList) {
        swap(&base, &other.base)
        swap(&count, &other.count)
        swap(&capacity, &other.capacity)
    }
}
