import NavSync
import NavSyncServer

/// Generates plausible and hostile commands from the current state.
package struct CommandGenerator {
    package var rng: SeededRandom
    package let flow: Flow
    package let routes: [String]

    package init(flow: Flow, seed: UInt64) {
        self.flow = flow
        rng = SeededRandom(seed: seed)
        routes = Array(Set(flow.coordinators.values.flatMap(\.routeOrder))).sorted() + ["bogus"]
    }

    package mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }
    package mutating func pick<T>(_ list: [T]) -> T { list[Int.random(in: 0..<list.count, using: &rng)] }

    package mutating func id(_ state: NavState, nextID: Int) -> String {
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
    package var strict = false

    package mutating func value(for type: ParamType?) -> JSON {
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

    package mutating func params(_ route: String) -> JSON {
        let spec = flow.types(declaring: route).first?.routes[route]
        var o = JSONObject()
        for name in spec?.paramOrder ?? [] where !(spec!.params[name]!.optional && chance(0.5)) {
            if strict || chance(0.95) { o[name] = value(for: spec!.params[name]) }
        }
        if !strict && chance(0.05) { o["extra"] = 1 }
        return .object(o)
    }

    package mutating func at(_ state: NavState, nextID: Int) -> JSON? {
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
    package mutating func plausibleOp(_ state: NavState, nextID: Int) -> JSON {
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

    package mutating func op(_ state: NavState, nextID: Int) -> JSON {
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
