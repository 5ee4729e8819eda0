import NavSync

// The mirrored state as an app reads it: the tree (`NavTree`), its coordinators,
// layers, entries and alert, made from the state document the navigator shows.

/// One entry of the mirrored state (docs/protocol.md, "The state document"), as read from the document.
public struct NavEntry: Sendable, Hashable, Identifiable {
    /// The id the session gave it (`e12`): stable while the entry lives.
    public let id: String
    public let route: String
    public let params: JSONObject
    /// How a stack entry is shown (`root`, `push`, `sheet`, `cover`); nil elsewhere.
    public let presentation: Presentation?
    /// The screen's shared view-model state, once an `update` gave it some.
    public let data: JSONObject?
    /// The coordinator this entry opened, if its route opens one.
    public let coordinator: NavCoordinator?

    init?(_ json: JSON) {
        guard let id = json["id"]?.stringValue, let route = json["route"]?.stringValue else { return nil }
        self.id = id
        self.route = route
        params = json["params"]?.objectValue ?? [:]
        presentation = json["presentation"]?.stringValue.flatMap(Presentation.init(rawValue:))
        data = json["data"]?.objectValue
        coordinator = json["coordinator"].flatMap(NavCoordinator.init)
    }

    /// The entry as a typed route, or nil when `R` has no such case.
    public func route<R: Decodable>(as type: R.Type) -> R? {
        RouteCoding.route(type, name: route, params: params)
    }
}

/// One coordinator of the mirrored state: a stack, tabs or a root.
public struct NavCoordinator: Sendable, Hashable {
    /// Its type name in the flow (`Home`).
    public let type: String
    public let kind: CoordinatorKind
    /// A stack's entries bottom up; a tab bar's tabs in order; a root's current entry.
    public let entries: [NavEntry]
    /// The selected tab's entry id (tabs only).
    public let selected: String?

    init?(_ json: JSON) {
        guard let type = json["type"]?.stringValue, let kind = json["kind"]?.stringValue.flatMap(CoordinatorKind.init(rawValue:)) else {
            return nil
        }
        self.type = type
        self.kind = kind
        switch kind {
        case .stack: entries = (json["stack"]?.arrayValue ?? []).compactMap(NavEntry.init)
        case .tabs: entries = (json["tabs"]?.arrayValue ?? []).compactMap(NavEntry.init)
        case .root: entries = json["current"].flatMap(NavEntry.init).map { [$0] } ?? []
        }
        selected = json["selected"]?.stringValue
    }

    /// The entry a device shows of this coordinator: a stack's top, the selected tab,
    /// a root's current entry.
    public var visible: NavEntry? {
        switch kind {
        case .stack, .root: return entries.last
        case .tabs: return entries.first { $0.id == selected } ?? entries.first
        }
    }

    /// A stack cut where modals begin (FlowStacks' one list tagged by presentation):
    /// layer 0 is the root entry and what is pushed on it; each sheet or cover starts
    /// the next layer, with what is pushed inside it.
    public var layers: [NavLayer] {
        guard kind == .stack else { return [] }
        var layers: [NavLayer] = []
        for entry in entries {
            if layers.isEmpty || entry.presentation?.isModal == true {
                layers.append(NavLayer(root: entry, pushes: []))
            } else {
                layers[layers.count - 1].pushes.append(entry)
            }
        }
        return layers
    }
}

/// A stack's root entry or a modal entry, and the entries pushed above it.
public struct NavLayer: Sendable, Hashable {
    public var root: NavEntry
    public var pushes: [NavEntry]
    /// `root` for the bottom layer, else `sheet` or `cover`.
    public var presentation: Presentation { root.presentation ?? .root }
}

/// The whole mirrored document, read.
public struct NavTree: Sendable, Hashable {
    public let root: NavCoordinator
    /// The alert shown, if any.
    public let alert: NavAlert?

    public init?(_ state: JSON) {
        guard let root = state["root"].flatMap(NavCoordinator.init) else { return nil }
        self.root = root
        alert = state["alert"].flatMap(NavAlert.init)
    }

    /// Every coordinator, pre-order (a parent before the coordinators of its entries).
    public var coordinators: [NavCoordinator] {
        var out: [NavCoordinator] = []
        func walk(_ c: NavCoordinator) {
            out.append(c)
            for e in c.entries { if let child = e.coordinator { walk(child) } }
        }
        walk(root)
        return out
    }

    /// The coordinator an address names, as operations resolve `at` (
    /// docs/protocol.md, "Operations: fine points"): `root`, an entry id (the coordinator it opened), or a type name of
    /// which exactly one is on the tree.
    public func coordinator(_ address: String) -> NavCoordinator? {
        if address == "root" { return root }
        let all = coordinators
        for c in all {
            if let e = c.entries.first(where: { $0.id == address }) { return e.coordinator }
        }
        let ofType = all.filter { $0.type == address }
        return ofType.count == 1 ? ofType[0] : nil
    }

    /// The coordinator an address names, or why none: not on the tree, or a type name
    /// that several coordinators on the tree have.
    public func find(_ address: String) -> Result<NavCoordinator, NavError> {
        if let c = coordinator(address) { return .success(c) }
        let all = coordinators
        if all.contains(where: { c in c.entries.contains { $0.id == address } }) {
            return .failure(NavError(.invalidOp, "entry '\(address)' opens no coordinator"))
        }
        let count = all.filter { $0.type == address }.count
        if count > 1 {
            return .failure(NavError(.invalidOp, "'\(address)' is ambiguous: \(count) coordinators of that type are on the tree; name one by the entry id that opened it"))
        }
        return .failure(NavError(.notFound, "no coordinator '\(address)' is on the tree"))
    }

    /// The active path: the entries a device shows, root first (docs/protocol.md, "The state document").
    public var activePath: [NavEntry] {
        var out: [NavEntry] = []
        var c: NavCoordinator? = root
        while let current = c, let e = current.visible {
            out.append(e)
            c = e.coordinator
        }
        return out
    }
}

/// The alert of the mirrored state.
public struct NavAlert: Sendable, Hashable, Identifiable {
    public struct Button: Sendable, Hashable, Identifiable {
        public let id: String
        public let label: String
        /// `default`, `cancel` or `destructive`; nil when not given.
        public let role: String?
    }
    public let id: String
    public let title: String
    public let message: String?
    public let buttons: [Button]

    init?(_ json: JSON) {
        guard let id = json["id"]?.stringValue, let title = json["title"]?.stringValue else { return nil }
        self.id = id
        self.title = title
        message = json["message"]?.stringValue
        buttons = (json["buttons"]?.arrayValue ?? []).compactMap { b in
            guard let id = b["id"]?.stringValue, let label = b["label"]?.stringValue else { return nil }
            return Button(id: id, label: label, role: b["role"]?.stringValue)
        }
    }

    /// The button that dismissing the alert answers with: its `cancel` button, else the
    /// last one (as SwiftUI and UIKit dismiss an alert).
    public var dismissButton: Button? { buttons.first { $0.role == "cancel" } ?? buttons.last }
}
