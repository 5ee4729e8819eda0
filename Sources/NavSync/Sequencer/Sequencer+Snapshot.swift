/// A session's snapshot (docs/protocol.md, "Durable sessions (--data DIR)"): everything the sequencer needs to carry
/// on exactly where it was — state, revision, epoch, id counter, idempotency table and
/// conflict bookkeeping — so the journal before it can be dropped.
public struct SnapshotError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    package init(_ message: String) { description = message }
}

extension Sequencer {
    /// The snapshot as JSON (written compactly to the data directory).
    public func snapshot() -> JSON {
        var idem = JSONObject()
        for (client, entries) in idempotency.entries {
            idem[client] = .array(entries.map { e in
                guard case .object(var o) = e.ack.json else { return e.ack.json }
                if let f = e.fingerprint { o["fingerprint"] = .string(String(f, radix: 16)) }
                return .object(o)
            })
        }
        func key(_ k: CoordinatorKey) -> String { k.description }
        return [
            "format": 1,
            "flow": .string(document.flow.name),
            "epoch": .string(epoch),
            "rev": .int(Int64(rev)),
            "nextID": .int(Int64(document.nextID)),
            "state": state.json,
            "lastChanged": .object(JSONObject(lastChanged.records.sorted { key($0.key) < key($1.key) }.map { (key($0.key), .int(Int64($0.rev))) })),
            "removedAt": .object(JSONObject(removedAt.records.map { ($0.id.description, .int(Int64($0.rev))) })),
            "removedHorizon": .int(Int64(removedHorizon)),
            "idempotency": .object(idem),
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

extension Ack {
    public var json: JSON {
        var o: JSONObject = ["id": id.json, "rev": .int(Int64(rev)), "results": .array(results.map { .string($0.rawValue) })]
        if duplicate { o["duplicate"] = true }
        if !redirects.isEmpty { o["redirects"] = .array(redirects.map(\.json)) }
        if !created.isEmpty { o["created"] = .array(created.map { .string($0.description) }) }
        return .object(o)
    }

    public init?(json: JSON) {
        guard let id = try? CommandID(field: json["id"]), let rev = json["rev"]?.intValue,
              let results = json["results"]?.arrayValue?.compactMap({ $0.stringValue.flatMap(OpResult.init(rawValue:)) }) else { return nil }
        self.init(id: id, rev: Int(rev), results: results,
                  redirects: (json["redirects"]?.arrayValue ?? []).compactMap(Redirect.init(json:)),
                  created: (json["created"]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap(EntryID.init) })
    }
}

extension Patch {
    /// As the journal's snapshot stores it (the `patch` message without type and session).
    public var json: JSON {
        ["rev": .int(Int64(rev)), "by": .string(by), "cmd": cmd.json, "ops": .array(ops.map(\.json))]
    }

    public init?(json: JSON) {
        guard let rev = json["rev"]?.intValue, let by = json["by"]?.stringValue, let cmd = try? CommandID(field: json["cmd"]),
              let list = json["ops"]?.arrayValue else { return nil }
        var ops: [PatchOperation] = []
        for o in list {
            guard let op = try? PatchOperation(json: o) else { return nil }
            ops.append(op)
        }
        self.init(rev: Int(rev), by: by, cmd: cmd, ops: ops)
    }
}

extension NavState {
    /// The state document read back (the inverse of `json`).
    public init(json: JSON) throws(SnapshotError) {
        guard let root = json["root"] else { throw SnapshotError("the state has no root") }
        var data: JSONObject?
        if let d = json["data"] {
            guard let o = d.objectValue else { throw SnapshotError("the state's data is not an object") }
            data = o
        }
        self.init(root: try Coordinator(json: root), alert: try json["alert"].flatMap { a throws(SnapshotError) -> AlertState? in
            a.isNull ? nil : try AlertState(json: a)
        }, data: data)
    }
}

extension Coordinator {
    init(json: JSON) throws(SnapshotError) {
        guard let type = json["type"]?.stringValue, let kind = json["kind"]?.stringValue.flatMap(CoordinatorKind.init(rawValue:)) else {
            throw SnapshotError("a coordinator lacks its type or kind")
        }
        var entries: [Entry] = []
        switch kind {
        case .root:
            guard let current = json["current"] else { throw SnapshotError("root coordinator \(type) has no current entry") }
            entries = [try Entry(json: current)]
        case .stack, .tabs:
            for e in json[kind == .stack ? "stack" : "tabs"]?.arrayValue ?? [] { entries.append(try Entry(json: e)) }
        }
        self.init(type: type, kind: kind, entries: entries,
                  selected: kind == .tabs ? json["selected"]?.stringValue.flatMap(EntryID.init) : nil)
    }
}

extension Entry {
    init(json: JSON) throws(SnapshotError) {
        guard let idText = json["id"]?.stringValue, let id = EntryID(idText), let route = json["route"]?.stringValue else {
            throw SnapshotError("an entry lacks its id or route")
        }
        self.init(id: id, route: route, params: json["params"]?.objectValue ?? [:],
                  presentation: json["presentation"]?.stringValue.flatMap(Presentation.init(rawValue:)),
                  tab: json["tab"], hints: json["hints"]?.objectValue, data: json["data"]?.objectValue,
                  coordinator: try json["coordinator"].map { c throws(SnapshotError) in try Coordinator(json: c) })
    }
}

extension AlertState {
    init(json: JSON) throws(SnapshotError) {
        guard let idText = json["id"]?.stringValue, let id = EntryID(idText), let title = json["title"]?.stringValue else {
            throw SnapshotError("the alert lacks its id or title")
        }
        let buttons = (json["buttons"]?.arrayValue ?? []).compactMap { b -> AlertButton? in
            guard let bid = b["id"]?.stringValue, let label = b["label"]?.stringValue else { return nil }
            return AlertButton(id: bid, label: label, role: b["role"]?.stringValue)
        }
        self.init(id: id, title: title, message: json["message"]?.stringValue, buttons: buttons)
    }
}
