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
