@preconcurrency import Glibc
import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport
@testable import NavSyncRuntime

/// Protocol v1 over real sockets on 127.0.0.1, port 0.
@Suite("Loopback: sessions", .serialized)
struct SessionLoopbackTests {
    @Test func everyMemberGetsEveryPatchInOrderAndTheSenderItsAckAfterThePatch() throws {
        let server = try TestServer.sessions()
        defer { server.stop() }
        let members = try (0..<4).map { _ in try RawClient.member(server) }
        for (_, joined) in members { #expect(joined["rev"] == 0) }
        // Two senders interleave commands.
        let (a, _) = members[0], (b, _) = members[1]
        a.sendJSON(["type": "command", "session": "demo", "id": "a0", "ops": [["op": "setRoot", "route": "main"]]])
        for i in 1...20 {
            let sender = i % 2 == 0 ? a : b
            sender.sendJSON(["type": "command", "session": "demo", "id": .string("k\(i)"), "ops": [["op": "update", "data": ["n": .int(Int64(i))]]]])
        }
        for (client, joined) in members {
            var state = joined["state"]!
            var revs: [Int64] = []
            var ackAfterPatch = true
            var seenOwn: Set<String> = []
            while revs.count < 21, let m = client.nextJSON() {
                if m["type"] == "patch" {
                    revs.append(m["rev"]!.intValue!)
                    state = try state.applying(m["ops"]!.arrayValue!.map { try PatchOperation(json: $0) })
                    seenOwn.insert(m["cmd"]!.description)
                } else if m["type"] == "ack" {
                    ackAfterPatch = ackAfterPatch && seenOwn.contains(m["id"]!.description)
                }
            }
            #expect(revs == Array(1...21))
            #expect(ackAfterPatch)
            client.sendJSON(["type": "get", "session": "demo", "id": "g"])
            let snapshot = client.next(type: "snapshot")
            #expect(snapshot?["rev"] == 21 && snapshot?["state"]?.normalized == state.normalized)
        }
    }

    /// `joined` is sent in parts (`JoinedFrames`): over real sockets each joiner reads
    /// one whole message, while the listing grows and once it is full and shared.
    @Test func joinedInPartsArrivesWhole() throws {
        let server = try TestServer.sessions { $0.presenceDetail = 2 }
        defer { server.stop() }
        let joins = try (0..<5).map { _ in try RawClient.member(server) }
        for (i, (_, joined)) in joins.enumerated() {
            #expect(joined["type"] == "joined" && joined["state"]?["root"] != nil && joined["flow"]?["name"] == "shop")
            #expect(joined["members"]?.arrayValue?.count == min(i + 1, 3))          // the 2 listed and the joiner
            #expect(joined["others"] == (i >= 3 ? .int(Int64(i - 2)) : nil))
        }
    }

    /// A `joined` larger than what a connection may have queued is not sent in part:
    /// the joiner is dropped, and the server carries on.
    @Test func aJoinedPastTheOutputCapDropsTheJoinerWhole() throws {
        let server = try TestServer.sessions(server: { $0.maxQueueBytes = 2_000 })
        defer { server.stop() }
        let c = try RawClient(port: server.port)
        c.upgrade(extra: "Sec-WebSocket-Protocol: navsync.v1\r\n")
        c.sendJSON(["type": "join", "session": "demo"])
        #expect(c.next(type: "joined") == nil)
        #expect(c.isClosedByPeer())
        #expect(server.http("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").hasSuffix("ok\n"))
    }

    /// The loop measures its idle time: a server that is not saturated sends presence on
    /// the interval, not held for `presenceMaxDelay` (a minute here) as a busy one would.
    @Test func presenceAndDisconnectWhileOthersCarryOn() throws {
        let server = try TestServer.sessions { $0.presenceMaxDelay = 60_000 }
        defer { server.stop() }
        let (a, _) = try RawClient.member(server)
        // Presence comes gathered per interval, as lists (a may see its own join first).
        func presence(where test: (JSON) -> Bool) -> JSON? {
            for _ in 0..<5 { if let p = a.next(type: "presence"), test(p) { return p } }
            return nil
        }
        do {
            let (b, _) = try RawClient.member(server)
            #expect(presence { $0["joined"]?.arrayValue?.contains { $0["client"] == "c2" } == true } != nil)
            b.sendJSON(["type": "status", "session": "demo", "rev": 0, "focus": "e1"])
            #expect(presence { $0["status"] != nil }?["status"] == [["client": "c2", "rev": 0, "focus": "e1"]])
        }   // b vanishes without a close frame
        #expect(presence { $0["left"] != nil }?["left"] == ["c2"])
        a.sendJSON(["type": "ping", "id": 1])
        #expect(a.next(type: "pong")?["id"] == 1)
    }

    @Test func catchUpDuplicatesConflictsAndBadInputOverTheWire() throws {
        let server = try TestServer.sessions()
        defer { server.stop() }
        let (a, joined) = try RawClient.member(server)
        let epoch = joined["epoch"]!
        for i in 1...3 {
            a.sendJSON(["type": "command", "session": "demo", "id": .int(Int64(i)), "ops": [["op": "update", "data": ["n": .int(Int64(i))]]]])
            #expect(a.next(type: "ack")?["rev"] == .int(Int64(i)))
        }
        // A newcomer catching up from rev 1 of the same epoch gets patches, not the state.
        let b = try RawClient(port: server.port)
        b.upgrade()
        b.sendJSON(["type": "join", "session": "demo", "since": 1, "epoch": epoch])
        let caughtUp = b.next(type: "joined")
        #expect(caughtUp?["state"] == nil && caughtUp?["patches"]?.arrayValue?.map { $0["rev"] } == [2, 3])
        // Another epoch: the whole state.
        b.sendJSON(["type": "sync", "session": "demo", "since": 1, "epoch": "other", "id": "s"])
        #expect(b.next(type: "snapshot")?["rev"] == 3)
        // A resend: the original ack, marked duplicate, no new revision. The id reused
        // for another command is refused; nothing changes.
        a.sendJSON(["type": "command", "session": "demo", "id": 2, "ops": [["op": "update", "data": ["n": 2]]]])
        #expect(a.next(type: "ack") == ["type": "ack", "id": 2, "session": "demo", "rev": 2, "results": ["applied"], "duplicate": true])
        a.sendJSON(["type": "command", "session": "demo", "id": 2, "ops": [["op": "reset"]]])
        #expect(a.next(type: "error")?["code"] == "id_reused")
        // reject with a stale base on the changed screen: conflict with the current rev.
        a.sendJSON(["type": "command", "session": "demo", "id": 9, "base": 1, "onConflict": "reject", "ops": [["op": "update", "data": ["n": 0]]]])
        let conflict = a.next(type: "error")
        #expect(conflict?["code"] == "conflict" && conflict?["rev"] == 3 && conflict?["id"] == 9)
        // Bad input: an error each, the connection stays, nothing changes.
        a.sendFrame(.text, Array("not json".utf8))
        #expect(a.next(type: "error")?["code"] == "bad_json")
        a.sendJSON(["type": "teleport", "id": 1])
        #expect(a.next(type: "error")?["code"] == "bad_request")
        a.sendJSON(["type": "join"])
        #expect(a.next(type: "error")?["code"] == "bad_request")
        a.sendJSON(["type": "command", "session": "nope", "id": 5, "ops": [["op": "pop"]]])
        #expect(a.next(type: "error")?["code"] == "unknown_session")
        a.sendJSON(["type": "get", "session": "demo", "id": "g"])
        #expect(a.next(type: "snapshot")?["rev"] == 3)
    }

    /// History over HTTP (docs/protocol.md, "History"): the history page and the state of a past revision.
    @Test func historyAndPastRevisionsOverHTTP() throws {
        let server = try TestServer.sessions { $0.history = 2 }
        defer { server.stop() }
        func get(_ target: String) -> (status: String, body: JSON?) {
            let text = server.http("GET \(target) HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            let body = text.firstRange(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
            return (String(text.prefix(12)), try? JSON.parse(Array(body.utf8)))
        }
        for (i, route) in ["login", "main", "onboarding"].enumerated() {
            let body = "{\"id\":\(i),\"label\":\"step \(i)\",\"ops\":[{\"op\":\"setRoot\",\"route\":\"\(route)\"}]}"
            _ = server.http("POST /api/sessions/demo/commands HTTP/1.1\r\nHost: t\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
        }
        let page = get("/api/sessions/demo/history?limit=5")
        #expect(page.status == "HTTP/1.1 200" && page.body?["rev"] == 3 && page.body?["earliest"] == 1)
        #expect(page.body?["entries"]?.arrayValue?.compactMap { $0["label"]?.stringValue } == ["step 2", "step 1"])
        let past = get("/api/sessions/demo?rev=2")
        #expect(past.status == "HTTP/1.1 200" && past.body?["historic"] == true && past.body?["rev"] == 2)
        #expect(past.body?["state"]?["root"]?["current"]?["route"] == "main")
        #expect(get("/api/sessions/demo?rev=0").status == "HTTP/1.1 410")
        #expect(get("/api/sessions/demo?rev=9").status == "HTTP/1.1 422")
        #expect(get("/api/sessions/demo?rev=x").status == "HTTP/1.1 400")
        #expect(get("/api/sessions/demo/history?limit=1001").status == "HTTP/1.1 400")
        #expect(get("/api/sessions/nope/history").status == "HTTP/1.1 404")
        #expect(server.metric("navsync_history_revisions") == 2)
        let log = server.http("GET /api/sessions/demo/log HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        #expect(log.hasPrefix("HTTP/1.1 200") && log.contains("Content-Type: application/x-ndjson"))
        let lines = (log.firstRange(of: "\r\n\r\n").map { String(log[$0.upperBound...]) } ?? "").split(separator: "\n").compactMap { try? JSON.parse(Array($0.utf8)) }
        #expect(lines.count == 3 && lines[0]["format"] == "navsync-log/1" && lines[0]["from"] == 1 && lines[2]["label"] == "step 2" && lines[2]["patch"] != nil)
        #expect(get("/api/sessions/demo/log?from=0").status == "HTTP/1.1 410")
    }

    @Test func binaryMessagesCloseWith1003() throws {
        let server = try TestServer.sessions()
        defer { server.stop() }
        let (c, _) = try RawClient.member(server)
        c.sendFrame(.binary, [1, 2, 3])
        #expect(c.closeCode() == .some(1003))
    }

    @Test func aFloodIsRateLimitedAndOthersCarryOn() throws {
        let server = try TestServer.sessions { $0.commandRate = 50; $0.commandBurst = 100 }
        defer { server.stop() }
        let (flooder, _) = try RawClient.member(server)
        let (calm, _) = try RawClient.member(server)
        var batch: [UInt8] = []
        for i in 0..<1000 {
            let command: JSON = ["type": "command", "session": "demo", "id": .int(Int64(i)), "ops": [["op": "dismiss"]]]
            batch += WebSocketEncoder.frame(.text, command.encoded(), mask: (1, 2, 3, 4))
        }
        flooder.send(batch)
        var acks = 0, limited = 0
        while acks + limited < 1000, let m = flooder.nextJSON() {
            if m["type"] == "ack" { acks += 1 }
            if m["code"] == "rate_limited" { limited += 1 }
        }
        #expect(acks >= 100 && acks < 200 && limited == 1000 - acks, "acks \(acks), limited \(limited)")
        calm.sendJSON(["type": "command", "session": "demo", "id": "calm", "ops": [["op": "setRoot", "route": "login"]]])
        #expect(calm.next(type: "ack")?["id"] == "calm")
        #expect(server.metric("navsync_websockets") == 2)
    }

    @Test func aSlowReaderIsResyncedWithASnapshotAndSlowsNobody() throws {
        // Kernel send buffers of 64 KiB (not autotuned to MiBs), so 2 MB of patches make
        // the slow one lag, while the fast one drains as it reads.
        let server = try TestServer.sessions({ $0.commandRate = 1e6; $0.commandBurst = 1_000_000 }, lagThreshold: 512 * 1024) {
            $0.socketSendBuffer = 64 * 1024
        }
        defer { server.stop() }
        let (slow, slowJoined) = try RawClient.member(server, receiveBuffer: 4096)
        let (fast, fastJoined) = try RawClient.member(server)
        let (publisher, _) = try RawClient.member(server)
        _ = fast.next(type: "presence")
        _ = slowJoined
        publisher.sendJSON(["type": "command", "session": "demo", "id": "root", "ops": [["op": "setRoot", "route": "main"]]])
        // 2,000 patches of about 1 KB (more than the kernel buffers and the lag threshold
        // hold), 64 commands in flight. The fast member is read all along and must get
        // every patch in order. (`navclient bench --slow N` measures this at scale.)
        let count = 2_000
        let filler = String(repeating: "x", count: 1_000)
        var state = fastJoined["state"]!
        var last: Int64 = 0
        var fastSnapshots = 0
        func readFast(_ messages: [JSON]) throws {
            for m in messages {
                if m["type"] == "snapshot" { fastSnapshots += 1 }
                guard m["type"] == "patch" else { continue }
                #expect(m["rev"]!.intValue! == last + 1)
                last = m["rev"]!.intValue!
                state = try state.applying(m["ops"]!.arrayValue!.map { try PatchOperation(json: $0) })
            }
        }
        var sent = 0, acked = 0
        while acked < count {
            while sent < count && sent - acked < 64 {
                publisher.sendJSON(["type": "command", "session": "demo", "id": .int(Int64(sent)),
                                    "ops": [["op": "update", "data": ["n": .int(Int64(sent)), "filler": .string(filler + String(sent))]]]])
                sent += 1
            }
            guard let m = publisher.nextJSON() else { break }
            if m["type"] == "ack" && m["id"]?.intValue != nil { acked += 1 }
            try readFast(fast.availableJSON())
        }
        #expect(acked == count)
        while last < count + 1, let m = fast.nextJSON() { try readFast([m]) }
        #expect(last == count + 1 && fastSnapshots == 0, "the fast member got every patch and no snapshot")
        // The server held at most about the lag threshold for the slow one.
        #expect((server.metric("navsync_output_queued_bytes") ?? .max) < 1 << 20)
        // The slow one reads now: some patches, then a snapshot at the newest revision.
        var slowState = slowJoined["state"]!
        var slowRev: Int64 = 0
        var snapshots = 0
        while slowRev < count + 1, let m = slow.nextJSON() {
            if m["type"] == "patch" {
                #expect(m["rev"]!.intValue! == slowRev + 1)
                slowRev = m["rev"]!.intValue!
                slowState = try slowState.applying(m["ops"]!.arrayValue!.map { try PatchOperation(json: $0) })
            } else if m["type"] == "snapshot" {
                snapshots += 1
                slowRev = m["rev"]!.intValue!
                slowState = m["state"]!
            }
        }
        #expect(snapshots >= 1)
        #expect(slowRev == count + 1 && slowState.normalized == state.normalized)
    }
}
