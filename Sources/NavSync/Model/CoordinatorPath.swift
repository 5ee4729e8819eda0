/// Where a coordinator sits: the entry indices to follow from the root coordinator
/// (`[]` is the root; `[0, 2]` is the coordinator of entry 2 of the coordinator of
/// root entry 0).
///
/// Held inline, with no allocation, up to 8 levels of indices below 65,536 (16 bits
/// each in two words); a deeper or wider path spills to an array. Every command finds
/// its target by one of these, and as an array it was an allocation per command.
public struct CoordinatorPath: Sendable, Hashable, RandomAccessCollection, ExpressibleByArrayLiteral, CustomStringConvertible {
    /// Levels 0-3 and 4-7, 16 bits each, level 0 in the low bits.
    private var low: UInt64 = 0
    private var high: UInt64 = 0
    public private(set) var count = 0
    /// Every index, once the path did not fit inline (it stays spilled).
    private var spill: [Int]?

    private static let inlineLevels = 8

    public init() {}

    public init(arrayLiteral indices: Int...) { self.init(indices) }

    public init(_ indices: some Sequence<Int>) {
        for i in indices { append(i) }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    @inline(__always) public subscript(level: Int) -> Int {
        precondition(level >= 0 && level < count, "path level \(level) out of range (count \(count))")
        if let spill { return spill[level] }
        let word = level < 4 ? low : high
        return Int(truncatingIfNeeded: (word >> (UInt64(level & 3) * 16)) & 0xFFFF)
    }

    @inline(__always) public mutating func append(_ index: Int) {
        guard spill == nil, count < Self.inlineLevels, index >= 0, index <= 0xFFFF else { return appendSpilling(index) }
        let bits = UInt64(index) << (UInt64(count & 3) * 16)
        if count < 4 { low |= bits } else { high |= bits }
        count += 1
    }

    private mutating func appendSpilling(_ index: Int) {
        if spill == nil { spill = Array(self) }
        spill!.append(index)
        count += 1
    }

    /// This path one level deeper, into the coordinator of entry `index`.
    public func appending(_ index: Int) -> CoordinatorPath {
        var deeper = self
        deeper.append(index)
        return deeper
    }

    public mutating func removeLast(_ k: Int = 1) {
        precondition(k >= 0 && k <= count, "cannot remove \(k) levels of a path of \(count)")
        if spill != nil {
            spill!.removeLast(k)
        } else {
            for level in (count - k)..<count {
                let mask = ~(UInt64(0xFFFF) << (UInt64(level & 3) * 16))
                if level < 4 { low &= mask } else { high &= mask }
            }
        }
        count -= k
    }

    /// Levels in the opposite order (a walk that builds a path on its way back up).
    public mutating func reverse() { self = CoordinatorPath(reversed()) }

    // Equal and hashed by their indices: the same path may be inline in one value and
    // spilled in another.
    public static func == (a: CoordinatorPath, b: CoordinatorPath) -> Bool {
        if a.spill == nil && b.spill == nil { return a.count == b.count && a.low == b.low && a.high == b.high }
        return a.elementsEqual(b)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for i in self { hasher.combine(i) }
    }

    public var description: String { "[" + map(String.init).joined(separator: ", ") + "]" }
}
