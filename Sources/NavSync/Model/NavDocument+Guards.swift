/// Guards on the active path (DESIGN.md section 18).
extension NavDocument {
    /// A guard whose condition is false for an entry on the active path.
    public struct GuardFailure: Sendable, Equatable {
        public var `guard`: Guard
        public var entry: EntryID
        public var route: String
    }

    /// The first entry on the active path, root first, with a guard that fails: its
    /// coordinator type's guards, then its route's, each in list order.
    public func firstGuardFailure() -> GuardFailure? {
        let data = state.data
        var c = state.root
        while let i = c.visibleIndex {
            let e = c.entries[i]
            let spec = flow.spec(c.type)
            for g in spec.guards where !g.condition.holds(in: data) { return GuardFailure(guard: g, entry: e.id, route: e.route) }
            if let route = spec.route(e.route) {
                for g in route.guards where !g.condition.holds(in: data) { return GuardFailure(guard: g, entry: e.id, route: e.route) }
            }
            guard let child = e.coordinator else { break }
            c = child
        }
        return nil
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
