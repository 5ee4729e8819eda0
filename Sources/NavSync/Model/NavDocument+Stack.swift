/// Stack operations (DESIGN.md section 4): one list of entries tagged by presentation,
/// the FlowStacks/Stinsen model. A push after a sheet pushes inside that sheet.
extension NavDocument {
    mutating func applyStack(_ action: Operation.Action, _ at: AtTarget, _ entry: EntryTarget?,
                             _ ctx: inout CommandContext) throws(NavError) -> OpResult {
        let name = action.name
        switch action {
        case .route(let item):
            return try push(item, at: try targetCoordinator(name, routes: CollectionOfOne(item.route), at), &ctx) { $0 ?? .push }

        case .present(let item, let style):
            return try push(item, at: try targetCoordinator(name, routes: CollectionOfOne(item.route), at), &ctx) { declared in
                style ?? (declared?.isModal == true ? declared! : .sheet)
            }

        case .pop(let count, nil):
            guard let (p, c) = try routelessTargetCoordinator(name, at, prefer: { $0.entries.count > 1 }) else { throw noStack(name) }
            guard count < c.entries.count else {
                throw NavError(.invalidOp, "cannot pop \(count) from \(c.type): it holds \(c.entries.count) (the root entry stays)")
            }
            return truncate(p, to: c.entries.count - count, of: c.entries.count, &ctx)

        case .pop(_, .some), .popTo:
            guard case .live(let p, let index)? = entry else { return .superseded }
            let c = state[p]
            guard c.kind == .stack else { throw wrongKind(name, c) }
            if name == .pop {
                guard index > 0 else { throw NavError(.invalidOp, "\(c.entries[0].id) is the root entry of \(c.type); it cannot be popped") }
                return truncate(p, to: index, of: c.entries.count, &ctx)
            }
            return truncate(p, to: index + 1, of: c.entries.count, &ctx)

        case .popToRoot:
            guard let (p, c) = try routelessTargetCoordinator(name, at, prefer: { $0.entries.count > 1 }) else { throw noStack(name) }
            return truncate(p, to: 1, of: c.entries.count, &ctx)

        case .popToFirst(let route), .popToLast(let route):
            let p = try target(name, route: route, at)
            let entries = state[p].entries
            let found = name == .popToFirst ? entries.firstIndex { $0.route == route } : entries.lastIndex { $0.route == route }
            guard let index = found else { return .noop }
            return truncate(p, to: index + 1, of: entries.count, &ctx)

        case .popBefore(let route):
            let p = try target(name, route: route, at)
            let c = state[p]
            guard let index = c.entries.firstIndex(where: { $0.route == route }) else { return .noop }
            guard index > 0 else {
                throw NavError(.invalidOp, "the first '\(route)' of \(c.type) is its root entry; nothing can be popped before it")
            }
            return truncate(p, to: index, of: c.entries.count, &ctx)

        case .dismiss(let all):
            let hasModal = { (c: Coordinator) in c.entries.contains { $0.presentation?.isModal == true } }
            guard let (p, c) = try routelessTargetCoordinator(name, at, prefer: hasModal), hasModal(c) else { return .noop }
            let entries = c.entries
            let index = all ? entries.firstIndex { $0.presentation?.isModal == true }!
                            : entries.lastIndex { $0.presentation?.isModal == true }!
            return truncate(p, to: index, of: entries.count, &ctx)

        case .setRoot(let item):
            let p = try target(name, route: item.route, at)
            let owner = flow.spec(state[p].type)
            let route = owner.route(item.route)!
            let root = makeEntry(route, of: owner, params: try route.validate(params: item.params),
                                 presentation: owner.kind == .stack ? .root : nil, hints: item.hints)
            state.modify(p) { $0.entries = [root] }
            ctx.noteChanged(state.key(of: p))
            return .applied

        case .setStack(let items):
            let p = try target(name, routes: items.map(\.route), at)
            let owner = flow.spec(state[p].type)
            guard items.count <= limits.maxStackDepth else {
                throw NavError(.invalidOp, "a stack holds at most \(limits.maxStackDepth) entries; 'routes' has \(items.count)")
            }
            var entries: [Entry] = []
            entries.reserveCapacity(items.count)
            for (i, item) in items.enumerated() {
                let route = owner.route(item.route)!
                let params: JSONObject
                do throws(NavError) { params = try route.validate(params: item.params) } catch {
                    throw NavError(error.code, "routes[\(i)]: \(error.message)")
                }
                let presentation = i == 0 ? .root : item.presentation ?? route.presentation ?? .push
                entries.append(makeEntry(route, of: owner, params: params, presentation: presentation, hints: item.hints))
            }
            state.modify(p) { $0.entries = entries }
            ctx.noteChanged(state.key(of: p))
            return .applied

        default:
            preconditionFailure("not a stack operation: \(name)")
        }
    }

    /// `presentation` gives the entry's from the one its route declares.
    private mutating func push(_ item: Operation.OpenItem, at target: (path: CoordinatorPath, coordinator: Coordinator),
                               _ ctx: inout CommandContext, presentation: (Presentation?) -> Presentation) throws(NavError) -> OpResult {
        let (p, owner) = target
        let spec = flow.spec(owner.type)
        let route = spec.route(item.route)!
        let params = try route.validate(params: item.params)
        guard owner.entries.count < limits.maxStackDepth else {
            throw NavError(.invalidOp, "\(owner.type) already holds \(limits.maxStackDepth) entries, the most a stack may")
        }
        let entry = makeEntry(route, of: spec, params: params, presentation: presentation(route.presentation), hints: item.hints)
        ctx.noteChanged(state.modifyKeyed(p) { $0.entries.append(entry) })
        ctx.edit = .pushed(p)
        return .applied
    }

    /// Keeps the first `count` entries of the stack at `p`, which holds `current`.
    private mutating func truncate(_ p: CoordinatorPath, to count: Int, of current: Int, _ ctx: inout CommandContext) -> OpResult {
        guard count < current else { return .noop }
        var removed: [Entry] = []
        ctx.noteChanged(state.modifyKeyed(p) {
            removed = Array($0.entries[count...])
            $0.entries.removeSubrange(count...)
        })
        ctx.edit = .cut(p, to: count, removed: removed)
        return .applied
    }

    private func noStack(_ name: OpName) -> NavError {
        NavError(.invalidOp, "no stack coordinator is on the active path for '\(name.rawValue)'")
    }
}
