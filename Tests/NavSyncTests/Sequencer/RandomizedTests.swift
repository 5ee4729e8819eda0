import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport



/// Generates plausible and hostile commands from the current state.
struct CommandGenerator {
    var rng: SeededRandom
    let flow: Flow
    let routes: [String]

    init(flow: Flow, seed: UInt64) {
        self.flow = flow
        rng = SeededRandom(seed: seed)
        routes = Array(Set(flow.coordinators.values.flatMap(\.routeOrder))).sorted() + ["bogus"]
    }

    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }
    mutating func pick<T>(_ list: [T]) -> T { list[Int.random(in: 0..<list.count, using: &rng)] }

    mutating func id(_ state: NavState, nextID: Int) -> String {
        var live: [String] = []
        state.forEachID { live.append($0.description) }
        switch Int.random(in: 0..<10, using: &rng) {
        case 0..<6: return pick(live)
        case 6..<8: return "e\(Int.random(in: 1..<max(nextID, 2), using: &rng))"
        case 8: return "e\(nextID + 1000)"
        default: return pick(["x", "e0", "E3", ""])
        }
    }

    /// When set, params are always valid: plausible commands, so the tree grows deep.
    var strict = false

    mutating func value(for type: ParamType?) -> JSON {
        if let type, strict || chance(0.85) {
            switch type.base {
            case .int: return .int(Int64.random(in: -5...500, using: &rng))
            case .number: return chance(0.5) ? .double(Double(Int.random(in: 0...100, using: &rng)) / 4) : .int(3)
            case .string: return .string(pick(["a", "b/c", "ünï", "~0", ""]))
            case .bool: return .bool(chance(0.5))
            }
        }
        return pick([nil, "7", 7, 7.5, true, [1], ["k": 1]])
    }

    mutating func params(_ route: String) -> JSON {
        let spec = flow.types(declaring: route).first?.routes[route]
        var o = JSONObject()
        for name in spec?.paramOrder ?? [] where !(spec!.params[name]!.optional && chance(0.5)) {
            if strict || chance(0.95) { o[name] = value(for: spec!.params[name]) }
        }
        if !strict && chance(0.05) { o["extra"] = 1 }
        return .object(o)
    }

    mutating func at(_ state: NavState, nextID: Int) -> JSON? {
        guard chance(0.3) else { return nil }
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return "root"
        case 1: return .string(id(state, nextID: nextID))
        case 2: return .string(pick(flow.coordinatorOrder))
        default: return .string(pick(["Nowhere", "e", "7"]))
        }
    }

    /// A plausible operation: a route of a coordinator on the active path, with an
    /// operation its kind supports and valid params.
    mutating func plausibleOp(_ state: NavState, nextID: Int) -> JSON {
        strict = true
        defer { strict = false }
        let path = pick(state.activePath)
        let c = state[path]
        let spec = flow.spec(c.type)
        let route = pick(spec.routeOrder)
        var o: JSONObject
        switch c.kind {
        case .root: o = ["op": "setRoot", "route": .string(route), "params": params(route)]
        case .stack:
            let name = pick(["route", "route", "route", "present", "pop", "pop", "popToRoot", "popToFirst", "popBefore", "dismiss", "setStack", "setPath"])
            o = ["op": .string(name), "route": .string(route)]
            switch name {
            case "route", "present": o["params"] = params(route)
            case "pop", "popToRoot", "dismiss": o["route"] = nil
            case "setStack": o = ["op": "setStack", "routes": .array([.string(spec.initial[0].route), ["route": .string(route), "params": params(route)]])]
            case "setPath":
                // Some of what is there (kept), then a new route, in a layer that may be under a modal.
                let pushes = c.entries.dropFirst().prefix { $0.presentation == .push }.map { JSON.object(["route": .string($0.route), "params": .object($0.params)]) }
                o = ["op": "setPath", "routes": .array(Array(pushes.prefix(Int.random(in: 0...pushes.count, using: &rng))) + (chance(0.7) ? [["route": .string(route), "params": params(route)]] : []))]
                if chance(0.3) { o["layer"] = .int(Int64.random(in: 0...2, using: &rng)) }
            default: break
            }
        case .tabs:
            let name = pick(["select", "select", "appendTab", "removeLast", "setTabs"])
            o = ["op": .string(name), "route": .string(route)]
            if name == "appendTab" { o["params"] = params(route) }
            if name == "setTabs" { o = ["op": "setTabs", "routes": .array(spec.initial.map { .string($0.route) } + [.string(route)])] }
        }
        if chance(0.3) { o["at"] = path.isEmpty ? "root" : .string(state.key(of: path).description) }
        return .object(o)
    }

    mutating func op(_ state: NavState, nextID: Int) -> JSON {
        if chance(0.6) { return plausibleOp(state, nextID: nextID) }
        if chance(0.01) { return pick(["push", 5, ["route": "x"], ["op": "fly"]]) }
        let name = pick(OpName.allCases.filter { $0 != .open } + [.route, .route, .route, .pop, .pop, .update, .select, .open])
        var o: JSONObject = ["op": .string(name.rawValue)]
        if let at = at(state, nextID: nextID) { o["at"] = at }
        let route = pick(routes)
        func hints() -> JSON? { chance(0.2) ? ["transition": .string(pick(["slide", "fade", "zoom"])), "animated": .bool(chance(0.5))] : nil }
        switch name {
        case .route, .present, .setRoot, .appendTab, .insertTab:
            o["route"] = .string(route)
            o["params"] = params(route)
            o["hints"] = hints()
            if name == .present && chance(0.5) { o["style"] = .string(pick(["sheet", "cover", "push"])) }
            if name == .insertTab { o["index"] = .int(Int64.random(in: -1...5, using: &rng)) }
        case .pop:
            if chance(0.4) { o["from"] = .string(id(state, nextID: nextID)) } else if chance(0.3) { o["count"] = .int(Int64.random(in: 0...3, using: &rng)) }
        case .popToFirst, .popToLast, .popBefore, .removeFirst, .removeLast: o["route"] = .string(route)
        case .popTo, .removeTab: o["entry"] = .string(id(state, nextID: nextID))
        case .dismiss: if chance(0.3) { o["all"] = true }
        case .setStack, .setTabs, .setPath:
            if name == .setPath, chance(0.3) { o["layer"] = .int(Int64.random(in: -1...2, using: &rng)) }
            o["routes"] = .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in
                let r = pick(routes)
                return chance(0.3) ? .string(r) : ["route": .string(r), "params": params(r)]
            })
        case .select:
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: o["route"] = .string(route)
            case 1: o["index"] = .int(Int64.random(in: -1...4, using: &rng))
            default: o["entry"] = .string(id(state, nextID: nextID))
            }
        case .update:
            if chance(0.5) { o["entry"] = .string(id(state, nextID: nextID)) }
            o["data"] = chance(0.95) ? [.init(stringLiteral: pick(["a", "b", "c"])): chance(0.3) ? nil : value(for: nil)] : 5
        case .open:
            o["url"] = .string(pick(["/product/\(Int.random(in: 1...99, using: &rng))?note=x", "/search/shoes?inStock=1", "/orders/3",
                                     "/checkout?total=9.5", "/settings/notifications?on=0", "/login", "/p/4", "/p/5/file/a.txt?dirty=1",
                                     "/product/abc", "/nowhere"]))
        case .alert:
            o["title"] = "t"
            if chance(0.3) { o["buttons"] = [["id": "a", "label": "A"], ["id": "b", "label": "B", "role": "cancel"]] }
        case .respond:
            o["alert"] = .string(state.alert.map { chance(0.8) ? $0.id.description : "e1" } ?? id(state, nextID: nextID))
            o["button"] = .string(pick(["ok", "a", "b", "zz"]))
        case .restart, .reset, .popToRoot: break
        }
        return .object(o)
    }
}

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
