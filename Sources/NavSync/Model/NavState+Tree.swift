/// Addressing inside the tree: coordinator paths, the active path, finding entries.

/// A coordinator's stable name for conflict bookkeeping: the root, the id of the entry
/// that opened it, the alert, or the session's data (docs/protocol.md, "Operations: fine points", "Conflicts";
/// docs/flows.md, "Guards and redirects").
public enum CoordinatorKey: Sendable, Hashable, CustomStringConvertible {
    case root
    case entry(EntryID)
    case alert
    case data

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .root: hasher.combine(-1)
        case .alert: hasher.combine(-2)
        case .data: hasher.combine(-3)
        case .entry(let id): hasher.combine(id.number)
        }
    }

    /// Hashed like `EntryID` (server-numbered, see there).
    public func _rawHashValue(seed: Int) -> Int {
        switch self {
        case .root: EntryID.mix(UInt64(bitPattern: -1), seed: seed)
        case .alert: EntryID.mix(UInt64(bitPattern: -2), seed: seed)
        case .data: EntryID.mix(UInt64(bitPattern: -3), seed: seed)
        case .entry(let id): EntryID.mix(UInt64(bitPattern: Int64(id.number)), seed: seed)
        }
    }

    /// `root`, `e7`, `alert`: what `at` takes for the first two.
    public var description: String {
        switch self {
        case .root: return "root"
        case .entry(let id): return id.description
        case .alert: return "alert"
        case .data: return "data"
        }
    }
}

extension NavState {
    public subscript(path: CoordinatorPath) -> Coordinator {
        get {
            var c = root
            for i in path { c = c.entries[i].coordinator! }
            return c
        }
    }

    /// Changes the coordinator at `path` in place.
    mutating func modify<R, E: Error>(_ path: CoordinatorPath, _ body: (inout Coordinator) throws(E) -> R) throws(E) -> R {
        var key = CoordinatorKey.root
        return try Self.modify(&root, path, from: 0, &key, body)
    }

    /// The same, also giving the coordinator's key, read on the way down (not by a
    /// second walk, `key(of:)`).
    mutating func modifyKeyed(_ path: CoordinatorPath, _ body: (inout Coordinator) -> Void) -> CoordinatorKey {
        var key = CoordinatorKey.root
        Self.modify(&root, path, from: 0, &key, body)
        return key
    }

    /// Down the path from `level`, changing each coordinator on the way in place.
    private static func modify<R, E: Error>(_ c: inout Coordinator, _ path: CoordinatorPath, from level: Int, _ key: inout CoordinatorKey,
                                            _ body: (inout Coordinator) throws(E) -> R) throws(E) -> R {
        guard level < path.count else { return try body(&c) }
        let i = path[level]
        if level == path.count - 1 { key = .entry(c.entries[i].id) }
        return try modify(&c.entries[i].coordinator!, path, from: level + 1, &key, body)
    }

    public func key(of path: CoordinatorPath) -> CoordinatorKey {
        guard let last = path.last else { return .root }
        var c = root
        for i in path.dropLast() { c = c.entries[i].coordinator! }
        return .entry(c.entries[last].id)
    }

    /// The coordinators from the root to the deepest one on the active path: a root's
    /// current entry, a stack's top, the selected tab, and on into their coordinators.
    public var activePath: [CoordinatorPath] {
        var paths: [CoordinatorPath] = [[]]
        var path: CoordinatorPath = []
        Self.walkActive(root, &path, &paths)
        return paths
    }

    /// Down the visible entries. (Each child read once: a check for nil and a second
    /// read copied it out of its entry's box twice.)
    private static func walkActive(_ c: Coordinator, _ path: inout CoordinatorPath, _ paths: inout [CoordinatorPath]) {
        guard let i = c.visibleIndex, let child = c.entries[i].coordinator else { return }
        path.append(i)
        paths.append(path)
        walkActive(child, &path, &paths)
    }

    /// The deepest coordinator on the active path that `matches`, found in one walk
    /// down with one path (targeting runs on every command: no list of paths).
    func deepestActive(where matches: (Coordinator) -> Bool) -> CoordinatorPath? {
        deepestActive { matches($0) ? () : nil }?.path
    }

    /// The deepest coordinator on the active path that `match` gives a value for, with
    /// its path and that value: what the caller needs of it, not a copy of it held to
    /// the end of the walk (three releases per command fewer). (Each step down still
    /// copies the child out of its entry's box: the compiler cannot prove the box
    /// unchanged meanwhile.)
    func deepestActive<T>(_ match: (Coordinator) -> T?) -> (path: CoordinatorPath, value: T)? {
        var path: CoordinatorPath = []
        var found: (depth: Int, value: T)?
        Self.walkDeepest(root, &path, match, &found)
        guard let found else { return nil }
        path.removeLast(path.count - found.depth)
        return (path, found.value)
    }

    private static func walkDeepest<T>(_ c: Coordinator, _ path: inout CoordinatorPath, _ match: (Coordinator) -> T?,
                                       _ found: inout (depth: Int, value: T)?) {
        if let value = match(c) { found = (path.count, value) }
        // (The child read once, as in `walkActive`.)
        guard let i = c.visibleIndex, let child = c.entries[i].coordinator else { return }
        path.append(i)
        walkDeepest(child, &path, match, &found)
    }

    /// The deepest screen a device shows: the visible entry of the deepest coordinator.
    public var activeEntry: (path: CoordinatorPath, index: Int)? {
        let deepest = activePath.last!
        return self[deepest].visibleIndex.map { (deepest, $0) }
    }

    /// Where the entry with this id is: its coordinator's path and its index there.
    public func locate(_ id: EntryID) -> (path: CoordinatorPath, index: Int)? {
        var path: CoordinatorPath = []
        return Self.locate(id, in: root, &path)
    }

    private static func locate(_ id: EntryID, in c: Coordinator, _ path: inout CoordinatorPath) -> (path: CoordinatorPath, index: Int)? {
        // By index: an entry is looked at in place, not copied.
        for i in c.entries.indices {
            if c.entries[i].id == id { return (path, i) }
            if let child = c.entries[i].coordinator {
                path.append(i)
                if let found = locate(id, in: child, &path) { return found }
                path.removeLast()
            }
        }
        return nil
    }

    /// Paths of every coordinator of the given type, anywhere on the tree.
    public func paths(ofType type: String) -> [CoordinatorPath] {
        var found: [CoordinatorPath] = []
        var path: CoordinatorPath = []
        func walk(_ c: Coordinator) {
            if c.type == type { found.append(path) }
            for i in c.entries.indices {
                guard let child = c.entries[i].coordinator else { continue }
                path.append(i)
                walk(child)
                path.removeLast()
            }
        }
        walk(root)
        return found
    }

    /// How many coordinators of `type` are on the tree, and the path of the first: what
    /// `at` by type needs. `mayHold(t)`: whether a coordinator of type `t` can have one of
    /// `type` at or below it (the walk skips the subtrees that cannot). The path is made
    /// only for the first, built while the walk comes back up (listing every path cost
    /// three allocations per lookup).
    func firstPath(ofType type: String, mayHold: (String) -> Bool) -> (path: CoordinatorPath?, count: Int) {
        var count = 0
        var path: CoordinatorPath?   // deepest index first until the walk is done
        /// Whether the first one is at or below `c`.
        func walk(_ c: Coordinator) -> Bool {
            var holdsFirst = false
            if c.type == type {
                count += 1
                if count == 1 { path = []; holdsFirst = true }
            }
            for i in c.entries.indices {
                guard let child = c.entries[i].coordinator, mayHold(child.type) else { continue }
                if walk(child) { path!.append(i); holdsFirst = true }
            }
            return holdsFirst
        }
        _ = walk(root)
        path?.reverse()
        return (path, count)
    }

    /// Calls `body` with every entry id and coordinator key on the tree (the alert too).
    public func forEachID(_ body: (EntryID) -> Void) {
        root.forEachID(body)
        if let alert { body(alert.id) }
    }
}

extension Coordinator {
    func forEachID(_ body: (EntryID) -> Void) {
        for e in entries { e.forEachID(body) }
    }
}

extension Entry {
    func forEachID(_ body: (EntryID) -> Void) {
        body(id)
        coordinator?.forEachID(body)
    }
}
