/// An array kept in pages of 1,024 elements: a copy shares the pages, and a write to
/// the copy copies the one page it lands in (and the list of pages), not every element.
///
/// For the large tables of a sequencer that a cluster node's scratch copy writes to
/// (`Sequencer.scratchCopy`): as one array, the first write of each append copied the
/// whole table, up to a megabyte (docs/architecture.md, "Measured reasons in the code").
struct PagedArray<Element: Sendable>: Sendable, RandomAccessCollection {
    private static var shift: Int { 10 }
    private static var pageSize: Int { 1 << shift }
    private var pages: [[Element]] = []
    private(set) var count = 0

    init() {}

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    subscript(i: Int) -> Element {
        get { pages[i >> Self.shift][i & (Self.pageSize - 1)] }
        set { pages[i >> Self.shift][i & (Self.pageSize - 1)] = newValue }
    }

    /// (A page grows as an array does: a table of a few elements holds a few, not a
    /// page's worth.)
    mutating func append(_ element: Element) {
        if count & (Self.pageSize - 1) == 0 { pages.append([]) }
        pages[pages.count - 1].append(element)
        count += 1
    }

    /// Drops the first `n` elements: whole pages go as they are; otherwise the rest is
    /// written again (callers drop a prefix rarely, amortized over many appends).
    mutating func removeFirst(_ n: Int) {
        guard n > 0 else { return }
        if n & (Self.pageSize - 1) == 0 {
            pages.removeFirst(n >> Self.shift)
            count -= n
        } else {
            self = Self(self[n...])
        }
    }

    mutating func removeAll(where drop: (Element) -> Bool) {
        var kept = Self()
        for e in self where !drop(e) { kept.append(e) }
        self = kept
    }

    /// Rounds `n` down to a whole number of pages.
    static func pageStart(_ n: Int) -> Int { n & ~(pageSize - 1) }

    private init<S: Sequence<Element>>(_ elements: S) {
        for e in elements { append(e) }
    }
}
