import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

@Suite("HTTP parser and WebSocket handshake")
struct HTTPTests {
    func parse(_ text: String, limits: HTTPLimits = HTTPLimits(), byteAtATime: Bool = false) -> [HTTPParser.Result] {
        var p = HTTPParser(limits: limits)
        var results: [HTTPParser.Result] = []
        let bytes = Array(text.utf8)
        let chunks = byteAtATime ? bytes.map { [$0] } : [bytes]
        for chunk in chunks {
            p.feed(chunk)
            while true {
                let r = p.next()
                if r == .needMore { break }
                results.append(r)
                if case .failed = r { return results }
            }
        }
        return results
    }

    func status(_ text: String, limits: HTTPLimits = HTTPLimits()) -> Int? {
        if case .failed(let e)? = parse(text, limits: limits).first { return e.status }
        return nil
    }

    @Test(arguments: [false, true])
    func pipelinedRequestsWithBodies(byteAtATime: Bool) {
        let text = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            + "POST /api/sessions/demo/commands HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Type: application/json\r\n\r\n{\"a\":"
            + "GET /?session=a%20b HTTP/1.0\r\n\r\n"
        let results = parse(text, byteAtATime: byteAtATime)
        guard results.count == 3, case .request(let a) = results[0], case .request(let b) = results[1], case .request(let c) = results[2] else {
            Issue.record("\(results)"); return
        }
        #expect(a.method == "GET" && a.path == "/healthz" && a.keepAlive)
        #expect(b.method == "POST" && b.body == Array("{\"a\":".utf8) && b.header("content-type") == "application/json")
        #expect(c.minorVersion == 0 && !c.keepAlive && c.query("session") == "a b")
    }

    /// Header names match ignoring ASCII case only (no lowercased copies): letters
    /// fold, other bytes whose case bit differs do not; values lose outer blanks.
    @Test func headerNamesFoldLettersOnly() {
        let r = HTTPRequest(method: "GET", target: "/", minorVersion: 1,
                            headers: [("Sec-WebSocket-Key", "k"), ("X-A[", "1"), ("Connection", " \tkeep-alive , Upgrade\t")], body: [])
        #expect(r.header("sec-websocket-KEY") == "k")
        #expect(r.header("Sec\rWebSocket-Key") == nil && r.header("Sec-WebSocket-Ke") == nil)
        #expect(r.header("x-a{") == nil && r.header("x-A[") == "1")
        #expect(r.keepAlive)
        // Comma-separated lists are read in place: items trimmed, case folded, any of
        // several fields; an item is matched whole.
        #expect(r.lists("connection", "upgrade") && r.lists("CONNECTION", "keep-alive") && !r.lists("Connection", "close"))
        let lists = HTTPRequest(method: "GET", target: "/", minorVersion: 1,
                                headers: [("Upgrade", "h2c,"), ("Upgrade", ", ,WebSocket"), ("Connection", "upgrades, xupgrade, upgrad"), ("Connection", "")], body: [])
        #expect(lists.lists("upgrade", "websocket") && lists.lists("Upgrade", "h2c") && !lists.lists("Upgrade", "websockets"))
        #expect(!lists.lists("Connection", "upgrade") && !lists.lists("Sec-WebSocket-Protocol", "x"))
        #expect(WebSocketHandshake.isUpgrade(lists) && !WebSocketHandshake.isUpgrade(r))
        // Requests are equal field by field, headers in order.
        var other = r
        #expect(other == r)
        other.headers[2].value = "close"
        #expect(other != r)
        other = r
        other.headers.swapAt(0, 1)
        #expect(other != r)
        #expect(Substring(" \t a b \t").trimmingSpaces == "a b" && Substring(" \t ").trimmingSpaces == "" && Substring("é ").trimmingSpaces == "é")
    }

    @Test func hostileRequests() {
        // Request line of 9 KiB without an end.
        #expect(status("GET /" + String(repeating: "a", count: 9000)) == 414)
        // A 70 KB header.
        #expect(status("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "a", count: 70_000) + "\r\n\r\n") == 431)
        #expect(status("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "a", count: 70_000)) == 431)
        // 10,000 headers.
        #expect(status("GET / HTTP/1.1\r\nHost: x\r\n" + String(repeating: "A: b\r\n", count: 10_000) + "\r\n") == 431)
        // Bare LF line endings.
        #expect(status("GET / HTTP/1.1\nHost: x\n\n") == 400)
        #expect(status("GET / HTTP/1.1\r\nHost: x\n\r\n") == 400)
        // Request smuggling: both Content-Length and Transfer-Encoding.
        #expect(status("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") == 400)
        #expect(status("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n") == 501)
        // Two different Content-Lengths; a negative one; junk.
        #expect(status("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\n") == 400)
        #expect(status("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n") == 400)
        #expect(status("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1e3\r\n\r\n") == 400)
        // A body over the limit is refused from its announced length.
        #expect(status("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n") == 413)
        // Obsolete folding, space before the colon, a control character, no colon.
        #expect(status("GET / HTTP/1.1\r\nHost: x\r\nA: b\r\n c\r\n\r\n") == 400)
        #expect(status("GET / HTTP/1.1\r\nHost : x\r\n\r\n") == 400)
        #expect(status("GET / HTTP/1.1\r\nHost: x\u{1}y\r\n\r\n") == 400)
        #expect(status("GET / HTTP/1.1\r\nHost\r\n\r\n") == 400)
        // Versions and request lines.
        #expect(status("GET / HTTP/2.0\r\n\r\n") == 505)
        #expect(status("GET / FTP/1.1\r\n\r\n") == 400)
        #expect(status("GET  / HTTP/1.1\r\nHost: x\r\n\r\n") == 400)
        #expect(status("G(T / HTTP/1.1\r\nHost: x\r\n\r\n") == 400)
        // HTTP/1.1 without Host, or with two.
        #expect(status("GET / HTTP/1.1\r\n\r\n") == 400)
        #expect(status("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") == 400)
    }

    @Test func byteAtATimeHugeHeaderStaysLinear() {
        // 32 KiB of header one byte at a time: the scan resumes, it does not restart.
        let text = "GET / HTTP/1.1\r\nHost: x\r\nX: " + String(repeating: "a", count: 32_000) + "\r\n\r\n"
        let results = parse(text, byteAtATime: true)
        #expect(results.count == 1)
    }

    func upgradeRequest(_ extra: String = "", key: String? = "dGhlIHNhbXBsZSBub25jZQ==", version: String? = "13",
                        method: String = "GET", http: String = "HTTP/1.1") -> HTTPRequest {
        var text = "\(method) /ws \(http)\r\nHost: x\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
        if let key { text += "Sec-WebSocket-Key: \(key)\r\n" }
        if let version { text += "Sec-WebSocket-Version: \(version)\r\n" }
        text += extra + "\r\n"
        guard case .request(let r)? = parse(text).first else { preconditionFailure() }
        return r
    }

    func refusal(_ r: HTTPRequest) -> HTTPResponse? {
        if case .refused(let response) = WebSocketHandshake.accept(r, subprotocols: ["navsync.v1"]) { return response }
        return nil
    }

    @Test func handshakeAcceptsAndChoosesTheSubprotocol() {
        guard case .accepted(let a) = WebSocketHandshake.accept(upgradeRequest("Sec-WebSocket-Protocol: chat, navsync.v1\r\n"), subprotocols: ["navsync.v1"]) else {
            Issue.record(); return
        }
        #expect(a.subprotocol == "navsync.v1")
        let text = String(decoding: a.response.serialized(keepAlive: true), as: UTF8.self)
        #expect(text == "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: navsync.v1\r\n\r\n")
        // Offering only other subprotocols: accepted without one.
        guard case .accepted(let b) = WebSocketHandshake.accept(upgradeRequest("Sec-WebSocket-Protocol: chat\r\n"), subprotocols: ["navsync.v1"]) else {
            Issue.record(); return
        }
        #expect(b.subprotocol == nil && !b.response.headers.contains { $0.0 == "Sec-WebSocket-Protocol" })
    }

    @Test func handshakeRefusals() {
        #expect(refusal(upgradeRequest(key: nil))?.status == 400)
        #expect(refusal(upgradeRequest("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"))?.status == 400)   // two keys
        #expect(refusal(upgradeRequest(key: "c2hvcnQ="))?.status == 400)                                  // 5 bytes
        #expect(refusal(upgradeRequest(key: "not base64!!"))?.status == 400)
        let wrongVersion = refusal(upgradeRequest(version: "8"))
        #expect(wrongVersion?.status == 426 && wrongVersion?.headers.contains { $0 == ("Sec-WebSocket-Version", "13") } == true)
        #expect(refusal(upgradeRequest(version: nil))?.status == 426)
        #expect(refusal(upgradeRequest(method: "POST"))?.status == 405)
        #expect(refusal(upgradeRequest(http: "HTTP/1.0"))?.status == 400)
    }
}
