import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

/// Byte vectors for the RFC 6455 codec. Each hostile vector says what it claims.
@Suite("WebSocket codec")
struct WebSocketCodecTests {
    func decode(_ bytes: [UInt8], role: WebSocketDecoder.Role = .server, max: Int = 1 << 20, byteAtATime: Bool = false)
        -> (events: [WebSocketDecoder.Event], error: WebSocketError?) {
        var d = WebSocketDecoder(role: role, maxMessage: max)
        guard byteAtATime else { return d.feed(bytes) }
        var events: [WebSocketDecoder.Event] = []
        for b in bytes {
            let r = d.feed([b])
            events += r.events
            if let e = r.error { return (events, e) }
        }
        return (events, nil)
    }

    static let hello = Array("Hello".utf8)

    @Test(arguments: [false, true])
    func rfc6455Section5_7Examples(byteAtATime: Bool) {
        // A single-frame unmasked text message (as a client receives it).
        #expect(decode([0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f], role: .client, byteAtATime: byteAtATime).events == [.text(Self.hello)])
        // A single-frame masked text message (as a server receives it).
        #expect(decode([0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58], byteAtATime: byteAtATime).events == [.text(Self.hello)])
        // A fragmented unmasked text message: "Hel" then "lo".
        #expect(decode([0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f], role: .client, byteAtATime: byteAtATime).events == [.text(Self.hello)])
        // Unmasked ping, and a masked pong, each with "Hello".
        #expect(decode([0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f], role: .client, byteAtATime: byteAtATime).events == [.ping(Self.hello)])
        #expect(decode([0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58], byteAtATime: byteAtATime).events == [.pong(Self.hello)])
        // 256 bytes binary in a single unmasked frame (16-bit length).
        let b256 = (0..<256).map { UInt8($0 & 0xFF) }
        #expect(decode([0x82, 0x7E, 0x01, 0x00] + b256, role: .client, byteAtATime: byteAtATime).events == [.binary(b256)])
        // 64 KiB binary in a single unmasked frame (64-bit length).
        let b64k = [UInt8](repeating: 7, count: 65536)
        #expect(decode([0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0] + b64k, role: .client).events == [.binary(b64k)])
    }

    @Test func encoderProducesTheSameVectors() {
        #expect(WebSocketEncoder.frame(.text, Self.hello) == [0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f])
        #expect(WebSocketEncoder.frame(.text, Self.hello, mask: (0x37, 0xfa, 0x21, 0x3d)) == [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58])
        #expect(WebSocketEncoder.header(.binary, length: 256) == [0x82, 0x7E, 0x01, 0x00])
        #expect(WebSocketEncoder.header(.binary, length: 65536) == [0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0])
        // Minimal lengths at every boundary.
        #expect(WebSocketEncoder.header(.binary, length: 125) == [0x82, 125])
        #expect(WebSocketEncoder.header(.binary, length: 126) == [0x82, 126, 0, 126])
        #expect(WebSocketEncoder.header(.binary, length: 65535) == [0x82, 126, 0xFF, 0xFF])
        #expect(WebSocketEncoder.close(1000) == [0x88, 0x02, 0x03, 0xE8])
        // A reason longer than a control frame allows is cut on a UTF-8 boundary.
        let long = WebSocketEncoder.close(1001, reason: String(repeating: "é", count: 100))
        #expect(long.count <= 127 && decode(long, role: .client).events.count == 1)
    }




    @Test func roundTripsEverySizeAndMask() {
        for size in [0, 1, 125, 126, 127, 65535, 65536, 200_000] {
            let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 * 31) }
            let masked = WebSocketEncoder.frame(.binary, payload, mask: (1, 2, 3, 4))
            #expect(decode(masked).events == [.binary(payload)], "size \(size)")
        }
    }

    @Test func manyFramesInOneRead() {
        let frames = WebSocketEncoder.frame(.text, Array("a".utf8), mask: (9, 9, 9, 9))
            + WebSocketEncoder.frame(.ping, [], mask: (1, 1, 1, 1))
            + WebSocketEncoder.frame(.binary, [1, 2], mask: (0, 0, 0, 0))
        #expect(decode(frames).events == [.text([97]), .ping([]), .binary([1, 2])])
    }

    @Test func controlFramesMayInterleaveWithFragments() {
        let m: (UInt8, UInt8, UInt8, UInt8) = (5, 6, 7, 8)
        let bytes = WebSocketEncoder.frame(.text, Array("Hel".utf8), fin: false, mask: m)
            + WebSocketEncoder.frame(.ping, Array("p".utf8), mask: m)
            + WebSocketEncoder.frame(.continuation, Array("l".utf8), fin: false, mask: m)
            + WebSocketEncoder.frame(.pong, [], mask: m)
            + WebSocketEncoder.frame(.continuation, Array("o".utf8), mask: m)
        #expect(decode(bytes).events == [.ping([112]), .pong([]), .text(Self.hello)])
        #expect(decode(bytes, byteAtATime: true).events == [.ping([112]), .pong([]), .text(Self.hello)])
    }

    @Test func closeFrames() {
        let m: (UInt8, UInt8, UInt8, UInt8) = (1, 2, 3, 4)
        #expect(decode(WebSocketEncoder.frame(.close, [], mask: m)).events == [.close(code: nil, reason: "")])
        #expect(decode(WebSocketEncoder.close(1000, reason: "bye", mask: m)).events == [.close(code: 1000, reason: "bye")])
        #expect(decode(WebSocketEncoder.close(4321, mask: m)).events == [.close(code: 4321, reason: "")])
        for bad: UInt16 in [0, 999, 1004, 1005, 1006, 1012, 1015, 1016, 2999, 5000, 65535] {
            #expect(decode(WebSocketEncoder.frame(.close, [UInt8(bad >> 8), UInt8(bad & 255)], mask: m)).error == .invalidCloseCode(bad), "\(bad)")
        }
        for good: UInt16 in [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 4999] {
            #expect(decode(WebSocketEncoder.frame(.close, [UInt8(good >> 8), UInt8(good & 255)], mask: m)).error == nil, "\(good)")
        }
        #expect(decode(WebSocketEncoder.frame(.close, [3], mask: m)).error == .closePayloadOneByte)
        #expect(decode(WebSocketEncoder.frame(.close, [3, 0xE8, 0xFF], mask: m)).error == .invalidUTF8)
    }

    @Test func hostileVectors() {
        // Client frame without a mask.
        #expect(decode([0x81, 0x05] + Self.hello).error == .badMasking)
        // Server frame with a mask.
        #expect(decode([0x81, 0x85, 0, 0, 0, 0] + Self.hello, role: .client).error == .badMasking)
        // RSV1 set with no extension.
        #expect(decode([0xC1, 0x80, 0, 0, 0, 0]).error == .reservedBits)
        // Reserved opcodes 3 and 0xB.
        #expect(decode([0x83, 0x80, 0, 0, 0, 0]).error == .reservedOpcode(3))
        #expect(decode([0x8B, 0x80, 0, 0, 0, 0]).error == .reservedOpcode(0xB))
        // Claims 16-bit length 5: not minimal.
        #expect(decode([0x82, 0xFE, 0x00, 0x05, 0, 0, 0, 0]).error == .nonMinimalLength)
        // Claims 64-bit length 200: not minimal.
        #expect(decode([0x82, 0xFF, 0, 0, 0, 0, 0, 0, 0, 200, 0, 0, 0, 0]).error == .nonMinimalLength)
        // 64-bit length with the top bit set.
        #expect(decode([0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).error == .lengthTopBit)
        // Claims 2^63-1 bytes: fails at once with 1009, without waiting for them.
        let huge = decode([0x82, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0])
        #expect(huge.error == .messageTooLarge(limit: 1 << 20) && huge.error?.closeCode == 1009)
        // Claims 16385 bytes against a 16 KiB limit.
        #expect(decode([0x82, 0xFE, 0x40, 0x01, 0, 0, 0, 0], max: 16384).error == .messageTooLarge(limit: 16384))
        // Fragments that add up past the limit.
        let part = WebSocketEncoder.frame(.binary, [UInt8](repeating: 1, count: 10_000), fin: false, mask: (0, 0, 0, 0))
        let more = WebSocketEncoder.frame(.continuation, [UInt8](repeating: 1, count: 10_000), mask: (0, 0, 0, 0))
        #expect(decode(part + more, max: 16384).error == .messageTooLarge(limit: 16384))
        // A ping of 126 bytes; a fragmented ping.
        #expect(decode(WebSocketEncoder.frame(.ping, [UInt8](repeating: 0, count: 126), mask: (0, 0, 0, 0))).error == .controlFrameTooLong)
        #expect(decode(WebSocketEncoder.frame(.ping, [], fin: false, mask: (0, 0, 0, 0))).error == .fragmentedControlFrame)
        // A continuation with nothing to continue; a new text inside a fragmented one.
        #expect(decode(WebSocketEncoder.frame(.continuation, [1], mask: (0, 0, 0, 0))).error == .unexpectedContinuation)
        #expect(decode(WebSocketEncoder.frame(.text, [97], fin: false, mask: (0, 0, 0, 0)) + WebSocketEncoder.frame(.text, [97], mask: (0, 0, 0, 0))).error == .expectedContinuation)
    }

    @Test func truncatedFramesWaitAndFailNothing() {
        let frame = WebSocketEncoder.frame(.text, Self.hello, mask: (1, 2, 3, 4))
        for cut in 0..<frame.count {
            let r = decode(Array(frame.prefix(cut)))
            #expect(r.events.isEmpty && r.error == nil, "cut at \(cut)")
        }
    }

    @Test func utf8FailsFastAcrossFragments() {
        let m: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
        // "é" split across two fragments is fine.
        #expect(decode(WebSocketEncoder.frame(.text, [0xC3], fin: false, mask: m) + WebSocketEncoder.frame(.continuation, [0xA9], mask: m)).events == [.text([0xC3, 0xA9])])
        // An invalid byte in the first fragment fails before the message ends.
        var d = WebSocketDecoder(role: .server, maxMessage: 1 << 20)
        #expect(d.feed(WebSocketEncoder.frame(.text, [0x61, 0xFF], fin: false, mask: m)).error == .invalidUTF8)
        // Inside a frame whose payload is still arriving: header plus one bad byte.
        var d2 = WebSocketDecoder(role: .server, maxMessage: 1 << 20)
        let frame = WebSocketEncoder.frame(.text, [0x61, 0xC0] + [UInt8](repeating: 0x61, count: 100), mask: m)
        #expect(d2.feed(Array(frame.prefix(8))).error == .invalidUTF8)
        // A message that ends inside a code point.
        #expect(decode(WebSocketEncoder.frame(.text, [0xE2, 0x82], mask: m)).error == .invalidUTF8)
        #expect(decode(WebSocketEncoder.frame(.text, [0xE2, 0x82], mask: m)).error?.closeCode == 1007)
    }

    @Test func utf8Validator() {
        let valid: [[UInt8]] = [[], Array("héllo €𝄞".utf8), [0xED, 0x9F, 0xBF], [0xF4, 0x8F, 0xBF, 0xBF], [0xEF, 0xBF, 0xBF]]
        let invalid: [[UInt8]] = [[0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
                                  [0xF5, 0x80, 0x80, 0x80], [0x80], [0xFE], [0xE2, 0x82], [0xCE, 0xBA, 0xE1]]
        for v in valid { #expect(UTF8Validator.isValid(v), "\(v)") }
        for v in invalid { #expect(!UTF8Validator.isValid(v), "\(v)") }
    }

    @Test func clientHandshake() {
        let url = WebSocketURL(host: "127.0.0.1", port: 7420, target: "/ws?x=1")
        #expect(String(decoding: ClientHandshake.request(url, key: "dGhlIHNhbXBsZSBub25jZQ=="), as: UTF8.self)
                == "GET /ws?x=1 HTTP/1.1\r\nHost: 127.0.0.1:7420\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: navsync.v1\r\n\r\n")
        let ok = Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: navsync.v1\r\n\r\n".utf8)
        #expect(ClientHandshake.response(ok + [0x81, 0x00], key: "dGhlIHNhbXBsZSBub25jZQ==") == .accepted(subprotocol: "navsync.v1", remaining: [0x81, 0x00]))
        #expect(ClientHandshake.response(Array(ok.prefix(30)), key: "dGhlIHNhbXBsZSBub25jZQ==") == .needMore)
        #expect(ClientHandshake.response(ok, key: "AAAAAAAAAAAAAAAAAAAAAA==") == .refused(status: 101, reason: "wrong Sec-WebSocket-Accept"))
        let refused = Array("HTTP/1.1 403 Forbidden\r\nContent-Length: 19\r\n\r\norigin not allowed\n".utf8)
        #expect(ClientHandshake.response(refused, key: "x") == .refused(status: 403, reason: "origin not allowed"))
        // Header names in any case, a line without a colon skipped; bad heads refused.
        let mixed = Array("HTTP/1.1 101 OK\r\nUPGRADE: WebSocket\r\nnot a header\r\nsec-websocket-accept:s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n".utf8)
        #expect(ClientHandshake.response(mixed, key: "dGhlIHNhbXBsZSBub25jZQ==") == .accepted(subprotocol: nil, remaining: []))
        #expect(ClientHandshake.response(Array("HTTP/1.1 101 OK\r\n\r\n".utf8), key: "x") == .refused(status: 101, reason: "no 'Upgrade: websocket'"))
        #expect(ClientHandshake.response(Array("SSH-2.0 hello\r\n\r\n".utf8), key: "x") == .refused(status: 0, reason: "not an HTTP response"))
        #expect(ClientHandshake.response(Array("\r\n\r\n".utf8), key: "x") == .refused(status: 0, reason: "not an HTTP response"))
        #expect(ClientHandshake.response(Array(repeating: UInt8(ascii: "a"), count: 17_000), key: "x") == .refused(status: 0, reason: "response head too large"))
    }

    @Test func sha1AndBase64() {
        #expect(SHA1.hash(Array("abc".utf8)) == [0xa9, 0x99, 0x3e, 0x36, 0x47, 0x06, 0x81, 0x6a, 0xba, 0x3e, 0x25, 0x71, 0x78, 0x50, 0xc2, 0x6c, 0x9c, 0xd0, 0xd8, 0x9d])
        #expect(Base64.encode(SHA1.hash([])) == "2jmj7l5rSw0yVb/vlWAYkK/YBwk=")
        #expect(Base64.encode(Array("any carnal pleas".utf8)) == "YW55IGNhcm5hbCBwbGVhcw==")
        #expect(Base64.decode("YW55IGNhcm5hbCBwbGVhcw==") == Array("any carnal pleas".utf8))
        #expect(Base64.decode("YW55=GNh") == nil && Base64.decode("abc") == nil && Base64.decode("a b=") == nil)
        #expect(Base64.decode("YQ==") == Array("a".utf8) && Base64.decode("YWI=") == Array("ab".utf8) && Base64.decode("YWJj") == Array("abc".utf8))
        #expect(Base64.decode("Y===") == nil && Base64.decode("YQ=a") == nil && Base64.decode("") == [])
        // Every length of padding: the 1 bit and the length in the same block, or not.
        let digests = [55: "ddf57317ef34bfee3b6df83d359098930eb278bc", 56: "a0d492bb0fc889d0eca3bc137066ab6f4f74f369",
                       63: "c55856749bef509bdfe6bfebfc7bf4e793e82132", 64: "bede92be29c3874e1b54ddc77988d606fc857a8e",
                       119: "504e27376a6e0f0dba8295b85cb25dc4dfa17d23", 120: "82134b02fb3f702491be9bed581eeab59334acb2"]
        for (n, hex) in digests {
            let message = (0..<n).map { UInt8(($0 * 7 + 3) % 256) }
            #expect(SHA1.hash(message).map { String($0, radix: 16).leftPadded(2) }.joined() == hex, "\(n) bytes")
        }
        // RFC 6455 section 1.3.
        #expect(WebSocketHandshake.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
