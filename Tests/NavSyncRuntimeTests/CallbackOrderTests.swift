import NavSyncLibuv
import Testing
import Synchronization
@preconcurrency import Glibc
@testable import NavSync
@testable import NavSyncServer
import TestSupport
@testable import NavSyncRuntime

/// libuv's rule, held by the runtime: a call never invokes its callback from within
/// itself. Failures and releases are delivered on a later loop turn, so a caller in the
/// middle of handling something is never entered again.
@Suite("No callback inside the call", .serialized)
struct CallbackOrderTests {
    /// A Redis command that cannot be sent (no connection) is answered on a later turn,
    /// not inside `send` (which reached the hub's own effects before).
    @Test func aRedisCommandThatCannotBeSentIsAnsweredLater() {
        let loop = ClientLoop()
        let redis = RedisConnection(loop: loop.loop, target: RedisURL.Host(name: "127.0.0.1", port: 1), db: nil, subscriber: false)
        var answered: [String] = []
        var insideSend = true
        redis.send(["PING"]) { result in
            answered.append(insideSend ? "inside send" : "later: \(result)")
        }
        insideSend = false
        #expect(answered.isEmpty, "not from within send")
        loop.after(20) { loop.stop() }
        loop.run()
        #expect(answered.count == 1 && answered[0].hasPrefix("later: failure"), "\(answered)")
        redis.stop()
        loop.after(10) { loop.stop() }
        loop.run()
        loop.shutdown()
    }

    /// A Redis write that fails at once (the peer reset the link) fails the commands and
    /// reports the link down from the loop's flush, never inside `send`: commands go out
    /// together just before the loop waits, so `send` writes nothing itself.
    @Test func aRedisWriteThatFailsAtOnceIsReportedLater() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try #require(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } } == 0)
        listen(listener, 1)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        defer { close(listener) }
        // A Redis of one answer: the connection's PING is answered, then it waits.
        final class Accepted: Sendable { let fd = Mutex<Int32?>(nil) }
        let accepted = Accepted()
        startThread {
            let fd = accept(listener, nil, nil)
            var buffer = [UInt8](repeating: 0, count: 256)
            _ = read(fd, &buffer, buffer.count)
            _ = write(fd, "+PONG\r\n", 7)
            accepted.fd.withLock { $0 = fd }
        }
        let loop = ClientLoop()
        let redis = RedisConnection(loop: loop.loop, target: RedisURL.Host(name: "127.0.0.1", port: Int(UInt16(bigEndian: address.sin_port))),
                                    db: nil, subscriber: false)
        var events: [String] = []
        var inside = false
        redis.onDown = { reason in events.append(inside ? "down inside send" : "down later") }
        redis.connect()
        var sent = false
        let poll = loop.every(5) {
            guard !sent, redis.isReady, let fd = accepted.fd.withLock({ $0 }) else { return }
            sent = true
            // The peer resets the link (SO_LINGER 0); the next write fails at once.
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            close(fd)
            inside = true
            redis.send(["PING"]) { result in events.append(inside ? "answered inside send" : "answered later: \(result)") }
            redis.send(["PING"]) { _ in events.append(inside ? "answered inside send" : "answered later") }
            inside = false
        }
        loop.after(2_000) { loop.stop() }
        let done = loop.every(5) { if events.count >= 3 { loop.stop() } }
        loop.run()
        poll.cancel(); done.cancel()
        #expect(sent, "the connection became ready")
        #expect(!events.contains { $0.contains("inside") }, "\(events)")
        #expect(events.count == 3 && events[0].hasPrefix("answered later: failure") && events.contains("down later"), "\(events)")
        redis.stop()
        loop.after(10) { loop.stop() }
        loop.run()
        loop.shutdown()
    }

    /// A session client answers a command refused at once (closed, too many waiting) on
    /// a later loop turn, not inside `send`.
    @Test func aSessionClientAnswersARefusedCommandLater() {
        let loop = ClientLoop()
        var options = SessionClient.Options()
        options.url = WebSocketURL(host: "127.0.0.1", port: 1, target: "/ws")
        options.maxPending = 1
        options.retryFirstConnect = true
        let client = SessionClient(loop: loop, options: options)
        client.start()
        var answers: [String] = []
        var inside = true
        client.send([["op": "pop"]]) { _ in answers.append(inside ? "inside" : "first later") }
        client.send([["op": "pop"]]) { result in
            answers.append(inside ? "inside" : (try? result.get()) == nil ? "full later" : "sent?")
        }
        inside = false
        #expect(answers.isEmpty, "not from within send")
        loop.after(30) { loop.stop() }
        loop.run()
        #expect(answers == ["full later"], "\(answers)")
        client.stop()   // the waiting command is answered as the client ends
        loop.after(30) { loop.stop() }
        loop.run()
        #expect(answers == ["full later", "first later"], "\(answers)")
        inside = true
        client.send([["op": "pop"]]) { _ in answers.append(inside ? "inside" : "closed later") }
        inside = false
        #expect(answers.count == 2, "not from within send: \(answers)")
        loop.after(30) { loop.stop() }
        loop.run()
        #expect(answers.last == "closed later", "\(answers)")
        loop.shutdown()
    }

    /// A WebSocket client closed before it opened reports `onClose` on a later turn,
    /// not from within `close()`.
    @Test func aClientClosedBeforeItOpenedReportsItLater() {
        let loop = ClientLoop()
        let socket = WebSocketClient(loop: loop, url: WebSocketURL(host: "127.0.0.1", port: 1, target: "/ws"))
        var reports: [String] = []
        var insideClose = false
        socket.onClose = { _, reason in reports.append(insideClose ? "inside close" : "later: \(reason)") }
        socket.connect()
        insideClose = true
        socket.close()
        insideClose = false
        #expect(reports.isEmpty, "not from within close()")
        loop.after(20) { loop.stop() }
        loop.run()
        #expect(reports.count == 1 && reports[0].hasPrefix("later"), "\(reports)")
        loop.shutdown()
    }

    /// Pipelined HTTP requests are taken one after another, never one inside the
    /// answer to the one before: an application that answers later, from within its
    /// own handling, is not entered again.
    @Test func pipelinedRequestsAreNotHandedOverInsideAnAnswer() throws {
        final class Later: ServerApplication, @unchecked Sendable {
            var waiting: [(HTTPRequest, Connection)] = []
            var handling = false
            var nested = 0
            var served: [String] = []
            func respond(to request: HTTPRequest, on connection: Connection) -> HTTPResponse? {
                if handling { nested += 1 }
                served.append(request.path)
                if request.path == "/now" { return .text(200, "now\n") }
                waiting.append((request, connection))
                return nil
            }
            func received(text: [UInt8], from connection: Connection) {}
            func received(binary: [UInt8], from connection: Connection) {}
            // The answers that came later, given while the application handles (as the
            // session server does from the hub's effects).
            func beforeSleep(on server: Server) {
                guard !waiting.isEmpty else { return }
                handling = true
                let due = waiting
                waiting = []
                for (request, connection) in due { connection.answer(request, with: .text(200, "later \(request.path)\n")) }
                handling = false
            }
        }
        let app = Later()
        let server = try TestServer({ _ in }, application: { app })
        defer { server.stop() }
        let text = server.http("GET /a HTTP/1.1\r\nHost: t\r\n\r\nGET /now HTTP/1.1\r\nHost: t\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\n\r\n"
                               + "GET /c HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        #expect(text.components(separatedBy: "HTTP/1.1 200").count == 5, "four answers, in order: \(text)")
        #expect(text.range(of: "later /a")!.lowerBound < text.range(of: "now")!.lowerBound)
        #expect(text.range(of: "later /b")!.lowerBound < text.range(of: "later /c")!.lowerBound)
        #expect(app.served == ["/a", "/now", "/b", "/c"])
        #expect(app.nested == 0, "a request was handed over from inside an answer \(app.nested) times")
    }
}
