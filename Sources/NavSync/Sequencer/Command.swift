/// A command as the sequencer takes it (docs/protocol.md, "Operations"): operations applied in
/// order, atomically, as one revision.
public struct Command: Sendable, Equatable {
    public var id: CommandID
    /// Operations as JSON; each is decoded when its turn comes, so an error names the
    /// first operation at fault in order (docs/protocol.md, "Operations: fine points": validate, check, apply per op).
    public var ops: [JSON]
    // (Spelled `Optional<…>`, with no initial value: a value type with a stored property
    // that has one, as every `T?` var does, was built twice and one copy destroyed
    // wherever it was made. See docs/architecture.md, "Copies the optimizer makes".)
    /// The revision the sender had seen.
    public var base: Optional<Int>
    public var onConflict: ConflictPolicy
    /// A name for the revision this command makes ("checkout start"), 1-64 characters,
    /// shown by history (docs/protocol.md, "History").
    public var label: Optional<String>

    public init(id: CommandID, ops: [JSON], base: Int? = nil, onConflict: ConflictPolicy = .rebase, label: String? = nil) {
        self.id = id
        self.ops = ops
        self.base = base
        self.onConflict = onConflict
        self.label = label
    }

    public init(id: CommandID, operations: [NavOperation], base: Int? = nil, onConflict: ConflictPolicy = .rebase) {
        self.init(id: id, ops: operations.map(\.json), base: base, onConflict: onConflict)
    }

    /// Decodes `id`, `ops`, `base`, `onConflict` of a command object; the idempotency
    /// key is read first, so a duplicate is known before anything else is checked.
    public init(json object: JSONObject) throws(NavError) {
        id = try CommandID(field: object["id"])
        guard let opsJSON = object["ops"] else { throw NavError(.badRequest, "missing field 'ops'") }
        guard let ops = opsJSON.arrayValue else { throw NavError(.badRequest, "'ops' must be an array, got \(opsJSON.typeName)") }
        self.ops = ops
        switch object["base"] {
        case nil, .null?: base = nil
        case .int(let b)? where b >= 0 && b <= Int64(Int32.max) * 1024: base = Int(b)
        case let other?: throw NavError(.badRequest, "'base' must be a revision (an integer >= 0), got \(other)")
        }
        switch object["onConflict"] {
        case nil, .null?: onConflict = .rebase
        case .string(let s)? where ConflictPolicy(rawValue: s) != nil: onConflict = ConflictPolicy(rawValue: s)!
        case let other?: throw NavError(.badRequest, "'onConflict' must be \"rebase\" or \"reject\", got \(other)")
        }
        switch object["label"] {
        case nil, .null?: label = nil
        case .string(let s)? where (1...64).contains(s.count): label = s
        case let other?: throw NavError(.badRequest, "'label' must be a string of 1 to 64 characters, got \(other)")
        }
    }

    /// Whether the first op is the command hook's `set` (docs/backend.md): put there by
    /// the server, so the sender's ops follow it, and its ack and errors speak of those.
    public var hooked: Bool { ops.first.map(Self.isHookOp) ?? false }

    /// `{"op":"update","scope":"session","data":…,"by":"hook"}`, as the hub puts it first.
    public static func isHookOp(_ op: JSON) -> Bool { op["by"] != nil && op["op"] == "update" }

    /// The command hook's op for a `set` (a merge patch of the session's data).
    public static func hookOp(set: JSONObject) -> JSON {
        ["op": "update", "scope": "session", "data": .object(set), "by": "hook"]
    }

    public var json: JSON {
        var o: JSONObject = ["id": id.json, "ops": .array(ops)]
        if let base { o["base"] = .int(Int64(base)) }
        if onConflict != .rebase { o["onConflict"] = .string(onConflict.rawValue) }
        if let label { o["label"] = .string(label) }
        return .object(o)
    }
}

extension Command {
    /// What makes two sends of one id the same command (docs/protocol.md, "Operations: fine points"): `ops`, `base` and
    /// `onConflict`, with defaults filled in and object keys in any order. A 64-bit
    /// FNV-1a of the canonical encoding.
    public var fingerprint: UInt64 {
        Self.fingerprint(ops: .array(ops), base: base.map { .int(Int64($0)) }, onConflict: .string(onConflict.rawValue))
    }

    /// The same, of a command object as it came, before anything is validated.
    public static func fingerprint(of object: JSONObject) -> UInt64 {
        let base = object["base"].flatMap { $0.isNull ? nil : $0 }
        let onConflict = object["onConflict"].flatMap { $0.isNull ? nil : $0 } ?? .string(ConflictPolicy.rebase.rawValue)
        return fingerprint(ops: object["ops"] ?? .null, base: base, onConflict: onConflict)
    }

    static func fingerprint(ops: JSON, base: JSON?, onConflict: JSON) -> UInt64 {
        // A journaled `restore` carries the state it restored, and a hooked command starts
        // with the hook's `set`; the command as sent had neither.
        var ops = ops
        if case .array(let list) = ops, let first = list.first, isHookOp(first) { ops = .array(Array(list.dropFirst())) }
        if case .array(let list) = ops, list.contains(where: { $0["op"] == "restore" }) {
            ops = .array(list.map { op in
                guard op["op"] == "restore", var o = op.objectValue else { return op }
                o["state"] = nil
                return .object(o)
            })
        }
        var o: JSONObject = ["ops": ops, "onConflict": onConflict]
        if let base { o["base"] = base }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in JSON.object(o).encoded(sortedKeys: true) {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}

public enum ConflictPolicy: String, Sendable {
    /// Apply a stale command to the current state; gone targets are `superseded`.
    case rebase
    /// Refuse a command that touches a coordinator changed after `base`.
    case reject
}

/// A command id: the idempotency key with the client identity. `5` and `"5"` differ.
public enum CommandID: Sendable, Hashable, CustomStringConvertible {
    case string(String)
    case int(Int64)

    public init(field: JSON?) throws(NavError) {
        switch field {
        case .string(let s)?: self = .string(s)
        case .int(let i)?: self = .int(i)
        case nil: throw NavError(.badRequest, "missing field 'id' (a string or an integer)")
        case let other?: throw NavError(.badRequest, "'id' must be a string or an integer, got \(other.typeName)")
        }
    }

    public var json: JSON {
        switch self {
        case .string(let s): return .string(s)
        case .int(let i): return .int(i)
        }
    }

    public var description: String { json.description }
}

/// The sender's answer for a command that did not fail.
public struct Ack: Sendable, Equatable {
    public var id: CommandID
    /// A resend of a command acknowledged before: this is its original ack, and
    /// nothing ran again (`"duplicate": true` on the wire). (Beside the id, in its
    /// padding: the idempotency table holds thousands of acks per client.)
    public var duplicate = false
    public var rev: Int
    /// One result per operation (`open` gives one for its whole link).
    public var results: [OpResult]
    /// The redirects guards made, in order (docs/flows.md, "Guards and redirects"); empty for most commands.
    public var redirects: [Redirect] = []
    /// The ids of the entries and alerts the command's ops allocated, in allocation
    /// order (docs/protocol.md, "References to one's own entries"): what `"~CMD.N"`
    /// names. Empty when it allocated none.
    public var created: [EntryID] = []

    public init(id: CommandID, rev: Int, results: [OpResult], duplicate: Bool = false, redirects: [Redirect] = [],
                created: [EntryID] = []) {
        self.id = id
        self.rev = rev
        self.results = results
        self.duplicate = duplicate
        self.redirects = redirects
        self.created = created
    }
}

/// One redirect a guard made: the op it redirected, the guard, and the link it opened.
public struct Redirect: Sendable, Equatable {
    public var op: Int
    public var `guard`: String
    public var link: String
    public init(op: Int, guard: String, link: String) { self.op = op; self.guard = `guard`; self.link = link }

    public var json: JSON { ["op": .int(Int64(op)), "guard": .string(`guard`), "link": .string(link)] }

    public init?(json: JSON) {
        guard let op = json["op"]?.intValue, let g = json["guard"]?.stringValue, let link = json["link"]?.stringValue else { return nil }
        self.init(op: Int(op), guard: g, link: link)
    }
}

/// One revision's change: applying `ops` to the state at `base` gives the state at `rev`.
public struct Patch: Sendable, Equatable {
    public var rev: Int
    public var base: Int { rev - 1 }
    /// The client identity that sent the command.
    public var by: String
    public var cmd: CommandID
    public var ops: [PatchOperation] {
        get { operations.values }
        set { operations = .values(newValue) }
    }
    /// The operations as the patch holds them (`PatchOps`).
    var operations: PatchOps

    public init(rev: Int, by: String, cmd: CommandID, ops: [PatchOperation]) {
        self.init(rev: rev, by: by, cmd: cmd, operations: .values(ops))
    }

    init(rev: Int, by: String, cmd: CommandID, operations: PatchOps) {
        self.rev = rev
        self.by = by
        self.cmd = cmd
        self.operations = operations
    }
}

/// A patch's operations: as values, or as the bytes they are sent as (the members of a
/// `patch` message's `ops` array, without the brackets).
///
/// The sequencer writes the patch of a lone stack edit (push, pop, dismiss…, the
/// commonest command) as bytes when it makes the revision: each message that carries
/// it (the broadcast, a member catching up) copies them, and history keeps them, rather
/// than holding values (a pointer string, a list and the pushed entry) for 10,000
/// revisions and writing them out op by op each time. Reading `values` of bytes decodes
/// them: history's past states, snapshots and tests do.
enum PatchOps: Sendable, Equatable {
    case values([PatchOperation])
    case encoded([UInt8])

    var values: [PatchOperation] {
        switch self {
        case .values(let ops): return ops
        case .encoded(let bytes):
            let list: JSON
            // A pushed entry opens its route's whole chain of coordinators, which a flow
            // may make deeper than input may nest.
            do { list = try JSON.parse([UInt8(ascii: "[")] + bytes + [UInt8(ascii: "]")], depthLimit: JSON.writtenDepth) } catch {
                preconditionFailure("a patch the sequencer wrote is not JSON: \(error)")
            }
            do throws(JSONPatchError) { return try (list.arrayValue ?? []).map { op throws(JSONPatchError) in try PatchOperation(json: op) } } catch {
                preconditionFailure("a patch the sequencer wrote is not a JSON Patch: \(error)")
            }
        }
    }

    /// The members of the `ops` array, written into a message.
    package func write(into out: inout ByteWriter) {
        switch self {
        case .encoded(let bytes): out.append(contentsOf: bytes)
        case .values(let ops):
            for i in ops.indices {    // by index: each op written in place, not copied
                if i > 0 { out.append(UInt8(ascii: ",")) }
                ops[i].write(into: &out)
            }
        }
    }

    static func == (a: PatchOps, b: PatchOps) -> Bool {
        if case .encoded(let x) = a, case .encoded(let y) = b, x == y { return true }
        return a.values == b.values
    }
}
