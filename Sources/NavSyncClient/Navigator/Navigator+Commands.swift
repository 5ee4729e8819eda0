import NavSync

/// The coordinator API (Trailblazer's and Stinsen's verbs), each call one command,
/// awaited: the `Ack` once the change is in the mirror, or the server's `NavError`.
/// `at` names the coordinator (`"root"`, an entry id, a type name); without it the
/// server picks the deepest one on the active path that declares the route. See
/// `Batch` for what each verb does.
@available(iOS 17, macOS 14, tvOS 17, watchOS 10, visionOS 1, *)
extension Navigator {
    private func one(_ build: (inout Batch) throws(NavError) -> Void) async throws(NavError) -> Ack {
        var b = Batch()
        try build(&b)
        return try await send(b.operations)
    }

    // MARK: Stacks

    @discardableResult
    public func route(to route: some NavRoute, at: String? = nil, hints: JSONObject? = nil) async throws(NavError) -> Ack {
        try await one { b throws(NavError) in try b.route(to: route, at: at, hints: hints) }
    }

    @discardableResult
    public func push(_ route: some NavRoute, at: String? = nil, hints: JSONObject? = nil) async throws(NavError) -> Ack {
        try await one { b throws(NavError) in try b.push(route, at: at, hints: hints) }
    }

    @discardableResult
    public func pop(_ count: Int = 1, at: String? = nil) async throws(NavError) -> Ack {
        try await one { $0.pop(count, at: at) }
    }

    /// Pops that entry and everything above it (Back on the screen that shows it): when
    /// two devices do it at once, it pops once.
    @discardableResult
    public func pop(from entry: String) async throws(NavError) -> Ack { try await one { $0.pop(from: entry) } }

    /// Pops everything above that entry.
    @discardableResult
    public func pop(to entry: String) async throws(NavError) -> Ack { try await one { $0.pop(to: entry) } }

    @discardableResult
    public func popToRoot(at: String? = nil) async throws(NavError) -> Ack { try await one { $0.popToRoot(at: at) } }

    @discardableResult
    public func popToFirst(_ route: String, at: String? = nil) async throws(NavError) -> Ack {
        try await one { $0.popToFirst(route, at: at) }
    }

    @discardableResult
    public func popToLast(_ route: String, at: String? = nil) async throws(NavError) -> Ack {
        try await one { $0.popToLast(route, at: at) }
    }

    @discardableResult
    public func popBefore(_ route: String, at: String? = nil) async throws(NavError) -> Ack {
        try await one { $0.popBefore(route, at: at) }
    }

    /// One layer's pushes set, every layer above kept (`Batch.setPath`).
    @discardableResult
    public func setPath<R: NavRoute>(_ routes: [R], layer: Int = 0, at: String? = nil) async throws(NavError) -> Ack {
        try await one { b throws(NavError) in try b.setPath(routes, layer: layer, at: at) }
    }

    /// A coordinator (the deepest, or `at`) back in its flow's initial state.
    @discardableResult
    public func restart(at: String? = nil) async throws(NavError) -> Ack { try await one { $0.restart(at: at) } }

    @discardableResult
    public func setStack<R: NavRoute>(_ routes: [R], at: String? = nil) async throws(NavError) -> Ack {
        try await one { b throws(NavError) in try b.setStack(routes, at: at) }
    }

    @discardableResult
    public func setRoot(_ route: some NavRoute, at: String? = nil, hints: JSONObject? = nil) async throws(NavError) -> Ack {
        try await one { b throws(NavError) in try b.setRoot(route, at: at, hints: hints) }
    }

    // MARK: Modals

    @discardableResult
    public func present(_ route: some NavRoute, as style: Batch.ModalStyle = .sheet, at: String? = nil,
                        hints: JSONObject? = nil) async throws(NavError) -> Ack {
        try await one { b throws(NavError) in try b.present(route, as: style, at: at, hints: hints) }
    }

    @discardableResult
    public func dismiss(all: Bool = false, at: String? = nil) async throws(NavError) -> Ack {
        try await one { $0.dismiss(all: all, at: at) }
    }

    // MARK: Tabs

    @discardableResult
    public func select(_ route: String, at: String? = nil) async throws(NavError) -> Ack { try await one { $0.select(route, at: at) } }

    @discardableResult
    public func select(index: Int, at: String? = nil) async throws(NavError) -> Ack { try await one { $0.select(index: index, at: at) } }

    @discardableResult
    public func setTabs<R: NavRoute>(_ routes: [R], at: String? = nil) async throws(NavError) -> Ack {
        try await one { b throws(NavError) in try b.setTabs(routes, at: at) }
    }

    @discardableResult
    public func appendTab(_ route: some NavRoute, at: String? = nil) async throws(NavError) -> Ack {
        try await one { b throws(NavError) in try b.appendTab(route, at: at) }
    }

    @discardableResult
    public func insertTab(_ route: some NavRoute, index: Int, at: String? = nil) async throws(NavError) -> Ack {
        try await one { b throws(NavError) in try b.insertTab(route, index: index, at: at) }
    }

    @discardableResult
    public func removeTab(entry: String) async throws(NavError) -> Ack { try await one { $0.removeTab(entry: entry) } }

    @discardableResult
    public func removeFirst(_ route: String, at: String? = nil) async throws(NavError) -> Ack { try await one { $0.removeFirst(route, at: at) } }

    @discardableResult
    public func removeLast(_ route: String, at: String? = nil) async throws(NavError) -> Ack { try await one { $0.removeLast(route, at: at) } }

    /// The whole session back to its flow's initial state (admins).
    @discardableResult
    public func reset() async throws(NavError) -> Ack { try await one { $0.reset() } }

    // MARK: The session

    @discardableResult
    public func alert(_ title: String, message: String? = nil,
                      buttons: [AlertButton] = [AlertButton(id: "ok", label: "OK")]) async throws(NavError) -> Ack {
        try await one { $0.alert(title, message: message, buttons: buttons) }
    }

    @discardableResult
    public func respond(alert: String, button: String) async throws(NavError) -> Ack {
        try await one { $0.respond(alert: alert, button: button) }
    }

    /// Opens a deep link by the flow's `links`.
    @discardableResult
    public func open(_ url: String) async throws(NavError) -> Ack { try await one { $0.open(url) } }

    /// Merges `data` into an entry's shared data (the deepest screen's without `entry`).
    @discardableResult
    public func update(_ data: JSONObject, entry: String? = nil, at: String? = nil) async throws(NavError) -> Ack {
        try await one { $0.update(data, entry: entry, at: at) }
    }

    /// Merges `data` into the session's data, what the flow's guards read (signing in,
    /// filling a cart): guarded screens open or close for every device in one revision.
    @discardableResult
    public func updateSession(_ data: JSONObject) async throws(NavError) -> Ack {
        try await one { $0.updateSession(data) }
    }
}
