import NavSyncLibuv
@preconcurrency import Glibc
import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport
@testable import NavSyncRuntime

/// The libuv runtime over real sockets on 127.0.0.1, port 0, with `EchoApplication`.
@Suite("Loopback: WebSocket echo server", .serialized)
struct LoopbackTests {
    @Test func echoesTextAndBinaryAtEverySizeBoundary() throws {
        let server = try TestServer()
        defer { server.stop() }
        let c = try RawClient(port: server.port)
        #expect(c.upgrade() == "HTTP/1.1 101 Switching Protocols")
        for size in [0, 125, 126, 65535, 65536, 1 << 20] {
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            c.sendFrame(.binary, bytes)
            #expect(c.next() == .binary(bytes), "binary \(size)")
            let text = [UInt8](repeating: 0x61, count: size)
            c.sendFrame(.text, text)
            #expect(c.next() == .text(text), "text \(size)")
        }
    }

    @Test func listensOnIPv6Loopback() throws {
        let server = try TestServer { $0.host = "::1" }
        defer { server.stop() }
        #expect(server.running.host == "::1")
        let c = try RawClient(port: server.port, ipv6: true)
        #expect(c.upgrade() == "HTTP/1.1 101 Switching Protocols")
        c.sendFrame(.text, Array("six".utf8))
        #expect(c.next() == .text(Array("six".utf8)))
    }

    @Test func refusesAnAddressThatIsNotOne() {
        var config = ServerConfiguration()
        config.host = "not-an-address"
        #expect(throws: ServerError.self) { try Server.startInBackground(configuration: config) { EchoApplication() } }
    }

    @Test func fragmentedMessageWithAPingInside() throws {
        let server = try TestServer()
        defer { server.stop() }
        let c = try RawClient(port: server.port)
        c.upgrade()
        c.sendFrame(.text, Array("frag".utf8), fin: false)
        c.sendFrame(.ping, Array("mid".utf8))
        c.sendFrame(.continuation, Array("men".utf8), fin: false)
        c.sendFrame(.continuation, Array("ted".utf8))
        #expect(c.next() == .pong(Array("mid".utf8)))
        #expect(c.next() == .text(Array("fragmented".utf8)))
        // Byte at a time, header and payload split anywhere.
        for b in WebSocketEncoder.frame(.text, Array("slow".utf8), mask: (1, 2, 3, 4)) { c.send([b]) }
        #expect(c.next() == .text(Array("slow".utf8)))
    }

    @Test func everyViolationClosesWithItsCodeWhileOthersCarryOn() throws {
        let server = try TestServer { $0.connection.maxMessage = 64 * 1024 }
        defer { server.stop() }
        let bystander = try RawClient(port: server.port)
        bystander.upgrade()
        let m: (UInt8, UInt8, UInt8, UInt8) = (1, 2, 3, 4)
        let cases: [(String, [UInt8], UInt16)] = [
            ("unmasked frame", WebSocketEncoder.frame(.text, [97]), 1002),
            ("reserved bit", [0xC1, 0x80, 1, 2, 3, 4], 1002),
            ("reserved opcode", [0x83, 0x80, 1, 2, 3, 4], 1002),
            ("invalid UTF-8", WebSocketEncoder.frame(.text, [0xFF], mask: m), 1007),
            ("too large", WebSocketEncoder.header(.binary, length: 64 * 1024 + 1, mask: m), 1009),
            ("bad close code", WebSocketEncoder.frame(.close, [0x03, 0xE7], mask: m), 1002),
            ("long ping", WebSocketEncoder.frame(.ping, [UInt8](repeating: 0, count: 126), mask: m), 1002),
            ("stray continuation", WebSocketEncoder.frame(.continuation, [97], mask: m), 1002),
            ("non-minimal length", [0x82, 0xFE, 0x00, 0x05, 1, 2, 3, 4], 1002),
        ]
        for (name, bytes, code) in cases {
            let c = try RawClient(port: server.port)
            c.upgrade()
            c.send(bytes)
            #expect(c.closeCode() == .some(code), "\(name)")
            #expect(c.isClosedByPeer(), "\(name): TCP closed after the close frame")
            bystander.sendFrame(.text, Array(name.utf8))
            #expect(bystander.next() == .text(Array(name.utf8)), "bystander after \(name)")
        }
    }

    /// Regression (Autobahn 3.2, 3.3, 4.1.3, 4.1.4, 4.2.3-4.2.5, 5.15 were NON-STRICT): a
    /// valid message and a broken frame in one TCP segment; the echo of the valid one
    /// must go out before the close frame.
    @Test func outputOfValidFramesGoesOutBeforeTheFailure() throws {
        let server = try TestServer()
        defer { server.stop() }
        let m: (UInt8, UInt8, UInt8, UInt8) = (9, 8, 7, 6)
        let broken: [(String, [UInt8])] = [
            ("reserved bit", [0xC1, 0x80, 1, 2, 3, 4]),
            ("reserved opcode", [0x83, 0x80, 1, 2, 3, 4]),
            ("stray continuation", WebSocketEncoder.frame(.continuation, [97], mask: m)),
        ]
        for (name, bytes) in broken {
            let c = try RawClient(port: server.port)
            c.upgrade()
            c.send(WebSocketEncoder.frame(.text, Array("before \(name)".utf8), mask: m) + WebSocketEncoder.frame(.ping, [1], mask: m) + bytes)
            #expect(c.next() == .text(Array("before \(name)".utf8)), "\(name)")
            #expect(c.next() == .pong([1]), "\(name)")
            #expect(c.closeCode() == .some(1002), "\(name)")
        }
    }

    /// Regression: failing a connection while the peer is still sending used to close
    /// the socket with unread input, and the RST could destroy the close frame.
    @Test func thePeerReadsOurCloseFrameEvenWhileItKeepsSending() throws {
        let server = try TestServer { $0.connection.maxMessage = 64 * 1024 }
        defer { server.stop() }
        for _ in 0..<5 {
            let c = try RawClient(port: server.port)
            c.upgrade()
            // Announces 4 MiB (over the limit) and keeps sending payload after the refusal:
            // every byte must still be accepted (no EPIPE), and the close frame read.
            let accepted = c.send(WebSocketEncoder.header(.binary, length: 4 << 20, mask: (1, 2, 3, 4)) + [UInt8](repeating: 0, count: 2 << 20))
            #expect(accepted)
            #expect(c.closeCode() == .some(1009))
        }
    }

    @Test func closeHandshakeEchoesTheCode() throws {
        let server = try TestServer()
        defer { server.stop() }
        let c = try RawClient(port: server.port)
        c.upgrade()
        c.sendFrame(.close, [0x0F, 0xA0, 0x62, 0x79, 0x65])   // 4000 "bye"
        #expect(c.closeCode() == .some(4000))
        #expect(c.isClosedByPeer())
    }

    @Test func aPeerThatVanishesMidFrameIsCleanedUp() throws {
        let server = try TestServer()
        defer { server.stop() }
        let before = server.metric("navsync_connections") ?? -1
        do {
            let c = try RawClient(port: server.port)
            c.upgrade()
            c.send(WebSocketEncoder.header(.binary, length: 1000, mask: (1, 2, 3, 4)) + [1, 2, 3])
        }   // closed here, 997 bytes short
        do {
            let c = try RawClient(port: server.port)
            c.send(Array("GET /ws HTTP/1.1\r\nHost: t\r\nUpg".utf8))   // mid-handshake
        }
        #expect(server.eventually { server.metric("navsync_connections") == before })
    }

    @Test func handshakeTimeoutAndHTTPErrorsOnTheSamePort() throws {
        let server = try TestServer { $0.connection.handshakeTimeout = 200 }
        defer { server.stop() }
        let idle = try RawClient(port: server.port)
        #expect(idle.isClosedByPeer())   // closed within a tick of the timeout
        #expect(server.http("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").hasSuffix("\r\n\r\nok\n"))
        #expect(server.http("GET / HTTP/1.1\r\nHost: t\r\nX: " + String(repeating: "a", count: 70_000) + "\r\n\r\n").hasPrefix("HTTP/1.1 431 "))
        let v8 = try RawClient(port: server.port)
        v8.send(Array("GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n".utf8))
        let head = v8.readHead()
        #expect(head.hasPrefix("HTTP/1.1 426 ") && head.contains("Sec-WebSocket-Version: 13"))
        #expect(server.http("GET /elsewhere HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").hasPrefix("HTTP/1.1 404 "))
    }

    /// Output goes first through `uv_try_write`, and what the socket does not take is
    /// queued from the byte where it stopped, mid-frame: with small socket buffers and a
    /// peer that reads only after sending it all, most flushes are partial. Every frame
    /// must still arrive whole, in order.
    @Test func framesBehindAPartialWriteArriveWholeAndInOrder() throws {
        let server = try TestServer { $0.socketSendBuffer = 8 * 1024 }
        defer { server.stop() }
        let c = try RawClient(port: server.port, receiveBuffer: 4096)
        c.upgrade()
        let frames = (0..<200).map { i in (0..<(1 + i * 37 % 3_000)).map { UInt8(truncatingIfNeeded: $0 &+ i) } }
        for f in frames { c.sendFrame(.binary, f) }
        for (i, f) in frames.enumerated() {
            guard c.next() == .binary(f) else { Issue.record("frame \(i) of \(f.count) bytes"); return }
        }
    }

    /// The output cap drops it; no timer is involved (the write timeout is tested on a
    /// fake clock in `HTTPTests.writeTimeoutOnAFakeClock`). Small kernel send buffers
    /// make the cap, not the kernel, hold what it does not read.
    @Test func aClientThatNeverReadsIsDroppedNotBuffered() throws {
        let server = try TestServer {
            $0.maxQueueBytes = 256 * 1024
            $0.socketSendBuffer = 64 * 1024
        }
        defer { server.stop() }
        let bystander = try RawClient(port: server.port)
        bystander.upgrade()
        let hog = try RawClient(port: server.port, timeout: 1)
        hog.upgrade()
        // Echoes pile up in the kernel, then in the queue, which is capped.
        let message = WebSocketEncoder.frame(.binary, [UInt8](repeating: 1, count: 60_000), mask: (1, 2, 3, 4))
        var flags = fcntl(hog.fd, F_GETFL)
        flags |= O_NONBLOCK
        _ = fcntl(hog.fd, F_SETFL, flags)
        // Send until the server drops the hog (its socket errors), 10 s at the most.
        let deadline = Date.monotonic + 10
        while Date.monotonic < deadline {
            let n = message.withUnsafeBytes { Glibc.send(hog.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno != EAGAIN { break }
            if n < 0 { usleep(10_000) }
            if server.metric("navsync_websockets") == 1 { break }
        }
        #expect(server.eventually(10) { server.metric("navsync_websockets") == 1 }, "the hog is dropped")
        #expect((server.metric("navsync_output_queued_bytes") ?? .max) <= 256 * 1024)
        bystander.sendFrame(.text, Array("still here".utf8))
        #expect(bystander.next() == .text(Array("still here".utf8)))
    }

    /// The write timeout starts when the socket does not take all of a write (output
    /// written at once never starts it): a peer that stops reading is dropped once
    /// nothing moved for `writeTimeout`, under the output cap.
    @Test func aPeerThatStopsReadingIsDroppedByTheWriteTimeout() throws {
        let server = try TestServer {
            $0.connection.writeTimeout = 1_500
            $0.socketSendBuffer = 16 * 1024
        }
        defer { server.stop() }
        let c = try RawClient(port: server.port, receiveBuffer: 4096)
        c.upgrade()
        c.sendFrame(.binary, [UInt8](repeating: 7, count: 200_000))   // echoed: more than the buffers hold
        #expect(server.eventually(1) { (server.metric("navsync_output_queued_bytes") ?? 0) > 0 })
        #expect(server.metric("navsync_websockets") == 1, "held while the timeout runs")
        // Nothing else would drop it this soon: the output cap is 8 MiB, the dead-peer
        // timeout a minute.
        #expect(server.eventually(10) { server.metric("navsync_websockets") == 0 }, "dropped after the write timeout")
    }

    @Test func shutdownClosesEveryWebSocketWith1001() throws {
        let server = try TestServer()
        let a = try RawClient(port: server.port)
        a.upgrade()
        let b = try RawClient(port: server.port)
        b.upgrade()
        server.running.stopHandle.stop()
        #expect(a.closeCode() == .some(1001))
        #expect(b.closeCode() == .some(1001))
    }

    /// A direct answer is written ahead of a broadcast: the application below sends a
    /// frame to every connection, the one that asked last (it connected last, so it is
    /// last in the order output was queued), then answers it with `writeFirst`. Each
    /// connection asks to be told when its output is written (`wantsDrained`), and the
    /// application tells the asker the order. Without `writeFirst` the asker would be
    /// written last. The order comes out in the same flush: what `drained` queues is
    /// written before the loop blocks.
    @Test func aDirectAnswerIsWrittenBeforeABroadcast() throws {
        let server = try TestServer(application: { AnswerFirstApplication() })
        defer { server.stop() }
        let members = try (0..<4).map { _ in try RawClient(port: server.port) }
        for m in members { m.upgrade() }
        let asker = try RawClient(port: server.port)
        asker.upgrade()
        asker.sendFrame(.text, Array("go".utf8))
        for m in members { #expect(m.next() == WebSocketDecoder.Event.text(Array("broadcast".utf8))) }
        #expect(asker.next() == .text(Array("broadcast".utf8)))
        #expect(asker.next() == .text(Array("answer".utf8)))
        guard case .text(let order)? = asker.next() else { Issue.record("no write order came"); return }
        let written = String(decoding: order, as: UTF8.self).split(separator: " ")
        #expect(written.count == 5)
        #expect(written.first == "asker", "written in the order \(written)")
    }
}

/// Broadcasts to every connection on "go", answers the asker first, then tells it in
/// which order the connections' writes were done.
private final class AnswerFirstApplication: ServerApplication {
    private var open: [Connection] = []
    private var asker: Connection?
    private var drained: [String] = []

    func respond(to request: HTTPRequest, on connection: Connection) -> HTTPResponse? { .text(404, "") }
    func opened(_ connection: Connection, request: HTTPRequest, subprotocol: String?) { open.append(connection) }
    func received(binary: [UInt8], from connection: Connection) {}

    func received(text: [UInt8], from connection: Connection) {
        asker = connection
        let frame = OutgoingBuffer(frame: .text, Array("broadcast".utf8))
        for c in open {
            c.send(frame)
            c.wantsDrained = true
        }
        connection.sendText(Array("answer".utf8))
        connection.writeFirst()
    }

    func drained(_ connection: Connection) {
        guard let asker, drained.count < open.count else { return }
        drained.append(connection === asker ? "asker" : "member")
        if drained.count == open.count { asker.sendText(Array(drained.joined(separator: " ").utf8)) }
    }
}
