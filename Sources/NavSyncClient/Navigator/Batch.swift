import NavSync

/// The operations of one command, in order: applied atomically, as one revision, or not
/// at all (docs/protocol.md, "Operations"). `Navigator.batch { … }` sends what the closure adds;
/// each single call of the navigator (`route(to:)`, `pop()`, …) is a batch of one.
///
/// The verbs are Trailblazer's and Stinsen's (`route(to:)`, `present(_:as:)`,
/// `popToFirst`, `setRoot`, `select`, `setTabs`). Routes are typed (`NavRoute`) or, for
/// the verbs that need only a name, the name. `at` names the coordinator (`"root"`, an
/// entry id, or a type name); without it the server picks the deepest coordinator on
/// the active path that declares the route.
public struct Batch: Sendable {
    public private(set) var operations: [NavOperation] = []

    public init() {}

    public mutating func add(_ operation: NavOperation) { operations.append(operation) }

    // MARK: Stacks

    /// Appends an entry with the route's declared presentation (push by default).
    public mutating func route(to route: some NavRoute, at: String? = nil, hints: JSONObject? = nil) throws(NavError) {
        add(NavOperation(.route(try item(route, hints: hints)), at: at))
    }

    /// The same as `route(to:)`.
    public mutating func push(_ route: some NavRoute, at: String? = nil, hints: JSONObject? = nil) throws(NavError) {
        try self.route(to: route, at: at, hints: hints)
    }

    /// Removes the top `count` entries of the deepest stack that can pop.
    public mutating func pop(_ count: Int = 1, at: String? = nil) {
        add(NavOperation(.pop(count: count, from: nil), at: at))
    }

    /// Removes that entry and everything above it; a no-op reported `superseded` when
    /// it is gone already (two devices pressing Back at once pop once).
    public mutating func pop(from entry: String) {
        add(NavOperation(.pop(count: 1, from: entry)))
    }

    /// Removes everything above that entry.
    public mutating func pop(to entry: String) { add(NavOperation(.popTo(entry: entry))) }

    public mutating func popToRoot(at: String? = nil) { add(NavOperation(.popToRoot, at: at)) }

    /// Removes everything above the first entry of that route (a no-op without one).
    public mutating func popToFirst(_ route: String, at: String? = nil) { add(NavOperation(.popToFirst(route: route), at: at)) }

    public mutating func popToFirst(_ route: some NavRoute, at: String? = nil) throws(NavError) {
        popToFirst(try item(route).route, at: at)
    }

    /// Removes everything above the last entry of that route (a no-op without one).
    public mutating func popToLast(_ route: String, at: String? = nil) { add(NavOperation(.popToLast(route: route), at: at)) }

    public mutating func popToLast(_ route: some NavRoute, at: String? = nil) throws(NavError) {
        popToLast(try item(route).route, at: at)
    }

    /// Replaces the whole stack; the first route becomes its root.
    /// Removes the first entry of that route and everything above it.
    public mutating func popBefore(_ route: String, at: String? = nil) { add(NavOperation(.popBefore(route: route), at: at)) }

    /// One layer's pushes set (0: on the root entry; N: on the Nth sheet or cover), the
    /// entries that still match and every layer above kept: what a stack binding's
    /// `path` writes.
    public mutating func setPath<R: NavRoute>(_ routes: [R], layer: Int = 0, at: String? = nil) throws(NavError) {
        var items: [NavOperation.OpenItem] = []
        for r in routes { items.append(try RouteCoding.item(r)) }
        add(NavOperation(.setPath(items, layer: layer), at: at))
    }

    public mutating func setStack<R: NavRoute>(_ routes: [R], at: String? = nil) throws(NavError) {
        var items: [NavOperation.OpenItem] = []
        for r in routes { items.append(try item(r)) }
        add(NavOperation(.setStack(items), at: at))
    }

    /// A stack: a new root entry, the stack cleared. A root coordinator: switch `current`.
    public mutating func setRoot(_ route: some NavRoute, at: String? = nil, hints: JSONObject? = nil) throws(NavError) {
        add(NavOperation(.setRoot(try item(route, hints: hints)), at: at))
    }

    /// The coordinator back to its flow's initial state.
    public mutating func restart(at: String? = nil) { add(NavOperation(.restart, at: at)) }

    // MARK: Modals

    public enum ModalStyle: String, Sendable { case sheet, cover }

    /// Appends an entry presented modally.
    public mutating func present(_ route: some NavRoute, as style: ModalStyle = .sheet, at: String? = nil,
                                 hints: JSONObject? = nil) throws(NavError) {
        add(NavOperation(.present(try item(route, hints: hints), style: style == .sheet ? .sheet : .cover), at: at))
    }

    /// Removes the topmost modal entry (with `all`: the lowest) and everything above it.
    public mutating func dismiss(all: Bool = false, at: String? = nil) { add(NavOperation(.dismiss(all: all), at: at)) }

    // MARK: Tabs

    /// Selects the first tab of that route.
    public mutating func select(_ route: String, at: String? = nil) { add(NavOperation(.select(.route(route)), at: at)) }

    public mutating func select(_ route: some NavRoute, at: String? = nil) throws(NavError) {
        select(try item(route).route, at: at)
    }

    public mutating func select(index: Int, at: String? = nil) { add(NavOperation(.select(.index(index)), at: at)) }

    public mutating func select(entry: String) { add(NavOperation(.select(.entry(entry)))) }

    /// Replaces the tabs; a tab of the same route is kept, with its state.
    public mutating func setTabs<R: NavRoute>(_ routes: [R], at: String? = nil) throws(NavError) {
        var items: [NavOperation.OpenItem] = []
        for r in routes { items.append(try item(r)) }
        add(NavOperation(.setTabs(items), at: at))
    }

    public mutating func appendTab(_ route: some NavRoute, at: String? = nil) throws(NavError) {
        add(NavOperation(.appendTab(try item(route)), at: at))
    }

    public mutating func insertTab(_ route: some NavRoute, index: Int, at: String? = nil) throws(NavError) {
        add(NavOperation(.insertTab(try item(route), index: index), at: at))
    }

    public mutating func removeTab(entry: String) { add(NavOperation(.removeTab(entry: entry))) }
    /// Removes the first (last) tab of that route; nothing if there is none.
    public mutating func removeFirst(_ route: String, at: String? = nil) { add(NavOperation(.removeFirst(route: route), at: at)) }
    public mutating func removeLast(_ route: String, at: String? = nil) { add(NavOperation(.removeLast(route: route), at: at)) }

    // MARK: The session

    /// Shows an alert; `busy` when one is shown already.
    public mutating func alert(_ title: String, message: String? = nil,
                               buttons: [AlertButton] = [AlertButton(id: "ok", label: "OK")]) {
        add(NavOperation(.alert(NavOperation.AlertSpec(title: title, message: message, buttons: buttons))))
    }

    /// Answers an alert; the first answer wins, later ones are `superseded`.
    public mutating func respond(alert: String, button: String) { add(NavOperation(.respond(alert: alert, button: button))) }

    /// Opens a deep link by the flow's `links` (`/product/42`, `shop://product/42`).
    public mutating func open(_ url: String) { add(NavOperation(.open(url: url))) }

    /// Merges `data` (RFC 7386) into an entry's shared data; without `entry`, the deepest
    /// screen's.
    public mutating func update(_ data: JSONObject, entry: String? = nil, at: String? = nil) {
        add(NavOperation(.update(entry: entry, data: data), at: at))
    }

    /// Merges `data` (RFC 7386) into the session's data, what the flow's guards read.
    public mutating func updateSession(_ data: JSONObject) { add(NavOperation(.updateSession(data: data))) }

    /// The whole session back to its flow's initial state (admin).
    public mutating func reset() { add(NavOperation(.reset)) }

    private func item(_ route: some NavRoute, hints: JSONObject? = nil) throws(NavError) -> NavOperation.OpenItem {
        var item = try RouteCoding.item(route)
        item.hints = hints
        return item
    }
}
