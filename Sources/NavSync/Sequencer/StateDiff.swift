/// The patch from one revision's state to the next, plus what the sequencer's
/// bookkeeping needs from the same walk: which ids left the tree and which
/// coordinators appeared.
///
/// Entries are matched by id, not by position, so a pop is one `remove`, a push one
/// `add`, a kept tab that moved one `move`, and an entry is only replaced when it is
/// new — the document itself is never replaced whole, a list only when none of its
/// entries is kept.
///
/// Not copyable, and it borrows the states it is made from: a command makes one diff,
/// and the optimizer otherwise copied it and the states (an initializer owns its
/// arguments).
public struct StateDiff: Sendable, ~Copyable {
    /// The patch's operations.
    public var ops: [PatchOperation] { operations.values }
    /// The same as the patch holds them: the walk's as values, an edit's as bytes.
    var operations: PatchOps { encoded.map(PatchOps.encoded) ?? .values(walked) }
    /// The walk's operations.
    private var walked: [PatchOperation] = []
    /// An edit's operations, written as they are sent.
    private var encoded: [UInt8]?
    /// The ids that left, those that arrived and the coordinators created, as the walk or
    /// the edit listed them (see `forEachRemoved`…).
    private var removedIDs = EntryIDList()
    private var addedIDs = EntryIDList()
    private var createdKeys = KeyList()
    /// For a link its plan opened: the ids that arrive and the coordinators created are
    /// the plan's, moved up by the offset, and the ids that leave those of the entries
    /// it replaced. Gone through when asked rather than listed: the three lists were
    /// three allocations and a walk of the old tree per link.
    private var opened: (plan: LinkPlan.Opened, replaced: [Entry])?

    /// Every id that was on the old tree and is not on the new one, subtrees included,
    /// in the walk's order.
    func forEachRemoved(_ body: (EntryID) -> Void) {
        removedIDs.forEach(body)
        guard let replaced = opened?.replaced else { return }
        for e in replaced {
            if let written = e.writtenAhead { written.forEachID(body) } else { e.forEachID(body) }
        }
    }

    /// Every id on the new tree that was not on the old one.
    func forEachAdded(_ body: (EntryID) -> Void) {
        addedIDs.forEach(body)
        guard let plan = opened?.plan else { return }
        for n in plan.outcome.added { body(EntryID(n + plan.offset)) }
    }

    /// Coordinators opened by added entries: they are created at this revision.
    func forEachCreated(_ body: (CoordinatorKey) -> Void) {
        createdKeys.forEach(body)
        guard let plan = opened?.plan else { return }
        for n in plan.outcome.created { body(.entry(EntryID(n + plan.offset))) }
    }

    /// Whether `id` is one of those added.
    func adds(_ id: EntryID) -> Bool {
        if let plan = opened?.plan { return plan.outcome.arrives(id.number - plan.offset) }
        return addedIDs.contains(id)
    }

    /// The same as lists.
    var removed: EntryIDList { var list = EntryIDList(); forEachRemoved { list.append($0) }; return list }
    var added: EntryIDList { var list = EntryIDList(); forEachAdded { list.append($0) }; return list }
    var created: KeyList { var list = KeyList(); forEachCreated { list.append($0) }; return list }
    /// The JSON Pointer of the walk's position, as bytes: extended going down and cut
    /// back coming up, made into a string only for an op. Building a path string per
    /// level visited cost more than the rest of the walk.
    private var path: [UInt8] = []

    private init() {}

    /// What the walk notes of `entries` arriving: their ids with their subtrees', and the
    /// coordinators they open, in the walk's order (a link's plan lists them ahead).
    static func arrivals(_ entries: [Entry]) -> (added: EntryIDList, created: KeyList) {
        var diff = StateDiff()
        diff.noteAdded(entries)
        return (diff.addedIDs, diff.createdKeys)
    }

    public init(from old: borrowing NavState, to new: borrowing NavState) {
        path.reserveCapacity(96)
        within("root") { $0.diff(old.root, new.root) }
        if old.alert != new.alert {
            walked.append(PatchOperation(.replace, "/alert", value: new.alert?.json ?? .null))
            if let a = old.alert, a.id != new.alert?.id { removedIDs.append(a.id) }
            if let a = new.alert, a.id != old.alert?.id { addedIDs.append(a.id) }
        }
        if old.data != new.data {
            switch (old.data, new.data) {
            case (nil, let d?): walked.append(PatchOperation(.add, "/data", value: .object(d)))
            case (_?, nil): walked.append(PatchOperation(.remove, "/data"))
            default: walked.append(PatchOperation(.replace, "/data", value: .object(new.data!)))
            }
        }
    }

    /// The diff of one stack edit, written from the edit rather than found by walking
    /// both trees: the ops and bookkeeping the walk gives for it (a push is one `add` at
    /// the end, a cut one `remove` per entry from the end), at the cost of the path's
    /// length; `new` is the state after the edit (the one before is not needed). Nil for
    /// an edit of a list that is not a stack.
    init?(edit: StackEdit, in new: borrowing NavState) {
        let p = edit.path
        // The stack's JSON Pointer is written into a buffer on the stack (most commands
        // come here: the walk's growing byte array cost more than the rest of the diff).
        let written: Bool = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 48 + 48 * p.count) { buffer in
            var pointer = PointerWriter(buffer)
            pointer.put("/root")
            var c = new.root
            for i in p {
                switch c.kind {
                case .root: pointer.put("/current")
                case .stack: pointer.put("/stack/"); pointer.put(i)
                case .tabs: pointer.put("/tabs/"); pointer.put(i)
                }
                pointer.put("/coordinator")
                c = c.entries[i].coordinator!
            }
            guard c.kind == .stack else { return false }
            pointer.put("/stack/")
            // The ops are written as they are sent (`PatchOps`), one array for them all.
            if edit.isPush {
                let index = c.entries.count - 1
                encoded = ByteWriter.bytes(capacity: 160) { out in
                    out.append(ascii: #"{"op":"add","path":""#)
                    pointer.write(ending: index, into: &out)
                    out.append(ascii: #"","value":"#)
                    c.entries[index].write(into: &out)
                    out.append(UInt8(ascii: "}"))
                }
                noteAdded(c.entries[index])
            } else {
                encoded = ByteWriter.bytes(capacity: 96 * (edit.previousCount - edit.count)) { out in
                    for i in (edit.count..<edit.previousCount).reversed() {
                        if i < edit.previousCount - 1 { out.append(UInt8(ascii: ",")) }
                        out.append(ascii: #"{"op":"remove","path":""#)
                        pointer.write(ending: i, into: &out)
                        out.append(ascii: #""}"#)
                    }
                }
                removedIDs = edit.removed
            }
            return true
        }
        guard written else { return nil }
    }

    /// The diff of a link its plan opened, from the plan rather than found by walking
    /// both trees: what the walk gives when the root's entries are all replaced (one
    /// `replace` of the root's entry or stack, every old id removed), with the ids that
    /// arrive and the coordinators created known ahead. Nil when the tree changed in
    /// any other way (then walk).
    init?(opened: LinkPlan.Opened, from old: borrowing NavState, to new: borrowing NavState) {
        let a = old.root, b = new.root
        guard a.type == b.type, a.kind == b.kind, old.alert == new.alert, old.data == new.data, !a.entries.isEmpty,
              b.entries.count == opened.outcome.root.entries.count else { return nil }
        switch b.kind {
        case .root: walked = [PatchOperation(.replace, "/root/current", payload: .entry(b.entries[0]))]
        case .stack: walked = [PatchOperation(.replace, "/root/stack", payload: .entries(b.entries))]
        case .tabs: return nil
        }
        self.opened = (opened, a.entries)
    }

    /// Bytes of a JSON Pointer in a buffer the caller sized (at most 48 bytes per level).
    private struct PointerWriter {
        let buffer: UnsafeMutableBufferPointer<UInt8>
        var count = 0

        init(_ buffer: UnsafeMutableBufferPointer<UInt8>) { self.buffer = buffer }

        mutating func put(_ text: StaticString) {
            (buffer.baseAddress! + count).update(from: text.utf8Start, count: text.utf8CodeUnitCount)
            count += text.utf8CodeUnitCount
        }

        mutating func put(_ n: Int) {
            count += writeDecimal(n, at: buffer.baseAddress! + count)
        }

        /// The pointer so far with `last` appended, written into `out` (its tokens are
        /// names and numbers: nothing in it needs a JSON escape).
        package func write(ending last: Int, into out: inout ByteWriter) {
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<count]))
            out.append(decimal: last)
        }
    }

    // MARK: The position

    private mutating func within(_ token: StaticString, _ body: (inout StateDiff) -> Void) {
        let mark = path.count
        path.append(UInt8(ascii: "/"))
        path.append(contentsOf: UnsafeBufferPointer(start: token.utf8Start, count: token.utf8CodeUnitCount))
        body(&self)
        path.removeSubrange(mark...)
    }

    private mutating func within(_ index: Int, _ body: (inout StateDiff) -> Void) {
        let mark = path.count
        path.append(UInt8(ascii: "/"))
        path.append(decimal: index)
        body(&self)
        path.removeSubrange(mark...)
    }

    private var here: String { String(decoding: path, as: UTF8.self) }

    private mutating func emit(_ kind: PatchOperation.Kind, _ payload: PatchOperation.Payload? = nil) {
        walked.append(PatchOperation(kind, here, payload: payload))
    }

    private mutating func emit(_ kind: PatchOperation.Kind, _ token: StaticString, _ payload: PatchOperation.Payload? = nil) {
        within(token) { $0.emit(kind, payload) }
    }

    private mutating func emit(_ kind: PatchOperation.Kind, _ index: Int, _ payload: PatchOperation.Payload? = nil) {
        within(index) { $0.emit(kind, payload) }
    }

    // MARK: The walk

    private mutating func diff(_ a: Coordinator, _ b: Coordinator) {
        if a.selected == b.selected && Self.sameStorage(a.entries, b.entries) { return }
        guard a.type == b.type, a.kind == b.kind else {
            emit(.replace, .coordinator(b))
            noteRemoved(a.entries)
            noteAdded(b.entries)
            return
        }
        switch a.kind {
        case .root:
            if a.entries[0].id == b.entries[0].id {
                within("current") { $0.diff(a.entries[0], b.entries[0]) }
            } else {
                emit(.replace, "current", .entry(b.entries[0]))
                noteRemoved(a.entries[0])
                noteAdded(b.entries[0])
            }
            return
        case .stack: within("stack") { $0.diffList(a.entries, b.entries) }
        case .tabs: within("tabs") { $0.diffList(a.entries, b.entries) }
        }
        if a.selected != b.selected {
            emit(.replace, "selected", .json(b.selected.map { .string($0.description) } ?? .null))
        }
    }

    /// The common prefix is diffed in place. When the tails share no entry (a push, a
    /// pop, a replaced stack) each new entry replaces the old one at its index, what is
    /// left of the old tail is removed from the end and of the new one added; a list
    /// with no entry kept is replaced whole (one op, not one per entry: `setStack`).
    /// Otherwise `diffMoves` handles entries that changed places.
    private mutating func diffList(_ old: [Entry], _ new: [Entry]) {
        var p = 0
        while p < old.count, p < new.count, old[p].id == new[p].id {
            if !Self.unchanged(old[p], new[p]) { within(p) { $0.diff(old[p], new[p]) } }
            p += 1
        }
        if p == old.count && p == new.count { return }
        let shared = old[p...].contains { o in new[p...].contains { $0.id == o.id } }
        guard !shared else { return diffMoves(old, new, from: p) }
        if p == 0 && !old.isEmpty && !new.isEmpty {
            emit(.replace, .entries(new))
            noteRemoved(old)
            noteAdded(new)
            return
        }
        let paired = min(old.count, new.count)
        for i in (paired..<old.count).reversed() {
            emit(.remove, i)
            noteRemoved(old[i])
        }
        for i in p..<paired {
            emit(.replace, i, .entry(new[i]))
            noteRemoved(old[i])
            noteAdded(new[i])
        }
        for j in paired..<new.count {
            emit(.add, j, .entry(new[j]))
            noteAdded(new[j])
        }
    }

    /// The general case, after a common prefix of `start` entries that is done already:
    /// removes what left (from the end, so indices stay valid), then walks the new
    /// list: an entry already in place is diffed, one further down is moved up, and a
    /// new one is added.
    private mutating func diffMoves(_ old: [Entry], _ new: [Entry], from start: Int) {
        let newIDs = Set(new[start...].map(\.id))
        var work = old
        for i in (start..<old.count).reversed() where !newIDs.contains(old[i].id) {
            emit(.remove, i)
            noteRemoved(old[i])
            work.remove(at: i)
        }
        for j in start..<new.count {
            if j < work.count, work[j].id == new[j].id {
                if !Self.unchanged(work[j], new[j]) { within(j) { $0.diff(work[j], new[j]) } }
            } else if j < work.count, let k = work[j...].firstIndex(where: { $0.id == new[j].id }) {
                let from = within(k)
                within(j) { $0.walked.append(PatchOperation(.move, $0.here, from: from)) }
                let moved = work.remove(at: k)
                work.insert(moved, at: j)
                if !Self.unchanged(moved, new[j]) { within(j) { $0.diff(moved, new[j]) } }
            } else {
                emit(.add, j, .entry(new[j]))
                noteAdded(new[j])
                work.insert(new[j], at: j)
            }
        }
    }

    /// The path of item `index` of the list being walked.
    private mutating func within(_ index: Int) -> String {
        var pointer = ""
        within(index) { pointer = $0.here }
        return pointer
    }

    private mutating func diff(_ a: Entry, _ b: Entry) {
        guard a.sameScreen(as: b) else {
            emit(.replace, .entry(b))
            noteRemoved(a.coordinator?.entries ?? [])
            noteAdded(b.coordinator?.entries ?? [])
            return
        }
        switch (a.data, b.data) {
        case (nil, nil): break
        case (nil, let d?): emit(.add, "data", .json(.object(d)))
        case (.some, nil): emit(.remove, "data")
        case (let x?, let y?): within("data") { JSON.object(x).diff(to: .object(y), at: $0.here, into: &$0.walked) }
        }
        switch (a.coordinator, b.coordinator) {
        case (nil, nil): break
        case (let x?, let y?): within("coordinator") { $0.diff(x, y) }
        case (nil, let y?):
            emit(.add, "coordinator", .coordinator(y))
            noteAdded(y.entries)
            createdKeys.append(.entry(b.id))
        case (let x?, nil):
            emit(.remove, "coordinator")
            noteRemoved(x.entries)
        }
    }

    /// A command works on a copy of the document, so every subtree it did not touch
    /// still shares its array storage with the old one: same storage, same contents.
    /// This keeps the diff proportional to what changed, not to the size of the tree.
    static func sameStorage(_ a: [Entry], _ b: [Entry]) -> Bool {
        a.withUnsafeBufferPointer { pa in
            b.withUnsafeBufferPointer { pb in pa.baseAddress == pb.baseAddress && pa.count == pb.count }
        }
    }

    /// Whether an entry that kept its id is unchanged, without comparing whole subtrees
    /// that share storage.
    static func unchanged(_ a: Entry, _ b: Entry) -> Bool {
        if a.sharesFields(with: b) { return true }
        switch (a.coordinator, b.coordinator) {
        case (nil, nil): break
        case (let x?, let y?):
            guard x.selected == y.selected, sameStorage(x.entries, y.entries) else { return false }
        default: return false
        }
        return a.sameScreen(as: b) && a.data == b.data
    }

    private mutating func noteRemoved(_ entries: [Entry]) { for e in entries { noteRemoved(e) } }
    private mutating func noteAdded(_ entries: [Entry]) { for e in entries { noteAdded(e) } }

    /// (Its own walk, not `forEachID` with a closure: that cost twice as much per id.)
    private mutating func noteRemoved(_ e: Entry) {
        // An entry still as a link's plan opened it (a deep link replacing the one
        // before): its subtree's ids are the plan's, moved up, listed in this walk's order.
        if let written = e.writtenAhead {
            written.forEachID { removedIDs.append($0) }
            return
        }
        removedIDs.append(e.id)
        if let c = e.coordinator { noteRemoved(c.entries) }
    }

    private mutating func noteAdded(_ e: Entry) {
        addedIDs.append(e.id)
        if let c = e.coordinator {
            createdKeys.append(.entry(e.id))
            noteAdded(c.entries)
        }
    }
}
