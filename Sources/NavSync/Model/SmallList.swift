/// A list that holds its first element inline. Most commands add, remove or change one
/// thing, and an array for that one was an allocation per command; the rest go to an
/// array that starts with room for 16 (a deep link's replaced subtree lists a dozen ids,
/// and growing 1, 2, 4, 8, 16 was five allocations per list).
public struct SmallList<Element: Sendable & Equatable>: Sendable, Equatable, Sequence {
    private var head: Element?
    private var rest: [Element] = []

    public init() {}

    public var isEmpty: Bool { head == nil }
    public var count: Int { head == nil ? 0 : 1 + rest.count }

    mutating func append(_ element: Element) {
        guard head != nil else { head = element; return }
        if rest.count == rest.capacity { rest.reserveCapacity(Swift.max(16, 2 * rest.count)) }
        rest.append(element)
    }

    /// In place, with no iterator (a copy of the list) made: the loops that read these
    /// lists run once per command.
    public func forEach(_ body: (Element) throws -> Void) rethrows {
        guard let head else { return }
        try body(head)
        for element in rest { try body(element) }
    }

    public func contains(_ element: Element) -> Bool { head == element || rest.contains(element) }

    public func makeIterator() -> Iterator { Iterator(list: self) }

    public struct Iterator: IteratorProtocol {
        let list: SmallList
        /// -1 at the head, then positions in `rest`.
        var position = -1

        public mutating func next() -> Element? {
            defer { position += 1 }
            if position < 0 { return list.head }
            return position < list.rest.count ? list.rest[position] : nil
        }
    }
}
