/// One revision of a session's history (docs/protocol.md, "History"): who made it, when, with
/// which command, and the patch it made. A record of the past: read-only.
///
/// Its fields are in one shared box: recording a revision hands the entry on a few
/// times, and overwriting the oldest frees it, so a copy is one retain instead of one
/// per field.
public struct HistoryEntry: Sendable, Equatable {
    private let box: Boxed<Fields>

    /// (In this order, with `cmd` last, nothing pads between fields, and the box takes
    /// the smaller of two heap block sizes; docs/architecture.md, "Measured reasons in
    /// the code".)
    private struct Fields: Sendable {
        var rev: Int
        var ts: Int64
        var client: String
        var name: String
        var ops: StoredOps
        var results: [OpResult]
        // (Spelled `Optional<…>`, with no initial value: a value type with a stored
        // property that has one, as every `T?` var does, was built twice and one copy
        // destroyed wherever it was made. See docs/architecture.md, "Copies the optimizer makes".)
        var label: Optional<String>
        var patch: PatchOps
        var nextID: Int
        var cmd: CommandID
    }

    public init(rev: Int, ts: Int64, client: String, name: String, cmd: CommandID, ops: [JSON], results: [OpResult],
                label: String? = nil, patch: [PatchOperation] = [], nextID: Int = 0) {
        self.init(rev: rev, ts: ts, client: client, name: name, cmd: cmd, ops: ops, results: results, label: label,
                  patch: .values(patch), nextID: nextID)
    }

    /// The same, keeping the patch as the revision made it (`PatchOps`).
    init(rev: Int, ts: Int64, client: String, name: String, cmd: CommandID, ops: [JSON], results: [OpResult],
         label: String?, patch: PatchOps, nextID: Int) {
        box = Boxed(Fields(rev: rev, ts: ts, client: client, name: name, ops: .values(ops), results: results,
                         label: label, patch: patch, nextID: nextID, cmd: cmd))
    }

    private init(_ fields: Fields) { box = Boxed(fields) }

    /// The command's operations: as parsed, or, once the entry is compact, as the first
    /// `n` bytes of the patch's text (one array holds both: one allocation, not two).
    enum StoredOps: Sendable {
        case values([JSON])
        case textBeforePatch(UInt32)

        /// Roughly what holding them costs: about 400 bytes an operation as parsed
        /// values; as text they are counted with the patch.
        var heldEstimate: Int {
            switch self {
            case .textBeforePatch: return 0
            case .values(let ops): return 400 * ops.count
            }
        }
    }

    /// The same entry as history holds it: its operations and patch as JSON text, one
    /// array of bytes each, instead of trees of parsed values (about three times smaller
    /// held; docs/architecture.md, "Measured reasons in the code").
    func compacted() -> HistoryEntry {
        var f = box.value
        if case .textBeforePatch = f.ops { return self }
        // Results are nearly always one `applied`: one array for all of those.
        if f.results == Self.appliedOnce { f.results = Self.appliedOnce }
        // A lone stack edit (push, pop, dismiss…), the commonest command, has its patch
        // as bytes already and one small operation: writing that operation out too cost
        // a fifth of a push/pop command and saved little, so it stays. Others get
        // `[ops…]` then the patch's members, written once at their exact size.
        if case .values(let ops) = f.ops, case .values = f.patch {
            let patch = f.patch
            var split = 0
            let text = ByteWriter.bytes(capacity: 512) { out in
                JSON.array(ops).write(into: &out)
                split = out.count
                patch.write(into: &out)
            }
            f.ops = .textBeforePatch(UInt32(split))
            f.patch = .encoded(text)
        }
        return HistoryEntry(f)
    }

    private static let appliedOnce: [OpResult] = [.applied]

    /// Once compact: the text of the command's operations, shared (its first `count`
    /// bytes); nil while they are parsed values.
    var opsText: (text: [UInt8], count: Int)? {
        guard case .textBeforePatch(let n) = box.value.ops, case .encoded(let text) = box.value.patch else { return nil }
        return (text, Int(n))
    }

    /// What history counts the entry as (`History.bytes`), once compact: roughly its
    /// text and its box, or about 400 bytes for each operation held as values.
    var heldBytes: Int {
        switch (box.value.ops, box.value.patch) {
        case (.textBeforePatch, .encoded(let text)): return text.count + 200
        case (.values(let ops), .encoded(let patch)): return patch.count + 400 * ops.count + 240
        default: return 0
        }
    }

    /// What a ring slot holds once its revision is no longer needed (`History.trim`).
    static let released = HistoryEntry(rev: 0, ts: 0, client: "", name: "", cmd: .int(0), ops: [], results: [])

    public var rev: Int { box.value.rev }
    /// Server time, milliseconds since the Unix epoch.
    public var ts: Int64 { box.value.ts }
    public var client: String { box.value.client }
    /// The sender's name as members see it.
    public var name: String { box.value.name }
    public var cmd: CommandID { box.value.cmd }
    /// The command's operations as sent.
    public var ops: [JSON] {
        switch (box.value.ops, box.value.patch) {
        case (.values(let ops), _): return ops
        case (.textBeforePatch(let n), .encoded(let text)):
            // Written by `compacted()` from parsed operations: always JSON.
            return (try? JSON.parse(Array(text[..<Int(n)]), depthLimit: JSON.writtenDepth))?.arrayValue ?? []
        case (.textBeforePatch, .values):
            preconditionFailure("compact operations go with an encoded patch")
        }
    }
    public var results: [OpResult] { box.value.results }
    public var label: String? { box.value.label }
    /// What the revision changed (RFC 6902), as broadcast.
    public var patch: [PatchOperation] { patchOperations.values }
    /// The same as the revision made it: bytes for a lone stack edit's (`PatchOps`).
    var patchOperations: PatchOps {
        guard case .textBeforePatch(let n) = box.value.ops, case .encoded(let text) = box.value.patch else { return box.value.patch }
        return .encoded(Array(text[Int(n)...]))
    }
    /// The id counter after the revision (for recordings: replay allocates the same ids).
    public var nextID: Int { box.value.nextID }

    public static func == (a: HistoryEntry, b: HistoryEntry) -> Bool {
        a.box === b.box || (a.rev == b.rev && a.ts == b.ts && a.client == b.client && a.name == b.name && a.cmd == b.cmd
            && a.ops == b.ops && a.results == b.results && a.label == b.label && a.patch == b.patch && a.nextID == b.nextID)
    }

    /// An entry as `history` sends it (without its patch).
    public init?(json: JSON) {
        guard let rev = json["rev"]?.intValue, let ts = json["ts"]?.intValue, let client = json["client"]?.stringValue,
              let cmd = try? CommandID(field: json["cmd"]), let ops = json["ops"]?.arrayValue,
              let results = json["results"]?.arrayValue?.compactMap({ $0.stringValue.flatMap(OpResult.init(rawValue:)) }) else { return nil }
        self.init(rev: Int(rev), ts: ts, client: client, name: json["name"]?.stringValue ?? client, cmd: cmd, ops: ops,
                  results: results, label: json["label"]?.stringValue)
    }

    public var json: JSON {
        var o: JSONObject = ["rev": .int(Int64(rev)), "ts": .int(ts), "client": .string(client), "name": .string(name),
                             "cmd": cmd.json, "ops": .array(ops), "results": .array(results.map { .string($0.rawValue) })]
        if let label { o["label"] = .string(label) }
        return .object(o)
    }
}

extension HistoryEntry: CustomStringConvertible {
    /// The entry whole, as a session snapshot keeps it: `json` with the patch and the id counter.
    var snapshotJSON: JSON {
        guard case .object(var o) = json else { return json }
        o["patch"] = .array(patch.map(\.json))
        o["nextID"] = .int(Int64(nextID))
        return .object(o)
    }

    /// `snapshotJSON`, written: the operations and patch as held, text as it is.
    func writeSnapshot(into out: inout ByteWriter) {
        let f = box.value
        out.append(ascii: #"{"rev":"#)
        out.append(decimal: f.rev)
        out.append(ascii: #","ts":"#)
        out.append(decimal: f.ts)
        out.append(ascii: #","client":"#)
        JSON.writeString(f.client, into: &out)
        out.append(ascii: #","name":"#)
        JSON.writeString(f.name, into: &out)
        out.append(ascii: #","cmd":"#)
        f.cmd.write(into: &out)
        out.append(ascii: #","ops":"#)
        switch (f.ops, f.patch) {
        case (.values(let ops), _): JSON.array(ops).write(into: &out)
        case (.textBeforePatch(let n), .encoded(let text)): out.append(contentsOf: text[..<Int(n)])
        case (.textBeforePatch, .values): preconditionFailure("compact operations go with an encoded patch")
        }
        out.append(ascii: #","results":["#)
        for (i, r) in f.results.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSON.writeString(r.rawValue, into: &out)
        }
        out.append(UInt8(ascii: "]"))
        if let label = f.label {
            out.append(ascii: #","label":"#)
            JSON.writeString(label, into: &out)
        }
        out.append(ascii: #","patch":["#)
        if case .textBeforePatch(let n) = f.ops, case .encoded(let text) = f.patch {
            out.append(contentsOf: text[Int(n)...])
        } else {
            f.patch.write(into: &out)
        }
        out.append(ascii: #"],"nextID":"#)
        out.append(decimal: f.nextID)
        out.append(UInt8(ascii: "}"))
    }

    /// An entry as a snapshot keeps it (`snapshotJSON`); nil when a part is missing or bad.
    init?(snapshotJSON json: JSON) {
        guard let e = HistoryEntry(json: json), let list = json["patch"]?.arrayValue, let n = json["nextID"]?.intValue,
              let patch = try? list.map({ try PatchOperation(json: $0) }) else { return nil }
        self.init(rev: e.rev, ts: e.ts, client: e.client, name: e.name, cmd: e.cmd, ops: e.ops, results: e.results,
                  label: e.label, patch: patch, nextID: Int(n))
    }

    /// Printed as its snapshot JSON (the box alone would print as an address).
    public var description: String { snapshotJSON.encodedString() }
}

/// The last `capacity` revisions of a session: their entries, and the states from
/// `earliest` to the current revision. Pure; the sequencer records into it.
///
/// States are not kept one per revision: every `checkpointEvery` revisions the whole
/// state is kept, and a state between checkpoints is the checkpoint before it with the
/// entries' patches applied, at most `checkpointEvery - 1` of them. Entries are kept back
/// to the checkpoint under `earliest`, so every state from `earliest` on can be rebuilt;
/// only those from `earliest` on are shown.
///
/// What recording costs a command is kept small: a checkpoint
/// keeps the state as the Swift value the session already has (shared, not copied; made
/// JSON only when read), and entries live in a ring that a new revision overwrites once
/// the oldest is no longer needed, so nothing is moved or compacted.
public struct History: Sendable {
    /// Revisions held (`--history`); 0 keeps none.
    public let capacity: Int
    public let checkpointEvery: Int
    /// The revision history starts from: 0, or the revision a session was restored at.
    public private(set) var start: Int
    /// The entries from `origin` on: entry `r` is at `(r - origin) % slots`. The ring
    /// grows to `slots` and then wraps.
    private var ring: [HistoryEntry] = []
    private var origin = 0
    /// Room for every entry a state from `earliest` on needs.
    private var slots: Int { capacity + checkpointEvery }
    /// The checkpoints from `dropped` on, oldest first (`kept`).
    private var checkpoints: [Checkpoint] = []
    /// Checkpoints before this index were dropped, their states let go; they leave the
    /// array in bulk once they are half of it, so dropping one moves nothing.
    private var dropped = 0
    private var kept: ArraySlice<Checkpoint> { checkpoints[dropped...] }
    /// A collecting history (`collecting(after:)`) keeps what it is given here instead.
    private var collected: [(entry: HistoryEntry, state: NavState?)]?

    /// Whether `record` keeps entries as text (`HistoryEntry.compacted`): it keeps some,
    /// and is not collecting for a scratch copy.
    var keepsText: Bool { capacity > 0 && collected == nil }

    private struct Checkpoint: Sendable {
        var rev: Int
        var state: Held
        var nextID: Int
    }

    /// A checkpoint's state: as the session had it, or as a snapshot gave it.
    private enum Held: Sendable {
        case value(NavState)
        case json(JSON)

        var json: JSON {
            switch self {
            case .value(let state): state.json
            case .json(let json): json
            }
        }
    }

    /// A history from `state` as a snapshot gave it.
    public init(capacity: Int, start: Int = 0, state: JSON, nextID: Int = 1, checkpointEvery: Int = 64) {
        self.init(capacity: capacity, start: start, held: .json(state), nextID: nextID, checkpointEvery: checkpointEvery)
    }

    /// A history from the state a session has: shared with it, not made JSON (a JSON
    /// tree of every new session's state adds up on a node of many small sessions).
    public init(capacity: Int, start: Int = 0, state: NavState, nextID: Int = 1, checkpointEvery: Int = 64) {
        self.init(capacity: capacity, start: start, held: .value(state), nextID: nextID, checkpointEvery: checkpointEvery)
    }

    private init(capacity: Int, start: Int, held: Held, nextID: Int, checkpointEvery: Int) {
        self.capacity = max(capacity, 0)
        self.checkpointEvery = max(checkpointEvery, 1)
        self.start = start
        rev = start
        origin = start + 1
        if self.capacity > 0 { checkpoints = [Checkpoint(rev: start, state: held, nextID: nextID)] }
    }

    /// The newest revision (recorded or, with history off, only counted).
    public private(set) var rev: Int

    /// The oldest revision whose state is held: max(start, rev − capacity).
    public var earliest: Int { max(start, floor, rev - capacity) }

    /// Revisions under this were dropped to keep the node's history within its bytes
    /// (`trim`, `--history-bytes`).
    private var floor = 0
    /// Roughly the bytes the held entries take (`HistoryEntry.heldBytes`).
    public private(set) var bytes = 0
    /// Ring slots of revisions up to this one hold `HistoryEntry.released`.
    private var releasedThrough = 0

    /// Entries held (revisions earliest+1 … rev).
    public var count: Int { rev - earliest }

    /// A history that holds nothing and collects what it is given, to be recorded into
    /// another later (`record(collectedBy:)`): cluster mode runs commands on a copy of a
    /// session before Redis has them, and copying a full history for that would cost
    /// more than the commands.
    public static func collecting(after rev: Int, checkpointEvery: Int = 64) -> History {
        var h = History(capacity: 0, start: rev, state: .null, checkpointEvery: checkpointEvery)
        h.collected = []
        return h
    }

    /// Records what a collecting history was given, in order (revisions it holds already
    /// are skipped).
    public mutating func record(collectedBy other: History) {
        for (entry, state) in other.collected ?? [] where entry.rev > rev { record(entry) { state! } }
    }

    /// Records the revision just made; `state` is the state after it (asked for only at
    /// a checkpoint).
    public mutating func record(_ entry: consuming HistoryEntry, state: () -> NavState) {
        let r = entry.rev
        precondition(r == rev + 1, "history records revisions in order")
        rev = r
        if collected != nil {
            collected!.append((consume entry, r % checkpointEvery == 0 ? state() : nil))
            return
        }
        guard capacity > 0 else { return }
        if r % checkpointEvery == 0 {
            checkpoints.append(Checkpoint(rev: r, state: .value(state()), nextID: entry.nextID))
        }
        dropCheckpoints()
        // The slot overwritten held revision rev − slots: under every checkpoint still needed.
        // The entry is moved in, not copied (a copy retains each of its fields).
        let held = entry.compacted()
        bytes += held.heldBytes
        if ring.count < slots {
            ring.append(held)
        } else {
            bytes -= ring[(r - origin) % slots].heldBytes
            ring[(r - origin) % slots] = held
        }
    }

    /// Drops the oldest `count` revisions held (their states become `gone`) and lets go
    /// of the entries no state from `earliest` on needs any more: those up to the
    /// checkpoint under it. Returns the bytes let go, which may be 0 until `earliest`
    /// passes a checkpoint (every `checkpointEvery` revisions).
    @discardableResult
    public mutating func trim(dropping count: Int) -> Int {
        guard capacity > 0, count > 0, self.count > 0 else { return 0 }
        let before = bytes
        floor = min(rev, earliest + count)
        dropCheckpoints()
        let needed = kept.first!.rev
        var r = max(releasedThrough + 1, origin, rev - ring.count + 1)
        while r <= needed {
            let i = (r - origin) % slots
            bytes -= ring[i].heldBytes
            ring[i] = .released
            r += 1
        }
        releasedThrough = max(releasedThrough, needed)
        return before - bytes
    }

    /// Drops the checkpoints under the newest one at or under `earliest` (checked in O(1)
    /// per revision), so the oldest checkpoint's entries are all still in the ring.
    private mutating func dropCheckpoints() {
        while dropped + 1 < checkpoints.count, checkpoints[dropped + 1].rev <= earliest {
            checkpoints[dropped].state = .json(.null)
            dropped += 1
        }
        if dropped > 0, dropped >= checkpoints.count / 2 { compactCheckpoints() }
    }

    private mutating func compactCheckpoints() {
        checkpoints.removeFirst(dropped)
        dropped = 0
    }

    private func entry(_ r: Int) -> HistoryEntry { ring[(r - origin) % slots] }

    /// The state of revision `rev`, as JSON; `current` is the state at `self.rev`.
    /// Older than `earliest`: `gone`; newer than the current revision: `not_found`.
    public func state(at target: Int, current: JSON) throws(NavError) -> JSON {
        if target == rev { return current }
        guard target <= rev else { throw NavError(.notFound, "revision \(target) is newer than the current revision \(rev)", rev: rev) }
        guard target >= earliest, capacity > 0 else {
            throw NavError(.gone, capacity == 0
                ? "history is off (navsyncd --history 0): only the current revision \(rev) is held"
                : "revision \(target) is no longer held: history keeps revisions \(earliest) to \(rev)", rev: rev)
        }
        let base = kept.last { $0.rev <= target }!
        var state = base.state.json
        for r in stride(from: base.rev + 1, through: target, by: 1) {
            do { state = try state.applying(entry(r).patch) } catch {
                throw NavError(.internal, "history could not rebuild revision \(target): \(error)")
            }
        }
        return state
    }

    /// The id counter after revision `rev` (held: from `earliest` on).
    public func nextID(at target: Int) -> Int? {
        guard capacity > 0, target >= earliest, target <= rev else { return nil }
        if let base = kept.last(where: { $0.rev == target }) { return base.nextID }
        return target > start ? entry(target).nextID : nil
    }

    /// Entries oldest first, after `from` (held ones only).
    public func entries(after from: Int) -> [HistoryEntry] {
        let low = max(from, earliest) + 1
        guard low <= rev else { return [] }
        return (low...rev).map(entry)
    }

    /// Entries newest first, below `before` (all when nil), at most `limit`; none at or
    /// under `earliest`.
    public func page(before: Int?, limit: Int) -> [HistoryEntry] {
        let top = min(rev, (before ?? Int.max) - 1)
        guard top > earliest else { return [] }
        let bottom = max(earliest + 1, top - limit + 1)
        return (bottom...top).reversed().map(entry)
    }

    /// The newest revision held whose command had `label`.
    public func newest(label: String) -> Int? {
        stride(from: rev, to: earliest, by: -1).first { entry($0).label == label }
    }

    /// Full states kept (one per `checkpointEvery` revisions held, and one under).
    public var checkpointCount: Int { kept.count }

    /// `snapshot`, written: entries held as text go out as they are, not parsed into
    /// values and written again (a session's snapshot holds up to `--history` of them).
    package func writeSnapshot(into out: inout ByteWriter) {
        guard capacity > 0 else { return out.append(ascii: "null") }
        out.append(ascii: #"{"start":"#)
        out.append(decimal: start)
        out.append(ascii: #","checkpoints":["#)
        for (i, c) in kept.enumerated() {
            out.append(ascii: i == 0 ? #"{"rev":"# : #",{"rev":"#)
            out.append(decimal: c.rev)
            out.append(ascii: #","state":"#)
            c.state.json.write(into: &out)
            out.append(ascii: #","nextID":"#)
            out.append(decimal: c.nextID)
            out.append(UInt8(ascii: "}"))
        }
        out.append(ascii: #"],"entries":["#)
        for r in stride(from: kept.first!.rev + 1, through: rev, by: 1) {
            if r > kept.first!.rev + 1 { out.append(UInt8(ascii: ",")) }
            entry(r).writeSnapshot(into: &out)
        }
        out.append(ascii: "]}")
    }

    /// What a session snapshot keeps of history: its start, checkpoints and entries.
    public var snapshot: JSON {
        guard capacity > 0 else { return .null }
        return ["start": .int(Int64(start)),
                "checkpoints": .array(kept.map { ["rev": .int(Int64($0.rev)), "state": $0.state.json, "nextID": .int(Int64($0.nextID))] }),
                "entries": .array(stride(from: kept.first!.rev + 1, through: rev, by: 1).map { entry($0).snapshotJSON })]
    }

    /// History read back from a snapshot taken at revision `rev`; nil when it does not
    /// fit together (then history starts again at `rev`).
    public init?(snapshot json: JSON, capacity: Int, rev: Int) {
        guard capacity > 0, let start = json["start"]?.intValue, let marks = json["checkpoints"]?.arrayValue, !marks.isEmpty,
              let list = json["entries"]?.arrayValue else { return nil }
        self.init(capacity: capacity, start: Int(start), state: .null)
        checkpoints = []
        for m in marks {
            guard let r = m["rev"]?.intValue, let state = m["state"], let n = m["nextID"]?.intValue else { return nil }
            checkpoints.append(Checkpoint(rev: Int(r), state: .json(state), nextID: Int(n)))
        }
        var held: [HistoryEntry] = []
        for e in list {
            guard let entry = HistoryEntry(snapshotJSON: e) else { return nil }
            held.append(entry)
        }
        self.rev = held.last?.rev ?? checkpoints.last!.rev
        // The entries must run without a gap from the first checkpoint to `rev`.
        guard self.rev == rev, held.isEmpty || held.first!.rev == checkpoints[0].rev + 1,
              zip(held, held.dropFirst()).allSatisfy({ $0.rev + 1 == $1.rev }) else { return nil }
        // Held with a smaller --history before: keep what this capacity needs.
        dropCheckpoints()
        compactCheckpoints()
        origin = checkpoints[0].rev + 1
        ring = held.filter { $0.rev >= origin }.map { $0.compacted() }
        bytes = ring.reduce(0) { $0 + $1.heldBytes }
        guard ring.count <= slots else { return nil }
    }
}
