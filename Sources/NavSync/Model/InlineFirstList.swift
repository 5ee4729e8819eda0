/// A list that holds its first element inline. Most commands add, remove or change one
/// thing, and an array for that one was an allocation per command; the rest go to an
/// array that starts with room for 16 (a deep link's replaced subtree lists a dozen ids,
/// and growing 1, 2, 4, 8, 16 was five allocations per list).
///
/// A protocol with one concrete list per element type (`EntryIDList`, `KeyList`) rather
/// than a generic struct: the compiler copied and destroyed a generic instance through
/// the runtime's value witnesses, a call per list per command.
protocol InlineFirstList: Sequence, Equatable where Element: Equatable {
    var head: Element? { get set }
    var rest: [Element] { get set }
    init()
}

extension InlineFirstList {
    var isEmpty: Bool { head == nil }
    var count: Int { head == nil ? 0 : 1 + rest.count }

    package mutating func append(_ element: Element) {
        guard head != nil else { head = element; return }
        if rest.count == rest.capacity { rest.reserveCapacity(Swift.max(16, 2 * rest.count)) }
        rest.append(element)
    }

    /// In place, with no iterator (a copy of the list) made: the loops that read these
    /// lists run once per command.
    func forEach(_ body: (Element) throws -> Void) rethrows {
        guard let head else { return }
        try body(head)
        for element in rest { try body(element) }
    }

    func contains(_ element: Element) -> Bool { head == element || rest.contains(element) }

    func makeIterator() -> InlineFirstIterator<Self> { InlineFirstIterator(list: self) }
}

struct InlineFirstIterator<List: InlineFirstList>: IteratorProtocol {
    let list: List
    /// -1 at the head, then positions in `rest`.
    var position = -1

    mutating func next() -> List.Element? {
        defer { position += 1 }
        if position < 0 { return list.head }
        return position < list.rest.count ? list.rest[position] : nil
    }
}

/// Entry ids: those a diff removes or adds, those a cut removes.
/// (No stored property has an initial value: see `Optional<…>` in `NavOperation`.)
struct EntryIDList: InlineFirstList, Sendable {
    typealias Element = EntryID
    var head: Optional<EntryID>
    var rest: [EntryID]
    init() { (head, rest) = (nil, []) }
}

/// Coordinator keys: those a command changed, those a diff created.
struct KeyList: InlineFirstList, Sendable {
    typealias Element = CoordinatorKey
    var head: Optional<CoordinatorKey>
    var rest: [CoordinatorKey]
    init() { (head, rest) = (nil, []) }
}
