import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

@Suite("Sequencer")
struct SequencerTests {
    /// The idempotency table remembers at least the last `capacity` acks of each client
    /// (docs/protocol.md, "Operations") and at most twice that; a snapshot lists them oldest first.
    @Test func idempotencyRemembersAtLeastTheLastCapacity() {
        let capacity = 8
        var table = IdempotencyTable(capacity: capacity)
        for n in 0..<100 {
            table.remember(client: "a", Ack(id: .int(Int64(n)), rev: n, results: [.applied]), fingerprint: UInt64(n))
            table.remember(client: "b", Ack(id: .string("b\(n)"), rev: n, results: [.applied]), fingerprint: nil)
            for back in 0..<min(n + 1, capacity) {
                #expect(table.ack(client: "a", id: .int(Int64(n - back)))?.rev == n - back)
            }
            if n >= 2 * capacity { #expect(table.ack(client: "a", id: .int(Int64(n - 2 * capacity))) == nil) }
            #expect(table.ack(client: "a", id: .string("\(n)")) == nil && table.ack(client: "c", id: .int(Int64(n))) == nil)
            let listed = table.entries.first { $0.client == "a" }!.acks
            #expect(listed.count >= min(n + 1, capacity) && listed.count <= 2 * capacity)
            #expect(listed.map(\.ack.rev) == Array((n + 1 - listed.count)...n), "oldest first, without a gap")
            #expect(listed.last?.fingerprint == UInt64(n))
        }
        // Remembered again (as a restore may): listed once, as the newer.
        table.remember(client: "a", Ack(id: .int(97), rev: 1000, results: [.noop]), fingerprint: 1)
        let listed = table.entries.first { $0.client == "a" }!.acks
        #expect(listed.filter { $0.ack.id == .int(97) }.map(\.ack.rev) == [1000])
        #expect(table.ack(client: "a", id: .int(97))?.rev == 1000)
        // Integer ids in any order (an id above the largest one is known new unhashed).
        var mixed = IdempotencyTable(capacity: capacity)
        for n: Int64 in [5, -3, 9, 7, Int64.min, Int64.max - 1] {
            mixed.remember(client: "m", Ack(id: .int(n), rev: 1, results: [.applied]), fingerprint: nil)
        }
        for n: Int64 in [5, -3, 9, 7, Int64.min, Int64.max - 1] { #expect(mixed.ack(client: "m", id: .int(n)) != nil, "\(n)") }
        for n: Int64 in [6, 10, Int64.max, -4] { #expect(mixed.ack(client: "m", id: .int(n)) == nil, "\(n)") }
    }

    /// Ids as clients send them (mostly rising integers; strings, integers out of order
    /// and resends now and then), checked against two generations of dictionaries: the
    /// table finds and lists exactly what they hold.
    @Test func idempotencyFindsWhatTwoGenerationsOfDictionariesHold() {
        let capacity = 16
        var rng = SeededRandom(seed: 13)
        var table = IdempotencyTable(capacity: capacity)
        var current: [CommandID: Int] = [:], previous: [CommandID: Int] = [:]
        var currentOrder: [CommandID] = [], previousOrder: [CommandID] = []
        var next: Int64 = 0
        var seen: [CommandID] = []
        for rev in 0..<2000 {
            let id: CommandID = switch Int.random(in: 0..<10, using: &rng) {
            case 0: .string("s\(Int.random(in: 0..<40, using: &rng))")
            case 1: .int(Int64.random(in: -50...next, using: &rng))
            case 2 where !seen.isEmpty: seen.randomElement(using: &rng)!
            default: .int({ next += Int64.random(in: 1...3, using: &rng); return next }())
            }
            seen.append(id)
            table.remember(client: "c", Ack(id: id, rev: rev, results: [.applied]), fingerprint: nil)
            if current.updateValue(rev, forKey: id) == nil {
                currentOrder.append(id)
                if currentOrder.count >= capacity {
                    (previous, previousOrder) = (current, currentOrder)
                    (current, currentOrder) = ([:], [])
                }
            }
            for probe in seen.suffix(40) + [.int(next + 1), .string("never")] {
                #expect(table.ack(client: "c", id: probe)?.rev == (current[probe] ?? previous[probe]), "\(probe) after \(rev)")
            }
            let listed = table.entries.first!.acks.map(\.ack.rev)
            let expected = previousOrder.compactMap { current[$0] == nil ? previous[$0] : nil } + currentOrder.map { current[$0]! }
            #expect(listed == expected)
        }
    }

    @Test func doubleBackPopsOnce() {
        var h = Harness.onMain()
        h.ok(["op": "push", "route": "detail", "params": ["id": 1]], ["op": "push", "route": "detail", "params": ["id": 2]])
        let top = h.entries("Home")[2].id.description
        let base = h.rev
        // Two devices press Back on the same screen, both having seen `base`.
        #expect(h.ok(["op": "pop", "from": .string(top)], base: base, client: "phone") == [.applied])
        #expect(h.ok(["op": "pop", "from": .string(top)], base: base, client: "tablet") == [.superseded])
        #expect(h.stack("Home") == ["list", "detail"])
        #expect(h.rev == base + 1)
        // Under reject, the same stale Back is a conflict: the entry left after base.
        let e = h.fails(.conflict, ["op": "pop", "from": .string(top)], base: base, reject: true)
        #expect(e?.rev == base + 1)
        // A base at or after the removal makes it superseded again.
        #expect(h.ok(["op": "pop", "from": .string(top)], base: base + 1, reject: true) == [.superseded])
    }

    @Test func rejectConflictsOnlyWithTouchedCoordinators() {
        var h = Harness.onMain()
        let base = h.rev
        h.ok(["op": "push", "at": "Cart", "route": "detail", "params": ["id": 1]])   // changes Cart only
        // A command addressed to Search does not touch Cart: no conflict.
        #expect(h.ok(["op": "push", "at": "Search", "route": "detail", "params": ["id": 2]], base: base, reject: true) == [.applied])
        // Addressed to Cart: conflict.
        h.fails(.conflict, ["op": "push", "at": "Cart", "route": "detail", "params": ["id": 3]], base: base, reject: true)
        // An entry-addressed op touches the coordinator holding the entry.
        let cartTop = h.entries("Cart")[1].id.description
        h.fails(.conflict, ["op": "pop", "from": .string(cartTop)], base: base, reject: true)
        #expect(h.ok(["op": "pop", "from": .string(cartTop)], base: base + 1, reject: true) == [.applied])
        // Without `at`, an op touches the whole active path: App, Main, Home. None changed since `base`.
        #expect(h.ok(["op": "push", "route": "detail", "params": ["id": 4]], base: base, reject: true) == [.applied])
        let afterHome = h.rev
        h.fails(.conflict, ["op": "push", "route": "detail", "params": ["id": 5]], base: base, reject: true)
        #expect(h.ok(["op": "push", "route": "detail", "params": ["id": 5]], base: afterHome, reject: true) == [.applied])
        // A change inside a child is not a change of its parent.
        #expect(h.ok(["op": "select", "at": "Main", "route": "cart"], base: base, reject: true) == [.applied])
        // Without base, reject never conflicts; rebase never does.
        #expect(h.ok(["op": "push", "at": "Cart", "route": "detail", "params": ["id": 6]], reject: true) == [.applied])
        #expect(h.ok(["op": "push", "at": "Cart", "route": "detail", "params": ["id": 7]], base: base) == [.applied])
    }

    @Test func rejectChecksEachOpAsItComes() {
        var h = Harness.onMain()
        h.ok(["op": "update", "scope": "session", "data": ["cart": [1]]])   // the demo's checkout needs a cart
        let base = h.rev
        h.ok(["op": "push", "at": "Cart", "route": "detail", "params": ["id": 1]])
        // Op 0 is fine; op 1 touches Cart: the conflict names op 1 and nothing applies.
        let e = h.fails(.conflict, op: 1, ["op": "push", "at": "Search", "route": "detail", "params": ["id": 2]],
                        ["op": "pop", "at": "Cart"], base: base, reject: true)
        #expect(e?.message.contains("Cart") == true)
        // Field errors come before the conflict check; unknown ops too.
        h.fails(.badParams, ["op": "pop", "at": "Cart", "count": "x"], base: base, reject: true)
        h.fails(.invalidOp, ["op": "fly", "at": "Cart"], base: base, reject: true)
        // A coordinator created earlier in the same command never conflicts.
        #expect(h.ok(["op": "select", "at": "Main", "route": "cart"], ["op": "present", "at": "Cart", "route": "checkout"],
                     ["op": "push", "route": "payment"], base: base + 1, reject: true) == [.applied, .applied, .applied])
        // The alert is one more coordinator for alert and respond.
        let b2 = h.rev
        h.ok(["op": "alert", "title": "x"])
        h.fails(.conflict, ["op": "alert", "title": "y"], base: b2, reject: true)
    }

    @Test func resetChangesEverything() {
        var h = Harness.onMain()
        let base = h.rev
        h.ok(["op": "reset"])
        h.ok(["op": "setRoot", "route": "main"])
        let e = h.fails(.conflict, ["op": "setRoot", "at": "root", "route": "login"], base: base, reject: true)
        #expect(e?.code == .conflict)
        h.fails(.conflict, ["op": "push", "at": "e7", "route": "detail", "params": ["id": 1]], base: base, reject: true)
    }

    @Test func baseAndOnConflictAreChecked() {
        var h = Harness.onMain()
        var seq = h.seq
        #expect(seq.submit(["id": 1, "ops": [["op": "popToRoot"]], "base": 5], client: "c") == .failed(NavError(.badRequest, "'base' 5 is ahead of the current revision 1", rev: 1)))
        guard case .failed(let e1) = seq.submit(["id": 1, "ops": [["op": "popToRoot"]], "base": -1], client: "c") else { Issue.record(); return }
        #expect(e1.code == .badRequest)
        guard case .failed(let e2) = seq.submit(["id": 1, "ops": [["op": "popToRoot"]], "base": "1"], client: "c") else { Issue.record(); return }
        #expect(e2.code == .badRequest)
        guard case .failed(let e3) = seq.submit(["id": 1, "ops": [["op": "popToRoot"]], "onConflict": "merge"], client: "c") else { Issue.record(); return }
        #expect(e3.code == .badRequest && e3.message.contains("onConflict"))
        guard case .failed(let e4) = seq.submit(["ops": [["op": "popToRoot"]]], client: "c") else { Issue.record(); return }
        #expect(e4.code == .badRequest && e4.message.contains("'id'"))
        guard case .failed(let e5) = seq.submit(["id": 1.5, "ops": [["op": "popToRoot"]]], client: "c") else { Issue.record(); return }
        #expect(e5.code == .badRequest)
        guard case .failed(let e6) = seq.submit(["id": 1, "ops": "pop"], client: "c") else { Issue.record(); return }
        #expect(e6.code == .badRequest)
        h.seq = seq
    }

    static func marked(_ ack: Ack) -> Ack {
        var a = ack
        a.duplicate = true
        return a
    }

    @Test func duplicatesGetTheOriginalAckAndReusedIdsAreRefused() {
        var seq = Sequencer(flow: .demo, epoch: "e")
        let first = seq.submit(["id": "a", "ops": [["op": "setRoot", "route": "main"]]], client: "phone")
        guard case .applied(let ack, _) = first else { Issue.record(); return }
        #expect(!ack.duplicate)
        // The same command again: the original ack, marked duplicate, nothing applied.
        #expect(seq.submit(["id": "a", "ops": [["op": "setRoot", "route": "main"]]], client: "phone") == .duplicate(Self.marked(ack)))
        // The same command with its keys in another order, and defaults spelled out.
        #expect(seq.submit(["onConflict": "rebase", "ops": [["route": "main", "op": "setRoot"]], "id": "a"], client: "phone") == .duplicate(Self.marked(ack)))
        // The id reused for another command: id_reused, nothing applied, nothing remembered.
        for other: JSONObject in [["id": "a", "ops": [["op": "setRoot", "route": "login"]]],
                                  ["id": "a", "ops": [["op": "setRoot", "route": "main"]], "base": 0],
                                  ["id": "a", "ops": [["op": "setRoot", "route": "main"]], "onConflict": "reject"],
                                  ["id": "a", "ops": "garbage", "base": -3]] {
            guard case .failed(let e) = seq.submit(other, client: "phone") else { Issue.record("\(other)"); continue }
            #expect(e.code == .idReused && e.message.contains("\"a\""), "\(e)")
        }
        #expect(seq.rev == 1 && seq.idempotency.ack(client: "phone", id: .string("a")) == ack)
        // What tells them apart is kept as the text history holds of the operations (shared),
        // not as the parsed command.
        if case .text? = seq.idempotency.entry(client: "phone", id: .string("a"))?.source {} else { Issue.record("kept as text") }
        // Another client identity, or 5 vs "5", is another command.
        guard case .applied = seq.submit(["id": "a", "ops": [["op": "setRoot", "route": "main"]]], client: "tablet") else { Issue.record(); return }
        guard case .applied(let a5, _) = seq.submit(["id": 5, "ops": [["op": "setRoot", "route": "main"]]], client: "phone") else { Issue.record(); return }
        guard case .applied = seq.submit(["id": "5", "ops": [["op": "setRoot", "route": "main"]]], client: "phone") else { Issue.record(); return }
        #expect(seq.submit(["id": 5, "ops": [["op": "setRoot", "route": "main"]]], client: "phone") == .duplicate(Self.marked(a5)))
        // No-op acks are remembered; errors are not, so a retry runs again.
        guard case .unchanged(let noop) = seq.submit(["id": "n", "ops": [["op": "dismiss"]]], client: "phone") else { Issue.record(); return }
        #expect(seq.submit(["id": "n", "ops": [["op": "dismiss"]]], client: "phone") == .duplicate(Self.marked(noop)))
        guard case .failed = seq.submit(["id": "f", "ops": [["op": "push", "route": "nowhere"]]], client: "phone") else { Issue.record(); return }
        guard case .applied = seq.submit(["id": "f", "ops": [["op": "push", "route": "detail", "params": ["id": 1]]]], client: "phone") else { Issue.record(); return }
    }

    @Test func idempotencyRemembersAtLeast1024CommandsPerClient() {
        var seq = Sequencer(flow: .demo, epoch: "e")
        var acks: [Ack] = []
        for i in 0..<2100 {
            guard case .unchanged(let ack) = seq.submit(["id": .int(Int64(i)), "ops": [["op": "dismiss"]]], client: "c") else { Issue.record(); return }
            acks.append(ack)
        }
        #expect(seq.submit(["id": 2099, "ops": [["op": "dismiss"]]], client: "c") == .duplicate(Self.marked(acks[2099])))
        #expect(seq.submit(["id": 1076, "ops": [["op": "dismiss"]]], client: "c") == .duplicate(Self.marked(acks[1076])))
        // At most twice the capacity is kept: the first commands are forgotten.
        guard case .applied = seq.submit(["id": 0, "ops": [["op": "reset"]]], client: "c") else { Issue.record("id 0 should be forgotten"); return }
        #expect((1024...2048).contains(seq.idempotency.entries[0].acks.count))
    }

    @Test func unchangedCommandsMakeNoRevision() {
        var seq = Sequencer(flow: .demo, epoch: "e")
        let outcome = seq.submit(["id": 1, "ops": [["op": "dismiss"], ["op": "dismiss", "all": true]]], client: "c")
        #expect(outcome == .unchanged(Ack(id: .int(1), rev: 0, results: [.noop, .noop])))
        #expect(seq.rev == 0)
        #expect(seq.patches(since: 0) == [])
    }

    /// A member catching up on pushes and pops gets the bytes that were broadcast, as
    /// history kept them (not decoded and written again).
    @Test func caughtUpStackEditsAreTheBytesThatWereBroadcast() {
        var seq = Sequencer(flow: .demo, epoch: "e")
        _ = seq.submit(["id": 0, "ops": [["op": "setRoot", "route": "main"]]], client: "c")
        var sent: [[UInt8]] = []
        for i in 1...10 {
            let op: JSON = i % 2 == 1 ? ["op": "push", "route": "detail", "params": ["id": .int(Int64(i)), "note": "a \"quote\""]] : ["op": "pop"]
            if case .applied(_, let patch) = seq.submit(["id": .int(Int64(i)), "ops": [op]], client: "c") {
                sent.append(ServerMessage.patch(session: "s", patch).bytes())
            }
        }
        let caughtUp = seq.patches(since: 1) ?? []
        #expect(caughtUp.map { ServerMessage.patch(session: "s", $0).bytes() } == sent)
        #expect(caughtUp.allSatisfy { if case .encoded = $0.operations { true } else { false } })
    }

    /// From history (which holds them by default) or, with history shorter than the
    /// log, from the log: the same patches, at most the log's capacity of them.
    @Test(arguments: [10_000, 0, 5])
    func patchLogGivesTheMissedPatchesInOrder(history: Int) {
        var seq = Sequencer(flow: .demo, epoch: "e", logCapacity: 8, historyCapacity: history)
        _ = seq.submit(["id": 0, "ops": [["op": "setRoot", "route": "main"]]], client: "c")
        var broadcast: [Patch] = []
        for i in 1...20 {
            if case .applied(_, let patch) = seq.submit(["id": .int(Int64(i)), "ops": [["op": "update", "data": ["n": .int(Int64(i))]]]], client: "c") {
                broadcast.append(patch)
            }
        }
        #expect(seq.rev == 21 && broadcast.count == 20)
        #expect(seq.log.isCovered(by: seq.history) == (history >= 8))
        #expect(seq.log.patches.isEmpty == (history >= 8), "the log is kept only when history is shorter")
        // The very patches that were broadcast.
        #expect(seq.patches(since: 13) == Array(broadcast.suffix(8)))
        #expect(seq.patches(since: 21) == [])
        #expect(seq.patches(since: 18)?.map(\.rev) == [19, 20, 21])
        #expect(seq.patches(since: 13)?.map(\.rev) == Array(14...21))
        #expect(seq.patches(since: 12) == nil)
        #expect(seq.patches(since: 22) == nil)
        #expect(seq.patches(since: -1) == nil)
        #expect(seq.recentPatches.map(\.rev) == Array(14...21))
        #expect(seq.patches(since: 20)?.first?.by == "c" && seq.patches(since: 20)?.first?.cmd == .int(20))
    }

    @Test func forgottenRemovalsStillConflictForOldBases() {
        var seq = Sequencer(flow: .demo, epoch: "e")
        seq.removedCapacity = 8
        _ = seq.submit(["id": 0, "ops": [["op": "setRoot", "route": "main"]]], client: "c")
        _ = seq.submit(["id": 1, "ops": [["op": "push", "route": "detail", "params": ["id": 1]]]], client: "c")
        let victim = "e11"
        for i in 2..<40 {
            _ = seq.submit(["id": .int(Int64(i)), "ops": [["op": "setStack", "at": "Home", "routes": ["list", "list"]]]], client: "c")
        }
        #expect(seq.removedAt.count <= 8)
        #expect(seq.removedHorizon > 2)
        // The newest removals are the ones kept: every record is newer than the horizon.
        #expect(seq.removedAt.records.allSatisfy { $0.rev > seq.removedHorizon } && seq.removedAt.records.contains { $0.rev == seq.rev })
        guard case .failed(let e) = seq.submit(["id": 99, "ops": [["op": "pop", "from": .string(victim)]], "base": 1, "onConflict": "reject"], client: "c") else {
            Issue.record(); return
        }
        #expect(e.code == .conflict)
        guard case .unchanged(let ack) = seq.submit(["id": 100, "ops": [["op": "pop", "from": .string(victim)]]], client: "c") else { Issue.record(); return }
        #expect(ack.results == [.superseded])
    }

    /// Ids and coordinator keys hash with a multiply (server-numbered, see `EntryID`):
    /// tables of them still find every key, and equal keys hash alike.
    @Test func idTablesFindEveryKey() {
        var removed: [EntryID: Int] = [:]
        var changed: [CoordinatorKey: Int] = [.root: -1, .alert: -2]
        for n in 1...20_000 { removed[EntryID(n)] = n; changed[.entry(EntryID(n * 7))] = n }
        #expect(removed.count == 20_000 && changed.count == 20_002)
        #expect((1...20_000).allSatisfy { removed[EntryID($0)] == $0 && changed[.entry(EntryID($0 * 7))] == $0 })
        #expect(removed[EntryID(0)] == nil && changed[.entry(EntryID(8))] == nil)
        #expect(changed[.root] == -1 && changed[.alert] == -2)
        #expect(EntryID(5).hashValue == EntryID(5).hashValue && Set([CoordinatorKey.entry(EntryID(3)), .entry(EntryID(3)), .root]).count == 2)
    }

    /// Removal records restored from a snapshot are forgotten oldest first too.
    @Test func forgettingAfterARestoreKeepsTheNewestRemovals() throws {
        var seq = Sequencer(flow: .demo, epoch: "e")
        _ = seq.submit(["id": 0, "ops": [["op": "setRoot", "route": "main"]]], client: "c")
        for i in 1...6 {
            _ = seq.submit(["id": .int(Int64(i)), "ops": [["op": "setStack", "at": "Home", "routes": ["list", "list"]]]], client: "c")
        }
        var back = try Sequencer(restoring: seq.snapshot(), flow: .demo)
        #expect(back.removedAt == seq.removedAt && back.removedAt.count > 8)
        back.removedCapacity = 8
        for i in 7...12 {
            _ = back.submit(["id": .int(Int64(i)), "ops": [["op": "setStack", "at": "Home", "routes": ["list", "list"]]]], client: "c")
        }
        #expect(back.removedAt.count <= 8 && back.removedHorizon > 0)
        #expect(back.removedAt.records.allSatisfy { $0.rev > back.removedHorizon } && back.removedAt.records.contains { $0.rev == back.rev })
    }
}
