/// An entry (or alert) id: `e1`, `e2`, … from one counter per session, never reused
/// (docs/protocol.md, "The state document"). Ids are ordered by creation.
public struct EntryID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let number: Int

    public init(_ number: Int) { self.number = number }

    /// Parses `e<digits>` (no sign, no leading zero); anything else is no id at all.
    public init?(_ text: String) {
        let utf8 = text.utf8
        guard utf8.count >= 2, utf8.count <= 19, utf8.first == UInt8(ascii: "e") else { return nil }
        let digits = utf8.dropFirst()
        guard digits.first != UInt8(ascii: "0"), digits.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              let n = Int(String(text.dropFirst())) else { return nil }
        number = n
    }

    public var description: String { "e\(number)" }
    public static func < (a: EntryID, b: EntryID) -> Bool { a.number < b.number }

    public func hash(into hasher: inout Hasher) { hasher.combine(number) }

    /// Tables of ids (conflict bookkeeping) hash them with a multiply rather than
    /// SipHash: ids are numbered by the server, never chosen by a client, so there is no
    /// flooding to defend against, and a deep link looks up dozens of them.
    public func _rawHashValue(seed: Int) -> Int { EntryID.mix(UInt64(bitPattern: Int64(number)), seed: seed) }

    static func mix(_ value: UInt64, seed: Int) -> Int {
        let x = (value ^ UInt64(bitPattern: Int64(seed))) &* 0x9E37_79B9_7F4A_7C15
        return Int(bitPattern: UInt(x ^ (x >> 29)))
    }
}
