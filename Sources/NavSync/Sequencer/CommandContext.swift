/// What one command carries from operation to operation.
///
/// Not copyable: a command has one context, handed on by reference (`inout`,
/// `borrowing`); as a copyable struct the optimizer built it twice per command and
/// copied one (docs/architecture.md, "The core, per command").
public struct CommandContext: Sendable, ~Copyable {
    /// Set for `onConflict: "reject"` with a `base`; nil otherwise.
    public var conflicts: ConflictGuard?
    /// Ids from this number on were allocated by this command: coordinators they open
    /// never conflict (docs/protocol.md, "Operations: fine points": "created earlier in the same command do not count").
    public let firstID: Int
    /// Coordinators an applied operation targeted: they change at this revision. A key
    /// may be listed more than once (a list, not a set: most commands change one).
    public var changed: [CoordinatorKey] { Array(changedKeys) }
    private var changedKeys = KeyList()

    mutating func noteChanged(_ key: CoordinatorKey) { changedKeys.append(key) }

    func forEachChanged(_ body: (CoordinatorKey) -> Void) { changedKeys.forEach(body) }
    /// The stack edit the last push or cut (pop, popTo, dismiss…) made. A command of that
    /// one operation runs in place, and the sequencer writes its patch from the edit
    /// (there is no old tree to diff against); `open` clears it, as its link may run
    /// more than one.
    var edit: StackEdit?
    /// In a guarded flow, the entries the last cut removed (references, not copies), so
    /// a lone stack edit a guard refuses can be put back without a copy of the tree.
    var cutEntries: [Entry]?
    /// What the last link opened by its plan did (`LinkPlan.Opened`): a command of that
    /// one `open` writes its diff from it.
    var opened: LinkPlan.Opened?
    /// Whether a `reset` applied: everything changes at this revision.
    public package(set) var didReset = false
    /// Ids a `load` skipped when it raised the counter: never allocated, so never gone.
    public package(set) var skipped: Range<Int>?
    /// Ids allocated by ops a guard's redirect undid (the counter stays past them):
    /// not among the command's `created`.
    var undone: [Range<Int>]?

    /// The ids this command allocated, in order, up to `next` (the counter after it):
    /// neither those a `load` skipped nor those of an op a redirect undid.
    func created(upTo next: Int) -> [EntryID] {
        guard firstID < next else { return [] }
        if skipped == nil, undone == nil { return (firstID..<next).map(EntryID.init) }
        // The ranges left out are stepped over whole: a `load` may skip to a far counter
        // (two billion ids filtered one by one took minutes).
        let cuts = ((undone ?? []) + (skipped.map { [$0] } ?? [])).sorted { $0.lowerBound < $1.lowerBound }
        var ids: [EntryID] = []
        var n = firstID
        for cut in cuts {
            if n < cut.lowerBound { ids += (n..<min(cut.lowerBound, next)).map(EntryID.init) }
            n = max(n, cut.upperBound)
            if n >= next { return ids }
        }
        if n < next { ids += (n..<next).map(EntryID.init) }
        return ids
    }
    /// Operations the sender may not run, with why (docs/protocol.md, "Who may do what (--auth FILE)"). Checked on
    /// every operation that runs, including those a deep link expands to.
    public let refused: [OpName: String]

    @inline(__always)    // made in place at its call: about 1% of a push/pop command's instructions
    public init(conflicts: ConflictGuard?, firstID: Int, refused: [OpName: String] = [:]) {
        self.conflicts = conflicts
        self.firstID = firstID
        self.refused = refused
    }
}

/// The bookkeeping `reject` needs: when each coordinator last changed, when each gone
/// id disappeared, and the revision the sender had seen.
///
/// A class: the context every command carries holds one reference, not the two tables
/// inline, which made building a context copy them on every command, guarded or not.
public final class ConflictGuard: Sendable {
    public let base: Int
    public let rev: Int
    public let lastChanged: ChangeTable
    public let removedAt: RemovalTable

    public init(base: Int, rev: Int, lastChanged: ChangeTable, removedAt: RemovalTable) {
        self.base = base
        self.rev = rev
        self.lastChanged = lastChanged
        self.removedAt = removedAt
    }

    func check(_ touched: [CoordinatorKey], gone: [EntryID], firstID: Int, describe: (CoordinatorKey) -> String) throws(NavError) {
        for key in touched {
            if case .entry(let id) = key, id.number >= firstID { continue }
            if let changed = lastChanged[key], changed > base {
                throw NavError(.conflict, "\(describe(key)) changed at revision \(changed), after base \(base)", rev: rev)
            }
        }
        for id in gone {
            if let removed = removedAt[id], removed > base {
                throw NavError(.conflict, "\(id) was removed at revision \(removed), after base \(base)", rev: rev)
            }
            // Forgotten: it left at or before the horizon; a base older than that may not have seen it go.
            if removedAt[id] == nil, base < removedAt.horizon {
                throw NavError(.conflict, "\(id) was removed at or before revision \(removedAt.horizon), and base \(base) is older", rev: rev)
            }
        }
    }
}

/// One change to one stack, as an operation made it: an entry pushed, or the stack cut.
/// (A struct, not an enum with payloads: copying such an enum went through its value
/// witnesses, a call per field, on every push and pop.)
struct StackEdit: Sendable, Equatable {
    /// The stack's coordinator.
    var path: CoordinatorPath
    /// The stack's length after the edit and before it: one more after a push.
    var count: Int
    var previousCount: Int
    /// For a cut: the ids that left, each cut entry's with its subtree's, the top
    /// entry's first (the order of the patch's `remove` ops). The ids, not the entries:
    /// the entries are let go where they are cut, and a lone pop keeps no list.
    var removed = EntryIDList()

    var isPush: Bool { count > previousCount }

    static func pushed(_ path: CoordinatorPath, to count: Int) -> StackEdit {
        StackEdit(path: path, count: count, previousCount: count - 1)
    }

    static func cut(_ path: CoordinatorPath, to count: Int, from previousCount: Int, removed: EntryIDList) -> StackEdit {
        StackEdit(path: path, count: count, previousCount: previousCount, removed: removed)
    }
}
