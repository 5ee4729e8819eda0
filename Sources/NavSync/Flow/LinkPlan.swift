/// A deep link worked out when its flow loads (docs/flows.md, "The format", "Links").
///
/// Most links start by replacing the whole tree (`setRoot` or `setStack` at the root),
/// then pick the tab, stack and sheet that show the screen. After that first operation
/// the tree is new from the root down, so what the link leaves behind depends on
/// nothing but which of its captures the URL gives, their values and the next id. It
/// is worked out once per set of captures given, by applying the operations to a
/// scratch document; opening the link then copies that tree with its ids moved up to
/// the session's next and the captured values put in their params, and the entry it
/// puts on the root carries its text, cut where the ids and values go. The same state,
/// ids, changed coordinators and bytes as applying the operations one by one (a test
/// holds every link of three flows to that, from random states), for a fraction of the
/// work: no operations filled in, no targets resolved, no params checked, the entries
/// that take no capture and open nothing shared with the plan (as a new coordinator's
/// initial entries are with their route), and the patch mostly written already.
///
/// Applying op by op remains for everything else: links of another shape, openings a
/// plan does not cover (a document whose stack or tab limits are not the defaults, a
/// sender who may not run one of the operations) and links that fail.
struct LinkPlan: Sendable {
    /// For each capture slot, the bit of its capture's name in a set of captures given
    /// (the names numbered in slot order).
    private let bitOfSlot: [Int]
    /// For each set of captures given, what the link leaves; nil where the link fails
    /// (or comes out of shape: see `init`), so that it is applied op by op.
    private let outcomes: [Outcome?]
    /// The operations the link runs, each checked against what the sender may not run.
    private let opNames: [OpName]

    /// Links with more distinct captures than this apply op by op: a plan is worked
    /// out for each of the 2^n sets of captures a URL may give.
    static let maxCaptures = 3

    /// (A class: a command's context holds the one it opened, `Opened`.)
    final class Outcome: Sendable {
        /// The root coordinator after the link, its ids counted from 0: `EntryID(n)` is
        /// the n-th id the link allocates.
        let root: PlannedCoordinator
        /// How many ids the link allocates (some go to entries it replaces).
        let allocated: Int
        /// The coordinators the link changes, in order, ids as in `root`.
        let changed: [CoordinatorKey]
        let result: OpResult
        /// The ids on `root`, and those of its entries that open a coordinator, in the
        /// order a diff walking the new tree meets them (`StateDiff(opened:from:to:)`).
        let added: [Int]
        let created: [Int]
        /// Of the ids the link allocates, which arrive (the others are gone again
        /// before it is done).
        private let arriving: [Bool]

        init(root: PlannedCoordinator, allocated: Int, changed: [CoordinatorKey], result: OpResult, added: [Int], created: [Int]) {
            self.root = root
            self.allocated = allocated
            self.changed = changed
            self.result = result
            self.added = added
            self.created = created
            var arriving = [Bool](repeating: false, count: allocated)
            for n in added where n >= 0 && n < allocated { arriving[n] = true }
            self.arriving = arriving
        }

        /// Whether the id numbered `n` (counted from the link's first) arrives.
        func arrives(_ n: Int) -> Bool { n >= 0 && n < arriving.count && arriving[n] }
    }

    /// What a plan opened: the root's entries replaced by its outcome's, ids moved up by
    /// `offset`. A command of that one `open` takes its diff from here (the ids that
    /// arrive are known ahead) rather than by walking the new tree.
    struct Opened: Sendable {
        let outcome: Outcome
        let offset: Int
    }

    /// (Classes: reading a node while a copy is made is one retain, not one per field.)
    final class PlannedCoordinator: Sendable {
        let type: String
        let kind: CoordinatorKind
        let selected: EntryID?
        let entries: [PlannedEntry]

        init(type: String, kind: CoordinatorKind, selected: EntryID?, entries: [PlannedEntry]) {
            self.type = type
            self.kind = kind
            self.selected = selected
            self.entries = entries
        }
    }

    final class PlannedEntry: Sendable {
        /// The entry as the link leaves it (placeholder values where captures go): an
        /// entry with no capture and no coordinator is opened sharing its fields.
        let template: Entry
        /// The params that take a capture: key and capture slot.
        let fills: [(key: String, slot: Int)]
        let child: PlannedCoordinator?
        /// The entry's text with its subtree's, for an entry on the root coordinator that
        /// the link makes (the one a patch carries whole).
        let text: PlannedText?

        init(template: Entry, fills: [(key: String, slot: Int)], child: PlannedCoordinator?, top: Bool) {
            self.template = template
            self.fills = fills
            self.child = child
            text = top && (child != nil || !fills.isEmpty) ? PlannedText(template, fills, child) : nil
        }
    }

    /// The plan of a link of these operations and capture slots, or nil when the link
    /// does not start by replacing the whole tree or names things a plan cannot move
    /// (entry ids, the alert, other links), or has more than `maxCaptures` captures.
    init?(_ ops: [NavOperation], slots: [FlowLink.CaptureSlot], flow: Flow) {
        guard Self.startsAfresh(ops, flow), ops.allSatisfy(Self.isMovable) else { return nil }
        var names: [String] = []
        for slot in slots where !names.contains(slot.capture) { names.append(slot.capture) }
        guard names.count <= Self.maxCaptures else { return nil }
        // Two values of each slot's type: where the second lands is where the slot goes.
        var samples: [(JSON, JSON)] = []
        for slot in slots {
            let values = ["0", "1", "true", "false", "a", "b"].compactMap(slot.type.convert(capture:))
            guard let first = values.first, let second = values.first(where: { $0 != first }) else { return nil }
            samples.append((first, second))
        }
        let bitOfSlot = slots.map { names.firstIndex(of: $0.capture)! }
        self.bitOfSlot = bitOfSlot
        opNames = ops.map(\.action.name)
        let link = (ops: ops, slots: slots)
        outcomes = (0..<(1 << names.count)).map { (given: Int) -> Outcome? in
            let values = slots.indices.map { given & (1 << bitOfSlot[$0]) != 0 ? samples[$0].0 : nil }
            guard let base = Self.run(link, values, flow) else { return nil }
            // Each capture given, changed alone: the params that change are where it goes,
            // and nothing else may change.
            var fills: [[Int]: [(key: String, slot: Int)]] = [:]
            for slot in slots.indices where values[slot] != nil {
                var other = values
                other[slot] = samples[slot].1
                guard let changed = Self.run(link, other, flow),
                      Self.collect(slot, base.root, changed.root, at: [], into: &fills) else { return nil }
            }
            // What the diff's walk notes of the new tree, listed by the walk itself.
            let arrivals = StateDiff.arrivals(base.root.entries)
            return Outcome(root: Self.planned(base.root, at: [], fills, start: base.start), allocated: base.allocated,
                           changed: base.changed.map { Self.moved($0, by: -base.start) }, result: base.result,
                           added: arrivals.added.map { $0.number - base.start },
                           created: arrivals.created.compactMap { key in
                               if case .entry(let id) = key { id.number - base.start } else { nil }
                           })
        }
    }

    /// What opening the link with `values` (one per slot) does to `document`, or nil
    /// when the plan does not cover it (then nothing is changed).
    func open(_ values: [JSON?], in document: inout NavDocument, _ ctx: inout CommandContext) -> OpResult? {
        guard Self.coversLimits(document.limits),
              ctx.refused.isEmpty || !opNames.contains(where: { ctx.refused[$0] != nil }),
              let outcome = outcome(given: values) else { return nil }
        let offset = document.nextID
        document.state.root = Self.make(outcome.root, offset: offset, values)
        document.nextID += outcome.allocated
        for key in outcome.changed { ctx.noteChanged(Self.moved(key, by: offset)) }
        ctx.edit = nil
        ctx.opened = Opened(outcome: outcome, offset: offset)
        return outcome.result
    }

    /// Whether a document under `limits` applies links as the plans were worked out,
    /// under the defaults: all of them but the operations per command, which is checked
    /// on the command, never inside a link (`navsyncd --max-ops` keeps the plans).
    static func coversLimits(_ limits: ModelLimits) -> Bool {
        var inLinks = limits
        inLinks.maxOps = ModelLimits().maxOps
        return inLinks == ModelLimits()
    }

    /// What the link leaves when the URL gives these captures (nil: it fails, or is
    /// applied op by op).
    func outcome(given values: [JSON?]) -> Outcome? {
        var given = 0
        for (slot, value) in values.enumerated() where value != nil { given |= 1 << bitOfSlot[slot] }
        return outcomes[given]
    }

    // MARK: - Opening

    private static func make(_ c: PlannedCoordinator, offset: Int, _ values: [JSON?]) -> Coordinator {
        var entries: [Entry] = []
        entries.reserveCapacity(c.entries.count)
        for e in c.entries { entries.append(make(e, offset: offset, values)) }
        return Coordinator(type: c.type, kind: c.kind, entries: entries, selected: c.selected.map { EntryID($0.number + offset) })
    }

    private static func make(_ e: PlannedEntry, offset: Int, _ values: [JSON?]) -> Entry {
        let id = EntryID(e.template.id.number + offset)
        guard e.child != nil || !e.fills.isEmpty else { return Entry(id: id, sharingFieldsOf: e.template) }
        let t = e.template
        var params = t.params
        for fill in e.fills { params[fill.key] = values[fill.slot] }
        let child = e.child.map { make($0, offset: offset, values) }
        guard let text = e.text else {
            return Entry(id: id, route: t.route, params: params, presentation: t.presentation, tab: t.tab, hints: t.hints,
                         data: t.data, coordinator: child)
        }
        return Entry(id: id, route: t.route, params: params, presentation: t.presentation, tab: t.tab, hints: t.hints,
                     data: t.data, coordinator: child, written: WrittenEntry(text: text, offset: offset, values: values, id: id))
    }

    private static func moved(_ key: CoordinatorKey, by offset: Int) -> CoordinatorKey {
        if case .entry(let id) = key { return .entry(EntryID(id.number + offset)) }
        return key
    }

    // MARK: - Working it out

    /// Whether the link starts by replacing every entry of the root coordinator
    /// (`setRoot` or `setStack`), named `root` or by a type no route opens (so that it
    /// is the root wherever the session is). Whether that first operation applies does
    /// not depend on the tree either: only on its route and params.
    private static func startsAfresh(_ ops: [NavOperation], _ flow: Flow) -> Bool {
        guard let first = ops.first, let at = first.at else { return false }
        switch first.action {
        case .setRoot, .setStack: break
        default: return false
        }
        let opened = flow.coordinators.values.contains { $0.routes.values.contains { $0.coordinator == at } }
        return at == "root" || (at == flow.root && EntryID(at) == nil && !opened)
    }

    /// Whether the operation works on the tree alone, reaching it by type, route or
    /// position: not by entry id (what it names would differ from session to session),
    /// nor on data, the alert, other links or the whole session.
    private static func isMovable(_ op: NavOperation) -> Bool {
        if let at = op.at, EntryID(at) != nil { return false }
        guard op.action.namedEntry == nil else { return false }
        switch op.action.name {
        case .update, .open, .alert, .respond, .reset: return false
        default: return true
        }
    }

    /// The link applied op by op to a scratch document, as `open` applies it.
    private static func run(_ link: (ops: [NavOperation], slots: [FlowLink.CaptureSlot]), _ values: [JSON?], _ flow: Flow)
        -> (root: Coordinator, start: Int, allocated: Int, changed: [CoordinatorKey], result: OpResult)? {
        var document = NavDocument(flow: flow)
        let start = document.nextID
        var ctx = CommandContext(conflicts: nil, firstID: start)
        let ops = FlowLink.ops(link.ops, link.slots, filling: values)
        guard let result = try? document.applyLink(ops, url: "", &ctx) else { return nil }
        // Everything on the tree must be the link's own, as must every change.
        var fresh = true
        document.state.root.forEachID { if $0.number < start { fresh = false } }
        ctx.forEachChanged { key in
            if case .entry(let id) = key, id.number >= start { return }
            if key != .root { fresh = false }
        }
        guard fresh, document.state.alert == nil else { return nil }
        return (document.state.root, start, document.nextID - start, ctx.changed, result)
    }

    /// Records where `a` and `b` (the same link with `slot`'s value changed) differ, as
    /// params `slot` fills; false when they differ anywhere else.
    private static func collect(_ slot: Int, _ a: Coordinator, _ b: Coordinator, at path: [Int],
                                into fills: inout [[Int]: [(key: String, slot: Int)]]) -> Bool {
        guard a.type == b.type, a.kind == b.kind, a.selected == b.selected, a.entries.count == b.entries.count else { return false }
        for i in a.entries.indices {
            let x = a.entries[i], y = b.entries[i]
            guard x.id == y.id, x.route == y.route, x.presentation == y.presentation, x.tab == y.tab, x.hints == y.hints,
                  x.data == y.data, x.params.keys == y.params.keys else { return false }
            for key in x.params.keys where x.params[key] != y.params[key] { fills[path + [i], default: []].append((key, slot)) }
            switch (x.coordinator, y.coordinator) {
            case (nil, nil): continue
            case (let c?, let d?): guard collect(slot, c, d, at: path + [i], into: &fills) else { return false }
            default: return false
            }
        }
        return true
    }

    /// `c` with ids counted from the link's first and the fills at their entries.
    private static func planned(_ c: Coordinator, at path: [Int], _ fills: [[Int]: [(key: String, slot: Int)]],
                                start: Int) -> PlannedCoordinator {
        let entries = c.entries.indices.map { i in
            let e = c.entries[i]
            return PlannedEntry(template: Entry(id: EntryID(e.id.number - start), sharingFieldsOf: e), fills: fills[path + [i]] ?? [],
                                child: e.coordinator.map { planned($0, at: path + [i], fills, start: start) }, top: path.isEmpty)
        }
        return PlannedCoordinator(type: c.type, kind: c.kind, selected: c.selected.map { EntryID($0.number - start) },
                                  entries: entries)
    }
}

// MARK: - The text of what a plan opens

extension LinkPlan {
    /// An entry a plan opened, as it is written: its plan's text with the ids moved up
    /// and the captured values put in. The text of a deep link is most of its patch, and
    /// written from the tree it costs more than the rest of the command; from here it
    /// is a few copies. (Kept by the entry until it or anything below it changes.)
    final class WrittenEntry: Sendable {
        let text: PlannedText
        let offset: Int
        let values: [JSON?]
        /// The entry's id as opened (`Entry.id` is a public `var`: an entry given
        /// another id is written from the tree).
        let id: EntryID

        init(text: PlannedText, offset: Int, values: [JSON?], id: EntryID) {
            self.text = text
            self.offset = offset
            self.values = values
            self.id = id
        }

        /// The ids of the entry and its subtree as opened, in the order a diff's walk
        /// meets them.
        func forEachID(_ body: (EntryID) -> Void) {
            for n in text.ids { body(EntryID(n + offset)) }
        }

        /// What `Entry.write` writes for the entry.
        package func write(into out: inout ByteWriter) {
            text.bytes.withUnsafeBufferPointer { bytes in
                var start = 0
                for cut in text.cuts {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<cut.at]))
                    start = cut.at
                    if cut.slot < 0 {
                        out.append(decimal: cut.id + offset)
                    } else {
                        values[cut.slot]!.write(into: &out)
                    }
                }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
            }
        }
    }

    /// A planned entry's text (as `Entry.write` writes an entry and its subtree) cut
    /// where the ids and the captured values go.
    final class PlannedText: Sendable {
        /// At `at` in `bytes`: the number of the id `id` (counted from the link's first),
        /// or with `slot` ≥ 0 the value of that capture slot.
        struct Cut: Sendable {
            var at: Int
            var id: Int
            var slot: Int
        }

        let bytes: [UInt8]
        let cuts: [Cut]
        /// The ids of the entry and its subtree (counted from the link's first), in the
        /// order a diff's walk meets them: what leaves when the entry is replaced while
        /// it is still as opened (`StateDiff.noteRemoved`).
        let ids: [Int]

        init(_ template: Entry, _ fills: [(key: String, slot: Int)], _ child: PlannedCoordinator?) {
            var text = Writer()
            text.entry(template, fills, child)
            bytes = text.bytes
            cuts = text.cuts
            ids = text.ids
        }

        /// `Entry.write` and `Coordinator.write` over a plan (a test holds the two to the
        /// same bytes, for every plan of several flows and the states that follow).
        private struct Writer {
            var bytes: [UInt8] = []
            var cuts: [Cut] = []
            var ids: [Int] = []

            mutating func append(_ text: String) { bytes += Array(text.utf8) }
            mutating func append(_ json: JSON) { bytes += json.encoded() }
            package mutating func string(_ s: String) { bytes += ByteWriter.bytes { JSON.writeString(s, into: &$0) } }
            mutating func id(_ id: EntryID) { cuts.append(Cut(at: bytes.count, id: id.number, slot: -1)) }

            mutating func entry(_ t: Entry, _ fills: [(key: String, slot: Int)], _ child: PlannedCoordinator?) {
                ids.append(t.id.number)
                append(#"{"id":"e"#)
                id(t.id)
                append(#"","route":"#)
                string(t.route)
                append(#","params":"#)
                if t.params.isEmpty { append("{}") } else {
                    append("{")
                    for (i, (key, value)) in t.params.enumerated() {
                        if i > 0 { append(",") }
                        string(key)
                        append(":")
                        if let fill = fills.first(where: { $0.key == key }) {
                            cuts.append(Cut(at: bytes.count, id: 0, slot: fill.slot))
                        } else {
                            append(value)
                        }
                    }
                    append("}")
                }
                if let presentation = t.presentation { append(#","presentation":""# + presentation.rawValue + "\"") }
                if let tab = t.tab { append(#","tab":"#); append(tab) }
                if let hints = t.hints { append(#","hints":"#); append(.object(hints)) }
                if let data = t.data { append(#","data":"#); append(.object(data)) }
                if let child { append(#","coordinator":"#); coordinator(child) }
                append("}")
            }

            mutating func coordinator(_ c: PlannedCoordinator) {
                append(#"{"type":"#)
                string(c.type)
                append(#","kind":""# + c.kind.rawValue + "\"")
                switch c.kind {
                case .root:
                    append(#","current":"#)
                    entry(c.entries[0].template, c.entries[0].fills, c.entries[0].child)
                case .stack, .tabs:
                    append(c.kind == .stack ? #","stack":["# : #","tabs":["#)
                    for (i, e) in c.entries.enumerated() {
                        if i > 0 { append(",") }
                        entry(e.template, e.fills, e.child)
                    }
                    append("]")
                    if c.kind == .tabs {
                        append(#","selected":"#)
                        if let selected = c.selected {
                            append(#""e"#)
                            id(selected)
                            append("\"")
                        } else {
                            append("null")
                        }
                    }
                }
                append("}")
            }
        }
    }
}
