import NavSync
/// One webhook event (docs/backend.md, "Webhooks"): made by the hub after the revision or
/// session change it tells of is durable, delivered by the runtime's outbox in batches.
public struct WebhookEvent: Sendable, Equatable {
    /// The same on every delivery: `SESSION:EPOCH:REV` for a revision.
    public var id: String
    public var type: String
    public var session: String
    public var epoch: String
    /// The revision it belongs to (a session event: the revision when it happened).
    public var rev: Int
    /// The event as delivered, `type` and `id` included.
    public var json: JSON

    public init(id: String, type: String, session: String, epoch: String, rev: Int, json: JSON) {
        self.id = id; self.type = type; self.session = session; self.epoch = epoch; self.rev = rev; self.json = json
    }

    /// An event as delivered (kept in the data directory until it is), read back.
    public init?(json: JSON) {
        guard let id = json["id"]?.stringValue, let type = json["type"]?.stringValue, let session = json["session"]?.stringValue,
              let epoch = json["epoch"]?.stringValue, let rev = json["rev"]?.intValue else { return nil }
        self.init(id: id, type: type, session: session, epoch: epoch, rev: Int(rev), json: json)
    }

    /// `revision`: the history entry of the revision, with what only the ack knows
    /// (redirects, ids created) when it is at hand.
    public static func revision(session: String, epoch: String, entry: HistoryEntry, user: String? = nil, ack: Ack? = nil) -> WebhookEvent {
        let id = "\(session):\(epoch):\(entry.rev)"
        var command: JSONObject = ["id": entry.cmd.json, "ops": .array(entry.ops), "results": .array(entry.results.map { .string($0.rawValue) })]
        if let label = entry.label { command["label"] = .string(label) }
        if let ack {
            if !ack.redirects.isEmpty { command["redirects"] = .array(ack.redirects.map(\.json)) }
            if !ack.created.isEmpty { command["created"] = .array(ack.created.map { .string($0.description) }) }
        }
        var o: JSONObject = ["type": "revision", "id": .string(id), "session": .string(session), "epoch": .string(epoch),
                             "rev": .int(Int64(entry.rev)), "ts": .int(entry.ts), "client": .string(entry.client),
                             "name": .string(entry.name)]
        if let user { o["user"] = .string(user) }
        o["command"] = .object(command)
        return WebhookEvent(id: id, type: "revision", session: session, epoch: epoch, rev: entry.rev, json: .object(o))
    }

    /// `session.created`, `.deleted`, `.reset`, `.occupied`, `.vacated`; `n` tells apart
    /// events of one type at one revision (a session vacated and occupied again).
    public static func session(_ type: String, session: String, epoch: String, rev: Int, ts: Int64, n: Int = 0,
                               extra: JSONObject = [:]) -> WebhookEvent {
        let id = "\(session):\(epoch):\(rev):\(type.dropFirst("session.".count))" + (n > 0 ? ".\(n)" : "")
        var o: JSONObject = ["type": .string(type), "id": .string(id), "session": .string(session), "epoch": .string(epoch),
                             "rev": .int(Int64(rev)), "ts": .int(ts)]
        for (k, v) in extra { o[k] = v }
        return WebhookEvent(id: id, type: type, session: session, epoch: epoch, rev: rev, json: .object(o))
    }
}

/// A request the hub asks the runtime to post to the hook endpoint, and what came back.
public struct HookCall: Sendable, Equatable {
    /// Names the call in `Hub.Event.hook`.
    public var id: Int
    /// `{"type":"join",…}` or `{"type":"command",…}`.
    public var body: JSON
    public init(id: Int, body: JSON) { self.id = id; self.body = body }
}

/// What the hook endpoint answered: a 2xx with a JSON body (already parsed, at most
/// 64 KiB), or why there is no usable answer (a timeout, a status, a refused connection,
/// a body too large or not JSON).
public enum HookReply: Sendable, Equatable {
    case answered(JSON)
    case failed(String)
}
