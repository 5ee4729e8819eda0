/// Operations on any coordinator or the whole session: `restart`, `update`, `open`,
/// `alert`, `respond`, `reset`.
extension NavDocument {
    mutating func applyOther(_ action: NavOperation.Action, _ at: AtTarget, _ entry: EntryTarget?,
                             _ ctx: inout CommandContext) throws(NavError) -> OpResult {
        switch action {
        case .restart:
            guard let p = try routelessTarget(.restart, at) else { preconditionFailure("the root is always on the path") }
            let fresh = makeCoordinator(state[p].type)
            state.modify(p) { $0 = fresh }
            ctx.noteChanged(state.key(of: p))
            return .applied

        case .update(_, let patch):
            let p: CoordinatorPath
            let index: Int
            if case .live(let holder, let i)? = entry {
                (p, index) = (holder, i)
            } else if case .coordinator(let c) = at {
                guard let visible = state[c].visibleIndex else { return .noop }
                (p, index) = (c, visible)
            } else {
                (p, index) = state.activeEntry!
            }
            let current = state[p].entries[index].data ?? [:]
            guard case .object(let merged) = JSON.object(current).mergePatched(with: .object(patch)) else { return .noop }
            guard merged != current else { return .noop }
            let size = JSON.object(merged).encoded().count
            guard size <= limits.maxDataBytes else {
                throw NavError(.tooLarge, "data of \(state[p].entries[index].id) would be \(size) bytes; at most \(limits.maxDataBytes) are allowed")
            }
            state.modify(p) { $0.entries[index].data = merged }
            ctx.noteChanged(state.key(of: p))
            return .applied

        case .updateSession(let patch, _):
            let current = state.data ?? [:]
            guard case .object(let merged) = JSON.object(current).mergePatched(with: .object(patch)) else { return .noop }
            // The first change makes it (possibly `{}`); after that it stays.
            guard merged != current else { return .noop }
            let size = JSON.object(merged).encoded().count
            guard size <= limits.maxDataBytes else {
                throw NavError(.tooLarge, "the session's data would be \(size) bytes; at most \(limits.maxDataBytes) are allowed")
            }
            state.data = merged
            ctx.noteChanged(.data)
            return .applied

        case .open(let url):
            let (link, values) = try flow.match(url: url)
            if let plan = link.plan, let result = plan.open(values, in: &self, &ctx) { return result }
            return try applyLink(link.ops(filling: values), url: url, &ctx)

        case .alert(let spec):
            if let shown = state.alert {
                throw NavError(.busy, "alert \(shown.id) (\"\(shown.title)\") is shown; answer it first")
            }
            state.alert = AlertState(id: allocate(), title: spec.title, message: spec.message, buttons: spec.buttons)
            ctx.noteChanged(.alert)
            return .applied

        case .respond(_, let button):
            guard case .live? = entry, let alert = state.alert else { return .superseded }
            guard alert.buttons.contains(where: { $0.id == button }) else {
                throw NavError(.badParams, "alert \(alert.id) has no button '\(button)' (it has \(alert.buttons.map(\.id).joined(separator: ", ")))")
            }
            state.alert = nil
            ctx.noteChanged(.alert)
            return .applied

        case .reset:
            state = NavState(root: makeCoordinator(flow.root))
            ctx.didReset = true
            ctx.noteChanged(.root)
            ctx.noteChanged(.alert)
            ctx.noteChanged(.data)
            return .applied

        default:
            preconditionFailure("not a session operation: \(action.name)")
        }
    }

    /// A link's operations applied one by one (what `open` does where the link has no
    /// plan, and what a plan is worked out from): applied if any op applied, else
    /// superseded if any was. `open` was checked as one op without `at`; its link ops
    /// are not checked for conflicts again.
    mutating func applyLink(_ ops: [NavOperation], url: String, _ ctx: inout CommandContext) throws(NavError) -> OpResult {
        let outer = ctx.conflicts
        ctx.conflicts = nil
        defer { ctx.conflicts = outer }
        var applied = false, superseded = false
        for (i, op) in ops.enumerated() {
            do throws(NavError) {
                switch try apply(op, &ctx) {
                case .applied, .redirected: applied = true
                case .superseded: superseded = true
                case .noop: break
                }
            } catch {
                throw NavError(error.code, "'\(url)' link op \(i) (\(op.action.name.rawValue)): \(error.message)", rev: error.rev)
            }
        }
        ctx.edit = nil
        return applied ? .applied : superseded ? .superseded : .noop
    }
}
