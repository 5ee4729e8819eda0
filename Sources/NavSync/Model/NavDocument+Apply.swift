/// The reducer's entry point: each operation's fields are already decoded; here the
/// touched coordinators are checked for conflicts, then the target is resolved and the
/// operation applied (docs/protocol.md, "Operations: fine points", "Conflicts": validate, check, resolve+apply).

/// What an operation's `at` names.
enum AtTarget {
    case none
    case coordinator(CoordinatorPath)
    case gone(EntryID)
    case failed(NavError)
}

/// What an entry id in an operation names.
enum EntryTarget {
    case live(path: CoordinatorPath, index: Int)
    case gone(EntryID)
    case failed(NavError)
}

extension NavDocument {
    /// Applies one decoded operation. On error the document may be half-changed: the
    /// caller throws this copy away (commands are atomic).
    public mutating func apply(_ op: NavOperation, _ ctx: inout CommandContext) throws(NavError) -> OpResult {
        let name = op.action.name
        if let why = ctx.refused[name] { throw NavError(.forbidden, why) }
        let at = name.isSessionWide ? AtTarget.none : resolveAt(op.at)
        var entry: EntryTarget?
        if let named = op.action.namedEntry { entry = resolveEntry(named) }
        if case .respond(let alertID, _) = op.action { entry = resolveAlert(alertID) }

        // The command hook's `set` is the backend's doing, not the sender's: what the
        // sender saw (`base`) does not decide it.
        if let guardRev = ctx.conflicts, !op.action.isByHook {
            var keys = touched(name, at, entry)
            if case .updateSession = op.action { keys.append(.data) }
            // A link that writes the session's data (a sign-in link) touches it too: the
            // same `update` sent directly would be a conflict.
            if case .open(let url) = op.action, linkWritesSessionData(url) { keys.append(.data) }
            try guardRev.check(keys, gone: goneIDs(at, entry), firstID: ctx.firstID,
                               describe: describe)
        }
        if case .failed(let error) = at { throw error }
        if case .failed(let error)? = entry { throw error }
        if case .gone = at { return .superseded }
        if case .gone? = entry { return .superseded }
        // An entry named together with `at` must be in that coordinator.
        if case .coordinator(let p) = at, case .live(let holder, let index)? = entry, holder != p {
            throw NavError(.invalidOp, "\(state[holder].entries[index].id) is not in \(describe(state.key(of: p)))")
        }

        switch op.action {
        case .route, .present, .pop, .popToRoot, .popToFirst, .popToLast, .popTo, .popBefore, .dismiss, .setRoot, .setStack, .setPath:
            return try applyStack(op.action, at, entry, &ctx)
        case .select, .setTabs, .appendTab, .insertTab, .removeFirst, .removeLast, .removeTab:
            return try applyTabs(op.action, at, entry, &ctx)
        case .restart, .update, .updateSession, .open, .alert, .respond, .reset:
            return try applyOther(op.action, at, entry, &ctx)
        }
    }

    /// Whether the link `url` opens sets the session's data.
    func linkWritesSessionData(_ url: String) -> Bool {
        guard let (link, _) = try? flow.match(url: url) else { return false }
        return link.compiled.contains { if case .updateSession = $0.action { true } else { false } }
    }

    /// The coordinators an operation touches (docs/protocol.md, "Operations: fine points", "Conflicts"): `at`'s target
    /// and the coordinator holding a named entry; an operation with neither touches the
    /// whole active path as it stands now. An `at` or id that names nothing touches
    /// nothing. `alert` and `respond` also touch the alert.
    func touched(_ name: OpName, _ at: AtTarget, _ entry: EntryTarget?) -> [CoordinatorKey] {
        var keys: [CoordinatorKey] = []
        var addressed = false
        if case .none = at {} else { addressed = true }
        if case .coordinator(let p) = at { keys.append(state.key(of: p)) }
        if name != .respond, let entry {
            addressed = true
            if case .live(let p, _) = entry { keys.append(state.key(of: p)) }
        }
        if !addressed { keys += state.activePath.map { state.key(of: $0) } }
        if name == .alert || name == .respond { keys.append(.alert) }
        return keys
    }

    func goneIDs(_ at: AtTarget, _ entry: EntryTarget?) -> [EntryID] {
        var ids: [EntryID] = []
        if case .gone(let id) = at { ids.append(id) }
        if case .gone(let id)? = entry { ids.append(id) }
        return ids
    }

    /// `at`: `"root"`; a live entry id (it must open a coordinator); a gone id; a type
    /// name with exactly one coordinator on the tree; otherwise `not_found`.
    func resolveAt(_ at: String?) -> AtTarget {
        guard let at else { return .none }
        if at == "root" { return .coordinator([]) }
        if let id = EntryID(at) {
            if let (path, index) = state.locate(id) {
                let e = state[path].entries[index]
                guard e.coordinator != nil else {
                    return .failed(NavError(.invalidOp, "'at': \(id) (route '\(e.route)') opens no coordinator"))
                }
                return .coordinator(path.appending(index))
            }
            if state.alert?.id == id { return .failed(NavError(.invalidOp, "'at': \(id) is the alert, not a coordinator")) }
            if wasAllocated(id) { return .gone(id) }
        }
        // Only coordinators of types that can hold one of `at`'s are walked into.
        let holders = flow.holders(of: at)
        let (path, count) = holders.isEmpty ? (nil, 0) : state.firstPath(ofType: at) { holders.contains($0) }
        switch count {
        case 1: return .coordinator(path!)
        case 0:
            if flow.coordinators[at] != nil {
                return .failed(NavError(.notFound, "'at': no \(at) coordinator is on the tree"))
            }
            return .failed(NavError(.notFound, "'at': \"\(at)\" is neither \"root\", a live entry id, nor a coordinator type"))
        default:
            return .failed(NavError(.invalidOp, "'at': \(count) \(at) coordinators are on the tree; name one by entry id"))
        }
    }

    func resolveEntry(_ text: String) -> EntryTarget {
        guard let id = EntryID(text) else {
            return .failed(NavError(.notFound, "no entry \"\(text)\" (entry ids look like e12)"))
        }
        if let (path, index) = state.locate(id) { return .live(path: path, index: index) }
        if state.alert?.id == id { return .failed(NavError(.invalidOp, "\(id) is the alert, not an entry")) }
        if wasAllocated(id) { return .gone(id) }
        return .failed(NavError(.notFound, "no entry \(id) was ever opened in this session"))
    }

    /// `respond`'s alert id. A live alert is reported as `.live` with an empty path.
    func resolveAlert(_ text: String) -> EntryTarget {
        guard let id = EntryID(text) else { return .failed(NavError(.notFound, "no alert \"\(text)\"")) }
        if state.alert?.id == id { return .live(path: [], index: -1) }
        if state.locate(id) != nil { return .failed(NavError(.notFound, "\(id) is a screen, not an alert")) }
        if wasAllocated(id) { return .gone(id) }
        return .failed(NavError(.notFound, "no alert \(id) was ever shown in this session"))
    }

    /// A coordinator, for messages: `Home (e7)`, `the root App`, `the alert`.
    func describe(_ key: CoordinatorKey) -> String {
        switch key {
        case .root: return "the root coordinator \(state.root.type)"
        case .alert: return "the alert"
        case .data: return "the session's data"
        case .entry(let id):
            guard let (path, index) = state.locate(id), let c = state[path].entries[index].coordinator else {
                return "the coordinator of \(id)"
            }
            return "\(c.type) (\(id))"
        }
    }

    /// The coordinator a route-naming operation goes to: `at`'s, or the deepest on the
    /// active path whose kind fits and that declares every route (route bubbling).
    func target(_ name: OpName, route: String, _ at: AtTarget) throws(NavError) -> CoordinatorPath {
        try target(name, routes: CollectionOfOne(route), at)    // no array made per command
    }

    func target(_ name: OpName, routes: some Collection<String>, _ at: AtTarget) throws(NavError) -> CoordinatorPath {
        try targetCoordinator(name, routes: routes, at) { _, _ in () }.path
    }

    /// The same, with what `read` gives of the coordinator there and its type's spec
    /// (read on the way down: no second walk, no copy of the coordinator handed back,
    /// no second lookup of the spec).
    func targetCoordinator<T>(_ name: OpName, routes: some Collection<String>, _ at: AtTarget,
                              read: (Coordinator, CoordinatorSpec) -> T) throws(NavError) -> (path: CoordinatorPath, value: T) {
        if case .coordinator(let p) = at {
            let c = state[p]
            guard name.works(on: c.kind) else { throw wrongKind(name, c) }
            let spec = flow.spec(c.type)
            for r in routes where spec.route(r) == nil {
                throw NavError(.unknownRoute, "route '\(r)' is not declared on \(c.type)")
            }
            return (p, read(c, spec))
        }
        let flow = flow    // not `self`: a closure capturing the document would copy it
        // The closure written at the call, not held in a variable: held, its context
        // was allocated on the heap, once per push.
        if let found = state.deepestActive({ c -> T? in
            guard name.works(on: c.kind) else { return nil }
            let spec = flow.spec(c.type)
            return routes.allSatisfy { spec.route($0) != nil } ? read(c, spec) : nil
        }) { return found }
        let list = routes.map { "'\($0)'" }.joined(separator: ", ")
        if let p = state.deepestActive(where: { c in routes.allSatisfy { flow.spec(c.type).route($0) != nil } }) {
            let fix = routes.count == 1 ? "; use `\(Self.verb(for: state[p].kind)) \(routes.first!)`" : ""
            throw NavError(.invalidOp, "\(list) is declared on \(state[p].type), a \(state[p].kind.rawValue) coordinator; '\(name.rawValue)' works on \(kindList(name.kinds!))\(fix)")
        }
        throw notOnScreen(Array(routes))
    }

    /// The verb that opens a route on a coordinator of this kind, for hints.
    static func verb(for kind: CoordinatorKind) -> String {
        switch kind {
        case .root: return "setRoot"
        case .stack: return "push"
        case .tabs: return "select"
        }
    }

    /// Why a route cannot be reached from what is on screen, and how to get there: the
    /// type that declares it and, when a route on screen opens that type, the command
    /// that opens it ("`setRoot main` first").
    func notOnScreen(_ routes: [String]) -> NavError {
        let list = routes.map { "'\($0)'" }.joined(separator: ", ")
        guard let owner = flow.types(declaring: routes[0]).first?.name else {
            return NavError(.unknownRoute, "flow \(flow.name) declares no route \(list)")
        }
        // Walk up from the owner through the routes that open it, to a coordinator on
        // screen: its route is the first step (`detail` on Home: Home opens from Main,
        // Main from App, App is on screen: `setRoot main`).
        let onScreen = state.activePath.reversed().map { state[$0] }
        var wanted = owner
        var seen: Set<String> = [owner]
        while true {
            for c in onScreen {
                let spec = flow.spec(c.type)
                if let opener = spec.routeOrder.first(where: { spec.routes[$0]?.coordinator == wanted }) {
                    return NavError(.unknownRoute, "\(list) is declared on \(owner), which is not on screen: `\(Self.verb(for: c.kind)) \(opener)` first (on \(c.type))")
                }
            }
            guard let parent = flow.coordinatorOrder.first(where: { t in
                !seen.contains(t) && flow.spec(t).routes.values.contains { $0.coordinator == wanted }
            }) else { break }
            seen.insert(parent)
            wanted = parent
        }
        return NavError(.unknownRoute, "\(list) is declared on \(owner), which is not on screen (no route on screen opens it)")
    }

    /// The deepest coordinator on the active path of a fitting kind that satisfies
    /// `prefer`, else the deepest of a fitting kind; `at`'s if given.
    func routelessTarget(_ name: OpName, _ at: AtTarget, prefer: (Coordinator) -> Bool = { _ in true }) throws(NavError) -> CoordinatorPath? {
        try routelessTargetCoordinator(name, at, prefer: prefer) { _ in () }?.path
    }

    /// The same, with what `read` gives of the coordinator there (read on the way: no
    /// second walk, no copy of the coordinator handed back).
    func routelessTargetCoordinator<T>(_ name: OpName, _ at: AtTarget, prefer: (Coordinator) -> Bool = { _ in true },
                                       read: (Coordinator) -> T) throws(NavError) -> (path: CoordinatorPath, value: T)? {
        if case .coordinator(let p) = at {
            let c = state[p]
            guard name.works(on: c.kind) else { throw wrongKind(name, c) }
            return (p, read(c))
        }
        return state.deepestActive { name.works(on: $0.kind) && prefer($0) ? read($0) : nil }
            ?? state.deepestActive { name.works(on: $0.kind) ? read($0) : nil }
    }

    func wrongKind(_ name: OpName, _ c: Coordinator) -> NavError {
        NavError(.invalidOp, "'\(name.rawValue)' works on \(kindList(name.kinds!)), but \(c.type) is a \(c.kind.rawValue) coordinator")
    }

    private func kindList(_ kinds: Set<CoordinatorKind>) -> String {
        CoordinatorKind.allCases.filter(kinds.contains).map { "\($0.rawValue)" }.joined(separator: " or ") + " coordinators"
    }

    /// Validates params for `route` of the coordinator at `path`.
    func params(_ item: NavOperation.OpenItem, of path: CoordinatorPath) throws(NavError) -> JSONObject {
        try flow.spec(state[path].type).route(item.route)!.validate(params: item.params)
    }
}
