/// A flow: the route schema of one app, as data every client can read (docs/flows.md, "The format").
///
/// A `Flow` is always valid: the only ways to make one are `Flow.load` and the builder,
/// and both run the checks of `FlowLoader.swift`.
///
/// Its fields live in one shared box: a document carries its flow, and commands copy
/// documents, so a flow copies as one reference rather than one per table.
public struct Flow: Sendable {
    private let fields: Fields

    private final class Fields: Sendable {
        let name: String
        let root: String
        let coordinators: [String: CoordinatorSpec]
        let specs: NameTable<CoordinatorSpec>
        /// For each type, the types that can hold a coordinator of it at or below them
        /// (itself included): where a search for it by type must look.
        let holders: NameTable<[String]>
        let coordinatorOrder: [String]
        let links: [FlowLink]
        let source: JSON
        /// `source` encoded, once per flow: every session of it shares these bytes.
        let encodedSource: [UInt8]
        let guards: [String: Guard]
        let isGuarded: Bool

        init(name: String, root: String, coordinators: [String: CoordinatorSpec], coordinatorOrder: [String],
             links: [FlowLink], source: JSON, guards: [String: Guard]) {
            self.name = name
            self.root = root
            self.coordinators = coordinators
            specs = NameTable(coordinators)
            // What each type reaches through the routes it opens, and theirs; then turned around.
            let reach = coordinators.mapValues { spec in
                var found = [spec.name]
                var i = 0
                while i < found.count {
                    for route in coordinators[found[i]]!.routes.values {
                        if let opens = route.coordinator, !found.contains(opens) { found.append(opens) }
                    }
                    i += 1
                }
                return found
            }
            let names = coordinators.keys.sorted()
            holders = NameTable(coordinators.mapValues { spec in names.filter { reach[$0]!.contains(spec.name) } })
            self.coordinatorOrder = coordinatorOrder
            self.links = links
            self.source = source
            encodedSource = source.encoded()
            self.guards = guards
            isGuarded = coordinators.values.contains { spec in !spec.guards.isEmpty || spec.routes.values.contains { !$0.guards.isEmpty } }
        }
    }

    init(name: String, root: String, coordinators: [String: CoordinatorSpec], coordinatorOrder: [String],
         links: [FlowLink], source: JSON, guards: [String: Guard] = [:]) {
        fields = Fields(name: name, root: root, coordinators: coordinators, coordinatorOrder: coordinatorOrder,
                        links: links, source: source, guards: guards)
    }

    public var name: String { fields.name }
    /// The coordinator type at the root of the tree.
    public var root: String { fields.root }
    /// Coordinator types by name, and their names in declaration order.
    public var coordinators: [String: CoordinatorSpec] { fields.coordinators }
    public var coordinatorOrder: [String] { fields.coordinatorOrder }
    /// Deep links in declaration order: the first one that matches wins.
    public var links: [FlowLink] { fields.links }
    /// The flow as JSON, as clients receive it in `joined.flow`.
    public var source: JSON { fields.source }
    /// The same, as JSON text (made once, shared by every session of the flow).
    package var encodedSource: [UInt8] { fields.encodedSource }
    /// Guards by name (docs/flows.md, "Guards and redirects").
    public var guards: [String: Guard] { fields.guards }
    /// Whether any coordinator type or route lists a guard: a flow without pays nothing
    /// for them.
    public var isGuarded: Bool { fields.isGuarded }
}

/// The three coordinator kinds.
public enum CoordinatorKind: String, Sendable, CaseIterable {
    /// One current route, switched by `setRoot`.
    case root
    /// A navigation stack of pushed and modally presented entries.
    case stack
    /// A tab bar.
    case tabs
}

/// How a stack entry is shown. `root` is only ever `stack[0]`.
public enum Presentation: String, Sendable {
    case root, push, sheet, cover
    public var isModal: Bool { self == .sheet || self == .cover }
}

/// One coordinator type: its kind, initial routes and declared routes.
///
/// Specs are immutable and shared (classes): every command looks them up, and handing
/// one out is a single retain rather than a copy of each of its fields.
public final class CoordinatorSpec: Sendable {
    public let name: String
    public let kind: CoordinatorKind
    /// One item for `root` and `stack`, one or more for `tabs`.
    public let initial: [RouteRef]
    public let routes: [String: RouteSpec]
    /// Route names in declaration order.
    public let routeOrder: [String]
    /// The routes of `initial`, item for item (a new coordinator is made of them).
    let initialRoutes: [RouteSpec]
    /// `initial`, item for item: for a route that opens no coordinator, the entry it
    /// makes (id aside), whose fields every new coordinator of this type shares until
    /// one of them changes its entry; nil for a route that opens one.
    let initialLeaves: [Entry?]
    private let routeTable: NameTable<RouteSpec>
    /// The guards every route of this type is under, in list order (docs/flows.md, "Guards and redirects").
    public let guards: [Guard]

    init(name: String, kind: CoordinatorKind, initial: [RouteRef], routes: [String: RouteSpec], routeOrder: [String],
         guards: [Guard] = []) {
        self.name = name
        self.guards = guards
        self.kind = kind
        self.initial = initial
        self.routes = routes
        routeTable = NameTable(routes)
        self.routeOrder = routeOrder
        initialRoutes = initial.map { routes[$0.route]! }
        initialLeaves = zip(initial, initialRoutes).map { ref, route in
            route.coordinator != nil ? nil
                : Entry(id: EntryID(0), route: route.name, params: ref.params, presentation: kind.firstPresentation,
                        tab: kind.tab(of: route))
        }
    }
}

extension CoordinatorKind {
    /// How the first entry of a coordinator of this kind is presented: `root` in a
    /// stack, not at all elsewhere.
    var firstPresentation: Presentation? { self == .stack ? .root : nil }

    /// The tab item an entry of `route` carries here: the route's own, in a tab bar only.
    func tab(of route: RouteSpec) -> JSON? { self == .tabs ? route.tab : nil }
}

extension CoordinatorSpec {
    /// The declared route of this name (what every command looks up: `routes[name]`,
    /// found faster).
    func route(_ name: String) -> RouteSpec? { routeTable[name] }
}

/// A route named with its params: an initial item, or a link target.
public struct RouteRef: Sendable, Equatable {
    public let route: String
    public let params: JSONObject
}

/// One declared route.
public final class RouteSpec: Sendable {
    public let name: String
    public let params: [String: ParamType]
    /// Param names in declaration order.
    public let paramOrder: [String]
    /// The coordinator type this route opens, if any.
    public let coordinator: String?
    /// The presentation a stack uses for it (`push` when not declared).
    public let presentation: Presentation?
    /// Tab-item metadata, copied verbatim onto tab entries.
    public let tab: JSON?
    /// Display text with `{param}` placeholders; never part of the state.
    public let title: String?

    /// The route's own guards, in list order (after its coordinator type's; docs/flows.md, "Guards and redirects").
    public let guards: [Guard]

    /// `paramOrder` with each param's type.
    let declared: [(name: String, type: ParamType)]

    init(name: String, params: [String: ParamType], paramOrder: [String], coordinator: String?, presentation: Presentation?,
         tab: JSON?, title: String?, guards: [Guard] = []) {
        self.name = name
        self.guards = guards
        self.params = params
        self.paramOrder = paramOrder
        declared = paramOrder.map { ($0, params[$0]!) }
        self.coordinator = coordinator
        self.presentation = presentation
        self.tab = tab
        self.title = title
    }
}

/// A declared param type: `string`, `int`, `number` or `bool`, optional with a `?`.
public struct ParamType: Sendable, Equatable, CustomStringConvertible {
    public enum Base: String, Sendable { case string, int, number, bool }
    public let base: Base
    public let optional: Bool

    public init(base: Base, optional: Bool) {
        self.base = base
        self.optional = optional
    }

    /// Parses `"int"`, `"string?"`, …
    public init?(_ text: String) {
        let optional = text.hasSuffix("?")
        guard let base = Base(rawValue: optional ? String(text.dropLast()) : text) else { return nil }
        self.init(base: base, optional: optional)
    }

    public var description: String { base.rawValue + (optional ? "?" : "") }

    /// Whether `value` is of this type. `int` takes JSON integers only, `number` any
    /// finite number but not a bool (docs/protocol.md, "Operations: fine points", "Params").
    public func accepts(_ value: JSON) -> Bool {
        switch (base, value) {
        case (.string, .string), (.int, .int), (.number, .int), (.number, .double), (.bool, .bool): return true
        default: return false
        }
    }

    /// Converts a deep-link capture to this type (`int`: `[+-]?digits`; `number`: a
    /// finite decimal; `bool`: `true/false/1/0`).
    public func convert(capture: String) -> JSON? {
        switch base {
        case .string: return .string(capture)
        case .int:
            // Bytes, not characters, read once: a capture is converted on every opening of
            // its link (`Int64(String)` cost more than the rest of the conversion).
            let negative = capture.utf8.first == UInt8(ascii: "-")
            let digits = capture.utf8.dropFirst(negative || capture.utf8.first == UInt8(ascii: "+") ? 1 : 0)
            guard !digits.isEmpty else { return nil }
            var value: Int64 = 0
            for byte in digits {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                let digit = Int64(byte - UInt8(ascii: "0"))
                // Negatives are built downwards, so Int64.min fits.
                let (shifted, o1) = value.multipliedReportingOverflow(by: 10)
                let (next, o2) = negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
                guard !o1, !o2 else { return nil }
                value = next
            }
            return .int(value)
        case .number:
            let numeric: (UInt8) -> Bool = { byte in
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
                     UInt8(ascii: "e"), UInt8(ascii: "E"): true
                default: false
                }
            }
            guard capture.utf8.allSatisfy(numeric),
                  let value = Double(capture), value.isFinite else { return nil }
            if let int = Int64(capture) { return .int(int) }
            return .double(value)
        case .bool:
            switch capture {
            case "true", "1": return .bool(true)
            case "false", "0": return .bool(false)
            default: return nil
            }
        }
    }
}

/// One deep link: a URL path pattern and the operations it expands to.
public struct FlowLink: Sendable {
    public enum Segment: Sendable, Equatable {
        case literal(String)
        case capture(String)
    }
    public let pattern: String
    public let segments: [Segment]
    /// The operations as the flow file gives them; `":name"` param values take the URL's
    /// captures when the link is opened.
    public let ops: [JSON]
    /// The operations, decoded once when the flow is loaded; captures are filled into
    /// the decoded params per opening.
    let compiled: [NavOperation]
    /// The params that take captures, op by op (and item by item within an op), with
    /// their declared types, looked up once when the flow is loaded.
    let slots: [CaptureSlot]
    /// The link worked out ahead, when it starts by replacing the whole tree (nil for
    /// links of any other shape).
    let plan: LinkPlan?

    /// A param that takes a capture: of operation `op` itself (`item` nil) or of its
    /// `routes` item `item`.
    struct CaptureSlot: Sendable {
        let op: Int
        let item: Int?
        let key: String
        /// The capture's name, without its `:`.
        let capture: String
        let type: ParamType
    }

    /// `decoded`: `ops` as the loader decoded and checked them, item for item.
    init(pattern: String, segments: [Segment], ops: [JSON], decoded: [NavOperation], flow: Flow) {
        self.pattern = pattern
        self.segments = segments
        self.ops = ops
        compiled = decoded
        slots = ops.indices.flatMap { i in
            let raw = ops[i]
            let at = raw["at"]?.stringValue
            let name = raw["op"]?.stringValue.flatMap(OpName.init(wire:))
            func slots(_ item: JSON, _ index: Int?) -> [CaptureSlot] {
                guard let route = item["route"]?.stringValue, let params = item["params"]?.objectValue else { return [] }
                return params.compactMap { key, value in
                    guard FlowLink.isCapture(value), let text = value.stringValue else { return nil }
                    let type = flow.paramType(route: route, param: key, at: at, op: name) ?? ParamType(base: .string, optional: true)
                    return CaptureSlot(op: i, item: index, key: key, capture: String(text.dropFirst()), type: type)
                }
            }
            let items = raw["routes"]?.arrayValue ?? []
            return slots(raw, nil) + items.indices.flatMap { slots(items[$0], $0) }
        }
        plan = LinkPlan(decoded, slots: slots, flow: flow)
    }

    /// Whether a param value is a whole-string capture, `":name"`.
    static func isCapture(_ value: JSON) -> Bool {
        value.stringValue.map { $0.hasPrefix(":") && $0.count > 1 } ?? false
    }
}

/// Names every command looks up (coordinator types, routes), read-only once a flow is
/// loaded. A flow has a handful of each, and comparing a few short strings (length
/// first) costs less than hashing one through `Hasher`, so a small table is scanned; a
/// large one keeps a dictionary.
struct NameTable<Value: Sendable>: Sendable {
    private let names: [String]
    private let values: [Value]
    private let index: [String: Value]?

    static var scanLimit: Int { 16 }

    init(_ table: [String: Value]) {
        // In one order from run to run (a dictionary's follows its hash seed): the cost
        // of a lookup then does not change between two runs of a benchmark.
        names = table.keys.sorted()
        values = names.map { table[$0]! }
        index = table.count > Self.scanLimit ? table : nil
    }

    subscript(name: String) -> Value? {
        if let index { return index[name] }
        let length = name.utf8.count
        for i in names.indices where names[i].utf8.count == length && names[i] == name { return values[i] }
        return nil
    }
}

extension Flow {
    /// The coordinator type of the given name. Only valid names reach this.
    public func spec(_ type: String) -> CoordinatorSpec { fields.specs[type]! }

    /// The types that can hold a coordinator of `type` at or below them (itself
    /// included): those whose routes open it, or open one whose routes do, and so on.
    /// None for a name that is not a type.
    func holders(of type: String) -> [String] { fields.holders[type] ?? [] }

    /// Types that declare `route`, in declaration order.
    public func types(declaring route: String) -> [CoordinatorSpec] {
        coordinatorOrder.compactMap { coordinators[$0] }.filter { $0.routes[route] != nil }
    }
}
