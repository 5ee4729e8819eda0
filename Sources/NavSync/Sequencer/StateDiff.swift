/// The patch from one revision's state to the next, plus what the sequencer's
/// bookkeeping needs from the same walk: which ids left the tree and which
/// coordinators appeared.
///
/// Entries are matched by id, not by position, so a pop is one `remove`, a push one
/// `add`, a kept tab that moved one `move`, and an entry is only replaced when it is
/// new — the document itself is never replaced whole.
public struct StateDiff: Sendable {
    public private(set) var ops: [PatchOperation] = []
    /// Every id that was on the old tree and is not on the new one, subtrees included.
    public private(set) var removed: [EntryID] = []
    /// Every id on the new tree that was not on the old one.
    public private(set) var added: Set<EntryID> = []
    /// Coordinators opened by added entries: they are created at this revision.
    public private(set) var created: [CoordinatorKey] = []

    public init(from old: NavState, to new: NavState) {
        diff(old.root, new.root, at: "/root")
        if old.alert != new.alert {
            ops.append(PatchOperation(.replace, "/alert", value: new.alert?.json ?? .null))
            if let a = old.alert, a.id != new.alert?.id { removed.append(a.id) }
            if let a = new.alert, a.id != old.alert?.id { added.insert(a.id) }
        }
    }

    private mutating func diff(_ a: Coordinator, _ b: Coordinator, at path: String) {
        guard a.type == b.type, a.kind == b.kind else {
            ops.append(PatchOperation(.replace, path, value: b.json))
            noteRemoved(a.entries)
            noteAdded(b.entries)
            return
        }
        if a.kind == .root {
            if a.entries[0].id == b.entries[0].id {
                diff(a.entries[0], b.entries[0], at: path + "/current")
            } else {
                ops.append(PatchOperation(.replace, path + "/current", value: b.entries[0].json))
                noteRemoved(a.entries[0])
                noteAdded(b.entries[0])
            }
            return
        }
        diffList(a.entries, b.entries, at: path + "/" + a.entriesKey)
        if a.selected != b.selected {
            ops.append(PatchOperation(.replace, path + "/selected", value: b.selected.map { .string($0.description) } ?? .null))
        }
    }

    /// Removes what left (from the end, so indices stay valid), then walks the new
    /// list: an entry already in place is diffed, one further down is moved up, and a
    /// new one is added.
    private mutating func diffList(_ old: [Entry], _ new: [Entry], at path: String) {
        if old.count == new.count, zip(old, new).allSatisfy({ $0.id == $1.id }) {
            for (i, (a, b)) in zip(old, new).enumerated() where a != b { diff(a, b, at: path + "/\(i)") }
            return
        }
        let newIDs = Set(new.map(\.id))
        var work = old
        for i in old.indices.reversed() where !newIDs.contains(old[i].id) {
            ops.append(PatchOperation(.remove, path + "/\(i)"))
            noteRemoved(old[i])
            work.remove(at: i)
        }
        for (j, b) in new.enumerated() {
            if j < work.count, work[j].id == b.id {
                if work[j] != b { diff(work[j], b, at: path + "/\(j)") }
            } else if j < work.count, let k = work[j...].firstIndex(where: { $0.id == b.id }) {
                ops.append(PatchOperation(.move, path + "/\(j)", from: path + "/\(k)"))
                let moved = work.remove(at: k)
                work.insert(moved, at: j)
                if moved != b { diff(moved, b, at: path + "/\(j)") }
            } else {
                ops.append(PatchOperation(.add, path + "/\(j)", value: b.json))
                noteAdded(b)
                work.insert(b, at: j)
            }
        }
    }

    private mutating func diff(_ a: Entry, _ b: Entry, at path: String) {
        guard a.route == b.route, a.params == b.params, a.presentation == b.presentation,
              a.tab == b.tab, a.hints == b.hints else {
            ops.append(PatchOperation(.replace, path, value: b.json))
            noteRemoved(a.coordinator?.entries ?? [])
            noteAdded(b.coordinator?.entries ?? [])
            return
        }
        switch (a.data, b.data) {
        case (nil, nil): break
        case (nil, let d?): ops.append(PatchOperation(.add, path + "/data", value: .object(d)))
        case (.some, nil): ops.append(PatchOperation(.remove, path + "/data"))
        case (let x?, let y?): JSON.object(x).diff(to: .object(y), at: path + "/data", into: &ops)
        }
        switch (a.coordinator, b.coordinator) {
        case (nil, nil): break
        case (let x?, let y?): diff(x, y, at: path + "/coordinator")
        case (nil, let y?):
            ops.append(PatchOperation(.add, path + "/coordinator", value: y.json))
            noteAdded(y.entries)
            created.append(.entry(b.id))
        case (let x?, nil):
            ops.append(PatchOperation(.remove, path + "/coordinator"))
            noteRemoved(x.entries)
        }
    }

    private mutating func noteRemoved(_ entries: [Entry]) { for e in entries { noteRemoved(e) } }
    private mutating func noteAdded(_ entries: [Entry]) { for e in entries { noteAdded(e) } }

    private mutating func noteRemoved(_ e: Entry) {
        e.forEachID { removed.append($0) }
    }

    private mutating func noteAdded(_ e: Entry) {
        added.insert(e.id)
        if let c = e.coordinator {
            created.append(.entry(e.id))
            noteAdded(c.entries)
        }
    }
}
