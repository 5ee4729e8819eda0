import NavSyncLibuv
import Testing
@testable import NavSync
@testable import NavSyncServer
@testable import NavSyncRuntime

/// OpenSSL's SHA-1 and base64, which the runtime's handshakes use, against RFC vectors
/// and the core's own (Foundation-only) implementations.
@Suite("Digests")
struct DigestsTests {
    @Test func vectors() {
        // RFC 6455 section 1.3's example handshake.
        #expect(Digests.webSocketAccept("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        // FIPS 180 "abc"; RFC 4648 section 10.
        #expect(Digests.sha1(Array("abc".utf8)).map { String(format: $0) } .joined() == "a9993e364706816aba3e25717850c26c9cd0d89d")
        for (plain, encoded) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")] {
            #expect(Digests.base64(Array(plain.utf8)) == encoded)
        }
    }

    @Test func agreeWithTheCoresOwn() {
        var rng = SystemRandomNumberGenerator()
        for length in [0, 1, 2, 3, 19, 20, 55, 56, 63, 64, 65, 1000] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            #expect(Digests.sha1(bytes) == SHA1.hash(bytes) && Digests.base64(bytes) == Base64.encode(bytes))
            let key = Base64.encode((0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) })
            #expect(Digests.webSocketAccept(key) == WebSocketHandshake.acceptValue(forKey: key))
        }
    }

    private func String(format byte: UInt8) -> Swift.String { (byte < 16 ? "0" : "") + Swift.String(byte, radix: 16) }
}
