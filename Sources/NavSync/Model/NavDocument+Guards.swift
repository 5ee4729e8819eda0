/// Guards on the active path (docs/flows.md, "Guards and redirects").
extension NavDocument {
    /// A guard whose condition is false for an entry on the active path.
    public struct GuardFailure: Sendable, Equatable {
        public var `guard`: Guard
        public var entry: EntryID
        public var route: String
        /// The guarded entry's params (what a redirect's `{param.NAME}` and `{url}` read).
        public var params: JSONObject = [:]
    }

    /// The first entry on the active path, root first, with a guard that fails: its
    /// coordinator type's guards, then its route's, each in list order.
    public func firstGuardFailure() -> GuardFailure? { firstGuardFailure(startingAt: state.root) }

    /// The same, after a stack edit at `path`: only the coordinator there and below can
    /// have changed on the active path (nil when it is not on the active path at all).
    func firstGuardFailure(afterEditAt path: CoordinatorPath) -> GuardFailure? {
        var c = state.root
        for i in path {
            guard c.visibleIndex == i, let child = c.entries[i].coordinator else { return nil }
            c = child
        }
        return firstGuardFailure(startingAt: c)
    }

    private func firstGuardFailure(startingAt top: Coordinator) -> GuardFailure? {
        let data = state.data
        var c = top
        while let i = c.visibleIndex {
            let e = c.entries[i]
            let spec = flow.spec(c.type)
            for g in spec.guards where !g.condition.holds(in: data) { return GuardFailure(guard: g, entry: e.id, route: e.route, params: e.params) }
            if let route = spec.route(e.route) {
                for g in route.guards where !g.condition.holds(in: data) { return GuardFailure(guard: g, entry: e.id, route: e.route, params: e.params) }
            }
            guard let child = e.coordinator else { break }
            c = child
        }
        return nil
    }

    /// Puts back a lone stack edit (a push or a cut) and the ids it allocated: the
    /// document as it was before it, exactly.
    mutating func undo(_ edit: StackEdit, cut: [Entry]?, firstID: Int) {
        state.modify(edit.path) { c in
            if edit.isPush { c.entries.removeLast() } else { c.entries.append(contentsOf: cut!) }
        }
        nextID = firstID
    }

    /// Whether the entry is on the active path.
    func isOnActivePath(_ id: EntryID) -> Bool {
        var c = state.root
        while let i = c.visibleIndex {
            let e = c.entries[i]
            if e.id == id { return true }
            guard let child = e.coordinator else { return false }
            c = child
        }
        return false
    }
}
