/// The state document of a session (DESIGN.md section 3), as Swift values.
///
/// Value types all the way down: a command works on a copy and the copy is kept only if
/// every operation applies, which is what makes commands atomic.
public struct NavState: Sendable, Equatable {
    public var root: Coordinator
    public var alert: Alert?

    public init(root: Coordinator, alert: Alert? = nil) {
        self.root = root
        self.alert = alert
    }
}

/// One coordinator: a root (one `current` entry), a stack, or a tab bar.
public struct Coordinator: Sendable, Equatable {
    public var type: String
    public var kind: CoordinatorKind
    /// `root`: exactly one entry, the current one. `stack`: bottom to top, `entries[0]`
    /// presented as `root`. `tabs`: left to right.
    public var entries: [Entry]
    /// `tabs` only: the selected tab, never nil while there are tabs.
    public var selected: EntryID?

    /// The entry a device shows of this coordinator: current, top, or selected tab.
    public var visibleIndex: Int? {
        switch kind {
        case .root, .stack: return entries.isEmpty ? nil : entries.count - 1
        case .tabs: return entries.firstIndex { $0.id == selected }
        }
    }
}

/// One screen.
public struct Entry: Sendable, Equatable {
    public var id: EntryID
    public var route: String
    public var params: JSONObject
    /// Stack entries only.
    public var presentation: Presentation?
    /// Tab entries whose route declares `tab` only.
    public var tab: JSON?
    /// How the entry should appear; at most 16 scalar values.
    public var hints: JSONObject?
    /// The screen's shared view-model state; absent until the first `update`.
    public var data: JSONObject?
    /// The child coordinator of routes that open one.
    public var coordinator: Coordinator?
}

public struct Alert: Sendable, Equatable {
    public var id: EntryID
    public var title: String
    public var message: String?
    public var buttons: [AlertButton]
}

// MARK: - The document as JSON

extension NavState {
    public var json: JSON {
        .object(["root": root.json, "alert": alert?.json ?? .null])
    }
}

extension Coordinator {
    public var json: JSON {
        var o: JSONObject = ["type": .string(type), "kind": .string(kind.rawValue)]
        switch kind {
        case .root: o["current"] = entries[0].json
        case .stack: o["stack"] = .array(entries.map(\.json))
        case .tabs:
            o["tabs"] = .array(entries.map(\.json))
            o["selected"] = selected.map { .string($0.description) } ?? .null
        }
        return .object(o)
    }

    /// The key that holds this coordinator's entries in JSON.
    var entriesKey: String {
        switch kind {
        case .root: return "current"
        case .stack: return "stack"
        case .tabs: return "tabs"
        }
    }
}

extension Entry {
    public var json: JSON {
        var o: JSONObject = ["id": .string(id.description), "route": .string(route), "params": .object(params)]
        if let presentation { o["presentation"] = .string(presentation.rawValue) }
        if let tab { o["tab"] = tab }
        if let hints { o["hints"] = .object(hints) }
        if let data { o["data"] = .object(data) }
        if let coordinator { o["coordinator"] = coordinator.json }
        return .object(o)
    }
}

extension Alert {
    public var json: JSON {
        var o: JSONObject = ["id": .string(id.description), "title": .string(title)]
        if let message { o["message"] = .string(message) }
        o["buttons"] = .array(buttons.map(\.json))
        return .object(o)
    }
}
