import NavSyncLibuv
import Testing
@testable import NavSync
@testable import NavSyncServer
@testable import NavSyncRuntime

/// permessage-deflate with zlib: RFC 7692's examples as byte vectors, round trips, and
/// what a hostile sender may try.
@Suite("permessage-deflate: zlib")
struct DeflateTests {
    @Test func rfc7692Examples() {
        // RFC 7692 7.2.3.1: "Hello" compressed in one frame (no context taken over).
        let hello = Array("Hello".utf8)
        #expect(hello.withUnsafeBytes { Deflater(threshold: 0).compress($0) } == [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00])
        let frame = Deflater(threshold: 0).frame(compressing: OutgoingBuffer(frame: .text, hello), windowBits: 15)
        #expect(Array(frame.bytes.prefix(frame.count)) == [0xC1, 0x07, 0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00])
        let inflater = Inflater()
        #expect(inflater.inflate([0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00], limit: 100) == .success(hello))
        // RFC 7692 7.2.3.3: a stored (uncompressed) block; 7.2.3.4: one with BFINAL set.
        #expect(inflater.inflate([0x00, 0x05, 0x00, 0xFA, 0xFF, 0x48, 0x65, 0x6C, 0x6C, 0x6F, 0x00], limit: 100) == .success(hello))
        #expect(inflater.inflate([0xF3, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00, 0x00], limit: 100) == .success(hello))
    }

    @Test func roundTripsAtEveryWindow() {
        var rng = SystemRandomNumberGenerator()
        let words = ["route", "detail", "params", "{\"id\":", "presentation", "push", "stack", "tabs"]
        for bits in 9...15 {
            let deflater = Deflater(threshold: 0)
            let inflater = Inflater()
            for size in [0, 1, 100, 5_000, 70_000] {
                var text: [UInt8] = []
                while text.count < size { text += Array(words[Int.random(in: 0..<words.count, using: &rng)].utf8) }
                let packed = text.withUnsafeBytes { deflater.compress($0, windowBits: bits) }
                #expect(inflater.inflate(packed, limit: 1 << 20) == .success(text), "\(bits) bits, \(size) bytes")
                if size >= 5_000 { #expect(packed.count < text.count / 3) }
            }
        }
    }

    @Test func bombsAndGarbageAreRefused() {
        let zeros = [UInt8](repeating: 0, count: 4 << 20)
        let bomb = zeros.withUnsafeBytes { Deflater(threshold: 0).compress($0) }
        #expect(bomb.count < 8_000)
        let inflater = Inflater()
        #expect(inflater.inflate(bomb, limit: 1 << 20) == .failure(.messageTooLarge(limit: 1 << 20)))
        #expect(inflater.inflate([0xFF, 0xFF, 0xFF, 0x01, 0x02], limit: 1 << 20) == .failure(.badCompression))
        // The shared inflater is fine for the next message after a failure.
        #expect(inflater.inflate([0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00], limit: 100) == .success(Array("Hello".utf8)))
    }

    @Test func crc32IsZlibsAndTheCoresOwn() {
        let bytes = Array("123456789".utf8)
        #expect(bytes.withUnsafeBytes { crc32($0) } == 0xCBF4_3926)
        var rng = SystemRandomNumberGenerator()
        for n in [0, 1, 7, 64, 1000] {
            let data = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            #expect(data.withUnsafeBytes { crc32($0) } == CRC32.checksum(data))
        }
    }
}
