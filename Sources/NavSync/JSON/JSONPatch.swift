/// RFC 6902 JSON Patch: the operations patches carry, and `apply`, which client
/// mirrors use to follow a session.
public struct PatchOperation: Sendable, Equatable {
    public enum Kind: String, Sendable { case add, remove, replace, move, copy, test }
    public var op: Kind
    /// RFC 6901 JSON Pointer of the target.
    public var path: String
    // (Spelled `Optional<…>`, with no initial value: a value type with a stored property
    // that has one, as every `T?` var does, was built twice and one copy destroyed
    // wherever it was made. See docs/architecture.md, "Copies the optimizer makes".)
    /// `move` / `copy` source.
    public var from: Optional<String>
    /// `add` / `replace` / `test` value.
    public var value: JSON? {
        get { payload?.json }
        set { payload = newValue.map(Payload.json) }
    }
    private var payload: Optional<Payload>

    /// What an op carries: JSON, or a part of the state that becomes JSON only when
    /// asked. A diff's new entries are kept as the entries themselves and written
    /// straight to bytes when broadcast, never built as a JSON tree first.
    enum Payload: Sendable {
        case json(JSON)
        case entry(Entry)
        case entries([Entry])
        case coordinator(Coordinator)

        var json: JSON {
            switch self {
            case .json(let value): return value
            case .entry(let e): return e.json
            case .entries(let list): return .array(list.map(\.json))
            case .coordinator(let c): return c.json
            }
        }

        package func write(into out: inout ByteWriter) {
            switch self {
            case .json(let value): value.write(into: &out)
            case .entry(let e): e.write(into: &out)
            case .entries(let list):
                out.append(UInt8(ascii: "["))
                for (i, e) in list.enumerated() {
                    if i > 0 { out.append(UInt8(ascii: ",")) }
                    e.write(into: &out)
                }
                out.append(UInt8(ascii: "]"))
            case .coordinator(let c): c.write(into: &out)
            }
        }
    }

    public init(_ op: Kind, _ path: String, value: JSON? = nil, from: String? = nil) {
        self.op = op
        self.path = path
        self.payload = value.map(Payload.json)
        self.from = from
    }

    init(_ op: Kind, _ path: String, payload: Payload?) {
        self.op = op
        self.path = path
        self.payload = payload
        from = nil
    }

    public static func == (a: PatchOperation, b: PatchOperation) -> Bool {
        a.op == b.op && a.path == b.path && a.from == b.from && a.value == b.value
    }

    public var json: JSON {
        var o: JSONObject = ["op": .string(op.rawValue)]
        if let from { o["from"] = .string(from) }
        o["path"] = .string(path)
        if let value { o["value"] = value }
        return .object(o)
    }

    /// `json.encoded()`, written without building the object.
    package func write(into out: inout ByteWriter) {
        out.append(ascii: #"{"op":""#)
        out.append(contentsOf: op.rawValue.utf8)
        out.append(UInt8(ascii: "\""))
        if let from {
            out.append(ascii: #","from":"#)
            JSON.writeString(from, into: &out)
        }
        out.append(ascii: #","path":"#)
        JSON.writeString(path, into: &out)
        if let payload {
            out.append(ascii: #","value":"#)
            payload.write(into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    public init(json: JSON) throws(JSONPatchError) {
        guard let o = json.objectValue else { throw JSONPatchError("a patch operation must be an object") }
        guard let name = o["op"]?.stringValue, let kind = Kind(rawValue: name) else {
            throw JSONPatchError("unknown patch op \(o["op"].map { $0.description } ?? "(missing)")")
        }
        guard let path = o["path"]?.stringValue else { throw JSONPatchError("'\(name)' needs a string 'path'") }
        op = kind
        self.path = path
        payload = o["value"].map(Payload.json)
        from = o["from"]?.stringValue
        if [.add, .replace, .test].contains(kind) && value == nil { throw JSONPatchError("'\(name)' needs a 'value'") }
        if [.move, .copy].contains(kind) && from == nil { throw JSONPatchError("'\(name)' needs a string 'from'") }
    }
}

public struct JSONPatchError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    init(_ message: String) { description = message }
}

/// RFC 6901 JSON Pointer tokens.
public enum JSONPointer {
    /// `~` becomes `~0` and `/` becomes `~1` (RFC 6901 section 3).
    public static func escape(_ token: String) -> String {
        guard token.contains(where: { $0 == "~" || $0 == "/" }) else { return token }
        return token.replacing("~", with: "~0").replacing("/", with: "~1")
    }

    public static func tokens(_ pointer: String) throws(JSONPatchError) -> [String] {
        if pointer.isEmpty { return [] }
        guard pointer.hasPrefix("/") else { throw JSONPatchError("pointer '\(pointer)' must start with '/'") }
        return pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map {
            String($0).replacing("~1", with: "/").replacing("~0", with: "~")
        }
    }
}

extension JSON {
    /// Applies a JSON Patch, all or nothing (RFC 6902 section 5).
    public func applying(_ patch: [PatchOperation]) throws(JSONPatchError) -> JSON {
        var doc = self
        for op in patch { try doc.apply(op) }
        return doc
    }

    public func value(at pointer: String) throws(JSONPatchError) -> JSON {
        var current = self
        for token in try JSONPointer.tokens(pointer) {
            switch current {
            case .object(let o):
                guard let next = o[token] else { throw JSONPatchError("no member '\(token)' at '\(pointer)'") }
                current = next
            case .array(let a):
                guard let i = Self.arrayIndex(token, count: a.count, allowEnd: false) else {
                    throw JSONPatchError("bad array index '\(token)' at '\(pointer)'")
                }
                current = a[i]
            default: throw JSONPatchError("'\(pointer)' goes through a \(current.typeName)")
            }
        }
        return current
    }

    mutating func apply(_ op: PatchOperation) throws(JSONPatchError) {
        switch op.op {
        case .add: try edit(JSONPointer.tokens(op.path)[...], .add(op.value!))
        case .remove: try edit(JSONPointer.tokens(op.path)[...], .remove)
        case .replace: try edit(JSONPointer.tokens(op.path)[...], .replace(op.value!))
        case .move:
            let from = op.from!
            if op.path.hasPrefix(from + "/") { throw JSONPatchError("cannot move '\(from)' into itself") }
            let moved = try value(at: from)
            try edit(JSONPointer.tokens(from)[...], .remove)
            try edit(JSONPointer.tokens(op.path)[...], .add(moved))
        case .copy: try edit(JSONPointer.tokens(op.path)[...], .add(value(at: op.from!)))
        case .test:
            guard try value(at: op.path) == op.value! else { throw JSONPatchError("test failed at '\(op.path)'") }
        }
    }

    private enum Edit { case add(JSON), remove, replace(JSON) }

    private mutating func edit(_ tokens: ArraySlice<String>, _ edit: Edit) throws(JSONPatchError) {
        guard let token = tokens.first else {
            switch edit {
            case .add(let v), .replace(let v): self = v; return
            case .remove: throw JSONPatchError("cannot remove the whole document")
            }
        }
        let last = tokens.count == 1
        switch self {
        case .object(var o):
            self = .null   // keep the object uniquely referenced while it changes
            defer { self = .object(o) }
            if last {
                switch edit {
                case .add(let v): o[token] = v
                case .replace(let v):
                    guard o[token] != nil else { throw JSONPatchError("no member '\(token)' to replace") }
                    o[token] = v
                case .remove:
                    guard o[token] != nil else { throw JSONPatchError("no member '\(token)' to remove") }
                    o[token] = nil
                }
            } else {
                guard var child = o[token] else { throw JSONPatchError("no member '\(token)'") }
                o[token] = .null
                defer { o[token] = child }
                try child.edit(tokens.dropFirst(), edit)
            }
        case .array(var a):
            self = .null
            defer { self = .array(a) }
            let isAdd = { if case .add = edit { return true } else { return false } }()
            guard let i = Self.arrayIndex(token, count: a.count, allowEnd: last && isAdd) else {
                throw JSONPatchError("bad array index '\(token)' for an array of \(a.count)")
            }
            if last {
                switch edit {
                case .add(let v): a.insert(v, at: i)
                case .replace(let v): a[i] = v
                case .remove: a.remove(at: i)
                }
            } else {
                var child = a[i]
                a[i] = .null
                defer { a[i] = child }
                try child.edit(tokens.dropFirst(), edit)
            }
        default:
            throw JSONPatchError("cannot go into a \(typeName) with '\(token)'")
        }
    }

    /// RFC 6901 section 4: digits without a leading zero, or `-` for the end (add only).
    private static func arrayIndex(_ token: String, count: Int, allowEnd: Bool) -> Int? {
        if token == "-" { return allowEnd ? count : nil }
        guard !token.isEmpty, token.allSatisfy({ $0.isASCII && $0.isNumber }),
              token == "0" || !token.hasPrefix("0"), let i = Int(token) else { return nil }
        return i < count || (allowEnd && i == count) ? i : nil
    }
}

extension JSON {
    /// A patch from `self` to `other`: objects key by key, anything else replaced whole.
    /// Used for `data`; the state diff handles entries by id.
    public func diff(to other: JSON, at path: String, into ops: inout [PatchOperation]) {
        guard self != other else { return }
        guard case .object(let a) = self, case .object(let b) = other else {
            ops.append(PatchOperation(.replace, path, value: other))
            return
        }
        for key in a.keys where b[key] == nil {
            ops.append(PatchOperation(.remove, path + "/" + JSONPointer.escape(key)))
        }
        for (key, value) in b {
            let p = path + "/" + JSONPointer.escape(key)
            if let old = a[key] { old.diff(to: value, at: p, into: &ops) } else { ops.append(PatchOperation(.add, p, value: value)) }
        }
    }
}
