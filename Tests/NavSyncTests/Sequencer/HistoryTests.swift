import Testing
@testable import NavSync

/// History (DESIGN.md section 15) as values: every state it holds is rebuilt exactly,
/// what it no longer holds is `gone`, pages and labels.
@Suite("History")
struct HistoryTests {
    /// Random commands on a sequencer with a small history; the state after every
    /// revision is kept aside, and history must rebuild each one it still holds.
    @Test(arguments: [(0xA11CE as UInt64, 100, 7), (0xB0B as UInt64, 300, 64), (0xC0DE as UInt64, 40, 1)])
    func everyHeldRevisionIsRebuiltExactly(seed: UInt64, capacity: Int, checkpointEvery: Int) throws {
        var gen = CommandGenerator(flow: .demo, seed: seed)
        gen.strict = true
        var seq = Sequencer(flow: .demo, epoch: "h", historyCapacity: capacity)
        seq.history = History(capacity: capacity, state: seq.state.json, checkpointEvery: checkpointEvery)
        var states = [seq.state.json]
        for n in 0..<1500 {
            let ops = (0..<gen.pick([1, 1, 2])).map { _ in gen.op(seq.state, nextID: seq.document.nextID) }
            var object: JSONObject = ["id": .int(Int64(n)), "ops": .array(ops)]
            if n % 10 == 0 { object["label"] = .string("mark \(n % 30)") }
            if case .applied = seq.submit(object, client: "c\(n % 3)", sender: .init(name: "dev \(n % 3)", ts: Int64(n))) {
                states.append(seq.state.json)
            }
        }
        let h = seq.history
        #expect(seq.rev == states.count - 1 && seq.rev > capacity, "enough revisions to wrap: \(seq.rev)")
        #expect(h.earliest == seq.rev - capacity && h.count == capacity)
        for rev in h.earliest...seq.rev {
            #expect(try h.state(at: rev, current: seq.state.json) == states[rev], "revision \(rev)")
        }
        #expect(throws: NavError.self) { try h.state(at: h.earliest - 1, current: seq.state.json) }
        do { _ = try h.state(at: h.earliest - 1, current: seq.state.json) } catch { #expect(error.code == .gone) }
        do { _ = try h.state(at: seq.rev + 1, current: seq.state.json) } catch { #expect(error.code == .notFound) }
        // Checkpoints stay few: one per `checkpointEvery` revisions held, and one under.
        #expect(h.checkpointCount <= capacity / checkpointEvery + 2)
    }

    @Test func pagesGoNewestFirstAndStopAtEarliest() {
        var seq = Sequencer(flow: .demo, epoch: "h", historyCapacity: 5)
        for n in 1...8 {
            let route = n % 2 == 0 ? "login" : "onboarding"
            var object: JSONObject = ["id": .int(Int64(n)), "ops": [["op": "setRoot", "route": .string(route)]]]
            if n == 6 { object["label"] = "six" }
            _ = seq.submit(object, client: "a", sender: .init(name: "phone", ts: 1000 + Int64(n)))
        }
        let h = seq.history
        #expect(seq.rev == 8 && h.earliest == 3)
        #expect(h.page(before: nil, limit: 3).map(\.rev) == [8, 7, 6])
        #expect(h.page(before: 6, limit: 100).map(\.rev) == [5, 4])
        #expect(h.page(before: 4, limit: 100).isEmpty, "before <= earliest + 1 gives nothing")
        let six = h.page(before: 7, limit: 1)[0]
        #expect(six.label == "six" && six.name == "phone" && six.ts == 1006 && six.client == "a" && six.cmd == .int(6))
        #expect(six.json["label"] == "six" && six.json["ops"] == [["op": "setRoot", "route": "login"]])
        #expect(HistoryEntry(json: six.json) == HistoryEntry(rev: 6, ts: 1006, client: "a", name: "phone", cmd: .int(6),
                                                             ops: six.ops, results: [.applied], label: "six"))
        #expect(h.newest(label: "six") == 6 && h.newest(label: "nope") == nil)
    }

    @Test func aCommandThatChangesNothingRecordsNothingAndLabelsAreChecked() {
        var seq = Sequencer(flow: .demo, epoch: "h")
        _ = seq.submit(["id": 1, "ops": [["op": "dismiss"]], "label": "nothing"], client: "a")
        #expect(seq.history.count == 0 && seq.history.newest(label: "nothing") == nil)
        for bad: JSON in ["", .string(String(repeating: "x", count: 65)), 5] {
            guard case .failed(let e) = seq.submit(["id": 2, "ops": [["op": "setRoot", "route": "login"]], "label": bad], client: "a") else {
                Issue.record("label \(bad) was taken"); continue
            }
            #expect(e.code == .badRequest && e.message.contains("label"))
        }
        #expect(seq.rev == 0)
    }

    @Test func historyOffHoldsOnlyTheCurrentRevision() throws {
        var seq = Sequencer(flow: .demo, epoch: "h", historyCapacity: 0)
        _ = seq.submit(["id": 1, "ops": [["op": "setRoot", "route": "login"]]], client: "a")
        #expect(seq.history.count == 0)
        #expect(try seq.history.state(at: 1, current: seq.state.json) == seq.state.json)
        do { _ = try seq.history.state(at: 0, current: seq.state.json); Issue.record("revision 0 held") } catch {
            #expect(error.code == .gone && error.message.contains("--history 0"))
        }
    }
}

/// `restore` (section 15): the state of a held revision comes back exactly, ids
/// included; revived ids are live; it conflicts as a change of everything.
@Suite("Restore")
struct RestoreTests {
    @Test(arguments: [0x5EED as UInt64, 0xFACE])
    func restoringARandomRevisionGivesItsStateByteForByte(seed: UInt64) throws {
        var gen = CommandGenerator(flow: .demo, seed: seed)
        gen.strict = true
        var seq = Sequencer(flow: .demo, epoch: "r", historyCapacity: 200)
        var states = [seq.state.json]
        var journal: [(String, Command)] = []
        var restores = 0
        for n in 0..<1200 {
            var object: JSONObject
            if n % 25 == 24 {
                let target = Int.random(in: seq.history.earliest...seq.rev, using: &gen.rng)
                object = ["id": .int(Int64(n)), "ops": [["op": "restore", "rev": .int(Int64(target))]]]
                let (outcome, journaled) = seq.submitJournaling(try Command(json: object), client: "c", refused: [:], sender: .init(), trusted: false)
                if case .applied = outcome {
                    restores += 1
                    #expect(seq.state.json.encoded() == states[target].encoded(), "restore of \(target) at \(n)")
                    states.append(seq.state.json)
                    journal.append(("c", journaled))
                    // Its journal form carries the state, and fingerprints as the command sent.
                    let sent = try Command(json: object)
                    #expect(journaled.ops[0]["state"] == states[target] && journaled.fingerprint == sent.fingerprint)
                } else if case .unchanged = outcome {
                    #expect(seq.state.json == states[target])
                } else {
                    Issue.record("restore of \(target) at \(n): \(outcome)")
                }
                continue
            }
            let ops = (0..<gen.pick([1, 1, 2])).map { _ in gen.op(seq.state, nextID: seq.document.nextID) }
            object = ["id": .int(Int64(n)), "ops": .array(ops)]
            let (outcome, journaled) = seq.submitJournaling(try Command(json: object), client: "c", refused: [:], sender: .init(), trusted: false)
            if case .applied = outcome {
                states.append(seq.state.json)
                journal.append(("c", journaled))
            }
        }
        #expect(restores > 20)
        // The journal replays without any history: each restore carries its state.
        var replayed = Sequencer(flow: .demo, epoch: "r", historyCapacity: 0)
        try replayed.replay(journal.enumerated().map { JournalRecord(rev: $0.offset + 1, client: $0.element.0, command: $0.element.1) })
        #expect(replayed.rev == seq.rev && replayed.state == seq.state && replayed.document.nextID == seq.document.nextID)
        #expect(replayed.removedAt == seq.removedAt)
    }

    @Test func revivedIdsAreLiveAgain() throws {
        var seq = Sequencer(flow: .demo, epoch: "r")
        _ = seq.submit(["id": 1, "ops": [["op": "setRoot", "route": "main"], ["op": "push", "route": "detail", "params": ["id": 1]]]], client: "a")
        let marked = seq.rev
        let top = try #require(seq.state.activePath.last.flatMap { seq.state[$0].entries.last?.id })
        _ = seq.submit(["id": 2, "ops": [["op": "pop", "from": .string(top.description)]]], client: "a")
        #expect(seq.removedAt[top] != nil)
        guard case .applied = seq.submit(["id": 3, "ops": [["op": "restore", "rev": .int(Int64(marked))]]], client: "a") else {
            Issue.record("restore refused"); return
        }
        #expect(seq.removedAt[top] == nil, "a revived id is no longer gone")
        // An op naming the revived entry applies (it is not superseded).
        guard case .applied(let ack, _) = seq.submit(["id": 4, "ops": [["op": "pop", "from": .string(top.description)]]], client: "b") else {
            Issue.record("pop from a revived entry did not apply"); return
        }
        #expect(ack.results == [.applied])
        // New entries still get new ids: the counter never rewinds.
        _ = seq.submit(["id": 5, "ops": [["op": "push", "route": "detail", "params": ["id": 2]]]], client: "a")
        var ids: [Int] = []
        seq.state.forEachID { ids.append($0.number) }
        #expect(Set(ids).count == ids.count && ids.max()! > top.number)
    }

    @Test func badRestoresChangeNothing() {
        var seq = Sequencer(flow: .demo, epoch: "r", historyCapacity: 3)
        for (n, route) in ["login", "main", "onboarding", "login", "main"].enumerated() {
            var object: JSONObject = ["id": .int(Int64(n)), "ops": [["op": "setRoot", "route": .string(route)]]]
            if n == 1 { object["label"] = "shop" }
            if n == 3 { object["label"] = "back at login" }
            _ = seq.submit(object, client: "a")
        }
        #expect(seq.rev == 5 && seq.history.earliest == 2)
        let before = seq.state
        let cases: [(JSON, ErrorCode)] = [
            (["op": "restore", "rev": 1], .gone),
            (["op": "restore", "rev": 6], .notFound),
            (["op": "restore", "rev": -1], .badParams),
            (["op": "restore", "rev": "3"], .badParams),
            (["op": "restore"], .badParams),
            (["op": "restore", "rev": 3, "label": "shop"], .badParams),
            (["op": "restore", "label": "nowhere"], .notFound),
            (["op": "restore", "label": "shop"], .notFound),   // revision 2, older than history holds
            (["op": "restore", "rev": 3, "state": ["root": "x"]], .badParams),
        ]
        for (i, (op, code)) in cases.enumerated() {
            guard case .failed(let e) = seq.submit(["id": .int(Int64(100 + i)), "ops": [op]], client: "a") else {
                Issue.record("\(op) was taken"); continue
            }
            #expect(e.code == code, "\(op): \(e)")
        }
        #expect(seq.state == before && seq.rev == 5)
        // By label, and as undo: with base = the current revision it applies; once
        // someone changed the session after base, it is a conflict.
        guard case .applied = seq.submit(["id": 200, "ops": [["op": "restore", "label": "back at login"]], "base": 5, "onConflict": "reject"], client: "a") else {
            Issue.record("restore by label refused"); return
        }
        #expect(seq.state.root.entries.first?.route == "login")
        _ = seq.submit(["id": 201, "ops": [["op": "setRoot", "route": "main"]]], client: "b")
        guard case .failed(let e) = seq.submit(["id": 202, "ops": [["op": "restore", "rev": 5]], "base": 6, "onConflict": "reject"], client: "a") else {
            Issue.record("a stale undo applied"); return
        }
        #expect(e.code == .conflict && e.rev == 7)
    }
}
