/// A session's document: the state, the flow it follows and the id counter.
///
/// `apply` is the reducer: one operation in, a result out, the state changed in place.
/// Atomic commands come from the caller working on a copy (see `Sequencer`).
public struct NavDocument: Sendable {
    public let flow: Flow
    public let limits: ModelLimits
    public package(set) var state: NavState
    /// The number the next allocated id gets: `e\(nextID)`. Never rewinds.
    public package(set) var nextID: Int

    /// The flow's initial state, ids from `e1` (revision 0).
    public init(flow: Flow, limits: ModelLimits = ModelLimits()) {
        self.flow = flow
        self.limits = limits
        self.nextID = 1
        self.state = NavState(root: Coordinator(type: flow.root, kind: .root, entries: []))
        self.state = NavState(root: makeCoordinator(flow.root))
    }

    /// Restores a document at a known id counter (from a snapshot).
    public init(flow: Flow, limits: ModelLimits = ModelLimits(), state: NavState, nextID: Int) {
        self.flow = flow
        self.limits = limits
        self.state = state
        self.nextID = nextID
    }

    mutating func allocate() -> EntryID {
        defer { nextID += 1 }
        return EntryID(nextID)
    }

    /// Whether the id was ever handed out in this session (gone ids are `superseded`,
    /// never-allocated ones `not_found`).
    public func wasAllocated(_ id: EntryID) -> Bool { id.number < nextID }

    /// A new entry for `route` of coordinator type `owner`, with its child coordinator
    /// in its initial state. Pre-order ids: the entry first, then its child's entries.
    mutating func makeEntry(_ route: String, of owner: String, params: JSONObject,
                            presentation: Presentation?, hints: JSONObject?) -> Entry {
        let spec = flow.spec(owner)
        return makeEntry(spec.route(route)!, of: spec, params: params, presentation: presentation, hints: hints)
    }

    /// The same, with the specs looked up already.
    mutating func makeEntry(_ route: RouteSpec, of owner: CoordinatorSpec, params: JSONObject,
                            presentation: Presentation?, hints: JSONObject?) -> Entry {
        let id = allocate()    // before the child's: pre-order
        return Entry(id: id, route: route.name, params: params, presentation: presentation,
                     tab: owner.kind.tab(of: route), hints: hints,
                     coordinator: route.coordinator.map { makeCoordinator($0) })
    }

    /// A coordinator of `type` in its initial state.
    /// (A root or a stack has one initial item, a tab bar one per tab.)
    mutating func makeCoordinator(_ type: String) -> Coordinator {
        let spec = flow.spec(type)
        var c = Coordinator(type: type, kind: spec.kind, entries: [])
        c.entries.reserveCapacity(spec.initial.count)
        for i in spec.initial.indices {
            if let leaf = spec.initialLeaves[i] {
                c.entries.append(Entry(id: allocate(), sharingFieldsOf: leaf))
            } else {
                c.entries.append(makeEntry(spec.initialRoutes[i], of: spec, params: spec.initial[i].params,
                                           presentation: spec.kind.firstPresentation, hints: nil))
            }
        }
        if spec.kind == .tabs { c.selected = c.entries[0].id }
        return c
    }
}
