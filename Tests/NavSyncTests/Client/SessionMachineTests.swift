import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

/// The client's session machine as a value: no socket, no timer, no randomness.
@Suite("Client: the session machine")
struct SessionMachineTests {
    static func bytes(_ m: ServerMessage, id: JSON? = nil) -> [UInt8] { m.json(id: id).encoded() }

    static func sent(_ effects: [SessionMachine.Effect]) -> [JSON] {
        effects.compactMap { if case .send(let b) = $0 { return try? JSON.parse(b) } else { return nil } }
    }

    static let patch2 = Patch(rev: 2, by: "x", cmd: .int(1), ops: [PatchOperation(.replace, "/n", value: 2)])
    static let patch3 = Patch(rev: 3, by: "x", cmd: .int(2), ops: [PatchOperation(.replace, "/n", value: 3)])

    func joinedMachine() -> SessionMachine {
        var m = SessionMachine(options: SessionMachine.Options())
        #expect(m.start() == [.connect])
        let hello = Self.sent(m.opened())
        #expect(hello.map { $0["type"] } == ["hello", "join"] && hello[1]["since"] == nil)
        _ = m.received(Self.bytes(.welcome(.init(client: "c9", server: "s", heartbeat: 30, limits: ProtocolLimits()))))
        let j = m.received(Self.bytes(.joined(.init(session: "demo", epoch: "ep", rev: 1, flow: .null, members: [], catchUp: .state(["n": 1])))))
        #expect(j.contains(.event(.connection(connected: true, reason: "joined demo at rev 1"))))
        #expect(m.isJoined && m.rev == 1 && m.state == ["n": 1] && m.clientID == "c9")
        return m
    }

    @Test func aLostServerMovesItsClientToTheNextAtOnceAndItResumes() {
        var options = SessionMachine.Options()
        let urls = [7001, 7002, 7003].map { WebSocketURL(host: "127.0.0.1", port: $0, target: "/ws") }
        options.urls = urls
        var m = SessionMachine(options: options)
        #expect(m.start() == [.connect] && m.currentURL == urls[0])
        // The first server cannot be reached: the next is tried at once.
        #expect(m.closed(code: nil, reason: "refused", jitter: 0).contains(.retry(after: 0)) && m.currentURL == urls[1])
        #expect(m.retry() == [.connect])
        _ = m.opened()
        _ = m.received(Self.bytes(.joined(.init(session: "demo", epoch: "ep", rev: 4, flow: .null, members: [], catchUp: .state(["n": 4])))))
        let (_, queued) = m.command([["op": "pop"]])
        #expect(Self.sent(queued).count == 1)
        // It dies: the next server at once (within 50 ms), resuming with since/epoch and
        // the unacknowledged command resent.
        let lost = m.closed(code: nil, reason: "reset", jitter: 1)
        #expect(lost.contains(.retry(after: 50)) && m.currentURL == urls[2])
        #expect(m.retry() == [.connect])
        let again = Self.sent(m.opened())
        #expect(again[1]["since"] == 4 && again[1]["epoch"] == "ep")
        let rejoined = m.received(Self.bytes(.joined(.init(session: "demo", epoch: "ep", rev: 4, flow: .null, members: [], catchUp: .patches([])))))
        #expect(Self.sent(rejoined).map { $0["type"] } == ["command"])
        // Every server gone: round the list, then backoff.
        for _ in 0..<3 { _ = m.closed(code: nil, reason: "down", jitter: 0); _ = m.retry() }
        #expect(m.closed(code: nil, reason: "down", jitter: 0).contains { if case .retry(let after) = $0 { after >= 125 } else { false } })
    }

    @Test func anUnconfirmedCommandGoesAgainEachTickUntilAnsweredOrOutOfTries() {
        var m = joinedMachine()
        let (id, first) = m.command([["op": "pop"]])
        let unconfirmed = NavError(.unconfirmed, "0 of 1 replicas confirmed it within 1000 ms")
        // Redis has it, too few replicas confirmed it: not the command's answer.
        #expect(!m.received(Self.bytes(.error(unconfirmed), id: .int(id))).contains { if case .answered = $0 { true } else { false } })
        #expect(m.unacknowledged == 1)
        #expect(Self.sent(m.tick()) == Self.sent(first), "sent again under its id at the next tick")
        #expect(Self.sent(m.tick()).isEmpty, "once per unconfirmed answer")
        let acked = m.received(Self.bytes(.ack(session: "demo", Ack(id: .int(id), rev: 2, results: [.applied], duplicate: true))))
        #expect(acked.contains { if case .answered(id, .success) = $0 { true } else { false } } && m.unacknowledged == 0)
        // A command whose replicas never confirm gets the error after its tries.
        let (other, _) = m.command([["op": "pop"]])
        var answered = false
        for _ in 0...SessionMachine.unconfirmedRetries {
            answered = m.received(Self.bytes(.error(unconfirmed), id: .int(other))).contains {
                if case .answered(other, .failure(let e)) = $0 { e.code == .unconfirmed } else { false }
            }
            _ = m.tick()
        }
        #expect(answered && m.unacknowledged == 0)
    }

    /// `unavailable` (a cluster node cut off from Redis: nothing applied) is resent
    /// under the same id like `unconfirmed`; `internal` is not.
    @Test func anUnavailableStoreIsRetriedLikeUnconfirmed() {
        var m = joinedMachine()
        let (id, first) = m.command([["op": "pop"]])
        let down = NavError(.unavailable, "store unavailable: Redis at r:6379 is not answering; nothing was applied, try again")
        #expect(!m.received(Self.bytes(.error(down), id: .int(id))).contains { if case .answered = $0 { true } else { false } })
        #expect(Self.sent(m.tick()) == Self.sent(first))
        let (other, _) = m.command([["op": "pop"]])
        let failed = m.received(Self.bytes(.error(NavError(.internal, "boom")), id: .int(other)))
        #expect(failed.contains { if case .answered(other, .failure(let e)) = $0 { e.code == .internal } else { false } })
    }

    @Test func aSilentServerIsPingedThenDropped() {
        var m = joinedMachine()
        for _ in 0..<4 { #expect(m.tick().isEmpty) }
        #expect(Self.sent(m.tick()) == [["type": "ping"]])          // 5 s of silence
        _ = m.received(Self.bytes(.pong))                            // it answers: silence starts again
        for _ in 0..<4 { #expect(m.tick().isEmpty) }
        #expect(Self.sent(m.tick()) == [["type": "ping"]])
        for _ in 0..<4 { #expect(m.tick().isEmpty) }
        #expect(m.tick() == [.abort])                                // 10 s: gone; the shell drops it
        #expect(m.closed(code: nil, reason: "the server stopped answering", jitter: 0).contains { if case .retry = $0 { true } else { false } })
        #expect(m.tick().isEmpty, "not connected: no ticks count")
    }

    @Test func mirrorsPatchesAndResyncsOnAGap() {
        var m = joinedMachine()
        #expect(m.received(Self.bytes(.patch(session: "demo", Self.patch2))).contains(.event(.state)))
        #expect(m.rev == 2 && m.state == ["n": 2])
        #expect(m.received(Self.bytes(.patch(session: "demo", Self.patch2))) == [.received(ServerMessage.patch(session: "demo", Self.patch2).json())])   // old: ignored
        let gap = Patch(rev: 5, by: "x", cmd: .int(3), ops: [])
        let asks = Self.sent(m.received(Self.bytes(.patch(session: "demo", gap))))
        #expect(asks == [["type": "sync", "session": "demo", "since": 2, "epoch": "ep"]])
        #expect(m.rev == 2)
    }

    @Test func commandsAreAnsweredAndResentAfterAReconnect() {
        var m = SessionMachine(options: SessionMachine.Options())
        let (id, queued) = m.command([["op": "pop"]])
        #expect(queued.isEmpty && m.unacknowledged == 1)          // not joined: it waits
        _ = m.start()
        _ = m.opened()
        let j = m.received(Self.bytes(.joined(.init(session: "demo", epoch: "ep", rev: 0, flow: .null, members: [], catchUp: .state([:])))))
        #expect(Self.sent(j).map { $0["id"] } == [.int(id)])        // sent once joined
        // The connection drops before the ack: backoff, then the same command again.
        let lost = m.closed(code: nil, reason: "reset", jitter: 0.5)
        #expect(lost == [.event(.connection(connected: false, reason: "reset")), .retry(after: 187)])
        #expect(m.retry() == [.connect])
        let rejoin = Self.sent(m.opened())
        #expect(rejoin[1]["since"] == 0 && rejoin[1]["epoch"] == "ep")
        let again = m.received(Self.bytes(.joined(.init(session: "demo", epoch: "ep", rev: 0, flow: .null, members: [], catchUp: .patches([])))))
        #expect(Self.sent(again).map { $0["id"] } == [.int(id)])
        let ack = Ack(id: .int(id), rev: 1, results: [.applied])
        #expect(m.received(Self.bytes(.ack(session: "demo", ack))).contains(.answered(command: id, .success(ack))))
        #expect(m.unacknowledged == 0)
        // Backoff doubles per attempt, up to the cap.
        var delays: [Int64] = []
        for _ in 0..<8 {
            for case .retry(let d) in m.closed(code: nil, reason: "", jitter: 1) { delays.append(d) }
            _ = m.retry()
        }
        #expect(delays == [250, 500, 1000, 2000, 4000, 5000, 5000, 5000])
    }

    @Test func aRefusalBeforeJoiningStopsAndRepliesFindTheirRequest() {
        var m = SessionMachine(options: SessionMachine.Options())
        _ = m.start()
        _ = m.opened()
        let refused = m.received(Self.bytes(.error(NavError(.unknownSession, "no session 'demo'"))))
        #expect(refused.contains(.close) && m.connection == .stopped)
        #expect(m.closed(code: 1000, reason: "", jitter: 0).last == .finished)   // no reconnect

        var j = joinedMachine()
        let (rid, effects) = j.request(["type": "sessions"], wantsReply: true)
        #expect(Self.sent(effects) == [["type": "sessions", "id": .string(rid!)]])
        let answer = ServerMessage.sessions([]).json(id: .string(rid!))
        #expect(j.received(answer.encoded()).contains(.replied(request: rid!, answer)))
    }

    /// The commands still waiting when a client ends are answered, with why: a refusal
    /// of its join keeps its code; a server never reached is `offline` (or `tls`,
    /// `rejected`, as the transport said); `stop()` is `closed`. None is left dangling.
    @Test func theCommandsWaitingWhenItEndsAreAnsweredWithWhy() {
        var m = SessionMachine(options: SessionMachine.Options())
        let (a, _) = m.command([["op": "pop"]])
        _ = m.start()
        _ = m.opened()
        _ = m.received(Self.bytes(.error(NavError(.unknownSession, "no session 'demo'"))))
        let end = m.closed(code: 1000, reason: "", jitter: 0)
        #expect(end.contains(.answered(command: a, .failure(NavError(.unknownSession, "no session 'demo'")))))
        #expect(end.last == .finished && m.pending.isEmpty && m.droppedAtEnd == 1)

        var unreachable = SessionMachine(options: SessionMachine.Options())
        let (b, _) = unreachable.command([["op": "pop"]])
        _ = unreachable.start()
        let tls = unreachable.closed(code: nil, reason: "certificate verify failed", jitter: 0, failure: .tls)
        #expect(tls.contains { if case .answered(b, .failure(let e)) = $0 { e.code == .tls } else { false } })

        var stopped = joinedMachine()
        let (c, _) = stopped.command([["op": "pop"]])
        #expect(stopped.stop() == [.close])
        #expect(stopped.closed(code: 1000, reason: "", jitter: 0).contains { if case .answered(c, .failure(let e)) = $0 { e.code == .closed } else { false } })
    }

    /// `reconnectNow()` (the network is back): a backoff wait ends at once and starts
    /// over; an attempt under way is dropped and made again at once; a joined connection
    /// is pinged and dropped if nothing comes back within 2 ticks.
    @Test func reconnectNowEndsTheWaitAndStartsTheBackoffOver() {
        var m = joinedMachine()
        for _ in 0..<5 { _ = m.closed(code: nil, reason: "", jitter: 1); _ = m.retry() }
        #expect(m.closed(code: nil, reason: "", jitter: 1).last == .retry(after: 5_000))
        #expect(m.reconnectNow() == [.connect] && m.connection == .connecting)
        #expect(m.reconnectNow() == [.abort], "an attempt under way is made again")
        #expect(m.closed(code: nil, reason: "closed", jitter: 1).last == .retry(after: 0))
        #expect(m.retry() == [.connect])
        #expect(m.closed(code: nil, reason: "", jitter: 1).last == .retry(after: 250), "the backoff started over")

        var joined = joinedMachine()
        #expect(Self.sent(joined.reconnectNow()) == [["type": "ping"]])
        #expect(joined.tick().isEmpty)
        #expect(joined.tick() == [.abort], "no pong within 2 s: the old network's socket is dropped")
        var answered = joinedMachine()
        _ = answered.reconnectNow()
        _ = answered.received(Self.bytes(.pong))
        #expect(answered.tick().isEmpty && answered.tick().isEmpty, "a pong: the connection is alive")
    }

    /// A server that cannot be reached before any join is reported, not retried forever.
    @Test func noRetryBeforeTheFirstJoin() {
        var m = SessionMachine(options: SessionMachine.Options())
        _ = m.start()
        let lost = m.closed(code: nil, reason: "connection refused", jitter: 0.5)
        #expect(lost == [.event(.connection(connected: false, reason: "connection refused")), .finished])
        #expect(m.ending?.code == .offline)
        #expect(m.connection == .stopped && m.retry().isEmpty)
    }
}

/// The speculative machine (docs/protocol.md, "The client's three states") as a value,
/// against the core's sequencer playing the server: the order of a command's patch and
/// ack does not matter, and what it made is never counted twice.
@Suite("Client: confirmed, pending, shown")
struct SpeculativeMachineTests {
    static func bytes(_ m: ServerMessage, id: JSON? = nil) -> [UInt8] { m.json(id: id).encoded() }

    /// A speculative machine joined to a session on the demo flow at `main`, and that
    /// session's sequencer.
    func joined() -> (SessionMachine, Sequencer) {
        var server = Sequencer(flow: .demo, epoch: "ep")
        _ = server.submit(Command(id: .string("setup"), ops: [["op": "setRoot", "route": "main"]]), client: "other")
        var options = SessionMachine.Options()
        options.speculative = true
        var m = SessionMachine(options: options)
        _ = m.start()
        _ = m.opened()
        _ = m.received(Self.bytes(.welcome(.init(client: "me", server: "s", heartbeat: 30, limits: ProtocolLimits()))))
        _ = m.received(Self.bytes(.joined(.init(session: "demo", epoch: "ep", rev: server.rev, flow: Flow.demo.source,
                                                 members: [], catchUp: .state(server.state.json)))))
        #expect(m.flow != nil && m.shown == server.state.json)
        return (m, server)
    }

    /// The server's answer to one sent command: its patch and its ack.
    func answer(_ server: inout Sequencer, _ effects: [SessionMachine.Effect]) -> (patch: [UInt8], ack: [UInt8]) {
        let sent = effects.compactMap { if case .send(let b) = $0 { try? JSON.parse(b) } else { nil } }
        guard let command = sent.last?.objectValue, case .applied(let ack, let patch) = server.submit(command, client: "me") else {
            Issue.record("not applied")
            return ([], [])
        }
        return (Self.bytes(.patch(session: "demo", patch)), Self.bytes(.ack(session: "demo", ack)))
    }

    @Test(arguments: [false, true])
    func aCommandsPatchAndAckInEitherOrder(ackFirst: Bool) {
        var (m, server) = joined()
        let (_, first) = m.command([["op": "push", "route": "detail", "params": ["id": 1]]])
        let pushed = m.shown.flatMap { try? $0.value(at: "/root/current/coordinator/tabs/0/coordinator/stack/1/id") }
        #expect(pushed == "~1.0")
        // A back swipe from it, made before any answer: by reference.
        let (_, second) = m.command([["op": "pop", "from": "~1.0"]])
        let a1 = answer(&server, first), a2 = answer(&server, second)
        for message in ackFirst ? [a1.ack, a1.patch] : [a1.patch, a1.ack] {
            _ = m.received(message)
            // Never the push twice, never the back swipe lost.
            #expect(m.shown.flatMap { try? $0.value(at: "/root/current/coordinator/tabs/0/coordinator/stack") }?.arrayValue?.count == 1)
        }
        #expect(m.rev == 2 && m.pending.count == 1)
        _ = m.received(a2.patch)
        _ = m.received(a2.ack)
        #expect(m.pending.isEmpty && m.rev == 3 && m.shown == server.state.json && m.state == server.state.json)
    }

    /// Kept and read back: the state, the flow, the identity, the counter and the
    /// pending commands, which are shown again at once.
    @Test func aSavedSessionReadsBack() throws {
        var (m, _) = joined()
        _ = m.command([["op": "push", "route": "detail", "params": ["id": 1]]])
        let saved = try #require(m.saved)
        let back = try #require(SavedSession(json: try JSON.parse(saved.json.encoded())))
        #expect(back == saved)
        var options = SessionMachine.Options()
        options.speculative = true
        var again = SessionMachine(options: options)
        let restored = again.restore(back)
        #expect(restored)
        #expect(again.shown == m.shown && again.clientID == "me" && again.nextCommand == 2 && again.unacknowledged == 1)
        let twice = again.restore(back)
        #expect(!twice, "only into a machine with nothing of its own")
    }
}
