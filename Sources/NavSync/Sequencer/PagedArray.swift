/// An array kept in pages of 1,024 elements: a copy shares the pages, and a write to
/// the copy copies the one page it lands in (and the list of pages), not every element.
///
/// For the large tables of a sequencer that a cluster node's scratch copy writes to
/// (`Sequencer.scratchCopy`): as one array, the first write of each append copied the
/// whole table, up to two megabytes (docs/architecture.md, "Measured reasons in the code").
struct PagedArray<Element: Sendable>: Sendable, RandomAccessCollection {
    private static var shift: Int { 10 }
    private static var mask: Int { (1 << shift) - 1 }
    private var pages: [[Element]] = []
    /// Where element 0 is in the first page (`removeFirst` moves it up).
    private var start = 0
    private(set) var count = 0

    init() {}

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    subscript(i: Int) -> Element {
        get {
            let j = start + i
            return pages[j >> Self.shift][j & Self.mask]
        }
        set {
            let j = start + i
            pages[j >> Self.shift][j & Self.mask] = newValue
        }
    }

    /// (A page grows as an array does: a table of a few elements holds a few, not a
    /// page's worth.)
    mutating func append(_ element: Element) {
        if (start + count) & Self.mask == 0 { pages.append([]) }
        pages[pages.count - 1].append(element)
        count += 1
    }

    /// Drops the first `n` elements: whole pages go, and the first one is read from
    /// further on.
    mutating func removeFirst(_ n: Int) {
        precondition(n >= 0 && n <= count, "removing more than there is")
        count -= n
        guard count > 0 else { return self = Self() }
        start += n
        pages.removeFirst(start >> Self.shift)
        start &= Self.mask
    }

    mutating func removeAll(where drop: (Element) -> Bool) {
        var kept = Self()
        for e in self where !drop(e) { kept.append(e) }
        self = kept
    }
}
