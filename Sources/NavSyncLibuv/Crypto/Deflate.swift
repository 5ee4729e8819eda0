import NavSync
import CZlib

/// permessage-deflate's compressor (RFC 7692 section 7.2.1), one per loop: raw
/// deflate, flushed with `Z_SYNC_FLUSH`, its trailing 00 00 FF FF removed, the stream
/// reset after every message (navsyncd never takes over context: that is what lets a
/// broadcast be compressed once for every member). One stream per window size asked for.
public final class Deflater {
    /// Messages shorter than this go uncompressed (`--compression-threshold`).
    public let threshold: Int
    private var streams: [Int: UnsafeMutablePointer<z_stream>] = [:]
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)

    public init(threshold: Int) { self.threshold = threshold }

    deinit {
        for s in streams.values {
            deflateEnd(s)
            s.deallocate()
        }
    }

    private func stream(_ windowBits: Int) -> UnsafeMutablePointer<z_stream> {
        if let s = streams[windowBits] { return s }
        let s = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        s.initialize(to: z_stream())
        // Level 6 (zlib's default): a broadcast is compressed once for all its members.
        precondition(navsync_deflate_init(s, 6, Int32(windowBits)) == Z_OK, "zlib deflateInit2 failed")
        streams[windowBits] = s
        return s
    }

    /// `payload` compressed for one message.
    public func compress(_ payload: UnsafeRawBufferPointer, windowBits: Int = 15) -> [UInt8] {
        let s = stream(windowBits)
        defer { deflateReset(s) }
        var out: [UInt8] = []
        out.reserveCapacity(payload.count / 2 + 64)
        s.pointee.next_in = UnsafeMutablePointer(mutating: payload.baseAddress?.assumingMemoryBound(to: Bytef.self))
        s.pointee.avail_in = UInt32(payload.count)
        repeat {
            scratch.withUnsafeMutableBufferPointer { buffer in
                s.pointee.next_out = buffer.baseAddress
                s.pointee.avail_out = UInt32(buffer.count)
                _ = deflate(s, Z_SYNC_FLUSH)
                out.append(contentsOf: buffer[0..<(buffer.count - Int(s.pointee.avail_out))])
            }
        } while s.pointee.avail_out == 0
        // RFC 7692 7.2.1: the empty stored block the sync flush ends with is left off.
        if out.count >= 4, out.suffix(4).elementsEqual([0, 0, 0xFF, 0xFF]) { out.removeLast(4) }
        return out
    }

    /// A server frame of a whole message, compressed: RSV1 set, unmasked. `frame` is the
    /// message's uncompressed frame (`OutgoingBuffer(text:)`).
    public func frame(compressing frame: OutgoingBuffer, windowBits: Int) -> OutgoingBuffer {
        let payload = frame.payload
        let compressed = compress(payload, windowBits: windowBits)
        let opcode = Opcode(rawValue: frame.bytes[0] & 0x0F) ?? .text
        var bytes = WebSocketEncoder.frame(opcode, compressed)
        bytes[0] |= 0x40   // RSV1: this message is compressed
        return OutgoingBuffer(bytes)
    }
}

/// permessage-deflate's decompressor (RFC 7692 7.2.2). The server's is shared by every
/// connection (it asks clients not to take over context, so each message stands
/// alone); a client whose server keeps its context has one of its own (`keepsContext`).
public final class Inflater: WebSocketInflating, @unchecked Sendable {
    private let s: UnsafeMutablePointer<z_stream>
    private let keepsContext: Bool
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)

    public init(windowBits: Int = 15, keepsContext: Bool = false) {
        s = .allocate(capacity: 1)
        s.initialize(to: z_stream())
        precondition(navsync_inflate_init(s, Int32(windowBits)) == Z_OK, "zlib inflateInit2 failed")
        self.keepsContext = keepsContext
    }

    deinit {
        inflateEnd(s)
        s.deallocate()
    }

    public func inflate(_ payload: [UInt8], limit: Int) -> Result<[UInt8], WebSocketError> {
        if !keepsContext { inflateReset(s) }
        var input = payload
        input += [0, 0, 0xFF, 0xFF]
        var out: [UInt8] = []
        let failure: WebSocketError? = input.withUnsafeMutableBufferPointer { inBuf in
            s.pointee.next_in = inBuf.baseAddress
            s.pointee.avail_in = UInt32(inBuf.count)
            while true {
                var rc: Int32 = Z_OK
                scratch.withUnsafeMutableBufferPointer { buffer in
                    s.pointee.next_out = buffer.baseAddress
                    s.pointee.avail_out = UInt32(buffer.count)
                    rc = CZlib.inflate(s, Z_SYNC_FLUSH)
                    out.append(contentsOf: buffer[0..<(buffer.count - Int(s.pointee.avail_out))])
                }
                if out.count > limit { return .messageTooLarge(limit: limit) }
                switch rc {
                case Z_OK, Z_BUF_ERROR:
                    // Done once the input is used up and the output had room to spare.
                    if s.pointee.avail_in == 0 && s.pointee.avail_out > 0 { return nil }
                    if rc == Z_BUF_ERROR && s.pointee.avail_out > 0 { return .badCompression }
                case Z_STREAM_END:
                    // A final block (BFINAL, RFC 7692 7.2.3.4): the message ends with it,
                    // and the stream starts again for the next one.
                    inflateReset(s)
                    return nil
                default:
                    return .badCompression
                }
            }
        }
        if let failure {
            inflateReset(s)
            return .failure(failure)
        }
        return .success(out)
    }
}

/// CRC-32 (IEEE 802.3), zlib's: the journal's record checksum.
public func crc32(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
    UInt32(CZlib.crc32(UInt(crc), bytes.baseAddress?.assumingMemoryBound(to: Bytef.self), UInt32(bytes.count)))
}
