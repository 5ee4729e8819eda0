import Testing
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
