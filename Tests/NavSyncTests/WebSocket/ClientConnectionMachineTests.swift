import Testing
@testable import NavSync
import TestSupport

/// The client's connection machine byte for byte: no socket, no clock, no sleep. Every
/// mask is 01 02 03 04, so every frame the client writes is known in advance.
@Suite("Client connection machine")
struct ClientConnectionMachineTests {
    static let mask: ClientConnectionMachine.Mask = (1, 2, 3, 4)
    /// Sixteen bytes of 01 02 03 04, in base64.
    static let key = "AQIDBAECAwQBAgMEAQIDBA=="

    func machine(compression: Bool = false, inflater: @escaping (PerMessageDeflate.ClientAgreement) -> (any WebSocketInflating)? = { _ in nil })
        -> ClientConnectionMachine {
        ClientConnectionMachine(.init(url: WebSocketURL(host: "127.0.0.1", port: 7420, target: "/ws"), offersCompression: compression),
                                masks: { Self.mask }, inflater: inflater)
    }

    func response(extensions: String? = nil, accept: String = WebSocketHandshake.acceptValue(forKey: key)) -> [UInt8] {
        var text = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(accept)\r\n"
        text += "Sec-WebSocket-Protocol: navsync.v1\r\n"
        if let extensions { text += "Sec-WebSocket-Extensions: \(extensions)\r\n" }
        return Array((text + "\r\n").utf8)
    }

    /// A machine through its handshake.
    func open() -> ClientConnectionMachine {
        var m = machine()
        _ = m.connected(now: 0)
        _ = m.received(response(), now: 1)
        return m
    }

    @Test func theUpgradeRequestByteForByteAndItsAnswerInPieces() {
        var m = machine()
        #expect(m.received([1, 2, 3], now: 0).isEmpty, "nothing is read before the socket connects")
        let request = "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:7420\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(Self.key)\r\n"
            + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: navsync.v1\r\n\r\n"
        #expect(m.connected(now: 0) == [.write(Array(request.utf8))])
        // The answer split inside a header, and a frame right behind it in the same read.
        let answer = response() + [0x81, 0x02] + Array("hi".utf8)
        #expect(m.received(Array(answer[..<40]), now: 1).isEmpty)
        #expect(m.received(Array(answer[40...]), now: 2) == [.opened(subprotocol: "navsync.v1", deflate: nil), .text(Array("hi".utf8))])
        #expect(m.isOpen)
    }

    @Test func everyFrameOutIsMasked() {
        var m = open()
        #expect(m.send(text: Array("hi".utf8)) == [.write([0x81, 0x82, 1, 2, 3, 4, UInt8(ascii: "h") ^ 1, UInt8(ascii: "i") ^ 2])])
        #expect(m.received([0x89, 0x01, UInt8(ascii: "x")], now: 5) == [.write([0x8A, 0x81, 1, 2, 3, 4, UInt8(ascii: "x") ^ 1])],
                "a ping is answered with a masked pong of its payload")
        #expect(m.received([0x8A, 0x00], now: 6).isEmpty, "a pong is taken quietly")
    }

    @Test func aCloseFromTheServerIsAnsweredWithItsCode() {
        var m = open()
        let close: [UInt8] = [0x88, 0x05, 0x03, 0xE9] + Array("bye".utf8)
        let text: [UInt8] = [0x81, 0x01, 0x61]
        let reply: [UInt8] = [0x88, 0x82, 1, 2, 3, 4, 0x03 ^ 1, 0xE9 ^ 2]
        let expected: [ClientConnectionMachine.Action] = [.text([0x61]), .write(reply), .closeSocket(code: 1001, reason: "bye")]
        #expect(m.received(text + close, now: 5) == expected)
        #expect(m.isClosed && m.received([0x81, 0x01, 0x61], now: 6).isEmpty && m.send(text: [0x61]).isEmpty)
    }

    @Test func ourCloseWaitsForTheReplyAndNoLongerThanTheTimeout() {
        var m = open()
        #expect(m.close(code: 1000, reason: "", now: 10) == [.write([0x88, 0x82, 1, 2, 3, 4, 0x03 ^ 1, 0xE8 ^ 2])])
        #expect(m.received([0x81, 0x01, 0x61], now: 11).isEmpty, "a message after our close is not delivered")
        #expect(m.send(text: [0x61]).isEmpty && m.close(now: 12).isEmpty)
        var late = m
        #expect(m.received([0x88, 0x02, 0x03, 0xE8], now: 20) == [.closeSocket(code: 1000, reason: "")], "the reply ends it")
        #expect(late.tick(now: 3_009).isEmpty)
        #expect(late.tick(now: 3_010) == [.closeSocket(code: 1000, reason: "no close reply")])
    }

    @Test func aRefusedOrWrongUpgradeSaysWhy() {
        var m = machine()
        _ = m.connected(now: 0)
        #expect(m.received(Array("HTTP/1.1 401 Unauthorized\r\nContent-Length: 10\r\n\r\nbad token\n".utf8), now: 1)
                == [.closeSocket(code: nil, reason: "the server refused the upgrade: 401 bad token")])
        var wrong = machine()
        _ = wrong.connected(now: 0)
        #expect(wrong.received(response(accept: "nope"), now: 1) == [.closeSocket(code: nil, reason: "the server refused the upgrade: 101 wrong Sec-WebSocket-Accept")])
        var unoffered = machine()
        _ = unoffered.connected(now: 0)
        guard case .closeSocket(nil, let why)? = unoffered.received(response(extensions: "permessage-deflate"), now: 1).first else {
            Issue.record("an extension not offered was taken"); return
        }
        #expect(why.contains("an extension not offered"))
    }

    @Test func aServerThatNeverAnswersTheUpgradeIsGivenUp() {
        var m = machine()
        _ = m.connected(now: 100)
        #expect(m.tick(now: 10_099).isEmpty)
        #expect(m.tick(now: 10_100) == [.closeSocket(code: nil, reason: "the server did not answer the upgrade in 10 s")])
        var before = machine()
        #expect(before.close(code: 1000, reason: "bye", now: 0) == [.closeSocket(code: 1000, reason: "bye")], "a close before the socket opens just ends")
    }

    @Test func aServerThatBreaksTheProtocolIsFailedWithItsCode() {
        var m = open()
        // Servers never mask (RFC 6455 5.1): 1002, a masked close frame saying why, then TCP.
        let actions = m.received([0x81, 0x81, 9, 9, 9, 9, 0x61], now: 5)
        let reason = "wrong masking for this direction"
        #expect(actions == [.write(WebSocketEncoder.close(1002, reason: reason, mask: Self.mask)),
                            .closeSocket(code: 1002, reason: "the server broke the protocol: \(reason)")])
        var small = ClientConnectionMachine(.init(url: .default, offersCompression: false, maxMessage: 4), masks: { Self.mask })
        _ = small.connected(now: 0)
        _ = small.received(response(), now: 0)
        guard case .closeSocket(1009, _)? = small.received([0x81, 0x05] + Array("hello".utf8), now: 1).last else {
            Issue.record("a message over maxMessage is not 1009"); return
        }
    }

    @Test func permessageDeflateIsOfferedAndItsAnswerChoosesTheInflater() {
        var asked: [PerMessageDeflate.ClientAgreement] = []
        var m = machine(compression: true, inflater: { asked.append($0); return nil })
        guard case .write(let request)? = m.connected(now: 0).first else { Issue.record("no request"); return }
        #expect(String(decoding: request, as: UTF8.self).contains("Sec-WebSocket-Extensions: \(PerMessageDeflate.clientOffer)\r\n"))
        let opened = m.received(response(extensions: "permessage-deflate; server_no_context_takeover"), now: 1)
        let agreed = PerMessageDeflate.ClientAgreement(serverNoContextTakeover: true, serverWindowBits: 15)
        #expect(opened == [.opened(subprotocol: "navsync.v1", deflate: agreed)] && m.deflate == agreed && asked == [agreed])
    }
}
