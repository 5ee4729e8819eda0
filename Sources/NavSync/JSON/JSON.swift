/// A JSON value: what flows, the state document, patches and protocol messages are made of.
///
/// Integers and reals stay apart, as the wire keeps them apart: a param declared `int`
/// accepts `3` but refuses `3.0` (docs/protocol.md, "Operations: fine points", "Params").
/// Objects keep the order their keys were inserted in, so a flow's routes and links
/// keep their declaration order, and encoding is deterministic.
public enum JSON: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object(JSONObject)
}

/// A JSON object that remembers insertion order. Equality ignores order, as JSON does.
///
/// Stored as a list of pairs: the objects of the state document and of messages have
/// a handful of keys, where a linear scan beats hashing. Past `indexThreshold` keys a
/// hash index is kept as well, so large `data` objects and flows stay O(1) per lookup.
public struct JSONObject: Sendable, Hashable, Sequence {
    private var pairs: [(key: String, value: JSON)] = []
    /// Key to position in `pairs`; only kept for objects larger than `indexThreshold`.
    private var index: [String: Int]?

    static let indexThreshold = 16

    public init() {}

    public init(_ pairs: [(String, JSON)]) {
        self.pairs.reserveCapacity(pairs.count)
        for (key, value) in pairs { self[key] = value }
    }

    public var count: Int { pairs.count }
    public var isEmpty: Bool { pairs.isEmpty }
    public var keys: [String] { pairs.map(\.key) }

    private func position(of key: String) -> Int? {
        if let index { return index[key] }
        return pairs.firstIndex { $0.key == key }
    }

    /// Setting `nil` removes the key; setting an existing key keeps its place.
    public subscript(key: String) -> JSON? {
        get { position(of: key).map { pairs[$0].value } }
        set {
            if let i = position(of: key) {
                if let newValue {
                    pairs[i].value = newValue
                } else {
                    pairs.remove(at: i)
                    rebuildIndex()
                }
            } else if let newValue {
                pairs.append((key, newValue))
                if index != nil { index![key] = pairs.count - 1 } else if pairs.count > Self.indexThreshold { rebuildIndex() }
            }
        }
    }

    /// Adds a key that is not there yet; false (and nothing changed) when it is.
    mutating func insertNew(_ key: String, _ value: JSON) -> Bool {
        guard position(of: key) == nil else { return false }
        pairs.append((key, value))
        if index != nil { index![key] = pairs.count - 1 } else if pairs.count > Self.indexThreshold { rebuildIndex() }
        return true
    }

    private mutating func rebuildIndex() {
        guard pairs.count > Self.indexThreshold else { index = nil; return }
        var built: [String: Int] = [:]
        built.reserveCapacity(pairs.count)
        for (i, pair) in pairs.enumerated() { built[pair.key] = i }
        index = built
    }

    public func makeIterator() -> IndexingIterator<[(key: String, value: JSON)]> {
        pairs.makeIterator()
    }

    public static func == (a: JSONObject, b: JSONObject) -> Bool {
        guard a.pairs.count == b.pairs.count else { return false }
        // The same storage (a copy not changed since: most of a command's working copy of
        // the state) is equal without a look at its contents.
        if a.pairs.withUnsafeBufferPointer({ pa in b.pairs.withUnsafeBufferPointer { pa.baseAddress == $0.baseAddress } }) { return true }
        // Same order (the usual case) compares pair by pair; otherwise key by key.
        var i = 0
        while i < a.pairs.count, a.pairs[i].key == b.pairs[i].key {
            guard a.pairs[i].value == b.pairs[i].value else { return false }
            i += 1
        }
        while i < a.pairs.count {
            guard let other = b[a.pairs[i].key], other == a.pairs[i].value else { return false }
            i += 1
        }
        return true
    }

    /// Order-insensitive, to agree with `==`.
    public func hash(into hasher: inout Hasher) {
        var sum = 0
        for pair in pairs {
            var h = Hasher()
            h.combine(pair.key)
            h.combine(pair.value)
            sum &+= h.finalize()
        }
        hasher.combine(pairs.count)
        hasher.combine(sum)
    }
}

extension JSON {
    public var objectValue: JSONObject? { if case .object(let o) = self { return o } else { return nil } }
    public var arrayValue: [JSON]? { if case .array(let a) = self { return a } else { return nil } }
    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    public var intValue: Int64? { if case .int(let i) = self { return i } else { return nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    public var isNull: Bool { if case .null = self { return true } else { return false } }

    /// Any finite number, integer or real.
    public var numberValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    public subscript(key: String) -> JSON? { objectValue?[key] }

    /// The name of the value's JSON type, for error messages.
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "bool"
        case .int: return "integer"
        case .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    /// The same value with every object's keys in sorted order: what "after normalising
    /// key order" means in docs/architecture.md, "Tests".
    public var normalized: JSON {
        switch self {
        case .array(let a): return .array(a.map(\.normalized))
        case .object(let o):
            var sorted = JSONObject()
            for key in o.keys.sorted() { sorted[key] = o[key]!.normalized }
            return .object(sorted)
        default: return self
        }
    }
}

extension JSON: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) { self = .object(JSONObject(elements)) }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSON)...) { self.init(elements) }
}
