import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

/// History (docs/protocol.md, "History") as values: every state it holds is rebuilt exactly,
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
        // Through a snapshot, with the same capacity and with a smaller one (a restart
        // with a lower --history): every revision still held is rebuilt the same, and
        // recording goes on across the wrapped ring.
        for kept in [capacity, capacity / 3] {
            var back = try #require(History(snapshot: h.snapshot, capacity: kept, rev: seq.rev))
            #expect(back.earliest == seq.rev - kept)
            for rev in back.earliest...seq.rev {
                #expect(try back.state(at: rev, current: seq.state.json) == states[rev], "revision \(rev), capacity \(kept)")
            }
            #expect(back.entries(after: 0) == h.entries(after: seq.rev - kept))
            var next = seq
            next.history = back
            var later = states
            for n in 0..<(kept + 100) {
                let route: JSON = later.count % 2 == 0 ? "login" : "main"
                if case .applied = next.submit(["id": .int(Int64(100_000 + n)), "ops": [["op": "setRoot", "route": route]]], client: "z") {
                    later.append(next.state.json)
                }
            }
            back = next.history
            #expect(back.earliest == next.rev - kept)
            for rev in back.earliest...next.rev {
                #expect(try back.state(at: rev, current: next.state.json) == later[rev], "revision \(rev) after the restart")
            }
        }
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

    /// A history entry keeps its fields in one shared box: entries made alike are equal
    /// whether or not they share it, and one reads back from the form a snapshot keeps
    /// (and prints as), patch and id counter included; a part missing or bad is refused.
    @Test func aHistoryEntryComparesByContentAndReadsBackFromItsSnapshotForm() throws {
        var seq = Sequencer(flow: .demo, epoch: "h")
        _ = seq.submit(["id": 1, "ops": [["op": "setRoot", "route": "login"]], "label": "in"], client: "a",
                       sender: .init(name: "phone", ts: 1001))
        let held = seq.history.page(before: nil, limit: 1)[0]
        let alike = HistoryEntry(rev: held.rev, ts: held.ts, client: held.client, name: held.name, cmd: held.cmd,
                                 ops: held.ops, results: held.results, label: held.label, patch: held.patch,
                                 nextID: held.nextID)
        #expect(held == alike && !held.patch.isEmpty && held.nextID > 1)
        #expect(held != HistoryEntry(rev: held.rev, ts: held.ts, client: held.client, name: held.name, cmd: held.cmd,
                                     ops: held.ops, results: held.results, label: held.label, patch: [], nextID: held.nextID))
        #expect(HistoryEntry(snapshotJSON: held.snapshotJSON) == held)
        #expect(try JSON.parse(held.description) == held.snapshotJSON, "printed as its JSON, not as a box")
        guard case .object(let whole) = held.snapshotJSON else { Issue.record("not an object"); return }
        for (key, bad) in [("patch", nil), ("patch", [["op": "jump"]]), ("nextID", nil), ("nextID", "2"), ("rev", nil)] as [(String, JSON?)] {
            var o = whole
            o[key] = bad
            #expect(HistoryEntry(snapshotJSON: .object(o)) == nil, "\(key): \(bad.map { $0.description } ?? "missing")")
        }
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

/// `restore` (docs/protocol.md, "History"): the state of a held revision comes back exactly, ids
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
        // A stale reject is a conflict before the revision is looked up: one newer than
        // the current one is not_found only when nothing conflicts.
        guard case .failed(let newer) = seq.submit(["id": 203, "ops": [["op": "restore", "rev": 99]], "base": 6, "onConflict": "reject"], client: "a") else {
            Issue.record("a restore of a future revision applied"); return
        }
        #expect(newer.code == .conflict && newer.rev == 7)
        guard case .failed(let missing) = seq.submit(["id": 204, "ops": [["op": "restore", "rev": 99]], "base": 7, "onConflict": "reject"], client: "a") else {
            Issue.record("a restore of a future revision applied"); return
        }
        #expect(missing.code == .notFound)
    }
}

/// `load` (docs/protocol.md, "History"): a whole state checked against the flow; after it, replaying
/// the recorded commands reproduces each recorded patch exactly.
@Suite("Load")
struct LoadTests {
    @Test func loadThenReplayReproducesEveryRecordedPatch() throws {
        var gen = CommandGenerator(flow: .demo, seed: 0x10AD)
        gen.strict = true
        var recorded = Sequencer(flow: .demo, epoch: "a")
        var commands: [(client: String, object: JSONObject, patch: [PatchOperation])] = []
        var cut: (state: JSON, nextID: Int, rev: Int)?
        for n in 0..<800 {
            if n == 400 { cut = (recorded.state.json, recorded.document.nextID, recorded.rev) }
            let ops = (0..<gen.pick([1, 2])).map { _ in gen.op(recorded.state, nextID: recorded.document.nextID) }
            let object: JSONObject = ["id": .int(Int64(n)), "ops": .array(ops)]
            if case .applied(_, let patch) = recorded.submit(object, client: "c\(n % 3)"), n >= 400 {
                commands.append(("c\(n % 3)", object, patch.ops))
            }
        }
        let (state, nextID, _) = try #require(cut)
        var replay = Sequencer(flow: .demo, epoch: "b")
        guard case .applied = replay.submit(["id": "load", "ops": [["op": "load", "state": state, "nextId": .int(Int64(nextID))]]], client: "admin") else {
            Issue.record("load refused"); return
        }
        #expect(replay.state.json == state && replay.document.nextID == nextID)
        for (i, c) in commands.enumerated() {
            guard case .applied(_, let patch) = replay.submit(c.object, client: c.client) else { Issue.record("command \(i) did not apply"); return }
            #expect(patch.ops == c.patch, "command \(i): \(c.object)")
            if patch.ops != c.patch { return }
        }
        #expect(replay.state == recorded.state)
    }

    @Test func badLoadsAreRefusedNamingThePlaceAndChangeNothing() throws {
        var seq = Sequencer(flow: .demo, epoch: "l")
        _ = seq.submit(["id": 1, "ops": [["op": "setRoot", "route": "main"], ["op": "push", "route": "detail", "params": ["id": 4]]]], client: "a")
        let good = seq.state.json
        let before = seq.state
        func broken(_ edit: (inout JSON) -> Void) -> JSON { var j = good; edit(&j); return j }
        let cases: [(JSON?, String)] = [
            (nil, "'load' needs 'state'"),
            (.string("x"), "state: must be an object"),
            (["root": ["type": "Nope", "kind": "root"]], "state.root.type: must be App here"),
            (["root": ["type": "App", "kind": "stack"]], "state.root.kind: App is a root"),
            (["root": ["type": "App", "kind": "root", "current": ["id": "e1", "route": "nowhere"]]], "state.root.current.route: App has no route 'nowhere'"),
            (["root": ["type": "App", "kind": "root", "current": ["id": "x1", "route": "login"]]], "state.root.current.id: must be an entry id"),
            (["root": ["type": "App", "kind": "root", "current": ["id": "e1", "route": "login", "params": ["email": 5]]]], "state.root.current.params: param 'email' of route 'login' must be string"),
            (["root": ["type": "App", "kind": "root", "current": ["id": "e1", "route": "main"]]], "state.root.current.coordinator: route 'main' opens a Main: it is missing"),
            (["root": ["type": "App", "kind": "root", "current": ["id": "e1", "route": "login"]], "alert": ["id": "e1", "title": "t", "buttons": [["id": "ok", "label": "OK"]]]], "state.alert.id: e1 appears twice"),
            (["root": ["type": "App", "kind": "root", "current": ["id": "e1", "route": "login", "colour": "red"]]], "state.root.current.colour: is not a field here"),
        ]
        for (i, (state, message)) in cases.enumerated() {
            var op: JSONObject = ["op": "load"]
            if let state { op["state"] = state }
            guard case .failed(let e) = seq.submit(["id": .int(Int64(100 + i)), "ops": [.object(op)]], client: "a") else {
                Issue.record("case \(i) was loaded"); continue
            }
            #expect(e.code == .badParams && e.message.contains(message), "case \(i): \(e.message)")
        }
        // Duplicate ids deep in the tree, named by place.
        let duplicated = broken { j in
            guard case .object(var root) = j["root"]!, case .object(var current) = root["current"]!, case .object(var main) = current["coordinator"]!,
                  case .array(var tabs) = main["tabs"]!, case .object(var tab) = tabs[1] else { return }
            tab["id"] = tabs[0]["id"]!
            tabs[1] = .object(tab); main["tabs"] = .array(tabs); current["coordinator"] = .object(main); root["current"] = .object(current)
            j = .object(["root": .object(root), "alert": .null])
        }
        guard case .failed(let dup) = seq.submit(["id": 200, "ops": [["op": "load", "state": duplicated]]], client: "a") else {
            Issue.record("duplicate ids were loaded"); return
        }
        #expect(dup.code == .badParams && dup.message.contains("state.root.current.coordinator.tabs[1].id") && dup.message.contains("appears twice"), "\(dup.message)")
        // A controller may not load; nor a wrong nextId.
        guard case .failed(let forbidden) = seq.submit(["id": 201, "ops": [["op": "load", "state": good]]], client: "a", sender: .init(mayLoad: false)) else {
            Issue.record("a controller loaded"); return
        }
        #expect(forbidden.code == .forbidden)
        guard case .failed(let badNext) = seq.submit(["id": 202, "ops": [["op": "load", "state": good, "nextId": 0]]], client: "a") else {
            Issue.record("nextId 0 taken"); return
        }
        #expect(badNext.code == .badParams)
        #expect(seq.state == before && seq.rev == 1)
        // A far counter is taken without touching every skipped id.
        guard case .applied = seq.submit(["id": 203, "ops": [["op": "load", "state": good, "nextId": 2_000_000_000]]], client: "a") else {
            Issue.record("a far nextId was refused"); return
        }
        #expect(seq.document.nextID == 2_000_000_000 && seq.removedAt.count < 100)
    }
}

@Suite("History in snapshots")
struct HistorySnapshotTests {
    /// What history holds comes back from a snapshot (so compaction keeps it); a
    /// history that does not fit the snapshot is dropped and starts at its revision.
    @Test(arguments: [0xADA as UInt64, 0xB1B1])
    func batchesOnAScratchCopyAdoptedEqualRunningDirectly(seed: UInt64) throws {
        var gen = CommandGenerator(flow: .demo, seed: seed)
        var direct = Sequencer(flow: .demo, epoch: "s", logCapacity: 1000, historyCapacity: 300)
        var adopted = direct
        var n = 0
        while n < 900 {
            var scratch = adopted.scratchCopy()
            var patches: [Patch] = []
            for _ in 0..<gen.pick([1, 3, 7, 20]) {
                let ops = [gen.op(direct.state, nextID: direct.document.nextID)]
                var object: JSONObject = ["id": .int(Int64(n)), "ops": .array(ops)]
                if n % 50 == 0 { object["label"] = .string("m\(n)") }
                let sender = Sequencer.Sender(name: "dev", ts: Int64(n))
                let a = direct.submit(object, client: "c", sender: sender)
                let b = scratch.submit(object, client: "c", sender: sender)
                #expect(a == b)
                if case .applied(_, let p) = b { patches.append(p) }
                n += 1
            }
            adopted.adopt(scratch, patches: patches)
        }
        #expect(direct.rev > 300, "history wrapped")
        #expect(adopted.snapshot() == direct.snapshot(), "state, tables, patch log and history alike")
        #expect(try adopted.history.state(at: adopted.history.earliest, current: adopted.state.json)
                == direct.history.state(at: direct.history.earliest, current: direct.state.json))
    }

    @Test func historyRoundTripsThroughASnapshotOrStartsAgain() throws {
        var seq = Sequencer(flow: .demo, epoch: "s", historyCapacity: 100)
        for (n, route) in ["login", "main", "onboarding", "login"].enumerated() {
            _ = seq.submit(["id": .int(Int64(n)), "ops": [["op": "setRoot", "route": .string(route)]], "label": .string("r\(n)")],
                           client: "a", sender: .init(name: "phone", ts: 100 + Int64(n)))
        }
        let back = try Sequencer(restoring: seq.snapshot(), flow: .demo, historyCapacity: 100)
        #expect(back.history.page(before: nil, limit: 10) == seq.history.page(before: nil, limit: 10))
        for rev in 0...4 {
            #expect(try back.history.state(at: rev, current: back.state.json) == seq.history.state(at: rev, current: seq.state.json))
            #expect(back.history.nextID(at: rev) == seq.history.nextID(at: rev))
        }
        guard case .object(var broken) = seq.snapshot() else { Issue.record(); return }
        broken["history"] = ["start": 0, "checkpoints": [["rev": 0, "state": seq.state.json, "nextID": 1]], "entries": [["rev": 7]]]
        let fresh = try Sequencer(restoring: .object(broken), flow: .demo, historyCapacity: 100)
        #expect(fresh.history.earliest == 4 && fresh.history.count == 0)
    }

    /// `--history-bytes`: trimming drops the oldest revisions (`gone`), keeps every later
    /// state exact, and lets go of the bytes once a checkpoint is passed.
    @Test func trimmingDropsTheOldestAndKeepsTheRestExact() throws {
        var gen = CommandGenerator(flow: .demo, seed: 0x7121)
        gen.strict = true
        var seq = Sequencer(flow: .demo, epoch: "t", historyCapacity: 400)
        var states = [seq.state.json]
        var n = 0
        while seq.rev < 600 {
            let op = gen.op(seq.state, nextID: seq.document.nextID)
            if case .applied = seq.submit(["id": .int(Int64(n)), "ops": [op]], client: "c") { states.append(seq.state.json) }
            n += 1
        }
        var h = seq.history
        let before = h.bytes
        #expect(before > 0 && h.count == 400)
        // Compact entries: a few hundred bytes each, not the kilobytes of parsed values.
        #expect(before / (h.count + h.checkpointEvery) < 700, "\(before / (h.count + h.checkpointEvery)) bytes per entry")
        let earliest = h.earliest
        let first = h.trim(dropping: 10)
        #expect(h.earliest == earliest + 10 && h.bytes == before - first)
        let freed = h.trim(dropping: 150)
        #expect(freed > 0 && h.bytes == before - first - freed && h.earliest == earliest + 160)
        for rev in h.earliest...seq.rev {
            #expect(try h.state(at: rev, current: seq.state.json) == states[rev], "revision \(rev)")
        }
        do { _ = try h.state(at: h.earliest - 1, current: seq.state.json); Issue.record("not gone") } catch { #expect(error.code == .gone) }
        // Recording goes on over released slots, and a snapshot of it reads back.
        seq.history = h
        while seq.rev < 1_100 {
            let op = gen.op(seq.state, nextID: seq.document.nextID)
            if case .applied = seq.submit(["id": .int(Int64(n)), "ops": [op]], client: "c") { states.append(seq.state.json) }
            n += 1
        }
        h = seq.history
        #expect(h.count == 400)
        for rev in h.earliest...seq.rev { #expect(try h.state(at: rev, current: seq.state.json) == states[rev]) }
        let back = try #require(History(snapshot: h.snapshot, capacity: 400, rev: seq.rev))
        #expect(back.bytes > 0 && back.entries(after: 0) == h.entries(after: 0))
    }
}
