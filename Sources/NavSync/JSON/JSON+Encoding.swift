/// Compact JSON text, written by hand rather than through jansson: numbers get the
/// shortest text that reads back to the same value (`0.1`, not `0.10000000000000001`),
/// and one pass into one buffer is the cheapest way to serialize a broadcast once.
extension JSON {
    /// Compact UTF-8 bytes; keys in insertion order, or sorted with `sortedKeys`.
    public func encoded(sortedKeys: Bool = false) -> [UInt8] {
        ByteWriter.bytes { write(into: &$0, sortedKeys: sortedKeys) }
    }

    /// Compact JSON text.
    public func encodedString(sortedKeys: Bool = false) -> String {
        String(decoding: encoded(sortedKeys: sortedKeys), as: UTF8.self)
    }

    /// Appends the compact text to `out`.
    public func write(into out: inout [UInt8], sortedKeys: Bool = false) {
        out.append(contentsOf: encoded(sortedKeys: sortedKeys))
    }

    package func write(into out: inout ByteWriter, sortedKeys: Bool = false) {
        switch self {
        case .null: out.append(ascii: "null")
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(decimal: i)
        case .double(let d): Self.writeDouble(d, into: &out)
        case .string(let s): Self.writeString(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out, sortedKeys: sortedKeys)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object): Self.writeObject(object, into: &out, sortedKeys: sortedKeys)
        }
    }

    /// `JSON.object(object).write(into:)`, without wrapping the object first.
    static func writeObject(_ object: JSONObject, into out: inout ByteWriter, sortedKeys: Bool = false) {
        // Most entries' params are empty: no walk for them.
        guard !object.isEmpty else { out.append(ascii: "{}"); return }
        out.append(UInt8(ascii: "{"))
        if sortedKeys && object.count > 1 {
            writeMembers(object.sorted { $0.key < $1.key }, into: &out, sortedKeys: true)
        } else {
            writeMembers(object, into: &out, sortedKeys: sortedKeys)
        }
        out.append(UInt8(ascii: "}"))
    }

    private static func writeMembers<Members: Sequence<(key: String, value: JSON)>>(_ members: Members, into out: inout ByteWriter, sortedKeys: Bool) {
        var first = true
        for (key, value) in members {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            writeString(key, into: &out)
            out.append(UInt8(ascii: ":"))
            value.write(into: &out, sortedKeys: sortedKeys)
        }
    }

    /// JSON has no NaN or infinity; the parser never produces them and operations refuse
    /// them, so a non-finite value here is a programming error written as `null`.
    static func writeDouble(_ d: Double, into out: inout ByteWriter) {
        guard d.isFinite else { out.append(ascii: "null"); return }
        // Swift's description is the shortest round-trip form ("4.5", "1e-07", "3.0").
        out.append(contentsOf: d.description.utf8)
    }

    private static let hex: StaticString = "0123456789abcdef"

    /// RFC 8259 section 7: escape the quote, the backslash and control characters.
    /// Runs of bytes that need no escape are copied whole.
    static func writeString(_ s: String, into out: inout ByteWriter) {
        out.append(UInt8(ascii: "\""))
        // The string's own bytes, read in place (no copy of the string to make them
        // contiguous: every string the server holds is native UTF-8 already).
        if s.utf8.withContiguousStorageIfAvailable({ writeEscaped($0, into: &out) }) == nil {
            var copy = s
            copy.withUTF8 { writeEscaped($0, into: &out) }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Eight bytes at a time while none needs an escape (most strings have none), then
    /// byte by byte to the next that does or to the end.
    private static func writeEscaped(_ bytes: UnsafeBufferPointer<UInt8>, into out: inout ByteWriter) {
        guard let p = bytes.baseAddress else { return }
        let n = bytes.count
        var start = 0
        var i = 0
        while true {
            while i + 8 <= n, !needsEscape(UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)) { i += 8 }
            while i < n, !needsEscape(p[i]) { i += 1 }
            guard i < n else { break }
            out.append(contentsOf: UnsafeBufferPointer(start: p + start, count: i - start))
            switch p[i] {
            case 0x22: out.append(ascii: #"\""#)
            case 0x5C: out.append(ascii: #"\\"#)
            case 0x0A: out.append(ascii: #"\n"#)
            case 0x0D: out.append(ascii: #"\r"#)
            case 0x09: out.append(ascii: #"\t"#)
            case 0x08: out.append(ascii: #"\b"#)
            case 0x0C: out.append(ascii: #"\f"#)
            default:
                out.append(ascii: #"\u00"#)
                out.append(hex.utf8Start[Int(p[i] >> 4)])
                out.append(hex.utf8Start[Int(p[i] & 15)])
            }
            i += 1
            start = i
        }
        out.append(contentsOf: UnsafeBufferPointer(start: p + start, count: n - start))
    }

    @inline(__always) static func needsEscape(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x22 || byte == 0x5C }

    /// Whether any of the eight bytes is a control character, `"` or `\` (exact: the
    /// has-less and has-zero bit tricks on the whole word).
    @inline(__always) static func needsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let control = (word &- 0x20 &* ones) & ~word & highs
        let quote = word ^ (0x22 &* ones)
        let backslash = word ^ (0x5C &* ones)
        return (control | ((quote &- ones) & ~quote & highs) | ((backslash &- ones) & ~backslash & highs)) != 0
    }
}

/// Writes the decimal digits of `n`, with a minus sign when negative, at `p` (room for
/// 20 bytes) and returns how many: numbers are written without making a `String`, two
/// digits per step from a table (a patch message has half a dozen numbers).
@inline(__always)
func writeDecimal<Integer: BinaryInteger>(_ n: Integer, at p: UnsafeMutablePointer<UInt8>) -> Int {
    var magnitude = UInt64(n.magnitude)
    var length = n < 0 ? 2 : 1
    var rest = magnitude
    while rest >= 100 { rest /= 100; length += 2 }
    if rest >= 10 { length += 1 }
    var at = length
    let pairs = decimalPairs.utf8Start
    while magnitude >= 100 {
        let pair = Int(magnitude % 100) * 2
        magnitude /= 100
        at -= 2
        p[at] = pairs[pair]
        p[at + 1] = pairs[pair + 1]
    }
    if magnitude >= 10 {
        let pair = Int(magnitude) * 2
        p[at - 2] = pairs[pair]
        p[at - 1] = pairs[pair + 1]
    } else {
        p[at - 1] = UInt8(ascii: "0") + UInt8(magnitude)
    }
    if n < 0 { p[0] = UInt8(ascii: "-") }
    return length
}

/// "00" "01" … "99": the two digits of every number below 100. A literal in read-only
/// memory: an array built at first use cost a lazy-initialization check and a retain
/// per number written (most of writing one).
private let decimalPairs: StaticString = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

/// The diff's JSON Pointer is an array of bytes, cut back along its walk.
extension Array<UInt8> {
    /// ASCII text known when compiling.
    @inline(__always) package mutating func append(ascii text: StaticString) {
        append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    package mutating func append<Integer: BinaryInteger>(decimal n: Integer) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            append(contentsOf: UnsafeBufferPointer(start: digits.baseAddress!, count: writeDecimal(n, at: digits.baseAddress!)))
        }
    }
}

/// The encoders' output: bytes appended to one growing buffer, handed over as an array
/// once. Appending to an array piece by piece costs a uniqueness check and a generic
/// copy per piece, which was most of the cost of writing a patch.
package struct ByteWriter: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Whether `base` is this writer's to free (not the caller's scratch memory).
    private var owned: Bool
    private(set) var count = 0

    init(capacity: Int = 256) {
        self.capacity = max(capacity, 16)
        base = .allocate(capacity: self.capacity)
        owned = true
    }

    private init(scratch: UnsafeMutableBufferPointer<UInt8>) {
        base = scratch.baseAddress!
        capacity = scratch.count
        owned = false
    }

    /// Bytes written on the stack before a writer moves to the heap. (Past 1 KiB the
    /// standard library asks the thread for its stack bounds.)
    static let stackBytes = 1024

    /// The bytes `body` writes, as one array: written on the stack (moving to the heap
    /// if they outgrow it), or on the heap from the start when `capacity` says they
    /// will not fit there.
    package static func bytes(capacity: Int = 0, _ body: (inout ByteWriter) -> Void) -> [UInt8] {
        writing(room: 0, capacity: capacity, body) { $0.finish() }
    }

    /// The same behind `room` free bytes (for a header written once their length is
    /// known), in one allocation the caller frees: a writer on the heap hands over its
    /// buffer, one on the stack copies its bytes to the heap at their size.
    package static func allocation(room: Int, capacity: Int, _ body: (inout ByteWriter) -> Void) -> (storage: UnsafeMutablePointer<UInt8>, count: Int) {
        writing(room: room, capacity: capacity, body) { $0.take() }
    }

    /// `body` run on a writer with `room` bytes left free in front, on the stack or on
    /// the heap as `capacity` says; `end` makes the result of it.
    private static func writing<R>(room: Int, capacity: Int, _ body: (inout ByteWriter) -> Void,
                                   _ end: (consuming ByteWriter) -> R) -> R {
        guard capacity + room <= stackBytes else {
            var out = ByteWriter(capacity: capacity + room)
            out.count = room
            body(&out)
            return end(out)
        }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: stackBytes) { scratch in
            var out = ByteWriter(scratch: scratch)
            out.count = room
            body(&out)
            return end(out)
        }
    }

    deinit { if owned { base.deallocate() } }

    /// The bytes written.
    consuming func finish() -> [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// The buffer handed over: as it is when on the heap, else copied there at its size.
    private consuming func take() -> (storage: UnsafeMutablePointer<UInt8>, count: Int) {
        var taken = (storage: base, count: count)
        if !owned {
            taken.storage = .allocate(capacity: count)
            taken.storage.initialize(from: base, count: count)
        }
        discard self
        return taken
    }

    private mutating func grow(toFit extra: Int) {
        var newCapacity = capacity * 2
        while newCapacity < count + extra { newCapacity *= 2 }
        let bigger = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        bigger.initialize(from: base, count: count)
        if owned { base.deallocate() }
        base = bigger
        capacity = newCapacity
        owned = true
    }

    @inline(__always) package mutating func append(_ byte: UInt8) {
        if count == capacity { grow(toFit: 1) }
        base[count] = byte
        count += 1
    }

    @inline(__always) package mutating func append(contentsOf bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        if count + bytes.count > capacity { grow(toFit: bytes.count) }
        (base + count).initialize(from: source, count: bytes.count)
        count += bytes.count
    }

    package mutating func append(contentsOf bytes: [UInt8]) { bytes.withUnsafeBufferPointer { append(contentsOf: $0) } }
    package mutating func append(contentsOf bytes: ArraySlice<UInt8>) { bytes.withUnsafeBufferPointer { append(contentsOf: $0) } }

    /// Text that needs no escaping, as its bytes.
    package mutating func append(contentsOf text: String.UTF8View) {
        // In place when stored as UTF-8 (all but bridged strings); otherwise through a copy.
        if text.withContiguousStorageIfAvailable({ append(contentsOf: $0) }) == nil {
            var text = String(text)
            text.withUTF8 { append(contentsOf: $0) }
        }
    }

    /// ASCII text known when compiling (keys, punctuation).
    @inline(__always) package mutating func append(ascii text: StaticString) {
        append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// The decimal digits of `n`, with a minus sign when negative, written in place.
    package mutating func append<Integer: BinaryInteger>(decimal n: Integer) {
        if count + 20 > capacity { grow(toFit: 20) }
        count += writeDecimal(n, at: base + count)
    }
}

extension JSON: CustomStringConvertible {
    public var description: String { encodedString() }
}
