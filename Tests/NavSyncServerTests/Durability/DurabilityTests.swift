import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

/// Groundwork for durable sessions: journal records, snapshots, restore by replay.
@Suite("Journal and snapshots")
struct DurabilityTests {
    /// Snapshot → bytes → JSON → sequencer, the bytes as the server writes them
    /// (`encodedSnapshot`): they read back as the snapshot's JSON exactly.
    func roundTrip(_ s: Sequencer, flow: Flow) throws -> Sequencer {
        let bytes = s.encodedSnapshot()
        let json = try JSON.parse(bytes)
        #expect(json == s.snapshot())
        guard case .object(var named) = json else { throw SnapshotError("not an object") }
        named["session"] = "s\"1"
        #expect(try JSON.parse(s.encodedSnapshot(session: "s\"1")) == .object(named))
        return try Sequencer(restoring: json, flow: flow)
    }

    func same(_ a: Sequencer, _ b: Sequencer) -> Bool {
        a.state == b.state && a.rev == b.rev && a.epoch == b.epoch && a.document.nextID == b.document.nextID
            && a.lastChanged == b.lastChanged && a.removedAt == b.removedAt && a.removedHorizon == b.removedHorizon
            && a.idempotency.entries.map { "\($0.client):\($0.acks.map { "\($0.ack.json)/\($0.fingerprint ?? 0)" })" }
            == b.idempotency.entries.map { "\($0.client):\($0.acks.map { "\($0.ack.json)/\($0.fingerprint ?? 0)" })" }
            && a.recentPatches == b.recentPatches
    }

    @Test(arguments: ["demo", "studio"])
    func snapshotsRestoreExactlyAndReplayReproduces(_ flowName: String) throws {
        let flow = flowName == "demo" ? Flow.demo : studioFlow
        var gen = CommandGenerator(flow: flow, seed: 0xC0FFEE)
        var live = Sequencer(flow: flow, epoch: "durable")
        var snapshot: JSON?
        var journal: [JournalRecord] = []
        for n in 0..<1500 {
            let ops = (0..<gen.pick([1, 1, 2, 3])).map { _ in gen.op(live.state, nextID: live.document.nextID) }
            var object: JSONObject = ["id": .int(Int64(n)), "ops": .array(ops)]
            if gen.chance(0.3) { object["base"] = .int(Int64(max(0, live.rev - 2))) }
            if gen.chance(0.3) { object["onConflict"] = "reject" }
            let client = gen.pick(["a", "b"])
            if case .applied(let ack, _) = live.submit(object, client: client) {
                journal.append(JournalRecord(rev: ack.rev, client: client, command: try Command(json: object)))
            }
            if n % 250 == 100 {
                // Restoring a snapshot gives the same sequencer, which then behaves the same.
                var restored = try roundTrip(live, flow: flow)
                #expect(same(restored, live), "command \(n)")
                var copy = live
                let probe: JSONObject = ["id": .string("probe-\(n)"), "ops": [gen.op(live.state, nextID: live.document.nextID)]]
                #expect(restored.submit(probe, client: "p") == copy.submit(probe, client: "p"))
                if snapshot == nil {
                    snapshot = live.snapshot()
                    journal = []
                }
            }
        }
        // The first snapshot plus the journal after it reproduces the end, ids included.
        var restored = try Sequencer(restoring: try #require(snapshot), flow: flow)
        try restored.replay(journal)
        // Everything but the acks of commands that changed nothing: docs/protocol.md section A
        // says those are not journaled, so a restore from the journal does not know them.
        #expect(restored.state == live.state && restored.rev == live.rev && restored.document.nextID == live.document.nextID)
        #expect(restored.lastChanged == live.lastChanged && restored.removedAt == live.removedAt && restored.removedHorizon == live.removedHorizon)
        func appliedAcks(_ s: Sequencer) -> [String] {
            s.idempotency.entries.flatMap { e in e.acks.filter { $0.ack.results.contains(.applied) }.map { "\(e.client):\($0.ack.json)/\($0.fingerprint ?? 0)" } }.sorted()
        }
        #expect(appliedAcks(restored) == appliedAcks(live))
    }

    /// History's entries held as text (not a lone stack edit), with names and labels that
    /// need escaping, and stack edits held as values with their patch as bytes: written
    /// straight out, they read back as the snapshot's JSON, and restore.
    @Test func anEncodedSnapshotIsTheSnapshotsJSONWithTextHeldAsIs() throws {
        var s = Sequencer(flow: .demo, epoch: "e")
        let ops: [[JSON]] = [[["op": "setRoot", "route": "main"]], [["op": "push", "route": "detail", "params": ["id": 7]]],
                             [["op": "update", "at": "App", "data": ["note": "tab\t \"q\" é ✓"]]], [["op": "pop"]], [["op": "reset"]]]
        for i in 0..<40 {
            var object: JSONObject = ["id": .int(Int64(i)), "ops": .array(ops[i % ops.count])]
            if i % 3 == 0 { object["label"] = .string("step \(i)\n\"quoted\"") }
            _ = s.submit(object, client: i % 2 == 0 ? "a" : "b\\c", sender: .init(name: "Zoë \"\(i)\"", ts: Int64(i)))
        }
        let held = s.history.entries(after: 0)
        #expect(s.rev > 20 && held.contains { $0.opsText != nil } && held.contains { $0.opsText == nil }, "both kinds of entry")
        let restored = try roundTrip(s, flow: .demo)
        #expect(same(restored, s) && restored.history.snapshot == s.history.snapshot)
    }

    @Test func aDuplicateAfterARestoreGetsItsOriginalAck() throws {
        var s = Sequencer(flow: .demo, epoch: "e")
        guard case .applied(let ack, _) = s.submit(["id": "k", "ops": [["op": "setRoot", "route": "main"]]], client: "phone") else { Issue.record(); return }
        var restored = try roundTrip(s, flow: .demo)
        var marked = ack
        marked.duplicate = true
        #expect(restored.submit(["id": "k", "ops": [["op": "setRoot", "route": "main"]]], client: "phone") == .duplicate(marked))
        // The fingerprint survives the snapshot: the id reused for another command is refused.
        guard case .failed(let e) = restored.submit(["id": "k", "ops": [["op": "reset"]]], client: "phone") else { Issue.record(); return }
        #expect(e.code == .idReused)
        #expect(restored.rev == 1 && restored.epoch == "e")
    }

    @Test func snapshotsOfAnotherFlowOrFormatAreRefused() {
        let snap = Sequencer(flow: .demo, epoch: "e").snapshot()
        #expect(throws: SnapshotError.self) { try Sequencer(restoring: snap, flow: studioFlow) }
        var bad = snap.objectValue!
        bad["format"] = 2
        #expect(throws: SnapshotError.self) { try Sequencer(restoring: .object(bad), flow: .demo) }
        bad["format"] = 1
        bad["state"] = ["root": ["kind": "stack"]]
        #expect(throws: SnapshotError.self) { try Sequencer(restoring: .object(bad), flow: .demo) }
        // Conflict records that are not ids with revisions.
        for (field, value) in [("removedAt", ["e3": "x"]), ("removedAt", ["3": 1]), ("lastChanged", ["x7": 1]),
                               ("lastChanged", ["e2": true]),
                               // A bad patch in the log, though history holds the patches by default.
                               ("log", [["rev": 1, "ops": "x"]])] as [(String, JSON)] {
            var broken = snap.objectValue!
            broken[field] = value
            #expect(throws: SnapshotError.self, "\(field): \(value)") { try Sequencer(restoring: .object(broken), flow: .demo) }
        }
        var good = snap.objectValue!
        good["removedAt"] = ["e3": 1, "e900000": 2]
        good["removedHorizon"] = 0
        let restored = try? Sequencer(restoring: .object(good), flow: .demo)
        #expect(restored?.removedAt[EntryID(900_000)] == 2 && restored?.removedAt[EntryID(3)] == 1)
    }

    @Test func replayRefusesAGapOrARecordThatDoesNotApply() throws {
        var s = Sequencer(flow: .demo, epoch: "e")
        let gap = [JournalRecord(rev: 2, client: "c", command: Command(id: .int(1), ops: [["op": "setRoot", "route": "main"]]))]
        #expect(throws: SnapshotError.self) { try s.replay(gap) }
        let wrong = [JournalRecord(rev: 1, client: "c", command: Command(id: .int(1), ops: [["op": "push", "route": "nowhere"]]))]
        #expect(throws: SnapshotError.self) { try s.replay(wrong) }
    }

    func records(_ n: Int) -> [JournalRecord] {
        (1...n).map { JournalRecord(rev: $0, client: "c\($0 % 3)", command: Command(id: .int(Int64($0)), ops: [["op": "update", "data": ["n": .int(Int64($0))]]])) }
    }

    @Test func journalRoundTripAndCRC() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)   // the standard check value
        let rs = records(5)
        let bytes = rs.flatMap { $0.encoded() }
        var offsets: [Int] = []
        var at = 0
        for r in rs { offsets.append(at); at += r.encoded().count }
        #expect(Journal.scan(bytes) == JournalScan(records: rs, offsets: offsets, validLength: bytes.count, problem: nil))
        #expect(Journal.scan([]) == JournalScan(records: [], offsets: [], validLength: 0, problem: nil))
    }

    @Test func zerosWrittenAheadEndTheJournalCleanly() {
        let rs = records(3)
        let bytes = rs.flatMap { $0.encoded() }
        let ahead = bytes + [UInt8](repeating: 0, count: 4096)
        #expect(Journal.scan(ahead).records == rs && Journal.scan(ahead).validLength == bytes.count && Journal.scan(ahead).problem == nil)
        // A record torn inside the zeros is still a torn tail, cut where it starts.
        let head = rs.dropLast().flatMap { $0.encoded() }
        let last = rs.last!.encoded()
        for cut in [1, 8, last.count / 2, last.count - 1] {
            var torn = head + last.prefix(cut)
            torn += [UInt8](repeating: 0, count: 4096 - torn.count % 4096)
            let scan = Journal.scan(torn)
            #expect(scan.records == Array(rs.dropLast()) && scan.problem == .tornTail(offset: head.count), "cut \(cut)")
        }
    }

    @Test func tornTailsAtEveryByteOffsetOfTheLastRecordAreCut() {
        let rs = records(4)
        let head = rs.dropLast().flatMap { $0.encoded() }
        let last = rs.last!.encoded()
        for cut in 0..<last.count {
            let scan = Journal.scan(head + last.prefix(cut))
            #expect(scan.records == Array(rs.dropLast()) && scan.validLength == head.count, "cut \(cut)")
            #expect(scan.problem == (cut == 0 ? nil : .tornTail(offset: head.count)), "cut \(cut)")
        }
        // A whole last record with one bad byte is torn too (it was being rewritten).
        var flipped = last
        flipped[flipped.count - 2] ^= 0x40
        #expect(Journal.scan(head + flipped).problem == .tornTail(offset: head.count))
    }

    @Test func aCorruptRecordInTheMiddleIsNamedByOffset() {
        let rs = records(5)
        let encoded = rs.map { $0.encoded() }
        let offset = encoded[0].count + encoded[1].count
        var bytes = encoded.flatMap { $0 }
        bytes[offset + 12] ^= 0x01   // inside record 3's payload
        let scan = Journal.scan(bytes)
        #expect(scan.problem == .corrupt(offset: offset) && scan.records == Array(rs.prefix(2)) && scan.validLength == offset)
    }

    // MARK: The gate: nothing leaves before its journal write is durable

    func patch(_ rev: Int) -> Patch { Patch(rev: rev, by: "a", cmd: .int(Int64(rev)), ops: [PatchOperation(.replace, "/alert", value: .null)]) }

    @Test func theGateReleasesInOrderBatchByBatch() {
        var gate = DurabilityGate()
        gate.hold(.broadcast(session: "s", .patch(session: "s", patch(1)), to: [1]), until: 1)
        gate.hold(.send(to: 1, .ack(session: "s", Ack(id: .int(1), rev: 1, results: [.applied])), id: nil), until: 1)
        gate.hold(.send(to: 2, .pong, id: 7), until: 2)
        #expect(gate.release(through: 0).isEmpty)
        #expect(gate.release(through: 1).count == 2)
        #expect(gate.count == 1)
        #expect(gate.release(through: .max) == [.send(to: 2, .pong, id: 7)])
        #expect(gate.isEmpty)
    }

    @Test func aFailedSessionLosesItsUndurableRevisionsOnly() {
        var gate = DurabilityGate()
        let ack2 = Ack(id: .int(2), rev: 2, results: [.applied])
        let joined = ServerMessage.Joined(session: "s", epoch: "e", rev: 3, flow: .null, members: [], catchUp: .state(["rev": 3]))
        gate.hold(.broadcast(session: "s", .patch(session: "s", patch(2)), to: [1]), until: 1)
        gate.hold(.broadcast(session: "t", .patch(session: "t", patch(2)), to: [1]), until: 1)
        gate.hold(.send(to: 1, .ack(session: "s", ack2), id: 5), until: 1)
        gate.hold(.send(to: 1, .ack(session: "s", Ack(id: .int(1), rev: 1, results: [.applied])), id: 4), until: 1)
        gate.hold(.send(to: 3, .joined(joined), id: nil), until: 2)
        gate.hold(.send(to: 3, .synced(session: "s", rev: 3), id: nil), until: 2)
        gate.hold(.answer(connection: 9, HTTPRequest(method: "POST", target: "/api/sessions/s/commands", minorVersion: 1, headers: [], body: []),
                          .ack(session: "s", Ack(id: .string("h"), rev: 3, results: [.applied])), id: "h"), until: 2)
        gate.fail(session: "s", .to(rev: 1, state: ["rev": 1]), because: "No space left on device")
        let out = gate.release(through: .max)
        #expect(out.count == 6)
        // The patch of revision 2 is gone; the other session's stays.
        #expect(out[0] == .broadcast(session: "t", .patch(session: "t", patch(2)), to: [1]))
        // The ack of revision 2 is an internal error with the request's id; revision 1's stands.
        guard case .send(1, .error(let e), 5) = out[1] else { Issue.record("\(out[1])"); return }
        #expect(e.code == .internal && e.message.contains("No space left on device"))
        #expect(out[2] == .send(to: 1, .ack(session: "s", Ack(id: .int(1), rev: 1, results: [.applied])), id: 4))
        // A joiner gets the durable state; a sync ends in a snapshot of it.
        var durableJoin = joined
        durableJoin.rev = 1
        durableJoin.catchUp = .state(["rev": 1])
        #expect(out[3] == .send(to: 3, .joined(durableJoin), id: nil))
        #expect(out[4] == .send(to: 3, .snapshot(session: "s", rev: 1, state: ["rev": 1]), id: nil))
        guard case .answer(9, _, .error(let answer), "h") = out[5] else { Issue.record("\(out[5])"); return }
        #expect(answer.code == .internal && answer.code.httpStatus == 500)
    }

    @Test func aSessionWhoseCreationFailedIsGoneFromHeldOutput() {
        var gate = DurabilityGate()
        let joined = ServerMessage.Joined(session: "new", epoch: "e", rev: 0, flow: .null, members: [], catchUp: .state(.null))
        gate.hold(.send(to: 1, .joined(joined), id: "j"), until: 1)
        gate.hold(.broadcast(session: "new", .presence(session: "new", .init(left: ["x"])), to: [1]), until: 1)
        gate.fail(session: "new", .gone, because: "EIO")
        let out = gate.release(through: 1)
        guard out.count == 1, case .send(1, .error(let e), "j") = out[0] else { Issue.record("\(out)"); return }
        #expect(e.code == .internal)
    }
}
