/// The model's values from JSON: acks and patches as the protocol carries them, and a
/// state document (a `joined` message's, a snapshot's). A document that does not
/// decode says what is wrong.
public struct SnapshotError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    package init(_ message: String) { description = message }
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

    /// `json`, written: operations held as bytes go out as they are.
    package func write(into out: inout ByteWriter) {
        out.append(ascii: #"{"rev":"#)
        out.append(decimal: rev)
        out.append(ascii: #","by":"#)
        JSON.writeString(by, into: &out)
        out.append(ascii: #","cmd":"#)
        cmd.write(into: &out)
        out.append(ascii: #","ops":["#)
        operations.write(into: &out)
        out.append(ascii: "]}")
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
