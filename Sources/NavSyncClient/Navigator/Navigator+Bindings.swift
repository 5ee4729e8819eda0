import NavSync

/// Two-way bindings: what SwiftUI's `NavigationStack(path:)`, `.sheet(item:)`,
/// `.fullScreenCover(item:)`, `TabView(selection:)` and `.alert` read and write.
///
/// There is one source of truth, the shown state (the confirmed mirror with this
/// navigator's pending commands replayed over it); each binding is computed from it and
/// never kept as a second copy. A write turns into one intent (`BindingIntent`),
/// computed against the shown state, and one command, shown at once: a shorter path
/// (the user swiped back) is a `pop` from the first removed entry's id (a `"~C.N"`
/// reference when a pending command made it), so two devices swiping back at once pop
/// once; a longer one pushes; any other change is a `setStack`. A second gesture before
/// the server answers the first is computed against the first. A refusal takes the
/// command's effect out of the shown state, so the binding snaps back, and the error is
/// in `lastError`; so is a write to a coordinator that is not on the tree.
@available(iOS 17, macOS 14, tvOS 17, watchOS 10, visionOS 1, *)
extension Navigator {
    /// The stack coordinator at `address` (a type name, an entry id or `"root"`), its
    /// entries read as `Route`.
    public func stack<Route: NavRoute>(_ address: String, _ routes: Route.Type) -> StackBinding<Route> {
        StackBinding(navigator: self, address: address)
    }

    /// The tab bar at `address`, its tabs read as `Route`.
    public func tabs<Route: NavRoute>(_ address: String, _ routes: Route.Type) -> TabsBinding<Route> {
        TabsBinding(navigator: self, address: address)
    }

    /// The alert shown; setting nil answers it with its cancel button (else its last).
    public var presentedAlert: NavAlert? {
        get { tree?.alert }
        set {
            guard newValue == nil, let alert = tree?.alert, let button = alert.dismissButton else { return }
            write([NavOperation(.respond(alert: alert.id, button: button.id))])
        }
    }

    /// A binding's write: shown at once, sent at once; a refusal goes to `lastError`.
    func write(_ operations: [NavOperation]) {
        guard !operations.isEmpty else { return }
        gesture(operations, isWrite: true) { [weak self] result in
            if case .failure(let error) = result { self?.lastError = error }
        }
    }

    /// The coordinator a binding's write goes to, or nil with `lastError` saying why
    /// (not on the tree, or a type name that several coordinators have).
    func writeTarget(_ address: String, _ kind: CoordinatorKind) -> NavCoordinator? {
        guard let tree else {
            lastError = NavError(.notFound, "nothing to write to yet: the navigator has no state (not joined, nothing stored)")
            return nil
        }
        switch tree.find(address) {
        case .success(let c) where c.kind == kind: return c
        case .success(let c):
            lastError = NavError(.invalidOp, "'\(address)' is a \(c.kind.rawValue) coordinator, not a \(kind.rawValue); the write was dropped")
        case .failure(let e):
            lastError = NavError(e.code, e.message + "; the write was dropped")
        }
        return nil
    }
}

/// A stack coordinator, bound. Layer 0 is its root entry and what is pushed on it
/// (`path`); a sheet or cover above it (`sheet`, `cover`) starts layer 1, with its own
/// pushes (`path(layer: 1)`), and so on (`NavCoordinator.layers`).
@available(iOS 17, macOS 14, tvOS 17, watchOS 10, visionOS 1, *)
@MainActor
public struct StackBinding<Route: NavRoute> {
    public let navigator: Navigator
    /// A type name, an entry id or `"root"`.
    public let address: String

    /// The coordinator in the mirror; nil while it is not on the tree.
    public var coordinator: NavCoordinator? { navigator.tree?.coordinator(address) }

    /// Every entry, bottom up, typed (nil where `Route` has no such case).
    public var routes: [Route?] { coordinator?.entries.map { $0.route(as: Route.self) } ?? [] }

    /// The routes pushed on the root entry: `NavigationStack(path:)`'s path.
    public var path: [Route] {
        get { path(layer: 0) }
        nonmutating set { setPath(newValue, layer: 0) }
    }

    /// The sheet shown above layer 0, if any.
    public var sheet: Route? {
        get { modal(above: 0, .sheet) }
        nonmutating set { setModal(newValue, .sheet, above: 0) }
    }

    /// The full-screen cover shown above layer 0, if any.
    public var cover: Route? {
        get { modal(above: 0, .cover) }
        nonmutating set { setModal(newValue, .cover, above: 0) }
    }

    /// The routes pushed in a layer.
    public func path(layer: Int) -> [Route] {
        guard let layers = coordinator?.layers, layer < layers.count else { return [] }
        return layers[layer].pushes.compactMap { $0.route(as: Route.self) }
    }

    /// Writes a layer's path: one command (see `BindingIntent.path`).
    public func setPath(_ routes: [Route], layer: Int) {
        guard let c = navigator.writeTarget(address, .stack) else { return }
        navigator.write(BindingIntent.path(c, at: address, layer: layer, to: routes))
    }

    /// The modal of that style shown above a layer, if any.
    public func modal(above layer: Int, _ style: Presentation) -> Route? {
        guard let layers = coordinator?.layers, layer + 1 < layers.count, layers[layer + 1].presentation == style else { return nil }
        return layers[layer + 1].root.route(as: Route.self)
    }

    /// Shows a modal above a layer, replaces the one shown, or (nil) dismisses it.
    public func setModal(_ route: Route?, _ style: Presentation, above layer: Int) {
        guard let c = navigator.writeTarget(address, .stack) else { return }
        navigator.write(BindingIntent.modal(c, at: address, above: layer, style: style, to: route))
    }
}

/// A tab bar, bound: `TabView(selection:)`'s selection.
@available(iOS 17, macOS 14, tvOS 17, watchOS 10, visionOS 1, *)
@MainActor
public struct TabsBinding<Route: NavRoute> {
    public let navigator: Navigator
    public let address: String

    public var coordinator: NavCoordinator? { navigator.tree?.coordinator(address) }

    /// The tabs, in order, typed (nil where `Route` has no such case).
    public var tabs: [Route?] { coordinator?.entries.map { $0.route(as: Route.self) } ?? [] }

    /// The selected tab's route; setting it selects the first tab of that route.
    public var selection: Route? {
        get { coordinator?.visible?.route(as: Route.self) }
        nonmutating set {
            guard let newValue, let c = navigator.writeTarget(address, .tabs) else { return }
            navigator.write(BindingIntent.select(c, at: address, to: newValue))
        }
    }
}

/// What a write through a binding means, as operations: pure functions of the mirrored
/// coordinator and the new value, so the rules are tested as values.
public enum BindingIntent {
    /// A layer's pushes set to `routes`. Nothing changed: nothing. On the top layer, a
    /// prefix of what is there: `pop` from the first entry removed (by id, so a second
    /// device doing the same pops nothing more); what is there plus more: a `route` per
    /// new one. Anything else, and any change to a layer under a sheet or cover:
    /// `setPath` of that layer, which keeps the entries that still match and every
    /// layer above (SwiftUI's stack under a sheet changes; the sheet stays).
    public static func path<Route: NavRoute>(_ stack: NavCoordinator, at: String, layer: Int, to routes: [Route]) -> [NavOperation] {
        let layers = stack.layers
        guard layer < layers.count else { return [] }
        let pushes = layers[layer].pushes
        let old = pushes.map { $0.route(as: Route.self) }
        let items = routes.compactMap { try? RouteCoding.item($0) }
        guard items.count == routes.count else { return [] }
        if old.count == routes.count, zip(old, routes).allSatisfy({ $0 == $1 }) { return [] }
        let common = zip(old, routes).prefix { $0 == $1 }.count
        let onTop = layer == layers.count - 1
        if onTop, common == routes.count {
            return [NavOperation(.pop(count: 1, from: pushes[routes.count].id))]
        }
        if onTop, common == old.count {
            return items[common...].map { NavOperation(.route($0), at: at) }
        }
        return [NavOperation(.setPath(items, layer: layer), at: at)]
    }

    /// The modal above a layer set to `route` (nil: dismissed). Dismissing pops from the
    /// modal entry, by id; showing one where another is shown pops that one and presents
    /// the new one, in one command.
    public static func modal<Route: NavRoute>(_ stack: NavCoordinator, at: String, above layer: Int, style: Presentation,
                                              to route: Route?) -> [NavOperation] {
        let layers = stack.layers
        guard layer < layers.count else { return [] }
        let current = layer + 1 < layers.count ? layers[layer + 1] : nil
        if let route, let current, current.presentation == style, current.root.route(as: Route.self) == route { return [] }
        var ops: [NavOperation] = []
        if let current { ops.append(NavOperation(.pop(count: 1, from: current.root.id))) }
        if let route, let item = try? RouteCoding.item(route) {
            ops.append(NavOperation(.present(item, style: style), at: at))
        }
        return ops
    }

    /// A tab bar's selection set to `route`: `select` of the first tab whose route is
    /// it (by entry id), else of the route by name.
    public static func select<Route: NavRoute>(_ tabs: NavCoordinator, at: String, to route: Route) -> [NavOperation] {
        if tabs.visible?.route(as: Route.self) == route { return [] }
        if let tab = tabs.entries.first(where: { $0.route(as: Route.self) == route }) {
            return [NavOperation(.select(.entry(tab.id)))]
        }
        guard let item = try? RouteCoding.item(route) else { return [] }
        return [NavOperation(.select(.route(item.route)), at: at)]
    }
}
