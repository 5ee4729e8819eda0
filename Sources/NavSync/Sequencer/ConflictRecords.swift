/// When each gone id left the tree (docs/protocol.md, "Operations"): the revision of the newest
/// `capacity` removals, for `onConflict: "reject"` and `superseded`. Older records are
/// forgotten oldest first, and `horizon` says up to which revision: an id without a
/// record that is gone left at or before it.
///
/// Ids are numbered by the server in order, and the ids that leave are mostly the recent
/// ones, so records live in an array indexed by id number over the newest ids
/// (`IDRevisions`); the few records of ids below it (an entry that lived a long time)
/// are kept in a dictionary. In one hash table of tens of thousands of records, each of
/// a deep link's removals (and each forgetting) landed somewhere cold.
public struct RemovalTable: Sendable, Equatable {
    /// Records kept; past it, the oldest half is forgotten. Bounds the memory of a
    /// session that runs for millions of commands.
    public var capacity: Int {
        didSet { revisions.window = Self.window(for: capacity) }
    }
    /// Removals at or before this revision are forgotten.
    public private(set) var horizon = 0
    /// Records held.
    public var count: Int { revisions.count }
    private var revisions: IDRevisions
    /// Records in the order they were made, which is revision order, so the oldest are
    /// forgotten without sorting. One whose id was revived or removed again since is
    /// stale and skipped.
    private var order = PagedArray<(id: EntryID, rev: Int)>()

    public init(capacity: Int = 65_536) {
        self.capacity = capacity
        revisions = IDRevisions(window: Self.window(for: capacity))
    }

    /// How many ids the array spans before it slides: twice the records kept, so the
    /// recent removals are nearly all in it.
    private static func window(for capacity: Int) -> Int { 2 * max(capacity, 1024) }

    /// Records as a snapshot kept them.
    public init(capacity: Int = 65_536, horizon: Int, records: [(id: EntryID, rev: Int)]) {
        self.init(capacity: capacity)
        self.horizon = horizon
        for r in records.sorted(by: { $0.rev < $1.rev }) { note(r.id, removedAt: r.rev) }
    }

    /// The revision `id` left at, if it is recorded.
    public subscript(id: EntryID) -> Int? { revisions[id] }

    /// Every record, by id.
    public var records: [(id: EntryID, rev: Int)] { revisions.records }

    /// The same records (capacity and horizon aside).
    public static func == (a: RemovalTable, b: RemovalTable) -> Bool { a.revisions == b.revisions }

    /// Records that `id` left the tree at `rev` (after any record it had).
    public mutating func note(_ id: EntryID, removedAt rev: Int) {
        revisions[id] = rev
        order.append((id, rev))
        // Stale records pile up when ids are revived (restore) rather than forgotten.
        if order.count > Self.window(for: capacity) {
            let table = self
            order.removeAll { table[$0.id] != $0.rev }
        }
    }

    /// `id` is live again (a restore brought it back): it has no record.
    public mutating func revive(_ id: EntryID) { revisions[id] = nil }

    /// Past the capacity, forgets the oldest records down to half of it; the horizon
    /// moves up to the newest revision forgotten, and the other records of that revision
    /// go with it.
    public mutating func forgetIfFull() {
        guard count > capacity else { return }
        var head = 0
        while head < order.count, count > capacity / 2 || order[head].rev <= horizon {
            let (id, rev) = order[head]
            if self[id] == rev {
                revive(id)
                horizon = max(horizon, rev)
            }
            head += 1
        }
        order.removeFirst(head)
    }
}

/// One revision per entry id, for the ids of a session (which the server numbers in
/// order, and of which the recent ones are the busy ones): an array indexed by id number
/// from `low` up, a window that slides up as higher ids come, and a dictionary for the
/// ids below it.
struct IDRevisions: Sendable, Equatable {
    /// How far above `low` the window reaches before it slides.
    var window: Int
    /// Ids with a revision.
    private(set) var count = 0
    /// The id number of `slots[0]`.
    private var low = 0
    /// Slot `i`: the revision of id `low + i`, stored plus one: 0 for none. In pages, so
    /// a scratch copy's write copies a page, not the window (`PagedArray`).
    private var slots = PagedArray<Int>()
    /// The revisions of ids below `low`.
    private var far: [EntryID: Int] = [:]

    init(window: Int) { self.window = window }

    subscript(id: EntryID) -> Int? {
        get {
            let i = id.number &- low
            guard i >= 0 else { return far[id] }
            return i < slots.count && slots[i] != 0 ? slots[i] - 1 : nil
        }
        set {
            var i = id.number &- low
            if i < 0 {
                let had = newValue.map { far.updateValue($0, forKey: id) } ?? far.removeValue(forKey: id)
                count += (newValue == nil ? 0 : 1) - (had == nil ? 0 : 1)
                return
            }
            if i >= slots.count {
                guard newValue != nil else { return }
                if i >= window {
                    // Keep the upper half; past a gap of ids never handed out (a `load`
                    // skipped them), start the window at this id.
                    let end = low + slots.count
                    slide(to: id.number - end >= window / 2 ? id.number : id.number - window / 2)
                    i = id.number - low
                }
                // One at a time: `append(contentsOf: repeatElement(…))` took the generic
                // path for the dozen new ids of a deep link.
                while slots.count <= i { slots.append(0) }
            }
            count += (newValue == nil ? 0 : 1) - (slots[i] == 0 ? 0 : 1)
            slots[i] = newValue.map { $0 + 1 } ?? 0
        }
    }

    /// Every id with its revision, by id.
    var records: [(id: EntryID, rev: Int)] {
        var list = far.map { (id: $0.key, rev: $0.value) }.sorted { $0.id < $1.id }
        for (i, slot) in slots.enumerated() where slot != 0 { list.append((EntryID(low + i), slot - 1)) }
        return list
    }

    /// The same ids with the same revisions, wherever each is held.
    static func == (a: IDRevisions, b: IDRevisions) -> Bool {
        a.count == b.count && a.records.elementsEqual(b.records) { $0.id == $1.id && $0.rev == $1.rev }
    }

    /// Moves the window's bottom up to `newLow`; the revisions of the ids it leaves go to `far`.
    private mutating func slide(to newLow: Int) {
        let gone = min(newLow - low, slots.count)
        for i in 0..<gone where slots[i] != 0 { far[EntryID(low + i)] = slots[i] - 1 }
        slots.removeFirst(gone)
        low = newLow
    }
}

/// The revision at which each live coordinator last changed (docs/protocol.md, "Operations: fine points", "Conflicts"):
/// the root's, the alert's, and each coordinator opened by an entry, by the entry's id
/// (`IDRevisions`: a deep link creates and removes a handful of coordinators, each an
/// insert or a delete in a hash table otherwise).
public struct ChangeTable: Sendable, Equatable {
    private var root: Int?
    private var alert: Int?
    private var data: Int?
    private var entries = IDRevisions(window: 4096)

    public init() {}

    public subscript(key: CoordinatorKey) -> Int? {
        get {
            switch key {
            case .root: root
            case .alert: alert
            case .data: data
            case .entry(let id): entries[id]
            }
        }
        set {
            switch key {
            case .root: root = newValue
            case .alert: alert = newValue
            case .data: data = newValue
            case .entry(let id): entries[id] = newValue
            }
        }
    }

    /// Every key with its revision: root, alert, data, then entries by id.
    public var records: [(key: CoordinatorKey, rev: Int)] {
        var list: [(key: CoordinatorKey, rev: Int)] = []
        if let root { list.append((.root, root)) }
        if let alert { list.append((.alert, alert)) }
        if let data { list.append((.data, data)) }
        return list + entries.records.map { (.entry($0.id), $0.rev) }
    }
}
