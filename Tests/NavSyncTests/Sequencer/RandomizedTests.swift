import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport




@Suite("Randomized sequences (docs/architecture.md, \"Tests\")")
struct RandomizedTests {
    @Test(arguments: [("demo", 0xD3E0 as UInt64), ("studio", 0x57D1 as UInt64)])
    func invariantsHoldAfterEveryCommand(_ flowName: String, _ seed: UInt64) throws {
        let flow = flowName == "demo" ? Flow.demo : studioFlow
        var gen = CommandGenerator(flow: flow, seed: seed)
        var seq = Sequencer(flow: flow, epoch: "fuzz")
        var mirror = seq.state.json   // a client that applies every patch from its wire form
        var journal: [(String, Command)] = []
        var sent: [(String, JSONObject)] = []
        var opCount = 0
        var outcomes: [String: Int] = [:]

        for n in 0..<6000 {
            let client = gen.pick(["phone", "tablet", "web"])
            let before = seq
            var object: JSONObject
            if !sent.isEmpty && gen.chance(0.03) {
                object = gen.pick(sent).1   // a resent command: must be answered, never reapplied
            } else {
                let ops = (0..<gen.pick([1, 1, 1, 2, 2, 3, 4])).map { _ in gen.op(seq.state, nextID: seq.document.nextID) }
                opCount += ops.count
                object = ["id": .int(Int64(n)), "ops": .array(ops)]
                if gen.chance(0.3) { object["base"] = .int(Int64(Int.random(in: max(0, seq.rev - 5)...seq.rev, using: &gen.rng))) }
                if gen.chance(0.3) { object["onConflict"] = "reject" }
            }
            sent.append((client, object))
            let outcome = seq.submit(object, client: client)
            switch outcome {
            case .applied(let ack, let patch):
                outcomes["applied", default: 0] += 1
                #expect(ack.rev == before.rev + 1 && patch.rev == ack.rev)
                // The patch, through its wire form, takes the old document to the new one.
                // The wire form is what the server sends: written straight from the ops'
                // values (or, for a lone stack edit, from the bytes its patch was written
                // as when the revision was made), byte for byte the encoded object.
                let bytes = ServerMessage.patch(session: "s", patch).bytes()
                #expect(bytes == ServerMessage.patch(session: "s", patch).json().encoded())
                let wire = try JSON.parse(bytes)
                let ops = try wire["ops"]!.arrayValue!.map { try PatchOperation(json: $0) }
                let applied = try? before.state.json.applying(ops)
                #expect(applied == seq.state.json, "command \(n): \(object)\npatch: \(JSON.array(ops.map(\.json)))\nbefore: \(before.state.json)")
                if applied != seq.state.json { break }
                mirror = try mirror.applying(ops)
                #expect(!ops.contains { $0.path == "" }, "never a replace of the whole document")
                journal.append((client, try Command(json: object)))
            case .unchanged(let ack):
                outcomes["unchanged", default: 0] += 1
                #expect(ack.rev == before.rev && seq.state == before.state && seq.rev == before.rev)
            case .duplicate:
                outcomes["duplicate", default: 0] += 1
                #expect(seq.state == before.state && seq.rev == before.rev)
            case .failed(let e):
                outcomes[e.code.rawValue, default: 0] += 1
                #expect(seq.state == before.state && seq.rev == before.rev && seq.document.nextID == before.document.nextID)
                #expect(seq.lastChanged == before.lastChanged)
            }
            // Invariant 1: the mirror equals the server, byte for byte after normalising keys.
            #expect(mirror.normalized.encodedString() == seq.state.json.normalized.encodedString(), "command \(n)")
            // Invariant 4: the shape of docs/protocol.md, "The state document" holds.
            let problems = shapeProblems(seq.state.json, flow)
            #expect(problems.isEmpty, "command \(n): \(problems)")
            if !problems.isEmpty { break }
        }
        #expect(opCount >= 10_000)
        print("randomized \(flowName): \(opCount) ops, rev \(seq.rev), outcomes \(outcomes.sorted { $0.key < $1.key })")
        // Every kind of outcome happened, so the test exercises what it claims to.
        for key in ["applied", "unchanged", "duplicate", "bad_params", "unknown_route", "invalid_op", "not_found", "conflict"] {
            #expect(outcomes[key, default: 0] > 0, "no \(key) in \(outcomes)")
        }

        // Invariant 2: replaying the journal from revision 0 reproduces the document, ids included.
        var replay = Sequencer(flow: flow, epoch: "fuzz")
        for (client, command) in journal {
            guard case .applied = replay.submit(command, client: client) else {
                Issue.record("journaled command \(command.id) did not apply on replay"); break
            }
        }
        #expect(replay.state == seq.state)
        #expect(replay.rev == seq.rev && replay.document.nextID == seq.document.nextID)
        #expect(replay.lastChanged == seq.lastChanged && replay.removedAt == seq.removedAt)
    }
}
