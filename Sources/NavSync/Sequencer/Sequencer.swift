/// One session's sequencer (docs/protocol.md, "Operations"): commands are applied one at a time in
/// arrival order; each that changes the state gets the next revision and one patch.
///
/// Pure: no clock, no I/O; the epoch is given, not generated.
public struct Sequencer: Sendable {
    public package(set) var document: NavDocument
    /// This incarnation of the session's history.
    /// (Cluster mode gives a session a new epoch when Redis restarts, docs/cluster.md, "How it works".)
    public package(set) var epoch: String
    /// The current revision; 0 is the flow's initial state.
    public package(set) var rev = 0
    /// Revision at which each live coordinator last changed (docs/protocol.md, "Operations: fine points", "Conflicts").
    public package(set) var lastChanged = ChangeTable()
    /// Revision at which each gone id left the tree, for the newest `removedCapacity`.
    public package(set) var removedAt = RemovalTable()
    /// Removals at or before this revision are forgotten; a gone id without a record
    /// left at or before it.
    public var removedHorizon: Int { removedAt.horizon }
    public package(set) var idempotency: IdempotencyTable
    /// The patches members catch up with, when history does not hold them (read them
    /// through `patches(since:)`, which knows which holds them).
    package var log: PatchLog
    /// The last revisions, with who made them and their states (docs/protocol.md, "History").
    public package(set) var history: History

    /// Removal records kept; older ones fold into `removedHorizon`. Bounds memory for
    /// sessions that run for millions of commands.
    public var removedCapacity: Int {
        get { removedAt.capacity }
        set { removedAt.capacity = newValue }
    }

    public init(flow: Flow, epoch: String, limits: ModelLimits = ModelLimits(),
                idempotencyCapacity: Int = 1024, logCapacity: Int = 1024, historyCapacity: Int = 10_000) {
        document = NavDocument(flow: flow, limits: limits)
        self.epoch = epoch
        idempotency = IdempotencyTable(capacity: idempotencyCapacity)
        log = PatchLog(capacity: logCapacity)
        history = History(capacity: historyCapacity, state: document.state, nextID: document.nextID)
    }

    public var state: NavState { document.state }

    /// The patches after revision `since`, in order, for a member catching up
    /// (docs/protocol.md, "Client messages"): at most the patch log's capacity of them;
    /// nil when they are no longer held (the member gets the state instead). History
    /// holds them whenever it keeps at least that many revisions (the default: 10,000
    /// against 1,024), and then the log keeps none: a second ring of the same patches
    /// would release, on every command, a patch 1,024 revisions old, long out of cache.
    public func patches(since: Int) -> [Patch]? {
        guard log.isCovered(by: history) else { return log.patches(since: since, current: rev) }
        guard since >= 0, since <= rev, rev - since <= log.capacity, since >= history.earliest else { return nil }
        return history.entries(after: since).map { Patch(rev: $0.rev, by: $0.client, cmd: $0.cmd, operations: $0.patchOperations) }
    }

    /// The patches held for catching up, oldest first (a snapshot's `log`).
    public var recentPatches: [Patch] {
        guard log.isCovered(by: history) else { return log.patches }
        return patches(since: max(history.earliest, rev - log.capacity)) ?? []
    }

    public enum Outcome: Sendable, Equatable {
        /// A new revision: broadcast the patch, then ack the sender.
        case applied(Ack, Patch)
        /// Nothing changed (every op `noop` or `superseded`): ack at the current revision.
        case unchanged(Ack)
        /// The command id was acknowledged before: its original ack, nothing applied.
        case duplicate(Ack)
        /// Nothing applied; the error names the op at fault.
        case failed(NavError)
    }

    /// Decodes a command object and submits it.
    public mutating func submit(_ object: JSONObject, client: String, refused: [OpName: String] = [:],
                                sender: Sender = Sender()) -> Outcome {
        submitDecoding(object, client: client, refused: refused, sender: sender).outcome
    }

    /// Who sent a command and when, for history: the sender's name, and server time
    /// in milliseconds since the Unix epoch.
    public struct Sender: Sendable {
        public var name: String
        public var ts: Int64
        /// Whether the sender may `load` a whole state (admins; docs/protocol.md, "History").
        public var mayLoad: Bool
        public init(name: String = "", ts: Int64 = 0, mayLoad: Bool = true) { self.name = name; self.ts = ts; self.mayLoad = mayLoad }
    }

    /// The same, also giving the decoded command (what the journal records).
    public mutating func submitDecoding(_ object: JSONObject, client: String, refused: [OpName: String] = [:],
                                        sender: Sender = Sender()) -> (outcome: Outcome, command: Command?) {
        if let id = try? CommandID(field: object["id"]), let entry = idempotency.entry(client: client, id: id) {
            return (resend(entry, fingerprint: Command.fingerprint(of: object)), nil)
        }
        do throws(NavError) {
            let command = try Command(json: object)
            let (outcome, journaled) = submitJournaling(command, client: client, refused: refused, sender: sender, trusted: false)
            return (outcome, journaled)
        } catch {
            return (.failed(error), nil)
        }
    }

    /// `refused`: operations the sender may not run, with why; one of them anywhere in
    /// the command, or in a link it opens, fails it with `forbidden`.
    public mutating func submit(_ command: Command, client: String, refused: [OpName: String] = [:],
                                sender: Sender = Sender()) -> Outcome {
        submitOnce(command, client: client, refused: refused, sender: sender, trusted: false) { _, _ in }
    }

    /// The same, also giving the command as the journal must keep it: a `restore`
    /// carries the state it restored, so replaying the journal needs no history.
    /// `trusted` (journal replay only) takes such a `restore` as it is.
    package mutating func submitJournaling(_ command: Command, client: String, refused: [OpName: String],
                                   sender: Sender, trusted: Bool) -> (outcome: Outcome, journaled: Command) {
        // Copied only when a `restore` changes what is kept (a copy retains every field).
        var journaled: Command?
        let outcome = submitOnce(command, client: client, refused: refused, sender: sender, trusted: trusted) { index, op in
            if journaled == nil { journaled = command }
            journaled!.ops[index] = op
        }
        return (outcome, journaled ?? command)
    }

    private mutating func submitOnce(_ command: Command, client: String, refused: [OpName: String], sender: Sender,
                                     trusted: Bool, journalAs: (Int, JSON) -> Void) -> Outcome {
        let outcome = submitCounting(command, client: client, refused: refused, sender: sender, trusted: trusted, journalAs: journalAs)
        // A hooked command's errors name the sender's ops, after the hook's `set`.
        guard command.hooked, case .failed(var e) = outcome, let op = e.op else { return outcome }
        if op == 0 {
            e.op = nil
            e.message = "the command hook's set: " + e.message
        } else {
            e.op = op - 1
        }
        return .failed(e)
    }

    private mutating func submitCounting(_ command: Command, client: String, refused: [OpName: String], sender: Sender,
                                         trusted: Bool, journalAs: (Int, JSON) -> Void) -> Outcome {
        if let entry = idempotency.entry(client: client, id: command.id) { return resend(entry, fingerprint: command.fingerprint) }
        let limits = document.limits
        guard !command.ops.isEmpty else { return .failed(NavError(.badRequest, "'ops' is empty")) }
        guard command.ops.count <= limits.maxOps else {
            return .failed(NavError(.tooLarge, "\(command.ops.count) operations; at most \(limits.maxOps) per command"))
        }
        if let base = command.base, base > rev {
            return .failed(NavError(.badRequest, "'base' \(base) is ahead of the current revision \(rev)", rev: rev))
        }
        // References to the sender's own entries become the ids they name; the command is
        // remembered, journaled and recorded as sent. One that names nothing fails its op
        // when that op is applied (docs/protocol.md, "References to one's own entries"):
        // an earlier op that fails is the command's error.
        var ops = command.ops
        var unresolved: [Int: NavError] = [:]
        for index in ops.indices {
            do throws(NavError) {
                if let resolved = try resolvingReferences(in: ops[index], client: client) { ops[index] = resolved }
            } catch {
                if ops.count == 1 { return failed(error, command.ops[index], index: index) }
                unresolved[index] = error
            }
        }
        var ctx = CommandContext(conflicts: nil, firstID: document.nextID, refused: refused)
        if command.onConflict == .reject, let base = command.base {
            ctx.conflicts = ConflictGuard(base: base, rev: rev, lastChanged: lastChanged, removedAt: removedAt)
        }
        // A lone stack edit (push, pop, dismiss…, the commonest command) runs on the
        // document itself: it changes nothing when it fails, and its patch is written
        // from the edit, so neither a copy to roll back to nor one to diff against is
        // needed (copying the tree's changed path and freeing the old one was the
        // largest part of such a command: docs/architecture.md, "The core, per command").
        // (An op that does not decode, `restore` and `load` among them, takes the general
        // path below, which names the error.)
        // Any other lone op that decodes goes to the general path decoded.
        if ops.count == 1, let op = try? NavOperation(json: ops[0]) {
            guard op.action.editsOneStackAtomically else {
                return submitOnCopy(command, ops: ops, lone: consume op, client: client, sender: sender, trusted: trusted, &ctx, journalAs: journalAs)
            }
            let result: OpResult
            do throws(NavError) { result = try document.apply(op, &ctx) } catch { return failed(error, command.ops[0], index: 0) }
            // In a guarded flow only the edited stack and below can fail a guard now; when
            // one does, the edit is put back and the command runs on a copy, which can
            // deny, undo or redirect.
            if result == .applied, document.flow.isGuarded, let edit = ctx.edit,
               document.firstGuardFailure(afterEditAt: edit.path) != nil {
                document.undo(edit, cut: ctx.cutEntries, firstID: ctx.firstID)
                var fresh = CommandContext(conflicts: ctx.conflicts, firstID: ctx.firstID, refused: ctx.refused)
                return submitOnCopy(command, ops: ops, lone: op, client: client, sender: sender, trusted: trusted, careful: true, &fresh, journalAs: journalAs)
            }
            guard result == .applied else { return unchanged(command, client: client, results: result.alone) }
            // The edit is moved out of the context (nothing reads it there again), not copied.
            guard let edit = ctx.edit.take(), let diff = StateDiff(edit: edit, in: document.state) else {
                preconditionFailure("\(op.action.name.rawValue) applied without a stack edit to patch from")
            }
            return commit(command, client: client, sender: sender, results: result.alone, diff: diff, ctx)
        }
        return submitOnCopy(command, ops: ops, lone: nil, unresolved: unresolved, client: client, sender: sender, trusted: trusted,
                            &ctx, journalAs: journalAs)
    }

    /// The general path: the ops applied in turn to a copy of the document, kept if they
    /// all apply, and the two trees diffed. `lone`: the command's one op, decoded
    /// already (not decoded again). `ops`: the command's, with references resolved.
    /// In a guarded flow the ops first run as they are, with the active path checked
    /// after each; only when a guard fails does the command run again `careful`ly, with
    /// the document as it was before each op kept for a redirect to undo it.
    private mutating func submitOnCopy(_ command: Command, ops: [JSON], lone: NavOperation?, unresolved: [Int: NavError] = [:],
                                       client: String, sender: Sender, trusted: Bool,
                                       careful: Bool = false, _ ctx: inout CommandContext, journalAs: (Int, JSON) -> Void) -> Outcome {
        var working = document
        // A lone op (an `open` most often) gets the shared array of its result, not one of its own.
        var results: [OpResult] = []
        if ops.count > 1 { results.reserveCapacity(ops.count) }
        let guarded = document.flow.isGuarded
        var redirects: [Redirect] = []
        for (index, json) in ops.enumerated() {
            do throws(NavError) {
                if let e = unresolved[index] { throw e }
                let before: NavDocument? = careful ? working : nil
                var result: OpResult
                if json["op"] == "restore" {
                    let journalOp: JSON
                    (result, journalOp) = try restore(json, into: &working, &ctx, trusted: trusted)
                    journalAs(index, journalOp)
                } else if json["op"] == "load" {
                    result = try load(json, into: &working, &ctx, sender: sender)
                } else {
                    // A lone op decoded above is not decoded again (an `open`, a `select`…).
                    let op = if let lone { lone } else { try NavOperation(json: json) }
                    result = try working.apply(op, &ctx)
                }
                if guarded, result == .applied {
                    if let before {
                        let url = json["op"] == "open" ? json["url"]?.stringValue : nil
                        result = try Self.enforceGuards(op: index, url: url, before: before, &working, &ctx, redirects: &redirects) ?? result
                    } else if working.firstGuardFailure() != nil {
                        var fresh = CommandContext(conflicts: ctx.conflicts, firstID: ctx.firstID, refused: ctx.refused)
                        return submitOnCopy(command, ops: ops, lone: lone, unresolved: unresolved, client: client, sender: sender, trusted: trusted,
                                            careful: true, &fresh, journalAs: journalAs)
                    }
                }
                if command.ops.count == 1 { results = result.alone } else { results.append(result) }
            } catch {
                return failed(error, json, index: index)
            }
        }

        guard results.contains(.applied) || !redirects.isEmpty else { return unchanged(command, client: client, results: results) }
        // (A lone stack edit took the path above: here the two trees are diffed, unless
        // the command is one link its plan opened, whose diff the plan knows.)
        let diff: StateDiff
        if command.ops.count == 1, let opened = ctx.opened, let planned = StateDiff(opened: opened, from: document.state, to: working.state) {
            diff = planned
        } else {
            diff = StateDiff(from: document.state, to: working.state)
        }
        document = consume working
        return commit(command, client: client, sender: sender, results: results, redirects: redirects, diff: diff, ctx)
    }

    /// A failed operation fails its command: the error names the op, and the verb as it
    /// was sent (`push`), not its alias (`route`).
    private func failed(_ error: NavError, _ json: JSON, index: Int) -> Outcome {
        var e = error
        e.op = index
        if let wire = json["op"]?.stringValue, let name = OpName(wire: wire), wire != name.rawValue {
            // The verb, not a field of the same name ("missing field 'route'" stays).
            let field = "field '\(name.rawValue)'"
            e.message = e.message.split(separator: field, omittingEmptySubsequences: false)
                .map { $0.replacing("'\(name.rawValue)'", with: "'\(wire)'") }.joined(separator: field)
        }
        return .failed(e)
    }

    /// Nothing changed (every op `noop` or `superseded`): acked at the current revision.
    private mutating func unchanged(_ command: Command, client: String, results: [OpResult]) -> Outcome {
        let ack = Ack(id: command.id, rev: rev, results: command.hooked ? Array(results.dropFirst()) : results)
        idempotency.remember(client: client, ack, command: command)
        return .unchanged(ack)
    }

    /// Makes the next revision of a command whose ops applied (`document` is already the
    /// new state): bookkeeping, ack, patch, idempotency, log and history.
    private mutating func commit(_ command: Command, client: String, sender: Sender, results: [OpResult], redirects: [Redirect] = [],
                                 diff: borrowing StateDiff, _ ctx: borrowing CommandContext) -> Outcome {
        rev += 1
        record(diff, ctx, allocated: ctx.firstID..<document.nextID)
        let ack = Ack(id: command.id, rev: rev, results: command.hooked ? Array(results.dropFirst()) : results, redirects: redirects,
                      created: ctx.created(upTo: document.nextID))
        let patch = Patch(rev: rev, by: client, cmd: command.id, operations: diff.operations)
        if !log.isCovered(by: history) { log.append(patch) }
        var entry = HistoryEntry(rev: rev, ts: sender.ts, client: client, name: sender.name, cmd: command.id, ops: command.ops,
                                 results: results, label: command.label, patch: patch.operations, nextID: document.nextID)
        // Made compact here when history keeps it (it would be in `record`), so the
        // idempotency table shares its text of the operations instead of the parsed command.
        if history.keepsText { entry = entry.compacted() }
        idempotency.remember(client: client, ack, command: command, opsText: entry.opsText)
        history.record(entry) { document.state }
        return .applied(ack, patch)
    }

    /// `restore` (docs/protocol.md, "History"): the whole state becomes that of a revision history holds,
    /// by `rev` or by the newest `label`, with the same ids; it changes every
    /// coordinator. Gives what the journal keeps: the op with the state it restored.
    private func restore(_ json: JSON, into working: inout NavDocument, _ ctx: inout CommandContext,
                         trusted: Bool) throws(NavError) -> (OpResult, JSON) {
        guard let o = json.objectValue else { throw NavError(.badParams, "'restore' must be an object") }
        for key in o.keys where !["op", "rev", "label"].contains(key) && !(trusted && key == "state") {
            throw NavError(.badParams, "'restore' takes 'rev' or 'label', not '\(key)'")
        }
        // Its fields, then the conflict check, then the lookup (docs/protocol.md, "Operations: fine points"'s order): a
        // stale `reject` is a conflict even when the revision it names is not there.
        enum Wanted { case rev(Int), label(String) }
        let wanted: Wanted
        switch (o["rev"], o["label"]) {
        case (.int(let r)?, nil) where r >= 0: wanted = .rev(Int(r))
        case (nil, .string(let label)?): wanted = .label(label)
        default:
            throw NavError(.badParams, "'restore' takes 'rev' (a revision, an integer >= 0) or 'label' (a string), one of them")
        }
        try Self.checkWholeChange("restore", ctx)
        let target: Int
        let stateJSON: JSON
        switch wanted {
        case .rev(let r):
            target = r
            if trusted, let carried = o["state"] { stateJSON = carried } else {
                stateJSON = try history.state(at: target, current: working.state.json)
            }
        case .label(let label):
            guard let r = history.newest(label: label) else {
                throw NavError(.notFound, "no revision history holds has the label '\(label)'")
            }
            target = r
            stateJSON = try history.state(at: r, current: working.state.json)
        }
        let state: NavState
        do { state = try NavState(json: stateJSON) } catch {
            throw NavError(.internal, "revision \(target) could not be read back: \(error)")
        }
        let journalOp: JSON = ["op": "restore", "rev": .int(Int64(target)), "state": stateJSON]
        guard state != working.state else { return (.noop, journalOp) }
        working.state = state
        Self.changeWhole(state, &ctx)
        return (.applied, journalOp)
    }

    /// `restore` and `load` change every coordinator: with `reject`, any revision after
    /// `base` is a conflict.
    private static func checkWholeChange(_ op: String, _ ctx: borrowing CommandContext) throws(NavError) {
        if let guardRev = ctx.conflicts, guardRev.base < guardRev.rev {
            throw NavError(.conflict, "\(op) changes the whole session, and it changed after base \(guardRev.base) (now at revision \(guardRev.rev))", rev: guardRev.rev)
        }
    }

    /// Marks every coordinator of the new state (and the alert) changed at this revision.
    private static func changeWhole(_ state: NavState, _ ctx: inout CommandContext) {
        ctx.noteChanged(.root)
        ctx.noteChanged(.alert)
        ctx.noteChanged(.data)
        func mark(_ c: Coordinator, _ ctx: inout CommandContext) {
            for e in c.entries {
                if let child = e.coordinator { ctx.noteChanged(.entry(e.id)); mark(child, &ctx) }
            }
        }
        mark(state.root, &ctx)
    }

    /// `load` (docs/protocol.md, "History", admins): the state becomes the given document, checked
    /// against the flow and docs/protocol.md, "The state document" (`bad_params` naming the place). The id counter
    /// becomes max(current, `nextId`, largest id in it + 1); allocated ids not in it are
    /// gone, ids in it are live. Like `restore`, it changes every coordinator.
    private func load(_ json: JSON, into working: inout NavDocument, _ ctx: inout CommandContext, sender: Sender) throws(NavError) -> OpResult {
        guard sender.mayLoad else { throw NavError(.forbidden, "only admins may load a state") }
        guard let o = json.objectValue else { throw NavError(.badParams, "'load' must be an object") }
        for key in o.keys where !["op", "state", "nextId"].contains(key) {
            throw NavError(.badParams, "'load' takes 'state' and 'nextId', not '\(key)'")
        }
        guard let given = o["state"] else { throw NavError(.badParams, "'load' needs 'state', a whole state document") }
        var next = 0
        if let n = o["nextId"] {
            guard let v = n.intValue, v >= 1, v < Int64(Int32.max) else { throw NavError(.badParams, "'nextId' must be an integer >= 1, got \(n.encodedString())") }
            next = Int(v)
        }
        let state = try document.flow.validate(state: given)
        try Self.checkWholeChange("load", ctx)
        var largest = 0
        state.forEachID { largest = max(largest, $0.number) }
        let nextID = max(working.nextID, next, largest + 1)
        guard state != working.state || nextID != working.nextID else { return .noop }
        working.state = state
        if nextID > working.nextID { ctx.skipped = working.nextID..<nextID }
        working.nextID = nextID
        Self.changeWhole(state, &ctx)
        return .applied
    }

    /// A command id seen before: the same command gets its original ack, marked
    /// duplicate; another command under that id is refused, and nothing is remembered.
    private func resend(_ entry: IdempotencyTable.Entry, fingerprint: UInt64) -> Outcome {
        guard entry.fingerprint == nil || entry.fingerprint == fingerprint else {
            return .failed(NavError(.idReused, "command id \(entry.ack.id) was already used for another command (acknowledged at revision \(entry.ack.rev)); use a new id for a new command"))
        }
        var ack = entry.ack
        ack.duplicate = true
        return .duplicate(ack)
    }

    /// Conflict bookkeeping for the revision just made.
    private mutating func record(_ diff: borrowing StateDiff, _ ctx: borrowing CommandContext, allocated: Range<Int>) {
        ctx.forEachChanged { lastChanged[$0] = rev }
        diff.forEachCreated { lastChanged[$0] = rev }
        // Ids a restore brought back are live again (ids first handed out in this command
        // never left before).
        diff.forEachAdded { id in
            if id.number < allocated.lowerBound { removedAt.revive(id) }
        }
        // Allocated and gone again within this command (a push popped by a later op);
        // not the ids a `load` skipped, which were never allocated.
        let skipped = ctx.skipped ?? allocated.upperBound..<allocated.upperBound
        let before = allocated.lowerBound..<max(allocated.lowerBound, min(skipped.lowerBound, allocated.upperBound))
        let after = max(allocated.lowerBound, skipped.upperBound)..<allocated.upperBound
        for n in before.lowerBound..<after.upperBound where before.contains(n) || after.contains(n) {
            guard !diff.adds(EntryID(n)) else { continue }
            noteRemoved(EntryID(n))
        }
        diff.forEachRemoved { noteRemoved($0) }
        removedAt.forgetIfFull()
    }

    private mutating func noteRemoved(_ id: EntryID) {
        removedAt.note(id, removedAt: rev)
        lastChanged[.entry(id)] = nil
    }
}

/// The last `capacity` patches, for members catching up with `since` (docs/protocol.md, "Client messages"), when
/// history does not hold them.
public struct PatchLog: Sendable {
    public let capacity: Int
    private var ring: [Patch] = []
    private var start = 0

    public init(capacity: Int) { self.capacity = max(capacity, 0) }

    /// Whether `history` holds every patch this log would (it keeps at least as many
    /// revisions, and records them): then the log is not kept.
    package func isCovered(by history: History) -> Bool { capacity > 0 && history.capacity >= capacity }

    /// The patches held, oldest first.
    public var patches: [Patch] { ring.count < capacity ? ring : Array(ring[start...] + ring[..<start]) }

    package mutating func append(_ patch: Patch) {
        guard capacity > 0 else { return }
        if ring.count < capacity { ring.append(patch) } else {
            ring[start] = patch
            start = (start + 1) % capacity
        }
    }

    /// The patches after revision `since`, in order, or nil when the log no longer
    /// reaches back that far. `since == newest` gives `[]`.
    public func patches(since: Int, current rev: Int) -> [Patch]? {
        guard since <= rev, since >= 0 else { return nil }
        if since == rev { return [] }
        let count = rev - since
        guard count <= ring.count else { return nil }
        let first = ring.count - count
        return (first..<ring.count).map { ring[(start + $0) % ring.count] }
    }
}
