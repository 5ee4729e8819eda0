import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

/// Cluster mode's reducer as a value (docs/cluster.md, "How it works"): two hubs and a model of
/// Redis that runs the scripts' rules (create unless it exists; compare-and-append on
/// epoch and log position; reads of the log or of the snapshot and the log after it).
/// Requests, answers and live messages travel through queues delivered in a random
/// order, as the network would: each queue stays in order (one TCP connection), the
/// queues do not wait for each other.
@Suite("Cluster hub")
struct ClusterHubTests {
    /// Redis, as the scripts see it.
    struct FakeRedis {
        struct Held {
            var flow: JSON
            var epoch: String
            var entries: [(StreamID, ClusterRecord)] = []
            var snapshot: (at: StreamID, data: JSON)
            var last: StreamID { entries.last?.0 ?? snapshot.at }
            var rev: Int { entries.last(where: { $0.0.isRevision })?.0.ms ?? snapshot.at.ms }
        }
        var sessions: [String: Held] = [:]
        /// Every entry ever appended, per session (the log before any trim).
        var everything: [String: [(StreamID, ClusterRecord)]] = [:]

        /// A request from a node: its answer, and what the live channel carries to all.
        mutating func run(_ request: ClusterRequest) -> (answer: ClusterEvent?, live: [ClusterEvent]) {
            switch request {
            case .create(let name, let flow, let epoch, let snapshot):
                if sessions[name] != nil { return (.created(session: name, made: false), []) }
                sessions[name] = Held(flow: flow.source, epoch: epoch, snapshot: (.zero, snapshot))
                return (.created(session: name, made: true), [.appeared(session: name)])
            case .append(let name, let epoch, let after, let records, let token):
                guard var s = sessions[name] else { return (.refused(session: name, token: token, .gone), []) }
                guard s.epoch == epoch, s.last == after else { return (.refused(session: name, token: token, .moved), []) }
                var live: [ClusterEvent] = []
                for r in records {
                    let prev = s.last
                    let id = r.revision ? StreamID(s.rev + 1, 1) : StreamID(s.rev, (s.last.ms == s.rev ? s.last.seq : 0) + 1)
                    s.entries.append((id, r))
                    everything[name, default: []].append((id, r))
                    live.append(.live(session: name, prev: prev, id: id, revision: r.revision, record: r.json.encoded()))
                }
                sessions[name] = s
                return (.appended(session: name, token: token, last: s.last), live)
            case .read(let name, let after):
                guard let s = sessions[name] else { return (.read(session: name, .gone), []) }
                if let after, after >= s.snapshot.at, after <= s.last {
                    return (.read(session: name, .entries(epoch: s.epoch, s.entries.filter { $0.0 > after })), [])
                }
                return (.read(session: name, .whole(flow: s.flow, epoch: s.epoch, snapshot: s.snapshot.data, at: s.snapshot.at,
                                                    s.entries.filter { $0.0 > s.snapshot.at })), [])
            case .snapshot(let name, let epoch, let at, let bytes):
                guard let data = try? JSON.parse(bytes) else { Issue.record("a snapshot that does not parse"); return (nil, []) }
                guard var s = sessions[name], s.epoch == epoch, at > s.snapshot.at, at <= s.last else { return (nil, []) }
                s.snapshot = (at, data)
                s.entries.removeAll { $0.0 < at }
                sessions[name] = s
                return (nil, [])
            case .delete(let name):
                sessions[name] = nil
                return (nil, [.deleted(session: name)])
            case .presence(let name, let payload):
                return (nil, [.presence(session: name, payload)])
            case .askMembers(let name):
                return (nil, [.membersWanted(session: name)])
            case .confirm(let name, let token, let last, _, _):
                return (.appended(session: name, token: token, last: last), [])
            case .checkPositions(let positions):
                // A replica behind what Redis holds is told so (the first such, by name).
                let behind = positions.keys.sorted().first { name in sessions[name].map { $0.last > positions[name]! } ?? false }
                return (behind.map { .behind(session: $0) }, [])
            }
        }
    }

    /// One node: its hub, and what travels to and from it.
    struct Node {
        var hub: Hub
        var requests: [ClusterRequest] = []
        var answers: [ClusterEvent] = []
        var live: [ClusterEvent] = []
        /// What its one member (connection 1) received, and the acks its writer got.
        var received: [JSON] = []
        var acks: [JSON: Int] = [:]
        /// Redirects the node's writer was told of (the demo's guards).
        var redirects = 0
        var errors: [String] = []

        init(name: String, confirmsWrites: Bool = false) {
            hub = Hub(configuration: HubConfiguration(), flows: [],
                      mode: .clustered(.init(node: name, incarnation: "1", snapshotEvery: 7, confirmsWrites: confirmsWrites)),
                      ids: .counting(client: name, epoch: "\(name)-ep"))
            _ = hub.handle(.started, now: 0)
        }

        mutating func handle(_ event: Hub.Event) {
            for effect in hub.handle(event, now: 0) {
                switch effect {
                case .cluster(let r): requests.append(r)
                case .send(1, let m, let id):
                    received.append(m.json(id: id))
                case .broadcast(_, let m, let to) where to.contains(1):
                    received.append(m.json())
                case .send(2, let m, let id):
                    let j = m.json(id: id)
                    if j["type"] == "ack" { acks[j["id"]!] = Int(j["rev"]!.intValue!); redirects += j["redirects"]?.arrayValue?.count ?? 0 }
                    if j["type"] == "error" { errors.append(j["code"]?.stringValue ?? "?") }
                default: break
                }
            }
        }
    }

    @Test(arguments: [1 as UInt64, 2, 3, 4, 5, 6])
    func twoNodesRacingAgreeWithRedisAndLoseNothing(seed: UInt64) throws {
        var rng = SeededRandom(seed: seed)
        var redis = FakeRedis()
        var nodes = [Node(name: "a"), Node(name: "b")]
        func run(_ i: Int) {
            let r = nodes[i].requests.removeFirst()
            let (answer, live) = redis.run(r)
            if let answer { nodes[i].answers.append(answer) }
            for n in nodes.indices { nodes[n].live += live }
        }
        /// Delivers everything still travelling, in random order.
        func drain() {
            while nodes.contains(where: { !$0.requests.isEmpty || !$0.answers.isEmpty || !$0.live.isEmpty }) {
                let i = Int(rng.next() % 2)
                switch rng.next() % 3 {
                case 0 where !nodes[i].requests.isEmpty: run(i)
                case 1 where !nodes[i].answers.isEmpty: nodes[i].handle(.cluster(nodes[i].answers.removeFirst()))
                case 2 where !nodes[i].live.isEmpty: nodes[i].handle(.cluster(nodes[i].live.removeFirst()))
                default: break
                }
            }
        }
        for i in nodes.indices { nodes[i].handle(.cluster(.connected(sessions: []))) }
        drain()
        #expect(redis.sessions["demo"] != nil, "the demo session is made once")
        for i in nodes.indices {
            for c in [1, 2] { nodes[i].handle(.connected(c, grant: nil)) }
            nodes[i].handle(.text(1, JSON.object(["type": "join", "session": "demo", "id": "j"]).encoded()))
            nodes[i].handle(.text(2, JSON.object(["type": "hello", "client": .string("w\(i)")]).encoded()))
        }
        drain()
        // Both writers send 60 commands; everything travels in a random order meanwhile.
        let routes = ["login", "main", "onboarding"]
        var sent = [0, 0]
        while sent != [60, 60] || nodes.contains(where: { !$0.requests.isEmpty || !$0.answers.isEmpty || !$0.live.isEmpty }) {
            let i = Int(rng.next() % 2)
            switch rng.next() % 4 {
            case 0 where sent[i] < 60:
                // Some go through the demo's guards: a sign-in or sign-out (the session's
                // data) and a guarded link, redirected while nobody is signed in.
                let ops: [JSON] = switch rng.next() % 6 {
                case 0, 1: [["op": "setRoot", "route": .string(routes[Int(rng.next() % 3)])]]
                case 2: [["op": "update", "scope": "session", "data": ["user": rng.next() % 2 == 0 ? .string("w\(i)") : .null]]]
                case 3: [["op": "open", "url": "/orders/3"]]
                default: [["op": "update", "at": "App", "data": [.init("w\(i)"): .int(Int64(sent[i] % 5))]]]
                }
                nodes[i].handle(.text(2, JSON.object(["type": "command", "session": "demo", "id": .int(Int64(sent[i])), "ops": .array(ops)]).encoded()))
                sent[i] += 1
            case 1 where !nodes[i].requests.isEmpty: run(i)
            case 2 where !nodes[i].answers.isEmpty: nodes[i].handle(.cluster(nodes[i].answers.removeFirst()))
            case 3 where !nodes[i].live.isEmpty: nodes[i].handle(.cluster(nodes[i].live.removeFirst()))
            default: break
            }
        }
        let log = redis.everything["demo"] ?? []
        // Every command answered, none with an error; each acked once in the log.
        for (i, n) in nodes.enumerated() {
            #expect(n.acks.count == 60 && n.errors.isEmpty, "node \(i): \(n.acks.count) acks, errors \(n.errors)")
            for id in n.acks.keys {
                #expect(log.filter { $0.1.record.client == "w\(i)" && $0.1.record.command.id.json == id }.count == 1, "w\(i) \(id)")
            }
        }
        // Revisions in the log are contiguous; replaying it gives what both replicas hold.
        let revisions = log.filter { $0.0.isRevision }.map(\.0.ms)
        #expect(revisions == Array(1...max(1, revisions.count)).prefix(revisions.count).map { $0 })
        var replay = Sequencer(flow: .demo, epoch: redis.sessions["demo"]!.epoch)
        for (_, e) in log {
            _ = replay.submitJournaling(e.record.command, client: e.record.client, refused: [:],
                                        sender: .init(name: e.record.name ?? "", ts: e.record.ts), trusted: true)
        }
        for (i, n) in nodes.enumerated() {
            let s = try #require(n.hub.sessions["demo"]).sequencer
            #expect(s.rev == replay.rev && s.state.json == replay.state.json, "node \(i) at \(s.rev), Redis at \(replay.rev)")
            // Its member saw every revision once, in order (or a snapshot, then on from it).
            var rev = -1
            var gaps = 0
            for m in n.received {
                switch m["type"]?.stringValue {
                case "joined", "snapshot": rev = Int(m["rev"]!.intValue!)
                case "patch":
                    let r = Int(m["rev"]!.intValue!)
                    #expect(r > rev, "node \(i): revision \(r) sent to a member twice")
                    if r <= rev { continue }
                    if r != rev + 1 { gaps += 1 }
                    rev = r
                default: break
                }
            }
            #expect(gaps == 0 && rev == replay.rev, "node \(i): member at \(rev) with \(gaps) gaps")
        }
        #expect(nodes[0].hub.clusterRetries + nodes[1].hub.clusterRetries > 0, "the nodes raced")
        #expect(nodes[0].redirects + nodes[1].redirects > 0, "guards redirected, and the replicas and the log's replay agree on it")

        // Presence is cluster-wide: each node's session lists the other's members too.
        for i in nodes.indices { nodes[i].handle(.tick) }
        drain()
        for (i, n) in nodes.enumerated() {
            let clients = Set(n.hub.sessions["demo"]!.memberList.map(\.client))
            #expect(clients == ["a1", "b1"], "node \(i) lists \(clients)")
        }
        // Node b goes silent: after 5 s its members leave node a's session, announced
        // (once its join was: a join and a leave within one interval cancel out).
        nodes[0].handle(.tick)
        #expect(nodes[0].received.contains { $0["type"] == "presence" && $0["joined"]?.arrayValue?.first?["client"] == "b1" })
        nodes[0].received = []
        nodes[0].handle(.cluster(.heartbeat(nodes: ["a": NodeBeat(seen: 10_000, incarnation: "1"), "b": NodeBeat(seen: 4_000, incarnation: "1")], now: 10_000)))
        nodes[0].handle(.tick)
        #expect(nodes[0].hub.sessions["demo"]!.memberList.map(\.client) == ["a1"])
        #expect(nodes[0].received.contains { $0["type"] == "presence" && $0["left"] == ["b1"] }, "\(nodes[0].received)")
    }

    /// Redis publishes an append's entries before it answers the append: the node holds
    /// live entries while its append is out, and never decodes its own (their bytes here
    /// do not even parse). Another node's entry, after them, applies once the answer is in.
    @Test func aNodesOwnLiveEntriesAreNotDecodedAndOthersWaitForTheAnswer() {
        var redis = FakeRedis()
        var node = Node(name: "a")
        func settle() {
            while !node.requests.isEmpty {
                let (answer, live) = redis.run(node.requests.removeFirst())
                if let answer { node.handle(.cluster(answer)) }
                for l in live { node.handle(.cluster(l)) }
            }
        }
        node.handle(.cluster(.connected(sessions: [])))
        settle()
        for c in [1, 2] { node.handle(.connected(c, grant: nil)) }
        node.handle(.text(1, JSON.object(["type": "join", "session": "demo"]).encoded()))
        settle()
        node.handle(.text(2, JSON.object(["type": "command", "session": "demo", "id": 1, "ops": [["op": "setRoot", "route": "main"]]]).encoded()))
        let (answer, own) = redis.run(node.requests.removeFirst())
        guard case .appended(_, _, let mine)? = answer, own.count == 1 else { Issue.record("\(String(describing: answer))"); return }
        // Another node appends after it; its entry travels on the same channel.
        let other = ClusterRecord(record: JournalRecord(rev: 2, client: "b1", command: Command(id: .int(7), ops: [["op": "setRoot", "route": "login"]]),
                                                        name: "b1", ts: 0), revision: true)
        let (_, theirs) = redis.run(.append(session: "demo", epoch: redis.sessions["demo"]!.epoch, after: mine, records: [other], token: 99))
        guard case .live(_, let prev, let id, let revision, _) = own[0] else { Issue.record(); return }
        let garbled = ClusterEvent.live(session: "demo", prev: prev, id: id, revision: revision, record: Array("not json".utf8))
        let early = node.hub.handle(.cluster(garbled), now: 0) + node.hub.handle(.cluster(theirs[0]), now: 0)
        #expect(early.isEmpty, "held, not decoded: \(early)")
        node.handle(.cluster(answer!))
        #expect(node.acks == [1: 1] && node.hub.sessions["demo"]!.sequencer.rev == 2)
        #expect(node.requests.isEmpty, "no read: nothing failed to parse or was missed")
        #expect(node.received.filter { $0["type"] == "patch" }.map { $0["rev"] } == [1, 2])
    }

    @Test func aCommandWhoseAppendHasNoAnswerClosesItsClientWith1013() {
        var node = Node(name: "a")
        node.handle(.cluster(.connected(sessions: [])))
        node.handle(.cluster(.created(session: "demo", made: true)))
        node.handle(.connected(2, grant: nil))
        node.handle(.text(2, JSON.object(["type": "command", "session": "demo", "id": 1, "ops": [["op": "setRoot", "route": "main"]]]).encoded()))
        guard case .append(_, _, _, _, let token) = node.requests.last else { Issue.record("no append"); return }
        let effects = node.hub.handle(.cluster(.refused(session: "demo", token: token, .unknown("timed out"))), now: 0)
        #expect(effects.contains(.close(2, code: 1013, reason: "store did not answer; resend unacknowledged commands")))
        #expect(effects.contains { if case .cluster(.read("demo", .zero)) = $0 { true } else { false } }, "it catches up")
        #expect(node.hub.sessions["demo"]!.sequencer.rev == 0, "nothing applied without Redis")
    }

    @Test func whileRedisIsDownCommandsFailAndReadsGoOn() {
        var node = Node(name: "a")
        node.handle(.cluster(.connected(sessions: [])))
        node.handle(.cluster(.created(session: "demo", made: true)))
        node.handle(.cluster(.disconnected("connection refused")))
        node.handle(.connected(2, grant: nil))
        node.handle(.text(2, JSON.object(["type": "command", "session": "demo", "id": 1, "ops": [["op": "setRoot", "route": "main"]]]).encoded()))
        #expect(node.errors == ["unavailable"] && node.requests.filter { if case .append = $0 { true } else { false } }.isEmpty)
        let get = node.hub.handle(.text(2, JSON.object(["type": "get", "session": "demo", "id": "g"]).encoded()), now: 0)
        #expect(get.contains { if case .send(2, .snapshot, _) = $0 { true } else { false } })
    }

    @Test func whileRedisIsDownASessionNotHeldIsUnavailableNotUnknown() {
        var node = Node(name: "a")
        node.handle(.cluster(.disconnected("Redis at r:6379 refused the password")))
        node.handle(.connected(2, grant: nil))
        node.handle(.text(2, JSON.object(["type": "command", "session": "demo", "id": 1, "ops": [["op": "pop"]]]).encoded()))
        let join = node.hub.handle(.text(2, JSON.object(["type": "join", "session": "demo", "id": "j"]).encoded()), now: 0)
        #expect(node.errors == ["unavailable"])
        #expect(join.contains { if case .send(2, .error(let e), _) = $0 { e.code == .unavailable && e.message.contains("refused the password") } else { false } })
    }

    @Test func aSessionTheNodeDoesNotHoldIsReadFromRedisBeforeItIsUnknown() {
        // A node that (re)started while Redis holds the session: a join or command
        // arriving before its first read finds it all the same.
        var redis = FakeRedis()
        var other = Node(name: "b")
        other.handle(.cluster(.connected(sessions: [])))
        _ = redis.run(.create(session: "kept", flow: Flow.demo, epoch: "e1", snapshot: Sequencer(flow: Flow.demo, epoch: "e1").snapshot()))
        var node = Node(name: "a")
        node.handle(.cluster(.connected(sessions: [])))   // as if listed before "kept" was made
        node.requests = []
        node.handle(.connected(2, grant: nil))
        node.handle(.text(2, JSON.object(["type": "command", "session": "kept", "id": 1, "ops": [["op": "setRoot", "route": "main"]]]).encoded()))
        node.handle(.text(2, JSON.object(["type": "command", "session": "nothere", "id": 2, "ops": [["op": "pop"]]]).encoded()))
        #expect(node.errors.isEmpty && node.requests == [.read(session: "kept", after: nil), .read(session: "nothere", after: nil)])
        while !node.requests.isEmpty {
            let (answer, _) = redis.run(node.requests.removeFirst())
            if let answer { node.handle(.cluster(answer)) }
        }
        #expect(node.acks[1] == 1 && node.errors == ["unknown_session"])
        #expect(redis.sessions["kept"]!.rev == 1)
    }

    @Test func withRedisWaitAnUnconfirmedAppendIsNotAcknowledgedAndItsResendWaitsForReplicas() {
        var node = Node(name: "a", confirmsWrites: true)
        node.handle(.cluster(.connected(sessions: [])))
        node.handle(.cluster(.created(session: "demo", made: true)))
        node.handle(.connected(1, grant: nil))
        node.handle(.text(1, JSON.object(["type": "join", "session": "demo", "id": "j"]).encoded()))
        node.handle(.cluster(.read(session: "demo", .entries(epoch: node.hub.sessions["demo"]!.sequencer.epoch, []))))
        node.handle(.connected(2, grant: nil))
        node.handle(.text(2, JSON.object(["type": "hello", "client": "w"]).encoded()))
        let command = JSON.object(["type": "command", "session": "demo", "id": 1, "ops": [["op": "setRoot", "route": "main"]]])
        node.handle(.text(2, command.encoded()))
        guard case .append(_, _, _, _, let token) = node.requests.last else { Issue.record("no append"); return }
        node.handle(.cluster(.waited(session: "demo", token: token, last: StreamID(1, 1), .oneUnconfirmed)))
        #expect(node.errors == ["unconfirmed"] && node.acks.isEmpty)
        #expect(node.hub.sessions["demo"]!.sequencer.rev == 1, "Redis has it: the replica follows")
        #expect(node.received.contains { $0["type"] == "patch" }, "members see what Redis holds")
        // The resend by id is a duplicate: answered only once the replicas confirm.
        node.handle(.text(2, command.encoded()))
        guard case .confirm("demo", let again, StreamID(1, 1), _, _)? = node.requests.last else { Issue.record("no confirm: \(node.requests)"); return }
        #expect(node.acks.isEmpty)
        node.handle(.cluster(.appended(session: "demo", token: again, last: StreamID(1, 1))))
        #expect(node.acks[1] == 1)
    }

    /// Over HTTP, a command answered `unconfirmed` ("sending it again with the same id is
    /// safe") that named no `X-Navsync-Client` is told the identity it was recorded under;
    /// sent again with it, it is the same command (answered once the replicas confirm),
    /// never applied twice. Regression: the resend (without the header, as the README's
    /// curl lines send it) was a new command, applied again.
    @Test func anUnconfirmedHTTPCommandNamesTheIdentityItsResendNeeds() throws {
        var node = Node(name: "a", confirmsWrites: true)
        node.handle(.cluster(.connected(sessions: [])))
        node.handle(.cluster(.created(session: "demo", made: true)))
        let request = HTTPRequest(method: "POST", target: "/api/sessions/demo/commands", minorVersion: 1, headers: [], body: [])
        let command: JSONObject = ["id": 1, "ops": [["op": "setRoot", "route": "main"]]]
        func post(_ client: String?) -> [Hub.Effect] {
            node.hub.handle(.httpCommand(.init(connection: 9, request: request, session: "demo", command: command, client: client, role: .admin)), now: 0)
        }
        func answers(_ effects: [Hub.Effect]) -> [JSON] {
            effects.compactMap { if case .answer(9, _, let m, let id) = $0 { m.json(id: id) } else { nil } }
        }
        var effects = post(nil)
        for case .cluster(let r) in effects { node.requests.append(r) }
        guard case .append(_, _, _, _, let token) = node.requests.last else { Issue.record("no append"); return }
        effects = node.hub.handle(.cluster(.waited(session: "demo", token: token, last: StreamID(1, 1), .oneUnconfirmed)), now: 0)
        let refusal = try #require(answers(effects).first)
        let message = refusal["message"]?.stringValue ?? ""
        #expect(refusal["code"] == "unconfirmed" && message.contains("X-Navsync-Client: http-"), "\(refusal)")
        let identity = String(message.split(separator: "X-Navsync-Client: ")[1].prefix { $0 != "," && $0 != " " })
        // Sent again under it: the same command, waiting for the replicas, then acknowledged once.
        effects = post(identity)
        var confirm: Int?
        for case .cluster(.confirm("demo", let t, _, _, _)) in effects { confirm = t }
        let t = try #require(confirm, "the resend waits for the replicas: \(effects)")
        let ack = try #require(answers(node.hub.handle(.cluster(.appended(session: "demo", token: t, last: StreamID(1, 1))), now: 0)).first)
        #expect(ack["type"] == "ack" && ack["rev"] == 1 && ack["duplicate"] == true, "\(ack)")
        #expect(node.hub.sessions["demo"]!.sequencer.rev == 1, "applied once")
    }

    /// A new primary without the node's last revisions: the log says whether this node
    /// had acknowledged any of them (an error: lost) or only answered them `unconfirmed`
    /// (a warning: their senders resend them).
    @Test func aRevisionGoingBackSaysWhetherAcknowledgedWritesWereLost() {
        func wentBack(confirmed: Bool) -> [(LogLevel, String)] {
            var node = Node(name: "a", confirmsWrites: true)
            node.handle(.cluster(.connected(sessions: [])))
            node.handle(.cluster(.created(session: "demo", made: true)))
            node.handle(.connected(2, grant: nil))
            node.handle(.text(2, JSON.object(["type": "command", "session": "demo", "id": 1, "ops": [["op": "setRoot", "route": "main"]]]).encoded()))
            guard case .append(_, _, _, _, let token) = node.requests.last else { Issue.record("no append"); return [] }
            node.handle(.cluster(confirmed ? .appended(session: "demo", token: token, last: StreamID(1, 1))
                                           : .waited(session: "demo", token: token, last: StreamID(1, 1), .oneUnconfirmed)))
            #expect(node.hub.sessions["demo"]!.sequencer.rev == 1)
            let fresh = Sequencer(flow: .demo, epoch: "a-ep1/g2").snapshot()
            let effects = node.hub.handle(.cluster(.read(session: "demo", .whole(flow: Flow.demo.source, epoch: "a-ep1/g2", snapshot: fresh, at: .zero, []))), now: 0)
            return effects.compactMap { if case .log(let level, let text) = $0, text.contains("went back") { (level, text) } else { nil } }
        }
        let lost = wentBack(confirmed: true)
        #expect(lost.count == 1 && lost.first?.0 == .error && lost.first?.1.contains("lost writes this node acknowledged (up to revision 1)") == true, "\(lost)")
        let unacknowledged = wentBack(confirmed: false)
        #expect(unacknowledged.count == 1 && unacknowledged.first?.0 == .warn
                && unacknowledged.first?.1.contains("never acknowledged (it acknowledged up to revision 0)") == true, "\(unacknowledged)")
    }



}

extension WaitAnswer {
    /// WAIT found none of the one replica a write waited for.
    static let oneUnconfirmed = WaitAnswer(waited: ["127.0.0.1:6380"], needed: 1, confirmed: 0, replicas: ["127.0.0.1:6380"])
}
