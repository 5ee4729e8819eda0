import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

/// The session layer as a value: messages in, deliveries out, no sockets.
@Suite("Hub")
struct HubTests {
    typealias Fixture = HubFixture

    @Test func helloWelcomeAndResumedIdentity() {
        let f = Fixture()
        let a = f.connect()
        let w = f.inbox(a, f.send(a, ["type": "hello", "name": "tv", "client": "phone-7", "id": 1]))
        #expect(w == [["type": "welcome", "id": 1, "client": "phone-7", "server": "navsyncd/0.1.0", "protocol": 1, "heartbeat": 30,
                       "limits": ["maxMessage": 1048576, "maxOps": 64, "maxStackDepth": 256, "maxTabs": 64]]])
        #expect(f.inbox(a, f.send(a, ["type": "hello"])).first?["code"] == "bad_request")   // not first any more
        let b = f.connect()
        #expect(f.inbox(b, f.send(b, ["type": "hello", "client": "bad id!"])).first?["code"] == "bad_request")
        let c = f.connect()
        #expect(f.inbox(c, f.send(c, ["type": "ping", "id": "p"])) == [["type": "pong", "id": "p"]])   // hello is optional
        #expect(f.hub.client(of: c) == "c3")
    }

    /// The lag policy is the hub's: a member that could not take a patch (the runtime
    /// says so) has that session's patches paused, once; when it drains it gets the
    /// session's state and its patches again. A session it leaves is forgotten.
    @Test func aLaggingMemberIsPausedThenCaughtUpWithAState() {
        let f = Fixture()
        let a = f.connect(), b = f.connect()
        _ = f.send(a, ["type": "join", "session": "demo"])
        _ = f.send(b, ["type": "join", "session": "demo"])
        func logs(_ effects: [Hub.Effect]) -> [String] { effects.compactMap { if case .log(_, let line) = $0 { line } else { nil } } }
        var effects = f.hub.handle(.lagging(a, session: "demo", queued: 300_000), now: 0)
        #expect(logs(effects) == ["#\(a) c1 is lagging on 'demo' (300000 bytes queued): patches paused until it drains"])
        #expect(f.hub.patchesPaused(for: a, in: "demo") && !f.hub.patchesPaused(for: b, in: "demo"))
        #expect(logs(f.hub.handle(.lagging(a, session: "demo", queued: 400_000), now: 0)).isEmpty, "said once")
        _ = f.send(b, ["type": "command", "session": "demo", "id": 1, "ops": [["op": "setRoot", "route": "main"]]])
        effects = f.hub.handle(.drained(a), now: 0)
        #expect(logs(effects) == ["#\(a) c1 drained: catching up on demo with a snapshot"])
        #expect(f.inbox(a, effects).map { $0["type"] } == ["snapshot"] && f.inbox(a, effects).first?["rev"] == 1)
        #expect(!f.hub.patchesPaused(for: a, in: "demo"))
        #expect(f.hub.handle(.drained(a), now: 0).isEmpty, "nothing paused: nothing to catch up on")
        _ = f.hub.handle(.lagging(b, session: "demo", queued: 300_000), now: 0)
        _ = f.send(b, ["type": "leave", "session": "demo"])
        #expect(!f.hub.patchesPaused(for: b, in: "demo") && f.inbox(b, f.hub.handle(.drained(b), now: 0)).isEmpty)
    }

    @Test func randomClientIDsAreFourteenCharactersAndDistinct() {
        var ids = Hub.IDSource.random(seed: 0x5eed)
        let clients = (0..<10_000).map { _ in ids.nextClient() }
        let digits = Set("0123456789abcdefghijklmnopqrstuvwxyz")
        for id in clients.prefix(100) {
            #expect(id.utf8.count == 14 && id.first == "c" && id.dropFirst().allSatisfy(digits.contains))
        }
        #expect(Set(clients).count == clients.count)
        #expect(clients.allSatisfy { $0.utf8.count == 14 })   // padded: small values too
        let epoch = ids.nextEpoch()
        #expect(epoch.utf8.count == 16 && epoch.allSatisfy("0123456789abcdef".contains))
    }

    @Test func joinCommandPatchThenAckAndPresence() {
        let f = Fixture()
        let a = f.connect(), b = f.connect(), outsider = f.connect()
        let ja = f.send(a, ["type": "join", "session": "demo", "id": 1])
        guard let joined = f.inbox(a, ja).first else { Issue.record(); return }
        #expect(joined["type"] == "joined" && joined["rev"] == 0 && joined["epoch"] == "ep1" && joined["state"] != nil)
        #expect(joined["flow"]?["name"] == "shop" && joined["members"]?.arrayValue?.count == 1)
        #expect(f.inbox(a, f.tick()).first?["joined"]?.arrayValue?.count == 1)   // its own join, with the next tick
        let jb = f.send(b, ["type": "join", "session": "demo"])
        #expect(f.inbox(a, jb).isEmpty)                                          // presence waits for the tick
        #expect(f.inbox(b, jb).first?["members"]?.arrayValue?.count == 2)
        let tick = f.tick()
        for c in [a, b] {
            #expect(f.inbox(c, tick) == [["type": "presence", "session": "demo", "joined": [["client": "c2", "name": "c2", "role": "admin"]]]])
        }
        #expect(f.tick().isEmpty)                                                // nothing new: nothing sent

        let cmd = f.send(outsider, ["type": "command", "session": "demo", "id": "k1", "ops": [["op": "setRoot", "route": "main"]]])
        for member in [a, b] {
            let got = f.inbox(member, cmd)
            #expect(got.count == 1 && got[0]["type"] == "patch" && got[0]["rev"] == 1 && got[0]["by"] == "c3" && got[0]["cmd"] == "k1")
        }
        #expect(f.inbox(outsider, cmd) == [["type": "ack", "id": "k1", "session": "demo", "rev": 1, "results": ["applied"],
                                            "created": ["e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9", "e10"]]])
        // A member sender gets the patch first, then the ack.
        let own = f.inbox(a, f.send(a, ["type": "command", "session": "demo", "id": 2, "ops": [["op": "push", "route": "detail", "params": ["id": 1]]]]))
        #expect(own.map { $0["type"] } == ["patch", "ack"])
        // The same command again: the original ack, marked duplicate, no patch.
        let dup = f.send(a, ["type": "command", "session": "demo", "id": 2, "ops": [["op": "push", "route": "detail", "params": ["id": 1]]]])
        #expect(f.inbox(b, dup).isEmpty && f.inbox(a, dup) == [["type": "ack", "id": 2, "session": "demo", "rev": 2, "results": ["applied"], "duplicate": true, "created": ["e11"]]])
        // Its id reused for another command: id_reused, no patch.
        let reused = f.send(a, ["type": "command", "session": "demo", "id": 2, "ops": [["op": "reset"]]])
        #expect(f.inbox(b, reused).isEmpty && f.inbox(a, reused).map { $0["code"] } == ["id_reused"])

        #expect(f.send(b, ["type": "status", "session": "demo", "rev": 2, "focus": "e11"]).isEmpty)
        #expect(f.inbox(a, f.tick()) == [["type": "presence", "session": "demo", "status": [["client": "c2", "rev": 2, "focus": "e11"]]]])
        let leave = f.send(b, ["type": "leave", "session": "demo", "id": 3])
        #expect(f.inbox(b, leave) == [["type": "left", "id": 3, "session": "demo"]])
        #expect(f.inbox(a, f.tick()) == [["type": "presence", "session": "demo", "left": ["c2"]]])
        #expect(f.inbox(a, f.disconnect(outsider)).isEmpty && f.tick().isEmpty)
        // A join and a leave inside one interval cancel out.
        let b2 = f.connect(), passer = f.connect()
        _ = f.send(b2, ["type": "join", "session": "demo"])
        _ = f.send(passer, ["type": "join", "session": "demo"])
        _ = f.disconnect(passer)
        #expect(f.inbox(a, f.tick()) == [["type": "presence", "session": "demo", "joined": [["client": "c4", "name": "c4", "role": "admin"]]]])
        _ = f.disconnect(a)
        #expect(f.tick() == [.broadcast(session: "demo", .presence(session: "demo", .init(left: ["c1"])), to: [b2])])
        #expect(f.hub.members(of: "demo") == [b2])
    }

    @Test func catchUpWithSinceAndEpoch() {
        let f = Fixture()
        let a = f.connect()
        for i in 1...5 { _ = f.send(a, ["type": "command", "session": "demo", "id": .int(Int64(i)), "ops": [["op": "update", "data": ["n": .int(Int64(i))]]]]) }
        let b = f.connect()
        let j = f.inbox(b, f.send(b, ["type": "join", "session": "demo", "since": 2, "epoch": "ep1"]))[0]
        #expect(j["state"] == nil && j["patches"]?.arrayValue?.map { $0["rev"] } == [3, 4, 5])
        #expect(f.inbox(b, f.send(b, ["type": "join", "session": "demo", "since": 5, "epoch": "ep1"]))[0]["patches"] == [])
        // Another epoch, or none: the whole state.
        #expect(f.inbox(b, f.send(b, ["type": "join", "session": "demo", "since": 2, "epoch": "old"]))[0]["state"] != nil)
        #expect(f.inbox(b, f.send(b, ["type": "join", "session": "demo", "since": 2]))[0]["state"] != nil)
        let sync = f.inbox(b, f.send(b, ["type": "sync", "session": "demo", "since": 3, "epoch": "ep1", "id": "s"]))
        #expect(sync.map { $0["type"] } == ["patch", "patch", "synced"] && sync.allSatisfy { $0["id"] == "s" })
        #expect(sync.last == ["type": "synced", "id": "s", "session": "demo", "rev": 5])
        let stale = f.inbox(b, f.send(b, ["type": "sync", "session": "demo", "since": 3, "epoch": "gone", "id": "t"]))
        #expect(stale.count == 1 && stale[0]["type"] == "snapshot" && stale[0]["rev"] == 5 && stale[0]["id"] == "t")
    }

    @Test func createSessionsFlowsAndLimits() {
        let f = Fixture { $0.maxSessions = 3; $0.maxMembers = 2 }
        let a = f.connect()
        #expect(f.inbox(a, f.send(a, ["type": "join", "session": "lab"]))[0]["code"] == "unknown_session")
        #expect(f.inbox(a, f.send(a, ["type": "join", "session": "lab", "create": true, "flow": "nope"]))[0]["code"] == "not_found")
        let j = f.inbox(a, f.send(a, ["type": "join", "session": "lab", "create": true, "flow": "studio"]))[0]
        #expect(j["type"] == "joined" && j["flow"]?["name"] == "studio")
        // Joining an existing session ignores create and flow.
        #expect(f.inbox(a, f.send(a, ["type": "join", "session": "lab", "create": true, "flow": "shop"]))[0]["flow"]?["name"] == "studio")
        _ = f.send(a, ["type": "join", "session": "x", "create": true])
        #expect(f.inbox(a, f.send(a, ["type": "join", "session": "y", "create": true]))[0]["code"] == "full")
        let b = f.connect(), c = f.connect()
        _ = f.send(b, ["type": "join", "session": "lab"])
        #expect(f.inbox(c, f.send(c, ["type": "join", "session": "lab"]))[0]["code"] == "full")
        let list = f.inbox(c, f.send(c, ["type": "sessions"]))[0]["sessions"]
        #expect(list == [["session": "demo", "flow": "shop", "rev": 0, "members": 0], ["session": "lab", "flow": "studio", "rev": 0, "members": 2],
                         ["session": "x", "flow": "shop", "rev": 0, "members": 1]])
    }

    @Test func rateLimitWithBurst() {
        let f = Fixture { $0.commandRate = 10; $0.commandBurst = 5 }
        let a = f.connect()
        func cmd(_ i: Int) -> JSON? { f.inbox(a, f.send(a, ["type": "command", "session": "demo", "id": .int(Int64(i)), "ops": [["op": "dismiss"]]])).last?["type"] }
        #expect((0..<5).map(cmd) == Array(repeating: "ack", count: 5))
        #expect(f.inbox(a, f.send(a, ["type": "command", "session": "demo", "id": 99, "ops": [["op": "dismiss"]]]))[0]["code"] == "rate_limited")
        f.now += 100   // one token back at 10/s
        #expect(cmd(6) == "ack")
        #expect(cmd(7) == "error")
        // Other messages are not limited.
        #expect(f.inbox(a, f.send(a, ["type": "ping"]))[0]["type"] == "pong")
        #expect(f.hub.commandOutcomes["rate_limited"] == 2)
    }

    @Test func rolesAskedForInHello() {
        let f = Fixture()
        let v = f.connect()
        _ = f.send(v, ["type": "hello", "role": "viewer"])
        #expect(f.inbox(v, f.send(v, ["type": "command", "session": "demo", "id": 1, "ops": [["op": "dismiss"]]]))[0]["code"] == "forbidden")
        #expect(f.inbox(v, f.send(v, ["type": "join", "session": "new", "create": true]))[0]["code"] == "forbidden")
        #expect(f.inbox(v, f.send(v, ["type": "join", "session": "demo"]))[0]["type"] == "joined")
        let c = f.connect()
        _ = f.send(c, ["type": "hello", "role": "controller"])
        #expect(f.inbox(c, f.send(c, ["type": "command", "session": "demo", "id": 1, "ops": [["op": "reset"]]]))[0]["code"] == "forbidden")
        #expect(f.inbox(c, f.send(c, ["type": "command", "session": "demo", "id": 2, "ops": [["op": "dismiss"]]]))[0]["type"] == "ack")
    }

    @Test func badMessagesGetErrorsAndChangeNothing() {
        let f = Fixture()
        let a = f.connect()
        _ = f.send(a, ["type": "join", "session": "demo"])
        let before = f.hub.sessions["demo"]!.sequencer.rev
        let cases: [(JSON, String)] = [
            (["type": "teleport"], "bad_request"),
            (["type": "command", "session": "demo", "ops": []], "bad_request"),
            (["type": "command", "session": "demo", "id": 1, "ops": []], "bad_request"),
            (["type": "command", "session": "nope", "id": 1, "ops": [["op": "pop"]]], "unknown_session"),
            (["type": "command", "session": "demo", "id": 1, "ops": [["op": "push", "route": "x"]]], "unknown_route"),
            (["type": "status", "session": "demo"], "bad_request"),
            (["type": "status", "session": "nope", "rev": 1], "unknown_session"),
            (["type": "get", "session": "nope"], "unknown_session"),
            (["type": "sync", "session": "nope", "since": 0, "epoch": "x"], "unknown_session"),
        ]
        for (message, code) in cases {
            #expect(f.inbox(a, f.send(a, message)).first?["code"] == .string(code), "\(message)")
        }
        #expect(f.inbox(a, f.hub.handle(.text(a, Array("{not json".utf8)), now: 0)).first?["code"] == "bad_json")
        #expect(f.hub.sessions["demo"]!.sequencer.rev == before)
        // A status from a non-member is refused.
        let b = f.connect()
        #expect(f.inbox(b, f.send(b, ["type": "status", "session": "demo", "rev": 0])).first?["code"] == "bad_request")
    }

    /// History (docs/protocol.md, "History"): `history` pages and `get` with `rev`; bad requests change nothing.
    @Test func historyAndPastRevisions() {
        let f = Fixture { $0.history = 3 }
        let a = f.connect()
        _ = f.send(a, ["type": "hello", "name": "tablet"])
        _ = f.send(a, ["type": "join", "session": "demo"])
        var states: [JSON] = [f.hub.sessions["demo"]!.sequencer.state.json]
        for (i, route) in ["login", "main", "onboarding", "login"].enumerated() {
            var command: JSONObject = ["type": "command", "session": "demo", "id": .int(Int64(i)), "ops": [["op": "setRoot", "route": .string(route)]]]
            if i == 1 { command["label"] = "in the shop" }
            _ = f.send(a, .object(command))
            states.append(f.hub.sessions["demo"]!.sequencer.state.json)
        }
        let page = f.inbox(a, f.send(a, ["type": "history", "session": "demo", "id": "h"])).first
        #expect(page?["type"] == "history" && page?["id"] == "h" && page?["rev"] == 4 && page?["earliest"] == 1)
        #expect(page?["entries"]?.arrayValue?.compactMap { $0["rev"]?.intValue } == [4, 3, 2])
        #expect(page?["entries"]?.arrayValue?.last?["label"] == "in the shop")
        #expect(page?["entries"]?.arrayValue?.first?["name"] == "tablet")
        let older = f.inbox(a, f.send(a, ["type": "history", "session": "demo", "before": 3, "limit": 1])).first
        #expect(older?["entries"]?.arrayValue?.compactMap { $0["rev"]?.intValue } == [2])

        for rev in 1...4 {
            let m = f.inbox(a, f.send(a, ["type": "get", "session": "demo", "rev": .int(Int64(rev))])).first
            #expect(m?["type"] == "snapshot" && m?["state"] == states[rev] && m?["rev"] == .int(Int64(rev)))
            #expect(m?["historic"] == (rev == 4 ? nil : true), "only a past revision is historic")
        }
        let cases: [(JSON, String)] = [
            (["type": "get", "session": "demo", "rev": 0], "gone"),
            (["type": "get", "session": "demo", "rev": 5], "not_found"),
            (["type": "get", "session": "demo", "rev": -1], "bad_request"),
            (["type": "get", "session": "demo", "rev": "2"], "bad_request"),
            (["type": "get", "session": "nope", "rev": 1], "unknown_session"),
            (["type": "history", "session": "demo", "limit": 1001], "bad_request"),
            (["type": "history", "session": "demo", "limit": 0], "bad_request"),
            (["type": "history", "session": "demo", "before": "x"], "bad_request"),
            (["type": "history", "session": "nope"], "unknown_session"),
        ]
        for (message, code) in cases {
            #expect(f.inbox(a, f.send(a, message)).first?["code"] == .string(code), "\(message)")
        }
        let gone = f.inbox(a, f.send(a, ["type": "get", "session": "demo", "rev": 0])).first
        #expect(gone?["message"]?.stringValue?.contains("history keeps revisions 1 to 4") == true, "\(String(describing: gone))")
        #expect(f.hub.sessions["demo"]!.sequencer.rev == 4)
    }

    /// A recording (docs/protocol.md, "History", `/log`) replays onto a fresh session: load its state and
    /// counter, then each command (a restore as a load of the state it carries); every
    /// revision's patch comes out as recorded.
    @Test func aRecordingReplaysPatchForPatch() throws {
        let f = Fixture { $0.history = 50 }
        let a = f.connect()
        _ = f.send(a, ["type": "join", "session": "demo"])
        var gen = CommandGenerator(flow: .demo, seed: 0x1065)
        gen.strict = true
        for n in 0..<120 {
            let state = f.hub.sessions["demo"]!.sequencer.state
            var command: JSONObject = ["type": "command", "session": "demo", "id": .int(Int64(n))]
            if n % 17 == 16 {
                command["ops"] = [["op": "restore", "rev": .int(Int64(f.hub.sessions["demo"]!.sequencer.rev - 3))]]
            } else {
                command["ops"] = .array([gen.op(state, nextID: f.hub.sessions["demo"]!.sequencer.document.nextID)])
            }
            if n % 10 == 0 { command["label"] = .string("step \(n)") }
            _ = f.send(a, .object(command))
        }
        let lines = try f.hub.recording(of: "demo", from: nil).get()
        let header = lines[0]
        #expect(header["format"] == "navsync-log/1" && header["from"] == .int(Int64(f.hub.sessions["demo"]!.sequencer.history.earliest)))
        #expect(lines.count - 1 == 50 && lines.dropFirst().contains { $0["state"] != nil }, "restores carry their state")
        var replay = Sequencer(flow: .demo, epoch: "replay")
        guard case .applied = replay.submit(["id": "load", "ops": [["op": "load", "state": header["state"]!, "nextId": header["nextId"]!]]], client: "r") else {
            Issue.record("the recording's state did not load"); return
        }
        for line in lines.dropFirst() {
            var object: JSONObject = ["id": line["cmd"]!, "ops": line["ops"]!]
            if let state = line["state"] { object["ops"] = [["op": "load", "state": state]] }
            if let label = line["label"] { object["label"] = label }
            guard case .applied(_, let patch) = replay.submit(object, client: line["client"]!.stringValue!) else {
                Issue.record("revision \(line["rev"]!) did not apply"); return
            }
            #expect(JSON.array(patch.ops.map(\.json)) == line["patch"], "revision \(line["rev"]!)")
        }
        #expect(replay.state == f.hub.sessions["demo"]!.sequencer.state)
        #expect(f.hub.recording(of: "demo", from: 0).failureCode == .gone && f.hub.recording(of: "nope", from: nil).failureCode == .unknownSession)
    }

    @Test func adminsDeleteSessionsMembersAreToldAndLeave() {
        let f = Fixture()
        let admin = f.connect(), member = f.connect(), other = f.connect()
        _ = f.send(member, ["type": "join", "session": "lab", "create": true, "flow": "studio"])
        _ = f.send(other, ["type": "join", "session": "lab"])
        _ = f.send(admin, ["type": "join", "session": "lab"])
        let deleted = f.send(admin, ["type": "delete", "session": "lab", "id": "d"])
        #expect(f.inbox(admin, deleted) == [["type": "deleted", "id": "d", "session": "lab", "by": "c1"]])
        for c in [member, other] { #expect(f.inbox(c, deleted) == [["type": "deleted", "session": "lab", "by": "c1"]]) }
        #expect(f.hub.sessions["lab"] == nil && f.hub.members(of: "lab").isEmpty)
        // They left it: a command there is unknown_session; the name is free again.
        #expect(f.inbox(member, f.send(member, ["type": "command", "session": "lab", "id": 1, "ops": [["op": "pop"]]]))[0]["code"] == "unknown_session")
        #expect(f.inbox(admin, f.send(admin, ["type": "delete", "session": "lab"]))[0]["code"] == "unknown_session")
        #expect(f.inbox(member, f.send(member, ["type": "join", "session": "lab", "create": true]))[0]["rev"] == 0)
        // Only admins may delete.
        let viewer = f.connect()
        _ = f.send(viewer, ["type": "hello", "role": "controller"])
        let refused = f.inbox(viewer, f.send(viewer, ["type": "delete", "session": "lab"]))
        #expect(refused[0]["code"] == "forbidden" && refused[0]["message"]?.stringValue?.contains("admin") == true)
        #expect(f.hub.sessions["lab"] != nil)
        #expect(f.inbox(viewer, f.send(viewer, ["type": "delete"]))[0]["code"] == "bad_request")
    }

    /// docs/protocol.md, "Server messages, unasked": many joins at once cost one presence per interval, and past
    /// `presenceDetail` members the rest are a count, in presence and in joined.
    @Test func presenceIsGatheredPerIntervalAndCountedPastTheDetail() {
        let f = Fixture { $0.presenceDetail = 3 }
        var conns: [Int] = []
        for i in 0..<10 {
            let c = f.connect()
            conns.append(c)
            if i >= 2 { _ = f.send(c, ["type": "hello", "role": "viewer"]) }
            let joined = f.inbox(c, f.send(c, ["type": "join", "session": "demo"]))[0]
            // A joiner always finds itself listed; the rest past 3 are counted.
            #expect(joined["members"]?.arrayValue?.contains { $0["client"] == .string("c\(c)") } == true)
            #expect(joined["others"] == (i >= 4 ? .int(Int64(i - 3)) : nil), "\(i): \(joined)")
        }
        let tick = f.tick()
        #expect(tick.count == 1)                                   // one message for ten joins
        guard case .broadcast(_, .presence(_, let p), let to) = tick[0] else { Issue.record(); return }
        #expect(to == conns && p.joined.map(\.client) == ["c1", "c2", "c3"] && p.others == 7)
        // A controller joining later is listed before the viewers.
        let boss = f.connect()
        _ = f.send(boss, ["type": "hello", "role": "controller"])
        _ = f.send(boss, ["type": "join", "session": "demo"])
        guard case .broadcast(_, .presence(_, let q), _)? = f.tick().first else { Issue.record(); return }
        #expect(q.joined.map(\.client) == ["c11"] && q.others == 8)
        // Statuses are sent for listed members only.
        _ = f.send(conns[9], ["type": "status", "session": "demo", "rev": 0])
        #expect(f.tick().first.map { if case .broadcast(_, .presence(_, let r), _) = $0 { r.status.isEmpty } else { false } } ?? true)
    }

    /// A herd: members joining a session past the detail change only the count, which
    /// goes out at most once per `presenceCountInterval`, not every tick to everyone
    /// joined so far (10,000 joiners over a second were 1.5 million presence messages).
    @Test func aHerdsCountIsAnnouncedOncePerIntervalNotEveryTick() {
        let f = Fixture { $0.presenceDetail = 4 }
        var conns: [Int] = []
        var deliveries = 0, counts: [Int] = []
        for tick in 0..<40 {                     // 2 s of 50 ms ticks, 25 joiners each
            for _ in 0..<25 {
                let c = f.connect()
                conns.append(c)
                _ = f.send(c, ["type": "join", "session": "demo"])
            }
            f.now = Int64(tick) * 50
            for case .broadcast(_, .presence(_, let p), let to) in f.tick() {
                deliveries += to.count
                if p.joined.isEmpty { counts.append(p.others ?? -1) }
            }
        }
        // The first tick lists the first four (to 25 members); then the count alone, once
        // a second: at 1,000 ms (521 others, to 525 members); 1,950 ms is too soon.
        #expect(counts == [521] && deliveries == 25 + 525, "\(counts) \(deliveries)")
        // The count held back goes out once the interval has passed; then nothing until
        // it changes again, and a change waits for the interval too.
        f.now = 2_000
        guard case .broadcast(_, .presence(_, let p), let to)? = f.tick().first else { Issue.record(); return }
        #expect(p.others == 996 && p.joined.isEmpty && to.count == 1_000)
        f.now = 2_050
        #expect(f.tick().isEmpty)
        _ = f.disconnect(conns.last!)
        #expect(f.tick().isEmpty)
        f.now = 3_000
        guard case .broadcast(_, .presence(_, let q), _)? = f.tick().first else { Issue.record(); return }
        #expect(q.others == 995)
    }

    /// A saturated server (busy ticks) holds a session's presence back, up to
    /// `presenceMaxDelay` from the first tick that held it, and sends it as one message
    /// with every change since; the first tick that is not busy sends it at once.
    @Test func aBusyServerHoldsPresenceUpToTheMaxDelay() {
        let f = Fixture { $0.presenceMaxDelay = 1_000 }
        var conns: [Int] = []
        func joinOne() {
            let c = f.connect()
            conns.append(c)
            _ = f.send(c, ["type": "join", "session": "demo"])
        }
        func presence(_ effects: [Hub.Effect]) -> [(ServerMessage.Presence, [Int])] {
            effects.compactMap { if case .broadcast(_, .presence(_, let p), let to) = $0 { (p, to) } else { nil } }
        }
        for t in 0..<20 {                         // busy ticks 0...950 ms, a join each
            joinOne()
            f.now = Int64(t) * 50
            #expect(presence(f.tick(busy: true)).isEmpty, "\(f.now)")
        }
        joinOne()
        f.now = 1_000                             // a second after the first held tick
        let sent = presence(f.tick(busy: true))
        #expect(sent.count == 1 && sent.first?.0.joined.count == 21 && sent.first?.1 == conns)
        // Held again from the next change; a quiet tick sends it at once.
        joinOne()
        f.now = 1_050
        #expect(presence(f.tick(busy: true)).isEmpty)
        f.now = 1_100
        let quiet = presence(f.tick())
        #expect(quiet.count == 1 && quiet.first?.0.joined.map(\.client) == ["c\(conns.last!)"])
    }

    /// `--history-bytes`: on the tick, the session holding most history gives up its
    /// oldest revisions until the node is within the bound.
    @Test func historyBytesAreBoundedPerNodeLargestFirst() throws {
        let f = Fixture { $0.historyBytes = 60_000 }
        _ = try f.hub.createSession("big", flow: "shop")
        _ = try f.hub.createSession("small", flow: "shop")
        let c = f.connect()
        for (name, commands) in [("big", 400), ("small", 60)] {
            for i in 0..<commands {
                let op: JSON = i % 2 == 0 ? ["op": "setRoot", "route": "main"] : ["op": "setRoot", "route": "login"]
                _ = f.send(c, ["type": "command", "session": .string(name), "id": .int(Int64(i + (name == "big" ? 0 : 10_000))), "ops": [op]])
            }
        }
        let small = f.hub.sessions["small"]!.sequencer.history
        #expect(f.hub.historyBytes > 60_000)
        _ = f.tick()
        #expect(f.hub.historyBytes <= 60_000, "\(f.hub.historyBytes)")
        #expect(f.hub.sessions["big"]!.sequencer.history.earliest > 0, "the largest gave up its oldest")
        #expect(f.hub.sessions["small"]!.sequencer.history.earliest == small.earliest, "the small one kept its own")
    }

    /// `joined` written around the session's cached flow and member list is byte for
    /// byte what encoding the message gives, through listing changes and statuses.
    @Test func joinedBytesFromTheCacheEqualTheEncodedMessage() {
        let f = Fixture { $0.presenceDetail = 4 }
        func check(_ effects: [Hub.Effect]) {
            for case .send(_, let m, let id) in effects where m.json()["type"] == "joined" {
                #expect(m.bytes(id: id) == m.json(id: id).encoded(), "\(m.json(id: id))")
                guard case .joined(let j) = m else { continue }
                #expect(j.encoded != nil)
            }
        }
        var first: Int?
        for i in 0..<9 {
            let c = f.connect()
            first = first ?? c
            if i == 6 { _ = f.send(c, ["type": "hello", "role": "controller"]) }   // changes the listing
            if i == 3 { _ = f.send(first!, ["type": "leave", "session": "demo"]) }  // so does a leave
            // (Until the listing is full, each join extends the cached one in place.)
            check(f.send(c, ["type": "join", "session": "demo", "id": .int(Int64(i))]))
            if i == 2 { _ = f.send(c, ["type": "status", "session": "demo", "rev": 0, "focus": "e1"]) }
            // The state is encoded once per revision: a command in between is seen by
            // the next joiner.
            if i % 3 == 1 {
                _ = f.send(c, ["type": "command", "session": "demo", "id": .int(Int64(100 + i)),
                               "ops": [["op": "setRoot", "route": i == 4 ? "login" : "main"]]])
            }
        }
        let late = f.connect()
        let effects = f.send(late, ["type": "join", "session": "demo"])
        check(effects)
        let joins = effects.compactMap { if case .send(_, .joined(let j), _) = $0 { j } else { nil } }
        #expect(joins.count == 1 && joins.allSatisfy { $0.catchUp == .state(f.hub.sessions["demo"]!.sequencer.state.json) })
        #expect(f.hub.sessions["demo"]!.sequencer.rev == 3)
    }
}

extension Result where Failure == NavError {
    var failureCode: ErrorCode? { if case .failure(let e) = self { return e.code } else { return nil } }
}
