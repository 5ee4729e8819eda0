import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

/// The id-based diff: minimal patches, and regression cases found by the randomized test.
@Suite("State diff")
struct StateDiffTests {
    func patchOf(_ h: inout Harness, _ ops: [JSON]) -> [JSON] {
        var seq = h.seq
        guard case .applied(_, let p) = seq.submit(Command(id: .string("diff-\(h.rev)"), ops: ops), client: "d") else {
            Issue.record("expected a revision"); return []
        }
        #expect((try? h.json.applying(p.ops)) == seq.state.json)
        h.seq = seq
        return p.ops.map(\.json)
    }

    @Test func pushAndPopAreOneOpEach() {
        var h = Harness()
        h.ok(["op": "setRoot", "route": "main"])
        #expect(patchOf(&h, [["op": "push", "route": "detail", "params": ["id": 1]]])
                == [["op": "add", "path": "/root/current/coordinator/tabs/0/coordinator/stack/1",
                     "value": ["id": "e11", "route": "detail", "params": ["id": 1], "presentation": "push"]]])
        #expect(patchOf(&h, [["op": "pop"]]) == [["op": "remove", "path": "/root/current/coordinator/tabs/0/coordinator/stack/1"]])
        #expect(patchOf(&h, [["op": "select", "index": 2]]) == [["op": "replace", "path": "/root/current/coordinator/selected", "value": "e7"]])
        #expect(patchOf(&h, [["op": "update", "data": ["q": "x"]]]) == [["op": "add", "path": "/root/current/coordinator/tabs/2/coordinator/stack/0/data", "value": ["q": "x"]]])
        #expect(patchOf(&h, [["op": "update", "data": ["q": "y", "n": 1]]])
                == [["op": "replace", "path": "/root/current/coordinator/tabs/2/coordinator/stack/0/data/q", "value": "y"],
                    ["op": "add", "path": "/root/current/coordinator/tabs/2/coordinator/stack/0/data/n", "value": 1]])
    }

    /// Regression: removing a middle tab and changing a kept tab in one command once
    /// emitted the kept tab's change twice (the common prefix was diffed twice).
    @Test func middleRemovalWithAChangeInAKeptTab() {
        var h = Harness()
        h.ok(["op": "setRoot", "route": "main"])
        let ops = patchOf(&h, [["op": "removeLast", "route": "cart"], ["op": "push", "route": "detail", "params": ["id": 1]]])
        #expect(ops.count == 2)
        #expect(ops.filter { $0["op"] == "add" }.count == 1)
    }

    @Test func reorderedTabsAreMovedNotReplaced() {
        var h = Harness()
        h.ok(["op": "setRoot", "route": "main"])
        let ops = patchOf(&h, [["op": "setTabs", "routes": ["profile", "home", "search", "cart"]]])
        #expect(ops == [["op": "move", "from": "/root/current/coordinator/tabs/3", "path": "/root/current/coordinator/tabs/0"]])
    }

    @Test func aNewRootEntryReplacesOnlyThatEntry() {
        var h = Harness()
        h.ok(["op": "setRoot", "route": "main"])
        let ops = patchOf(&h, [["op": "setRoot", "route": "login"]])
        #expect(ops.count == 1 && ops[0]["op"] == "replace" && ops[0]["path"] == "/root/current")
    }

    /// A new entry where an old one was is one `replace`, and a stack with no entry kept
    /// (`setStack`) is replaced whole: one op and a shorter message to every member.
    @Test func newEntriesReplaceOldOnesInPlace() {
        var h = Harness()
        h.ok(["op": "setRoot", "route": "main"])
        let stack = "/root/current/coordinator/tabs/0/coordinator/stack"
        h.ok(["op": "push", "route": "detail", "params": ["id": 1]])
        let swapped = patchOf(&h, [["op": "pop"], ["op": "push", "route": "detail", "params": ["id": 2]]])
        #expect(swapped.count == 1 && swapped[0]["op"] == "replace" && swapped[0]["path"] == .string(stack + "/1"))
        let shorter = patchOf(&h, [["op": "pop"], ["op": "push", "route": "category", "params": ["name": "x"]], ["op": "push", "route": "detail", "params": ["id": 3]]])
        #expect(shorter.map { $0["op"] } == ["replace", "add"])
        let set = patchOf(&h, [["op": "setStack", "routes": ["list", ["route": "detail", "params": ["id": 4]]]]])
        #expect(set.count == 1 && set[0]["op"] == "replace" && set[0]["path"] == .string(stack))
        #expect(set[0]["value"]?.arrayValue?.count == 2)
    }

    /// A one-operation push or cut is patched from the edit it made, not by walking
    /// both trees: the ops and the bookkeeping must be the walk's, on both flows.
    @Test(arguments: [("demo", 0xED17 as UInt64), ("studio", 0x5ED1 as UInt64)])
    func aStackEditPatchesAsTheWalkDoes(_ flowName: String, _ seed: UInt64) throws {
        let flow = flowName == "demo" ? Flow.demo : studioFlow
        var gen = CommandGenerator(flow: flow, seed: seed)
        gen.strict = true
        var doc = NavDocument(flow: flow)
        var compared: [String: Int] = [:]
        for _ in 0..<6000 {
            let json = gen.op(doc.state, nextID: doc.nextID)
            guard let op = try? NavOperation(json: json) else { continue }
            var working = doc
            var ctx = CommandContext(conflicts: nil, firstID: working.nextID)
            guard (try? working.apply(op, &ctx)) == .applied else { continue }
            if let edit = ctx.edit {
                let walked = StateDiff(from: doc.state, to: working.state)
                guard let written = StateDiff(edit: edit, in: working.state) else {
                    Issue.record("\(json): no diff written from the edit")
                    continue
                }
                #expect(written.ops == walked.ops, "\(json): \(written.ops.map(\.json)) vs \(walked.ops.map(\.json))")
                #expect(written.removed == walked.removed && written.added == walked.added && written.created == walked.created, "\(json)")
                compared[op.action.name.rawValue, default: 0] += 1
            }
            // Deep trees get popped back now and then, so both kinds of edit keep coming.
            doc = gen.chance(0.02) ? NavDocument(flow: flow) : working
        }
        for name in ["route", "present", "pop", "popToRoot", "dismiss"] {   // `route` is `push`
            #expect(compared[name, default: 0] >= 5, "\(compared)")
        }
    }

    /// A lone stack edit's patch is kept as the bytes it is sent as, and read back when
    /// asked for (history's past states, snapshots): a pushed entry opens its route's
    /// whole chain of coordinators, which a flow may nest deeper than input may (512).
    @Test func aPatchKeptAsBytesReadsBackAtAnyDepthTheFlowMakes() throws {
        let chain = 200   // three levels of JSON each: past 512
        var coordinators: JSONObject = ["Main": ["kind": "stack", "initial": "home",
                                                 "routes": ["home": [:], "deep": ["coordinator": "C0"]]]]
        for i in 0..<chain {
            coordinators["C\(i)"] = i == chain - 1
                ? ["kind": "stack", "initial": "leaf", "routes": ["leaf": [:]]]
                : ["kind": "stack", "initial": "next", "routes": ["next": ["coordinator": .string("C\(i + 1)")]]]
        }
        let flow = try Flow.load(["name": "deep", "root": "Main", "coordinators": .object(coordinators)])
        var seq = Sequencer(flow: flow, epoch: "e")
        let before = seq.state.json
        guard case .applied(_, let patch) = seq.submit(Command(id: .int(1), ops: [["op": "push", "route": "deep"]]), client: "c") else {
            Issue.record("the push did not apply"); return
        }
        guard case .encoded(let bytes) = patch.operations else { Issue.record("a push's patch is kept as bytes"); return }
        #expect(throws: JSONParseError.self) { try JSON.parse([UInt8(ascii: "[")] + bytes + [UInt8(ascii: "]")]) }
        #expect(try before.applying(patch.ops) == seq.state.json)
        #expect(try before.applying(seq.history.entries(after: 0)[0].patch) == seq.state.json)
    }

    /// A command of one stack edit runs on the session's document itself, so such an
    /// operation must leave the document exactly as it was when it fails, and leave an
    /// edit to patch from when it applies (`NavOperation.Action.editsOneStackAtomically`).
    @Test(arguments: [("demo", 0xA70 as UInt64), ("studio", 0xA71 as UInt64)])
    func aLoneStackEditFailsWithoutChangingAnything(_ flowName: String, _ seed: UInt64) throws {
        let flow = flowName == "demo" ? Flow.demo : studioFlow
        var gen = CommandGenerator(flow: flow, seed: seed)
        var doc = NavDocument(flow: flow)
        var failed = 0, applied = 0
        for _ in 0..<6000 {
            let json = gen.op(doc.state, nextID: doc.nextID)
            guard let op = try? NavOperation(json: json) else { continue }
            var working = doc
            var ctx = CommandContext(conflicts: nil, firstID: working.nextID)
            do {
                let result = try working.apply(op, &ctx)
                if op.action.editsOneStackAtomically, result == .applied {
                    #expect(ctx.edit != nil, "\(json) applied without an edit")
                    // The changed coordinator's key, read on the way down, is the one `key(of:)` finds.
                    if let p = ctx.edit?.path { #expect(ctx.changed == [working.state.key(of: p)], "\(json)") }
                    applied += 1
                }
            } catch {
                if op.action.editsOneStackAtomically {
                    #expect(working.state == doc.state && working.nextID == doc.nextID, "\(json) failed (\(error)) but changed the document")
                    failed += 1
                }
                continue
            }
            doc = gen.chance(0.02) ? NavDocument(flow: flow) : working
        }
        #expect(failed > 100 && applied > 100, "failed \(failed), applied \(applied)")
    }
}
