import Testing
import NavSync
import NavSyncServer

/// A sequencer with helpers to send commands the way a client would.
package struct Harness {
    package var seq: Sequencer
    package var nextCommand: Int64 = 1

    package init(flow: Flow = .demo) { seq = Sequencer(flow: flow, epoch: "test-epoch") }

    /// The demo flow after `setRoot main`: App -> Main(tabs) [e3 home -> Home e4 list,
    /// e5 search -> Search e6, e7 cart -> Cart e8, e9 profile -> Profile e10].
    package static func onMain() -> Harness {
        var h = Harness()
        h.ok(["op": "setRoot", "route": "main"])
        return h
    }

    package var state: NavState { seq.state }
    package var json: JSON { seq.state.json }
    package var rev: Int { seq.rev }

    /// Sends one command of the given ops (as JSON literals).
    @discardableResult
    package mutating func send(_ ops: JSON..., base: Int? = nil, reject: Bool = false, client: String = "c1") -> Sequencer.Outcome {
        defer { nextCommand += 1 }
        let before = seq.state
        let outcome = seq.submit(Command(id: .int(nextCommand), ops: ops, base: base, onConflict: reject ? .reject : .rebase), client: client)
        if case .applied(_, let patch) = outcome {
            // Every patch must take the previous document to the new one.
            #expect((try? before.json.applying(patch.ops)) == seq.state.json, "patch \(patch.ops.map(\.json))")
            // Written straight from the state's values, its message has the bytes of
            // the object form.
            let message = ServerMessage.patch(session: "s", patch)
            #expect(message.bytes() == message.json().encoded())
        }
        if case .failed = outcome { #expect(seq.state == before) }
        checkShape(seq.state, seq.document.flow)
        return outcome
    }

    /// Sends and expects an applied/unchanged ack; returns its results.
    @discardableResult
    package mutating func ok(_ ops: JSON..., base: Int? = nil, reject: Bool = false, client: String = "c1",
                     sourceLocation: SourceLocation = #_sourceLocation) -> [OpResult] {
        ok(list: ops, base: base, reject: reject, client: client, sourceLocation: sourceLocation)
    }

    @discardableResult
    package mutating func ok(list ops: [JSON], base: Int? = nil, reject: Bool = false, client: String = "c1",
                     sourceLocation: SourceLocation = #_sourceLocation) -> [OpResult] {
        defer { nextCommand += 1 }
        let before = seq.state
        let outcome = seq.submit(Command(id: .int(nextCommand), ops: ops, base: base, onConflict: reject ? .reject : .rebase), client: client)
        checkShape(seq.state, seq.document.flow)
        switch outcome {
        case .applied(let ack, let patch):
            #expect((try? before.json.applying(patch.ops)) == seq.state.json, sourceLocation: sourceLocation)
            return ack.results
        case .unchanged(let ack), .duplicate(let ack): return ack.results
        case .failed(let e):
            Issue.record("expected success, got \(e)", sourceLocation: sourceLocation)
            return []
        }
    }

    /// Sends and expects an error with this code (and op index); nothing may change.
    @discardableResult
    package mutating func fails(_ code: ErrorCode, op: Int? = 0, _ ops: JSON..., base: Int? = nil, reject: Bool = false,
                        sourceLocation: SourceLocation = #_sourceLocation) -> NavError? {
        fails(code, op: op, list: ops, base: base, reject: reject, sourceLocation: sourceLocation)
    }

    @discardableResult
    package mutating func fails(_ code: ErrorCode, op: Int? = 0, list ops: [JSON], base: Int? = nil, reject: Bool = false,
                        sourceLocation: SourceLocation = #_sourceLocation) -> NavError? {
        defer { nextCommand += 1 }
        let before = seq
        let outcome = seq.submit(Command(id: .int(nextCommand), ops: ops, base: base, onConflict: reject ? .reject : .rebase), client: "c1")
        guard case .failed(let e) = outcome else {
            Issue.record("expected \(code), got \(outcome)", sourceLocation: sourceLocation)
            return nil
        }
        #expect(e.code == code, "\(e)", sourceLocation: sourceLocation)
        #expect(e.op == op, "\(e)", sourceLocation: sourceLocation)
        #expect(seq.state == before.state && seq.rev == before.rev, sourceLocation: sourceLocation)
        return e
    }

    /// The entry at a JSON pointer, e.g. "/root/current/coordinator/tabs/0".
    package func at(_ pointer: String) -> JSON { (try? json.value(at: pointer)) ?? .null }

    /// The routes of the stack of the given coordinator type (the single one on the tree).
    package func stack(_ type: String) -> [String] {
        let paths = state.paths(ofType: type)
        guard paths.count == 1 else { return ["(\(paths.count) \(type))"] }
        return state[paths[0]].entries.map(\.route)
    }

    package func entries(_ type: String) -> [Entry] {
        let paths = state.paths(ofType: type)
        return paths.count == 1 ? state[paths[0]].entries : []
    }

    package var activeRoute: String {
        guard let (p, i) = state.activeEntry else { return "" }
        return state[p].entries[i].route
    }
}

/// Checks the JSON document against docs/protocol.md, "The state document" and the flow: kinds and their
/// keys, presentation only on stack entries (root first), tab only on tab entries,
/// `selected` names a tab, params fit the route, unique ids, the alert's shape.
package func checkShape(_ state: NavState, _ flow: Flow, sourceLocation: SourceLocation = #_sourceLocation) {
    let problems = shapeProblems(state.json, flow)
    #expect(problems.isEmpty, "\(problems)", sourceLocation: sourceLocation)
}

package func shapeProblems(_ doc: JSON, _ flow: Flow) -> [String] {
    var problems: [String] = []
    var ids = Set<String>()
    func id(_ v: JSON?, _ at: String) {
        guard let s = v?.stringValue, EntryID(s) != nil else { problems.append("\(at): bad id \(String(describing: v))"); return }
        if !ids.insert(s).inserted { problems.append("\(at): duplicate id \(s)") }
    }
    func coordinator(_ c: JSON, expected type: String, _ at: String) {
        guard let o = c.objectValue, o["type"] == .string(type), let spec = flow.coordinators[type],
              o["kind"] == .string(spec.kind.rawValue) else { problems.append("\(at): bad coordinator \(c)"); return }
        switch spec.kind {
        case .root:
            guard Set(o.keys) == ["type", "kind", "current"], let e = o["current"] else { problems.append("\(at): root keys \(o.keys)"); return }
            entry(e, spec, kind: .root, first: false, at + "/current")
        case .stack:
            guard Set(o.keys) == ["type", "kind", "stack"], let s = o["stack"]?.arrayValue, !s.isEmpty else { problems.append("\(at): stack keys"); return }
            if s.count > 256 { problems.append("\(at): stack too deep") }
            for (i, e) in s.enumerated() { entry(e, spec, kind: .stack, first: i == 0, at + "/stack/\(i)") }
        case .tabs:
            guard Set(o.keys) == ["type", "kind", "tabs", "selected"], let t = o["tabs"]?.arrayValue, !t.isEmpty else { problems.append("\(at): tabs keys"); return }
            if t.count > 64 { problems.append("\(at): too many tabs") }
            for (i, e) in t.enumerated() { entry(e, spec, kind: .tabs, first: false, at + "/tabs/\(i)") }
            if !t.contains(where: { $0["id"] == o["selected"] }) { problems.append("\(at): selected \(String(describing: o["selected"])) is no tab") }
        }
    }
    func entry(_ e: JSON, _ owner: CoordinatorSpec, kind: CoordinatorKind, first: Bool, _ at: String) {
        guard let o = e.objectValue, let route = o["route"]?.stringValue, let spec = owner.routes[route] else {
            problems.append("\(at): bad entry \(e)"); return
        }
        id(o["id"], at)
        let allowed: Set<String> = ["id", "route", "params", "presentation", "tab", "hints", "data", "coordinator"]
        if !Set(o.keys).isSubset(of: allowed) { problems.append("\(at): extra keys \(o.keys)") }
        if let p = o["params"]?.objectValue {
            if (try? spec.validate(params: p)) != p { problems.append("\(at): params \(p) do not fit \(route)") }
        } else { problems.append("\(at): no params") }
        let presentation = o["presentation"]?.stringValue.flatMap(Presentation.init(rawValue:))
        switch kind {
        case .stack:
            if first ? presentation != .root : (presentation == nil || presentation == .root) { problems.append("\(at): presentation \(String(describing: presentation))") }
        default:
            if o["presentation"] != nil { problems.append("\(at): presentation outside a stack") }
        }
        if kind == .tabs ? o["tab"] != spec.tab : o["tab"] != nil { problems.append("\(at): tab metadata") }
        if let h = o["hints"] { if h.objectValue == nil || h.objectValue!.isEmpty || h.objectValue!.count > 16 { problems.append("\(at): hints \(h)") } }
        if let d = o["data"], d.objectValue == nil { problems.append("\(at): data \(d)") }
        switch (spec.coordinator, o["coordinator"]) {
        case (nil, nil): break
        case (let type?, let c?): coordinator(c, expected: type, at + "/coordinator")
        default: problems.append("\(at): coordinator presence does not match the route")
        }
    }
    guard let top = doc.objectValue, Set(top.keys).subtracting(["data"]) == ["root", "alert"], top["data"].map({ $0.objectValue != nil }) ?? true, let root = top["root"] else { return ["top keys"] }
    coordinator(root, expected: flow.root, "/root")
    if let alert = top["alert"], !alert.isNull {
        guard let a = alert.objectValue, a["title"]?.stringValue != nil, let buttons = a["buttons"]?.arrayValue, !buttons.isEmpty else {
            return problems + ["bad alert \(alert)"]
        }
        id(a["id"], "/alert")
        let buttonIDs = buttons.compactMap { $0["id"]?.stringValue }
        if Set(buttonIDs).count != buttons.count { problems.append("alert buttons") }
    }
    return problems
}

extension String {
    /// The text with the first `old` replaced by `new` (the text itself without one).
    package func replacingFirst(_ old: String, with new: String) -> String {
        guard let r = firstRange(of: old) else { return self }
        var copy = self
        copy.replaceSubrange(r, with: new)
        return copy
    }
}
