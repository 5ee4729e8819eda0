/// Stack operations (docs/protocol.md, "Operations"): one list of entries tagged by presentation,
/// the FlowStacks/Stinsen model. A push after a sheet pushes inside that sheet.
extension NavDocument {
    mutating func applyStack(_ action: NavOperation.Action, _ at: AtTarget, _ entry: EntryTarget?,
                             _ ctx: inout CommandContext) throws(NavError) -> OpResult {
        let name = action.name
        switch action {
        // Each case reads what it needs of the stack and lets go of it before changing
        // it: a copy of the stack held during the change makes the change copy the list.
        case .route(let item):
            let stack = try targetCoordinator(name, routes: CollectionOfOne(item.route), at, read: StackTop.init)
            return try push(item, at: stack, &ctx) { $0 ?? .push }

        case .present(let item, let style):
            let stack = try targetCoordinator(name, routes: CollectionOfOne(item.route), at, read: StackTop.init)
            return try push(item, at: stack, &ctx) { declared in
                style ?? (declared?.isModal == true ? declared! : .sheet)
            }

        case .pop(let count, nil):
            guard let (p, stack) = try routelessTargetCoordinator(name, at, prefer: { $0.entries.count > 1 }, read: StackAt.init) else {
                throw noStack(name)
            }
            guard count < stack.count else {
                throw NavError(.invalidOp, "cannot pop \(count) from \(stack.type): it holds \(stack.count) (the root entry stays)")
            }
            return truncate(p, to: stack.count - count, of: stack.count, &ctx)

        case .pop(_, .some), .popTo:
            guard case .live(let p, let index)? = entry else { return .superseded }
            let (keep, current) = try reading(p) { c throws(NavError) in
                guard c.kind == .stack else { throw wrongKind(name, c) }
                guard name == .pop else { return (index + 1, c.entries.count) }
                guard index > 0 else { throw NavError(.invalidOp, "\(c.entries[0].id) is the root entry of \(c.type); it cannot be popped") }
                return (index, c.entries.count)
            }
            return truncate(p, to: keep, of: current, &ctx)

        case .popToRoot:
            guard let (p, stack) = try routelessTargetCoordinator(name, at, prefer: { $0.entries.count > 1 }, read: StackAt.init) else {
                throw noStack(name)
            }
            return truncate(p, to: 1, of: stack.count, &ctx)

        case .popToFirst(let route), .popToLast(let route):
            let p = try target(name, route: route, at)
            let (found, current) = try reading(p) { c in
                (name == .popToFirst ? c.entries.firstIndex { $0.route == route } : c.entries.lastIndex { $0.route == route }, c.entries.count)
            }
            guard let index = found else { return .noop }
            return truncate(p, to: index + 1, of: current, &ctx)

        case .popBefore(let route):
            let p = try target(name, route: route, at)
            let (found, current) = try reading(p) { c throws(NavError) -> (Int?, Int) in
                guard let index = c.entries.firstIndex(where: { $0.route == route }) else { return (nil, 0) }
                guard index > 0 else {
                    throw NavError(.invalidOp, "the first '\(route)' of \(c.type) is its root entry; nothing can be popped before it")
                }
                return (index, c.entries.count)
            }
            guard let index = found else { return .noop }
            return truncate(p, to: index, of: current, &ctx)

        case .dismiss(let all):
            let hasModal = { (c: Coordinator) in c.entries.contains { $0.presentation?.isModal == true } }
            // The deepest stack with a modal entry, else the deepest stack, which has none: nothing to do.
            let found = try routelessTargetCoordinator(name, at, prefer: hasModal) { c -> (index: Int, count: Int)? in
                guard hasModal(c) else { return nil }
                let index = all ? c.entries.firstIndex { $0.presentation?.isModal == true }!
                                : c.entries.lastIndex { $0.presentation?.isModal == true }!
                return (index, c.entries.count)
            }
            guard let p = found?.path, let modal = found?.value else { return .noop }
            return truncate(p, to: modal.index, of: modal.count, &ctx)

        case .setRoot(let item):
            let (p, owner) = try targetOwner(name, routes: CollectionOfOne(item.route), at)
            let route = owner.route(item.route)!
            let root = makeEntry(route, of: owner, params: try route.validate(params: item.params),
                                 presentation: owner.kind.firstPresentation, hints: item.hints)
            state.modify(p) { $0.entries = [root] }
            ctx.noteChanged(state.key(of: p))
            return .applied

        case .setStack(let items):
            let (p, owner) = try targetOwner(name, routes: items.lazy.map(\.route), at)
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

        case .setPath(let items, let layer):
            let (p, owner) = try targetOwner(name, routes: items.lazy.map(\.route), at)
            var wanted: [(route: String, params: JSONObject)] = []
            for (i, item) in items.enumerated() {
                do throws(NavError) { wanted.append((item.route, try owner.route(item.route)!.validate(params: item.params))) } catch {
                    throw NavError(error.code, "routes[\(i)]: \(error.message)")
                }
            }
            let span = try reading(p) { c throws(NavError) in try Self.layer(layer, of: c, matching: wanted) }
            guard span.kept < span.end - span.first || span.kept < wanted.count else { return .noop }
            let count = span.count - (span.end - span.first - span.kept) + (wanted.count - span.kept)
            guard count <= limits.maxStackDepth else {
                throw NavError(.invalidOp, "a stack holds at most \(limits.maxStackDepth) entries; this path makes \(count)")
            }
            let made = wanted.indices.dropFirst(span.kept).map { i in
                makeEntry(owner.route(wanted[i].route)!, of: owner, params: wanted[i].params, presentation: .push, hints: items[i].hints)
            }
            state.modify(p) { $0.entries.replaceSubrange((span.first + span.kept)..<span.end, with: made) }
            ctx.noteChanged(state.key(of: p))
            return .applied

        default:
            preconditionFailure("not a stack operation: \(name)")
        }
    }

    /// Where one layer's pushes are in a stack (`first..<end`), how many of them, from
    /// the start, already are the wanted routes with the same params (`kept`), and the
    /// stack's length. A layer starts at the root entry (layer 0) and at each modal entry.
    static func layer(_ layer: Int, of c: Coordinator, matching wanted: [(route: String, params: JSONObject)]) throws(NavError)
        -> (first: Int, end: Int, kept: Int, count: Int) {
        let starts = [0] + c.entries.indices.dropFirst().filter { c.entries[$0].presentation?.isModal == true }
        guard layer < starts.count else {
            throw NavError(.invalidOp, "\(c.type) has \(starts.count) layer\(starts.count == 1 ? "" : "s") (its root and one per sheet or cover); there is no layer \(layer)")
        }
        let first = starts[layer] + 1
        let end = layer + 1 < starts.count ? starts[layer + 1] : c.entries.count
        let kept = zip(c.entries[first..<end], wanted).prefix { $0.route == $1.route && $0.params == $1.params }.count
        return (first, end, kept, c.entries.count)
    }

    /// The coordinator `setRoot` / `setStack` replace the entries of, and its type's spec
    /// (found on the way down, not looked up again; no array of the routes made).
    private func targetOwner(_ name: OpName, routes: some Collection<String>, _ at: AtTarget) throws(NavError) -> (CoordinatorPath, CoordinatorSpec) {
        let (path, spec) = try targetCoordinator(name, routes: routes, at) { _, spec in spec }
        return (path, spec)
    }

    /// What a stack operation needs of its stack: not the stack itself, which must not
    /// be held while it is changed.
    private struct StackAt {
        var type: String
        var count: Int

        init(_ c: Coordinator) {
            type = c.type
            count = c.entries.count
        }
    }

    /// What a push needs of its stack: its length and its type's spec (found while
    /// targeting, not looked up again).
    private struct StackTop {
        var count: Int
        var spec: CoordinatorSpec

        init(_ c: Coordinator, _ spec: CoordinatorSpec) {
            count = c.entries.count
            self.spec = spec
        }
    }

    /// `body` with the coordinator at `p`, which is let go of when it returns.
    private func reading<R>(_ p: CoordinatorPath, _ body: (Coordinator) throws(NavError) -> R) throws(NavError) -> R {
        try body(state[p])
    }

    /// `presentation` gives the entry's from the one its route declares.
    private mutating func push(_ item: NavOperation.OpenItem, at target: (path: CoordinatorPath, value: StackTop), _ ctx: inout CommandContext,
                               presentation: (Presentation?) -> Presentation) throws(NavError) -> OpResult {
        let (path, stack) = target
        let route = stack.spec.route(item.route)!
        let params = try route.validate(params: item.params)
        guard stack.count < limits.maxStackDepth else {
            throw NavError(.invalidOp, "\(stack.spec.name) already holds \(limits.maxStackDepth) entries, the most a stack may")
        }
        let entry = makeEntry(route, of: stack.spec, params: params, presentation: presentation(route.presentation), hints: item.hints)
        ctx.noteChanged(state.modifyKeyed(path) { $0.entries.append(entry) })
        ctx.edit = .pushed(path, to: stack.count + 1)
        return .applied
    }

    /// Keeps the first `count` entries of the stack at `p`, which holds `current`.
    private mutating func truncate(_ p: CoordinatorPath, to count: Int, of current: Int, _ ctx: inout CommandContext) -> OpResult {
        guard count < current else { return .noop }
        var removed = EntryIDList()
        var cut: [Entry]?
        let keep = flow.isGuarded
        ctx.noteChanged(state.modifyKeyed(p) { c in
            for i in (count..<c.entries.count).reversed() { c.entries[i].forEachID { removed.append($0) } }
            if keep { cut = Array(c.entries[count...]) }
            c.entries.removeLast(c.entries.count - count)
        })
        ctx.edit = .cut(p, to: count, from: current, removed: removed)
        ctx.cutEntries = cut
        return .applied
    }

    private func noStack(_ name: OpName) -> NavError {
        NavError(.invalidOp, "no stack coordinator is on the active path for '\(name.rawValue)'")
    }
}
