/// Tab operations (docs/protocol.md, "Operations"): `selected` always names a tab that exists.
extension NavDocument {
    mutating func applyTabs(_ action: NavOperation.Action, _ at: AtTarget, _ entry: EntryTarget?,
                            _ ctx: inout CommandContext) throws(NavError) -> OpResult {
        let name = action.name
        switch action {
        case .select(.route(let route)):
            let p = try target(name, route: route, at)
            guard let tab = state[p].entries.first(where: { $0.route == route }) else {
                throw NavError(.notFound, "\(state[p].type) has no '\(route)' tab")
            }
            return select(tab.id, in: p, &ctx)

        case .select(.index(let index)):
            guard let p = try routelessTarget(name, at) else {
                throw NavError(.invalidOp, "no tabs coordinator is on the active path for 'select'")
            }
            let tabs = state[p].entries
            guard tabs.indices.contains(index) else {
                throw NavError(.invalidOp, "tab index \(index) is out of range: \(state[p].type) has \(tabs.count) tabs")
            }
            return select(tabs[index].id, in: p, &ctx)

        case .select(.entry), .removeTab:
            guard case .live(let p, let index)? = entry else { return .superseded }
            guard state[p].kind == .tabs else { throw wrongKind(name, state[p]) }
            if name == .select { return select(state[p].entries[index].id, in: p, &ctx) }
            return try removeTab(at: index, in: p, &ctx)

        case .setTabs(let items):
            let p = try target(name, routes: items.map(\.route), at)
            let owner = state[p]
            guard items.count <= limits.maxTabs else {
                throw NavError(.invalidOp, "a tab bar holds at most \(limits.maxTabs) tabs; 'routes' has \(items.count)")
            }
            // An existing tab of the same route is kept, first unused one in order, with
            // its params, hints, data and coordinator; the rest are new.
            // Params are checked for every item, kept or not: a kept tab ignores them, but
            // params its route does not declare are an error wherever they are sent.
            var unused = owner.entries
            var tabs: [Entry] = []
            for (i, item) in items.enumerated() {
                let params: JSONObject
                do throws(NavError) { params = try self.params(item, of: p) } catch {
                    throw NavError(error.code, "routes[\(i)]: \(error.message)")
                }
                if let k = unused.firstIndex(where: { $0.route == item.route }) {
                    tabs.append(unused.remove(at: k))
                    continue
                }
                tabs.append(makeEntry(item.route, of: owner.type, params: params, presentation: nil, hints: item.hints))
            }
            let selected = tabs.contains { $0.id == owner.selected } ? owner.selected : tabs[0].id
            guard tabs.map(\.id) != owner.entries.map(\.id) || selected != owner.selected else { return .noop }
            state.modify(p) {
                $0.entries = tabs
                $0.selected = selected
            }
            ctx.noteChanged(state.key(of: p))
            return .applied

        case .appendTab(let item), .insertTab(let item, _):
            let p = try target(name, route: item.route, at)
            let owner = state[p]
            // The op's own fields first (its params: bad_params), then what depends on
            // the state (the index's range: invalid_op), as docs/protocol.md, "Operations: fine points" orders errors.
            let params = try params(item, of: p)
            var index = owner.entries.count
            if case .insertTab(_, let i) = action {
                guard (0...owner.entries.count).contains(i) else {
                    throw NavError(.invalidOp, "tab index \(i) is out of range 0...\(owner.entries.count) of \(owner.type)")
                }
                index = i
            }
            guard owner.entries.count < limits.maxTabs else {
                throw NavError(.invalidOp, "\(owner.type) already has \(limits.maxTabs) tabs, the most a tab bar may")
            }
            let tab = makeEntry(item.route, of: owner.type, params: params, presentation: nil, hints: item.hints)
            state.modify(p) { $0.entries.insert(tab, at: index) }
            ctx.noteChanged(state.key(of: p))
            return .applied

        case .removeFirst(let route), .removeLast(let route):
            let p = try target(name, route: route, at)
            let tabs = state[p].entries
            let found = name == .removeFirst ? tabs.firstIndex { $0.route == route } : tabs.lastIndex { $0.route == route }
            guard let index = found else { return .noop }
            return try removeTab(at: index, in: p, &ctx)

        default:
            preconditionFailure("not a tabs operation: \(name)")
        }
    }

    private mutating func select(_ id: EntryID, in p: CoordinatorPath, _ ctx: inout CommandContext) -> OpResult {
        guard state[p].selected != id else { return .noop }
        state.modify(p) { $0.selected = id }
        ctx.noteChanged(state.key(of: p))
        return .applied
    }

    /// Removing the selected tab selects the first remaining one; the last tab stays.
    private mutating func removeTab(at index: Int, in p: CoordinatorPath, _ ctx: inout CommandContext) throws(NavError) -> OpResult {
        let c = state[p]
        guard c.entries.count > 1 else {
            throw NavError(.invalidOp, "\(c.entries[index].id) is the last tab of \(c.type); a tab bar keeps at least one")
        }
        state.modify(p) {
            let removed = $0.entries.remove(at: index)
            if $0.selected == removed.id { $0.selected = $0.entries[0].id }
        }
        ctx.noteChanged(state.key(of: p))
        return .applied
    }
}
