/// One route operation (docs/protocol.md, "Operations"): the verbs of Trailblazer, Stinsen and
/// FlowStacks as one enum, plus the coordinator it is addressed to.
public struct NavOperation: Sendable, Equatable {
    // (Spelled `Optional<…>`, with no initial value: a value type with a stored property
    // that has one, as every `T?` var does, was built twice and one copy destroyed
    // wherever it was made. See docs/architecture.md, "Copies the optimizer makes".)
    /// `"root"`, an entry id, or a coordinator type name; nil lets the route pick the
    /// coordinator (docs/protocol.md, "Operations", "route bubbling").
    public var at: Optional<String>
    public var action: Action

    public init(_ action: Action, at: String? = nil) {
        self.action = action
        self.at = at
    }

    public enum Action: Sendable, Equatable {
        /// Append an entry with the route's declared presentation (`push` by default).
        case route(OpenItem)
        /// Append an entry presented modally; nil style: the route's modal style, else sheet.
        case present(OpenItem, style: Presentation?)
        /// Remove the top `count` entries, or `from` that entry up.
        case pop(count: Int, from: String?)
        case popToRoot
        case popToFirst(route: String)
        case popToLast(route: String)
        case popTo(entry: String)
        case popBefore(route: String)
        /// Remove the topmost (with `all`: the lowest) modal entry and everything above.
        case dismiss(all: Bool)
        case setRoot(OpenItem)
        case setStack([OpenItem])
        /// One layer's pushes (layer 0: the root entry's; N: the Nth modal entry's) set to
        /// these routes, every layer above left as it is: a NavigationStack's `path`
        /// written while a sheet is up changes under the sheet. The entries that still
        /// match, from the layer's start, are kept (ids, data, children).
        case setPath([OpenItem], layer: Int)
        case restart
        case select(TabSelector)
        case setTabs([OpenItem])
        case appendTab(OpenItem)
        case insertTab(OpenItem, index: Int)
        case removeFirst(route: String)
        case removeLast(route: String)
        case removeTab(entry: String)
        /// RFC 7386 merge patch into an entry's `data`; nil entry: the deepest screen.
        case update(entry: String?, data: JSONObject)
        /// The same into the session's data (`"scope": "session"`, docs/flows.md, "Guards and redirects").
        /// `byHook`: the command hook's `set` (docs/backend.md), applied as the command's
        /// first op: not conflict-checked against `base`, never sent by a client.
        case updateSession(data: JSONObject, byHook: Bool = false)
        case open(url: String)
        case alert(AlertSpec)
        case respond(alert: String, button: String)
        case reset
    }

    /// What an operation opens: a route with params (checked against the flow when the
    /// target is known), display hints and, in `setStack`, a presentation.
    public struct OpenItem: Sendable, Equatable {
        public var route: String
        public var params: JSONObject
        // (`Optional<…>` with no initial value, as `at` below.)
        public var hints: Optional<JSONObject>
        public var presentation: Optional<Presentation>

        public init(_ route: String, params: JSONObject = [:], hints: JSONObject? = nil, presentation: Presentation? = nil) {
            self.route = route
            self.params = params
            self.hints = hints
            self.presentation = presentation
        }
    }

    public enum TabSelector: Sendable, Equatable {
        case route(String)
        case index(Int)
        case entry(String)
    }

    public struct AlertSpec: Sendable, Equatable {
        public var title: String
        public var message: String?
        public var buttons: [AlertButton]

        public init(title: String, message: String? = nil, buttons: [AlertButton] = [AlertButton(id: "ok", label: "OK")]) {
            self.title = title
            self.message = message
            self.buttons = buttons
        }
    }
}

/// An alert button; `role` is `default`, `cancel` or `destructive`.
public struct AlertButton: Sendable, Equatable {
    public var id: String
    public var label: String
    public var role: String?

    public init(id: String, label: String, role: String? = nil) {
        self.id = id
        self.label = label
        self.role = role
    }
}

/// NavOperation names as they appear on the wire, with what each works on.
public enum OpName: String, Sendable, CaseIterable {
    case route, present, pop, popToRoot, popToFirst, popToLast, popTo, popBefore, dismiss
    case setRoot, setStack, setPath, restart, select, setTabs, appendTab, insertTab
    case removeFirst, removeLast, removeTab, update, open, alert, respond, reset

    /// Accepts the aliases `push` (= `route`) and `jumpTo` (= `setStack`).
    public init?(wire: String) {
        // Every command names one: names of the same length are compared, rather than
        // hashing the name (`init(rawValue:)` hashes it through a cache).
        let length = wire.utf8.count
        guard length < Self.byLength.count else { return nil }
        for (name, op) in Self.byLength[length] where name == wire {
            self = op
            return
        }
        return nil
    }

    /// Wire names (aliases included) by their length in bytes.
    private static let byLength: [[(String, OpName)]] = {
        let names = allCases.map { ($0.rawValue, $0) } + [("push", .route), ("jumpTo", .setStack)]
        var table = Array(repeating: [(String, OpName)](), count: names.map(\.0.utf8.count).max()! + 1)
        for (name, op) in names { table[name.utf8.count].append((name, op)) }
        return table
    }()

    /// Whether the operation works on a coordinator of this kind (the targeting of
    /// every command asks this, so it is a switch, not a set made per call).
    func works(on kind: CoordinatorKind) -> Bool {
        switch self {
        case .route, .present, .pop, .popToRoot, .popToFirst, .popToLast, .popTo, .popBefore, .dismiss, .setStack, .setPath:
            return kind == .stack
        case .setRoot: return kind != .tabs
        case .restart: return true
        case .select, .setTabs, .appendTab, .insertTab, .removeFirst, .removeLast, .removeTab: return kind == .tabs
        case .update, .open, .alert, .respond, .reset: return false
        }
    }

    /// The coordinator kinds the operation works on; nil for session-wide operations and
    /// `update`, which work on any entry.
    public var kinds: Set<CoordinatorKind>? {
        let kinds = Set(CoordinatorKind.allCases.filter(works(on:)))
        return kinds.isEmpty ? nil : kinds
    }

    /// Whether `at` is ignored (section A: on `open`, `alert`, `respond`, `reset`).
    public var isSessionWide: Bool { self == .open || self == .alert || self == .respond || self == .reset }
}

extension NavOperation.Action {
    public var name: OpName {
        switch self {
        case .route: return .route
        case .present: return .present
        case .pop: return .pop
        case .popToRoot: return .popToRoot
        case .popToFirst: return .popToFirst
        case .popToLast: return .popToLast
        case .popTo: return .popTo
        case .popBefore: return .popBefore
        case .dismiss: return .dismiss
        case .setRoot: return .setRoot
        case .setStack: return .setStack
        case .setPath: return .setPath
        case .restart: return .restart
        case .select: return .select
        case .setTabs: return .setTabs
        case .appendTab: return .appendTab
        case .insertTab: return .insertTab
        case .removeFirst: return .removeFirst
        case .removeLast: return .removeLast
        case .removeTab: return .removeTab
        case .update, .updateSession: return .update
        case .open: return .open
        case .alert: return .alert
        case .respond: return .respond
        case .reset: return .reset
        }
    }

    /// Whether the operation is one stack edit (a push or a cut: `ctx.edit` says which
    /// when it applies) that checks everything before it changes anything: it fails
    /// leaving the document as it was, so a command of it alone runs on the document
    /// itself, without a copy to throw away (`Sequencer`). A test holds every such
    /// operation to that, failing or not.
    var editsOneStackAtomically: Bool {
        switch self {
        case .route, .present, .pop, .popToRoot, .popToFirst, .popToLast, .popTo, .popBefore, .dismiss: return true
        default: return false
        }
    }

    /// The command hook's `set` (docs/backend.md).
    public var isByHook: Bool { if case .updateSession(_, true) = self { true } else { false } }

    /// The entry ids the operation names (for conflicts and `superseded`).
    var namedEntry: String? {
        switch self {
        case .pop(_, let from): return from
        case .popTo(let e), .removeTab(let e): return e
        case .select(.entry(let e)): return e
        case .update(let e, _): return e
        default: return nil
        }
    }
}
