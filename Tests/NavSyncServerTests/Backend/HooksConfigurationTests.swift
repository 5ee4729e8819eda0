import Testing
@testable import NavSync
@testable import NavSyncServer

@Suite("Hooks file and webhook outbox")
struct HooksConfigurationTests {
    func load(_ text: String) -> Result<HooksConfiguration, FlowError> {
        Result { () throws(FlowError) in try HooksConfiguration.load(bytes: Array(text.utf8), file: "hooks.json") }
    }

    @Test func theDesignsExampleLoads() throws {
        let c = try load("""
            { "url": "https://backend.internal/navsync", "secretFile": "/etc/navsync/hooks.secret", "timeoutMs": 2000, "join": true,
              "commands": { "shop": ["open", "update"], "*": [] }, "headers": ["Cookie", "Authorization"],
              "webhooks": [ { "url": "https://backend.internal/navsync/events", "events": ["revision", "session.created"], "sessions": ["shop-*"] } ] }
            """).get()
        #expect(c.join && c.headers == ["cookie", "authorization"] && c.timeoutMS == 2000 && c.vacatedDelayMS == 5000 && c.maxQueue == 100_000)
        #expect(c.wantsCommandHook(flow: "shop", ops: ["push", "open"]) && !c.wantsCommandHook(flow: "shop", ops: ["pop"]))
        #expect(!c.wantsCommandHook(flow: "studio", ops: ["open"]))
        #expect(c.webhooks[0].wants("revision", session: "shop-7") && !c.webhooks[0].wants("revision", session: "demo"))
        #expect(!c.webhooks[0].wants("session.deleted", session: "shop-7"))
    }

    @Test func mistakesAreNamedByTheirPlace() {
        let cases: [(String, String)] = [
            (#"{"url": "http://b/h"}"#, "secretFile"),
            (#"{"url": "ftp://b/h", "secretFile": "s"}"#, "url"),
            (#"{"url": "http://b/h", "secretFile": "s", "timeoutMs": 0}"#, "timeoutMs"),
            (#"{"url": "http://b/h", "secretFile": "s", "join": "yes"}"#, "join"),
            (#"{"url": "http://b/h", "secretFile": "s", "commands": {"shop": ["teleport"]}}"#, "commands.shop[0]"),
            (#"{"secretFile": "s", "join": true, "webhooks": [{"url": "http://b/e"}]}"#, "url"),
            (#"{"url": "http://b/h", "secretFile": "s", "webhooks": [{"url": "http://b/e", "events": ["revisions"]}]}"#, "webhooks[0].events[0]"),
            (#"{"url": "http://b/h", "secretFile": "s", "webhook": []}"#, "webhook"),
            (#"{"secretFile": "s"}"#, ""),
            ("not json", ""),
        ]
        for (text, place) in cases {
            guard case .failure(let e) = load(text) else { Issue.record("loaded: \(text)"); continue }
            #expect(e.path == place, "\(text): \(e)")
        }
    }

    @Test func secretsAreWhsecBase64AndNeverShown() throws {
        let key = (0..<32).map { UInt8($0) }
        let keys = try HooksConfiguration.secrets(from: "whsec_\(Base64.encode(key))\n\nwhsec_\(Base64.encode(key.reversed()))\n", file: "s")
        #expect(keys == [key, key.reversed()])
        // A file written on Windows (CRLF): each line a key. Regression: "\r\n" is one
        // Character, so splitting on "\n" made the two keys one bad line.
        let crlf = try HooksConfiguration.secrets(from: " whsec_\(Base64.encode(key))\r\nwhsec_\(Base64.encode(key.reversed()))\t\r\n", file: "s")
        #expect(crlf == [key, key.reversed()])
        for bad in ["", "secret", "whsec_c2hvcnQ=", "whsec_!!!"] {
            #expect(throws: FlowError.self) { try HooksConfiguration.secrets(from: bad, file: "s") }
            do { _ = try HooksConfiguration.secrets(from: bad, file: "s") } catch {
                #expect(bad.count < 8 || !error.description.contains(bad))
            }
        }
    }

    static func event(_ n: Int, bytes: Int = 10) -> WebhookEvent {
        .session("session.occupied", session: "s", epoch: "e", rev: n, ts: 0, extra: ["pad": .string(String(repeating: "x", count: bytes))])
    }

    @Test func batchesLingerFillAndRetryWithBackoff() throws {
        var o = WebhookOutbox(endpoint: .init(url: "http://b/e"), maxQueue: 1000)
        var ids = 0
        func id() -> String { ids += 1; return "msg_\(ids)" }
        o.add(Self.event(1), now: 0)
        #expect(o.take(now: 10, newID: id) == nil && o.wake(now: 10) == 50)        // lingers up to 50 ms
        let taken = o.take(now: 50, newID: id)
        let first = try #require(taken)
        #expect(first.events.count == 1 && String(decoding: first.body, as: UTF8.self).hasPrefix(#"{"events":[{"#))
        for n in 2...250 { o.add(Self.event(n), now: 60) }
        #expect(o.take(now: 60, newID: id) == nil)                                 // one batch in flight
        o.failed("HTTP 500", now: 100)
        #expect(o.take(now: 599, newID: id) == nil && o.wake(now: 599) == 600)     // 0.5 s
        #expect(o.take(now: 600, newID: id)?.id == "msg_1")                        // the same batch, the same id
        o.failed("timeout", now: 700)
        #expect(o.backoff == 1000 && o.failures == 2 && o.lastError == "timeout")
        #expect(o.take(now: 1700, newID: id)?.id == "msg_1")
        #expect(o.succeeded().count == 1 && o.backoff == 0)
        let next = o.take(now: 1700, newID: id)                                    // 100 at once, no lingering
        let full = try #require(next)
        #expect(full.events.map(\.rev) == Array(2...101))
        #expect(o.succeeded().count == 100 && o.pending == 149 && o.delivered == 101)
        // 256 KiB at most per batch.
        var big = WebhookOutbox(endpoint: .init(url: "http://b/e"), maxQueue: 1000)
        for n in 1...5 { big.add(Self.event(n, bytes: 100_000), now: 0) }
        let bigBatch = big.take(now: 0, newID: id)
        #expect(bigBatch?.events.count == 2)
    }

    @Test func pastMaxQueueTheOldestAreDroppedAndCounted() {
        var o = WebhookOutbox(endpoint: .init(url: "http://b/e", events: ["session.occupied"]), maxQueue: 3)
        for n in 1...5 { o.add(Self.event(n), now: 0) }
        o.add(.session("session.created", session: "s", epoch: "e", rev: 9, ts: 0), now: 0)   // not wanted here
        #expect(o.pending == 3 && o.dropped == 2)
        var ids = 0
        #expect(o.take(now: 50, newID: { ids += 1; return "\(ids)" })?.events.map(\.rev) == [3, 4, 5])
    }
}
