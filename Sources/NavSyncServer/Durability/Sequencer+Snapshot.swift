import NavSync

/// A session's snapshot (docs/protocol.md, "Durable sessions (--data DIR)"): everything the sequencer needs to carry
/// on exactly where it was — state, revision, epoch, id counter, idempotency table and
/// conflict bookkeeping — so the journal before it can be dropped. Server-only: a client
/// never writes or restores one.
extension Sequencer {
    /// `snapshot()` as the bytes it encodes to (with `"session"` last when given), written
    /// straight out: history's entries and the patch log go as the text they are held
    /// as. Made as values and then encoded, a session's snapshot with 10,000 revisions
    /// of history was a fifth of a cluster node's CPU per command (docs/architecture.md,
    /// "Measured reasons in the code").
    public func encodedSnapshot(session: String? = nil) -> [UInt8] {
        ByteWriter.bytes(capacity: 1 << 16) { out in
            out.append(ascii: #"{"format":1,"flow":"#)
            JSON.string(document.flow.name).write(into: &out)
            out.append(ascii: #","epoch":"#)
            JSON.string(epoch).write(into: &out)
            out.append(ascii: #","rev":"#)
            out.append(decimal: rev)
            out.append(ascii: #","nextID":"#)
            out.append(decimal: document.nextID)
            out.append(ascii: #","state":"#)
            state.json.write(into: &out)
            out.append(ascii: #","lastChanged":"#)
            lastChangedJSON.write(into: &out)
            out.append(ascii: #","removedAt":{"#)
            for (i, r) in removedAt.records.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSON.string(r.id.description).write(into: &out)
                out.append(UInt8(ascii: ":"))
                out.append(decimal: r.rev)
            }
            out.append(ascii: #"},"removedHorizon":"#)
            out.append(decimal: removedHorizon)
            out.append(ascii: #","idempotency":"#)
            idempotencyJSON.write(into: &out)
            out.append(ascii: #","log":["#)
            for (i, p) in recentPatches.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                p.write(into: &out)
            }
            out.append(ascii: #"],"history":"#)
            history.writeSnapshot(into: &out)
            if let session {
                out.append(ascii: #","session":"#)
                JSON.string(session).write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// The revision each coordinator last changed at, by key.
    private var lastChangedJSON: JSON {
        func key(_ k: CoordinatorKey) -> String { k.description }
        return .object(JSONObject(lastChanged.records.sorted { key($0.key) < key($1.key) }.map { (key($0.key), .int(Int64($0.rev))) }))
    }

    /// Each client's remembered acks, oldest first, with their fingerprints.
    private var idempotencyJSON: JSON {
        var idem = JSONObject()
        for (client, entries) in idempotency.entries {
            idem[client] = .array(entries.map { e in
                guard case .object(var o) = e.ack.json else { return e.ack.json }
                if let f = e.fingerprint { o["fingerprint"] = .string(String(f, radix: 16)) }
                return .object(o)
            })
        }
        return .object(idem)
    }

    /// The snapshot as JSON values: what `init(restoring:)` reads back (a new session's
    /// first snapshot in cluster mode; snapshots of sessions with history are written
    /// with `encodedSnapshot`).
    public func snapshot() -> JSON {
        [
            "format": 1,
            "flow": .string(document.flow.name),
            "epoch": .string(epoch),
            "rev": .int(Int64(rev)),
            "nextID": .int(Int64(document.nextID)),
            "state": state.json,
            "lastChanged": lastChangedJSON,
            "removedAt": .object(JSONObject(removedAt.records.map { ($0.id.description, .int(Int64($0.rev))) })),
            "removedHorizon": .int(Int64(removedHorizon)),
            "idempotency": idempotencyJSON,
            // The patch log, so a client that reconnects after a restart with since/epoch
            // still gets patches, not a snapshot, when the log covers it.
            "log": .array(recentPatches.map(\.json)),
            // History (docs/protocol.md, "History"): what it holds survives compaction and restarts.
            "history": history.snapshot,
        ]
    }

    /// A sequencer exactly as the snapshot left it.
    public init(restoring snapshot: JSON, flow: Flow, limits: ModelLimits = ModelLimits(),
                idempotencyCapacity: Int = 1024, logCapacity: Int = 1024, historyCapacity: Int = 10_000) throws(SnapshotError) {
        guard snapshot["format"] == 1 else { throw SnapshotError("unknown snapshot format \(snapshot["format"] ?? .null)") }
        guard snapshot["flow"]?.stringValue == flow.name else {
            throw SnapshotError("the snapshot is of flow '\(snapshot["flow"]?.stringValue ?? "?")', not '\(flow.name)'")
        }
        guard let epoch = snapshot["epoch"]?.stringValue, let rev = snapshot["rev"]?.intValue, let next = snapshot["nextID"]?.intValue,
              let stateJSON = snapshot["state"], let horizon = snapshot["removedHorizon"]?.intValue else {
            throw SnapshotError("the snapshot lacks epoch, rev, nextID, state or removedHorizon")
        }
        self.init(flow: flow, epoch: epoch, limits: limits, idempotencyCapacity: idempotencyCapacity, logCapacity: logCapacity,
                  historyCapacity: 0)
        let state = try NavState(json: stateJSON)
        document = NavDocument(flow: flow, limits: limits, state: state, nextID: Int(next))
        self.rev = Int(rev)
        // History as the snapshot held it; a snapshot without one starts it at this revision.
        if historyCapacity > 0, let held = snapshot["history"], let restored = History(snapshot: held, capacity: historyCapacity, rev: Int(rev)) {
            history = restored
        } else {
            history = History(capacity: historyCapacity, start: Int(rev), state: state, nextID: Int(next))
        }
        for (k, v) in snapshot["lastChanged"]?.objectValue ?? [:] {
            guard let r = v.intValue else { throw SnapshotError("lastChanged.\(k) is not a revision") }
            switch k {
            case "root": lastChanged[.root] = Int(r)
            case "alert": lastChanged[.alert] = Int(r)
            case "data": lastChanged[.data] = Int(r)
            default:
                guard let id = EntryID(k) else { throw SnapshotError("lastChanged has a bad key '\(k)'") }
                lastChanged[.entry(id)] = Int(r)
            }
        }
        var removals: [(id: EntryID, rev: Int)] = []
        for (k, v) in snapshot["removedAt"]?.objectValue ?? [:] {
            guard let id = EntryID(k), let r = v.intValue else { throw SnapshotError("removedAt has a bad entry '\(k)'") }
            removals.append((id, Int(r)))
        }
        removedAt = RemovalTable(capacity: removedCapacity, horizon: Int(horizon), records: removals)
        for (client, list) in snapshot["idempotency"]?.objectValue ?? [:] {
            for a in list.arrayValue ?? [] {
                guard let ack = Ack(json: a) else { throw SnapshotError("idempotency.\(client) has a bad ack") }
                idempotency.remember(client: client, ack, fingerprint: a["fingerprint"]?.stringValue.flatMap { UInt64($0, radix: 16) })
            }
        }
        // Checked even when history holds the patches (and the log is not kept).
        let keepsLog = !log.isCovered(by: history)
        for p in snapshot["log"]?.arrayValue ?? [] {
            guard let patch = Patch(json: p) else { throw SnapshotError("the patch log has a bad patch") }
            if keepsLog { log.append(patch) }
        }
    }
}
