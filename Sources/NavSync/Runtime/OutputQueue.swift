import CUV

/// The output of one stream, server connection or client WebSocket alike: what was
/// queued since the last flush, and the one write in flight.
///
/// Output is never written from inside the code that produced it: the loop flushes
/// every stream with queued output once per iteration, before it blocks, all of it in
/// one `uv_write` (writev), as Redis's `handleClientsWithPendingWrites` does. While a
/// write is in flight, what arrives waits for the next flush, which batches it.
struct OutputQueue {
    /// Queued since the last flush.
    private var pending: [OutgoingBuffer] = []
    private var pendingBytes = 0
    /// Handed to libuv and not yet written.
    private(set) var inFlightBytes = 0
    private(set) var isWriting = false

    /// Bytes queued or in flight.
    var queuedBytes: Int { pendingBytes + inFlightBytes }
    var hasPending: Bool { !pending.isEmpty }

    mutating func append(_ buffer: OutgoingBuffer) {
        pending.append(buffer)
        pendingBytes += buffer.count
    }

    /// Drops what is queued (not what is in flight: libuv owns it until its callback).
    mutating func discard() {
        pending = []
        pendingBytes = 0
    }

    /// Starts one write of everything queued, if none is in flight. Returns libuv's
    /// error when the write could not start (then no callback comes), else 0. The
    /// owner's `didWrite` is called when it is done; it then calls `finished()`.
    mutating func flush(to stream: UnsafeMutablePointer<uv_stream_t>, owner: WriteOwner) -> Int32 {
        guard !isWriting, !pending.isEmpty else { return 0 }
        let request = WriteRequest(owner: owner, buffers: pending)
        inFlightBytes = pendingBytes
        discard()
        isWriting = true
        let rc = request.bufs.withUnsafeMutableBufferPointer { bufs in
            uv_write(request.req, stream, bufs.baseAddress, UInt32(bufs.count)) { req, status in
                let request = Unmanaged<WriteRequest>.fromOpaque(req!.pointee.data).takeRetainedValue()
                request.owner.didWrite(status)
            }
        }
        if rc != 0 {
            // A failed call never invokes its callback: release the request here.
            Unmanaged<WriteRequest>.fromOpaque(request.req.pointee.data).release()
            isWriting = false
            inFlightBytes = 0
        }
        return rc
    }

    /// The write in flight is done; returns the bytes it carried.
    mutating func finished() -> Int {
        defer { inFlightBytes = 0; isWriting = false }
        return inFlightBytes
    }
}

/// Who is told when a write of its `OutputQueue` is done.
protocol WriteOwner: AnyObject {
    func didWrite(_ status: Int32)
}

/// One `uv_write`: the request and the buffers it points into, kept alive until the
/// write callback (which takes back the +1 reference stored in `req.data`).
final class WriteRequest {
    let req: UnsafeMutablePointer<uv_write_t>
    let owner: WriteOwner
    let buffers: [OutgoingBuffer]
    var bufs: [uv_buf_t]

    init(owner: WriteOwner, buffers: [OutgoingBuffer]) {
        self.owner = owner
        self.buffers = buffers
        req = .allocate(capacity: 1)
        bufs = buffers.map { uv_buf_init($0.bytes.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32($0.count)) }
        req.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    deinit { req.deallocate() }
}
