import NavSync

/// Bytes queued for one or many connections. A broadcast is encoded once, straight
/// into one buffer as a WebSocket frame, and the same buffer is queued on every member
/// (reference counted), so a patch for 1,000 members costs one serialization and no
/// copy, whatever the member count.
public final class OutgoingBuffer {
    public let bytes: UnsafeMutableRawBufferPointer

    /// For a whole server frame (unmasked): its payload, past the 2, 4 or 10 header bytes.
    public var payload: UnsafeRawBufferPointer {
        let length = bytes[1] & 0x7F
        let header = length == 127 ? 10 : length == 126 ? 4 : 2
        return UnsafeRawBufferPointer(rebasing: bytes[header..<count])
    }
    /// The allocation `bytes` lies in (a frame written in place starts a few bytes in).
    private let storage: UnsafeMutableRawPointer

    public init(_ source: [UInt8]) {
        let storage = source.withUnsafeBytes(Self.copy)
        self.storage = storage.baseAddress!
        bytes = storage
        count = source.count
    }

    /// A copy of bytes made elsewhere (a command hiredis formatted).
    public init(copying source: UnsafeRawBufferPointer) {
        let storage = Self.copy(source)
        self.storage = storage.baseAddress!
        bytes = storage
        count = source.count
    }

    private static func copy(_ source: UnsafeRawBufferPointer) -> UnsafeMutableRawBufferPointer {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(source.count, 1), alignment: 1)
        if let base = source.baseAddress { storage.baseAddress!.copyMemory(from: base, byteCount: source.count) }
        return storage
    }

    /// An unmasked WebSocket frame of `payload`, header and payload in one allocation.
    public convenience init(frame opcode: Opcode, _ payload: [UInt8]) {
        self.init(frame: opcode, capacity: payload.count) { $0.append(contentsOf: payload) }
    }

    /// An unmasked frame whose payload `write` writes behind room for the longest
    /// header; the header then goes into the end of the room. A message is encoded and
    /// framed in one pass into one allocation, not three allocations (payload, header,
    /// frame) and two copies of the message.
    ///
    /// With `rest`, the frame's payload goes on for that many bytes in the buffers
    /// queued after this one (a message sent in parts, `JoinedFrames`): the header
    /// counts them.
    package init(frame opcode: Opcode, capacity: Int, followedBy rest: Int = 0, _ write: (inout ByteWriter) -> Void) {
        let room = WebSocketEncoder.maxServerHeader
        let (base, end) = ByteWriter.allocation(room: room, capacity: capacity, write)
        let length = end - room
        let header = WebSocketEncoder.writeHeader(opcode, length: length + rest, endingAt: base + room)
        storage = UnsafeMutableRawPointer(base)
        count = header + length
        bytes = UnsafeMutableRawBufferPointer(start: storage + (room - header), count: count)
    }

    /// Bytes `write` writes, unframed (a part of a frame), in one allocation.
    package init(capacity: Int, _ write: (inout ByteWriter) -> Void) {
        let (base, end) = ByteWriter.allocation(room: 0, capacity: capacity, write)
        storage = UnsafeMutableRawPointer(base)
        count = end
        bytes = UnsafeMutableRawBufferPointer(start: storage, count: count)
    }

    public let count: Int

    /// Output queues holding this buffer (loop thread only). The first to queue it
    /// retains it once for all of them and the last to let go releases it: a broadcast
    /// to 1,000 members costs one atomic retain and release, not 1,000 (`OutputQueue`).
    @exclusivity(unchecked) package var holders = 0

    deinit { storage.deallocate() }
}
