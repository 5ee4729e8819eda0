/// The state document of a session (docs/protocol.md, "The state document"), as Swift values.
///
/// Value types all the way down: a command works on a copy and the copy is kept only if
/// every operation applies, which is what makes commands atomic.
public struct NavState: Sendable, Equatable {
    public var root: Coordinator
    // (Spelled `Optional<…>`, with no initial value: a value type with a stored property
    // that has one, as every `T?` var does, was built twice and one copy destroyed
    // wherever it was made. See docs/architecture.md, "Copies the optimizer makes".)
    public var alert: Optional<AlertState>
    /// The session's data (docs/flows.md, "Guards and redirects"): one object shared by the whole session, what
    /// guards read; absent until first set (`update` with `"scope": "session"`).
    public var data: Optional<JSONObject>

    public init(root: Coordinator, alert: AlertState? = nil, data: JSONObject? = nil) {
        self.root = root
        self.alert = alert
        self.data = data
    }
}

/// One coordinator: a root (one `current` entry), a stack, or a tab bar.
public struct Coordinator: Sendable, Equatable {
    public var type: String
    public var kind: CoordinatorKind
    /// `root`: exactly one entry, the current one. `stack`: bottom to top, `entries[0]`
    /// presented as `root`. `tabs`: left to right.
    public var entries: [Entry]
    // (`Optional<…>` with no initial value, as `alert` above.)
    /// `tabs` only: the selected tab, never nil while there are tabs.
    public var selected: Optional<EntryID>

    init(type: String, kind: CoordinatorKind, entries: [Entry], selected: EntryID? = nil) {
        self.type = type
        self.kind = kind
        self.entries = entries
        self.selected = selected
    }

    /// The entry a device shows of this coordinator: current, top, or selected tab.
    public var visibleIndex: Int? {
        switch kind {
        case .root, .stack: return entries.isEmpty ? nil : entries.count - 1
        case .tabs: return entries.firstIndex { $0.id == selected }
        }
    }
}

/// One screen.
///
/// A value with its fields in one shared, copy-on-write box: copying an entry (the
/// diff's walk, copying a list of entries when a command changes it) is one retain,
/// not one per field, and an entry no command touched is recognised by its box. (The
/// entries a new coordinator starts with share their route's box, made once per flow,
/// until one of them changes.)
public struct Entry: Sendable, Equatable {
    public var id: EntryID
    private var fields: Fields

    public init(id: EntryID, route: String, params: JSONObject, presentation: Presentation? = nil, tab: JSON? = nil,
                hints: JSONObject? = nil, data: JSONObject? = nil, coordinator: Coordinator? = nil) {
        self.id = id
        fields = Fields(route: route, params: params, presentation: presentation, tab: tab, hints: hints, data: data,
                        coordinator: coordinator)
    }

    /// An entry with `template`'s fields, shared until either changes them.
    init(id: EntryID, sharingFieldsOf template: Entry) {
        self.id = id
        fields = template.fields
    }

    /// An entry a link's plan opened, with its text worked out ahead (`LinkPlan`): the
    /// entry writes that text until it or anything below it changes.
    init(id: EntryID, route: String, params: JSONObject, presentation: Presentation?, tab: JSON?, hints: JSONObject?,
         data: JSONObject?, coordinator: Coordinator?, written: LinkPlan.WrittenEntry) {
        self.init(id: id, route: route, params: params, presentation: presentation, tab: tab, hints: hints, data: data,
                  coordinator: coordinator)
        fields.written = written
    }

    public var route: String {
        get { fields.route }
        _modify { yield &unique().route }
    }
    public var params: JSONObject {
        get { fields.params }
        _modify { yield &unique().params }
    }
    /// Stack entries only.
    public var presentation: Presentation? {
        get { fields.presentation }
        _modify { yield &unique().presentation }
    }
    /// Tab entries whose route declares `tab` only.
    public var tab: JSON? {
        get { fields.tab }
        _modify { yield &unique().tab }
    }
    /// How the entry should appear; at most 16 scalar values.
    public var hints: JSONObject? {
        get { fields.hints }
        _modify { yield &unique().hints }
    }
    /// The screen's shared view-model state; absent until the first `update`.
    public var data: JSONObject? {
        get { fields.data }
        _modify { yield &unique().data }
    }
    /// The child coordinator of routes that open one.
    public var coordinator: Coordinator? {
        get { fields.coordinator }
        _modify { yield &unique().coordinator }
    }

    /// The text worked out ahead (`LinkPlan.WrittenEntry`) while it holds: the entry
    /// and its subtree are as a link's plan opened them.
    var writtenAhead: LinkPlan.WrittenEntry? {
        guard let written = fields.written, written.id == id else { return nil }
        return written
    }

    /// Whether the two share their fields (one was copied from the other and neither
    /// changed since): equal without a look inside.
    func sharesFields(with other: Entry) -> Bool { fields === other.fields }

    /// Whether the two show the same screen: route, params, presentation, tab and hints
    /// equal; data and the child coordinator aside. Compared in place, nothing copied.
    func sameScreen(as other: Entry) -> Bool {
        let x = fields, y = other.fields
        return x === y || (x.route == y.route && x.params == y.params && x.presentation == y.presentation
                           && x.tab == y.tab && x.hints == y.hints)
    }

    /// The fields, this entry's alone, about to change: the text worked out ahead no
    /// longer holds. (Every change below an entry passes through here, since changing
    /// its child coordinator is changing one of its fields.)
    private mutating func unique() -> Fields {
        if !isKnownUniquelyReferenced(&fields) { fields = fields.copy() }
        if fields.written != nil { fields.written = nil }
        return fields
    }

    public static func == (a: Entry, b: Entry) -> Bool {
        guard a.id == b.id else { return false }
        if a.fields === b.fields { return true }
        let x = a.fields, y = b.fields
        return x.route == y.route && x.presentation == y.presentation && x.params == y.params && x.tab == y.tab
            && x.hints == y.hints && x.data == y.data && x.coordinator == y.coordinator
    }

    /// Changed only while its entry holds the sole reference (`unique()`), so sharing it
    /// across threads is as safe as sharing any value.
    private final class Fields: @unchecked Sendable {
        @exclusivity(unchecked) var route: String
        @exclusivity(unchecked) var params: JSONObject
        @exclusivity(unchecked) var presentation: Presentation?
        @exclusivity(unchecked) var tab: JSON?
        @exclusivity(unchecked) var hints: JSONObject?
        @exclusivity(unchecked) var data: JSONObject?
        @exclusivity(unchecked) var coordinator: Coordinator?
        /// The entry's text, worked out ahead, while nothing changed.
        @exclusivity(unchecked) var written: LinkPlan.WrittenEntry?

        init(route: String, params: JSONObject, presentation: Presentation?, tab: JSON?, hints: JSONObject?,
             data: JSONObject?, coordinator: Coordinator?) {
            self.route = route
            self.params = params
            self.presentation = presentation
            self.tab = tab
            self.hints = hints
            self.data = data
            self.coordinator = coordinator
        }

        func copy() -> Fields {
            Fields(route: route, params: params, presentation: presentation, tab: tab, hints: hints, data: data,
                   coordinator: coordinator)
        }
    }
}

/// Printed as its JSON (the box alone would print as an address).
extension Entry: CustomStringConvertible {
    public var description: String { json.encodedString() }
}

public struct AlertState: Sendable, Equatable {
    public var id: EntryID
    public var title: String
    public var message: String?
    public var buttons: [AlertButton]
}

// MARK: - The document as JSON

extension NavState {
    public var json: JSON {
        var o: JSONObject = ["root": root.json, "alert": alert?.json ?? .null]
        if let data { o["data"] = .object(data) }
        return .object(o)
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

extension AlertState {
    public var json: JSON {
        var o: JSONObject = ["id": .string(id.description), "title": .string(title)]
        if let message { o["message"] = .string(message) }
        o["buttons"] = .array(buttons.map(\.json))
        return .object(o)
    }
}

// MARK: - The document written straight to bytes

/// `json.encoded()` without building the JSON: a patch carries new entries (a deep link
/// a whole coordinator tree) as state values and writes them when it is broadcast.
extension Entry {
    package func write(into out: inout ByteWriter) {
        if let written = writtenAhead { return written.write(into: &out) }
        out.append(ascii: #"{"id":"e"#)
        out.append(decimal: id.number)
        out.append(ascii: #"","route":"#)
        JSON.writeString(route, into: &out)
        out.append(ascii: #","params":"#)
        JSON.writeObject(params, into: &out)
        if let presentation {
            out.append(ascii: #","presentation":""#)
            out.append(contentsOf: presentation.rawValue.utf8)
            out.append(UInt8(ascii: "\""))
        }
        if let tab {
            out.append(ascii: #","tab":"#)
            tab.write(into: &out)
        }
        if let hints {
            out.append(ascii: #","hints":"#)
            JSON.writeObject(hints, into: &out)
        }
        if let data {
            out.append(ascii: #","data":"#)
            JSON.writeObject(data, into: &out)
        }
        if let coordinator {
            out.append(ascii: #","coordinator":"#)
            coordinator.write(into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}

extension Coordinator {
    package func write(into out: inout ByteWriter) {
        out.append(ascii: #"{"type":"#)
        JSON.writeString(type, into: &out)
        out.append(ascii: #","kind":""#)
        out.append(contentsOf: kind.rawValue.utf8)
        out.append(UInt8(ascii: "\""))
        switch kind {
        case .root:
            out.append(ascii: #","current":"#)
            entries[0].write(into: &out)
        case .stack, .tabs:
            out.append(contentsOf: kind == .stack ? #","stack":["#.utf8 : #","tabs":["#.utf8)
            for (i, e) in entries.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                e.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
            if kind == .tabs {
                out.append(ascii: #","selected":"#)
                if let selected {
                    out.append(ascii: #""e"#)
                    out.append(decimal: selected.number)
                    out.append(UInt8(ascii: "\""))
                } else {
                    out.append(ascii: "null")
                }
            }
        }
        out.append(UInt8(ascii: "}"))
    }
}
