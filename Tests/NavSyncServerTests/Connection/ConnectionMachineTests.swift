import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

@Suite("Connection machine")
struct ConnectionMachineTests {
    /// Plays the shell: answers requests (200 for /healthz, 404 otherwise) and admits
    /// upgrades unless `refuse` says otherwise, as `Connection.perform` does.
    func drive(_ m: inout ConnectionMachine, _ bytes: [UInt8], now: Int64, refuse: HTTPResponse? = nil) -> [ConnectionMachine.Action] {
        var out: [ConnectionMachine.Action] = []
        var queue = m.received(bytes, now: now)
        while !queue.isEmpty {
            let action = queue.removeFirst()
            out.append(action)
            switch action {
            case .request(let r):
                queue = m.respond(to: r, with: r.path == "/healthz" ? .text(200, "ok\n") : .text(404, "not found\n"), now: now) + queue
            case .upgradeRequest(let r):
                queue = m.admit(r, refusal: refuse, now: now) + queue
            default: break
            }
        }
        return out
    }

    static let upgrade = "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"

    func writes(_ actions: [ConnectionMachine.Action]) -> [UInt8] {
        actions.flatMap { if case .write(let b) = $0 { return b } else { return [] } }
    }

    @Test func plainHTTPKeepAliveThenClose() {
        var m = ConnectionMachine(now: 0)
        let a = drive(&m, Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8), now: 1)
        let text = String(decoding: writes(a), as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n") && text.contains("HTTP/1.1 404 Not Found\r\n") && text.contains("Connection: close"))
        #expect(a.last == .closeSocket(.httpDone))
    }

    @Test func pipelinedRequestsWaitForEachAnswer() {
        var m = ConnectionMachine(now: 0)
        let first = m.received(Array("GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n".utf8), now: 0)
        guard case .request(let a)? = first.first, first.count == 1 else { Issue.record("\(first)"); return }
        #expect(a.path == "/a")
        #expect(m.received(Array("GET /c HTTP/1.1\r\nHost: x\r\n\r\n".utf8), now: 0).isEmpty)   // still waiting
        let second = m.respond(to: a, with: .text(200, "a"), now: 0)
        guard case .request(let b)? = second.last else { Issue.record("\(second)"); return }
        #expect(b.path == "/b")
    }

    @Test func upgradeThenEchoPingAndCloseHandshake() {
        var m = ConnectionMachine(now: 0)
        // The handshake and a first frame arrive in one read.
        let frame = WebSocketEncoder.frame(.text, Array("hi".utf8), mask: (1, 2, 3, 4))
        let a = drive(&m, Array(Self.upgrade.utf8) + frame, now: 1)
        #expect(String(decoding: writes(a), as: UTF8.self).hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
        #expect(a.contains(.text(Array("hi".utf8))))
        #expect(m.isOpen)
        #expect(m.received(WebSocketEncoder.frame(.ping, [7], mask: (0, 0, 0, 0)), now: 2) == [.write([0x8A, 0x01, 0x07])])
        let closing = m.received(WebSocketEncoder.close(1000, mask: (0, 0, 0, 0)), now: 3)
        #expect(closing == [.write([0x88, 0x02, 0x03, 0xE8]), .closeSocket(.closed(code: 1000))])
    }

    @Test func protocolViolationClosesWithItsCode() {
        var m = ConnectionMachine(now: 0)
        _ = drive(&m, Array(Self.upgrade.utf8), now: 0)
        let a = m.received([0x81, 0x05] + Array("Hello".utf8), now: 1)   // unmasked
        guard case .write(let bytes)? = a.first else { Issue.record(); return }
        #expect(Array(bytes.prefix(4)) == [0x88, UInt8(bytes.count - 2), 0x03, 0xEA])   // 1002
        #expect(a.last == .closeSocket(.closed(code: 1002)))
    }

    @Test func upgradeElsewhereOrRefusedByTheApp() {
        var m = ConnectionMachine(now: 0)
        let a = drive(&m, Array(Self.upgrade.replacingFirst("/ws", with: "/chat").utf8), now: 0)
        #expect(String(decoding: writes(a), as: UTF8.self).hasPrefix("HTTP/1.1 404"))
        var m2 = ConnectionMachine(now: 0)
        let b = drive(&m2, Array(Self.upgrade.utf8), now: 0, refuse: .text(403, "origin not allowed\n"))
        #expect(String(decoding: writes(b), as: UTF8.self).hasPrefix("HTTP/1.1 403") && b.last == .closeSocket(.httpDone))
    }

    @Test func timersHandshakeHeartbeatAndCloseWait() {
        var idle = ConnectionMachine(now: 0)
        #expect(idle.tick(now: 9_999).isEmpty)
        #expect(idle.tick(now: 10_000) == [.closeSocket(.handshakeTimeout)])

        var m = ConnectionMachine(now: 0)
        _ = drive(&m, Array(Self.upgrade.utf8), now: 0)
        #expect(m.tick(now: 29_999).isEmpty)
        guard case .write(let ping)? = m.tick(now: 30_000).first else { Issue.record(); return }
        #expect(ping.first == 0x89)
        #expect(m.tick(now: 45_000).isEmpty)                    // one ping per interval
        _ = m.received(WebSocketEncoder.frame(.pong, Array("navsync".utf8), mask: (0, 0, 0, 0)), now: 50_000)
        #expect(m.tick(now: 79_999).isEmpty)
        guard case .write? = m.tick(now: 80_000).first else { Issue.record(); return }
        #expect(m.tick(now: 110_000) == [.closeSocket(.deadPeer)])

        var c = ConnectionMachine(now: 0)
        _ = drive(&c, Array(Self.upgrade.utf8), now: 0)
        #expect(c.close(code: 1001, reason: "shutting down", now: 1) == [.write(WebSocketEncoder.close(1001, reason: "shutting down"))])
        #expect(c.received(WebSocketEncoder.frame(.text, [97], mask: (0, 0, 0, 0)), now: 2).isEmpty)   // ignored while closing
        #expect(c.tick(now: 5_001) == [.closeSocket(.closeTimeout)])
        var d = ConnectionMachine(now: 0)
        _ = drive(&d, Array(Self.upgrade.utf8), now: 0)
        _ = d.close(code: 1001, reason: "", now: 1)
        #expect(d.received(WebSocketEncoder.close(1001, mask: (0, 0, 0, 0)), now: 2) == [.closeSocket(.closed(code: 1001))])
    }

    /// The write timeout runs on the machine's clock: queued output that makes no
    /// progress for `writeTimeout` drops the connection and its output, while output
    /// that keeps moving (or none at all) never does.
    @Test func writeTimeoutOnAFakeClock() {
        var m = ConnectionMachine(now: 0)
        _ = drive(&m, Array(Self.upgrade.utf8), now: 0)
        m.outputQueued(now: 1_000)
        m.outputQueued(now: 20_000)                            // more output: the clock keeps running
        m.outputWritten(remaining: 4_096, now: 25_000)        // progress: it restarts
        _ = m.received(WebSocketEncoder.frame(.pong, [], mask: (0, 0, 0, 0)), now: 50_000)
        #expect(m.tick(now: 54_999).isEmpty)
        #expect(m.tick(now: 55_000) == [.abortSocket(.writeTimeout)])
        #expect(m.isClosed && m.tick(now: 90_000).isEmpty)    // once

        var drained = ConnectionMachine(now: 0)
        _ = drive(&drained, Array(Self.upgrade.utf8), now: 0)
        drained.outputQueued(now: 0)
        drained.outputWritten(remaining: 0, now: 10)
        _ = drained.received(WebSocketEncoder.frame(.pong, [], mask: (0, 0, 0, 0)), now: 29_000)
        #expect(drained.tick(now: 40_000).isEmpty)

        // Output still flushing after the close handshake ends can stall too.
        var closing = ConnectionMachine(now: 0)
        _ = drive(&closing, Array(Self.upgrade.utf8), now: 0)
        _ = closing.received(WebSocketEncoder.close(1000, mask: (0, 0, 0, 0)), now: 1)
        closing.outputQueued(now: 1)
        #expect(closing.tick(now: 30_001) == [.abortSocket(.writeTimeout)])
    }
}
