/// What a client keeps of a session between launches (docs/protocol.md, "The client's three states"):
/// the confirmed state with its revision and epoch, the flow, its identity and command
/// counter (so a command resent after a relaunch is the same command to the server),
/// and the commands not yet confirmed. An app launched without a network opens on it.
public struct SavedSession: Sendable, Equatable {
    public var session: String
    public var epoch: String
    public var rev: Int
    public var state: JSON
    /// The flow as the server sent it.
    public var flow: JSON
    public var clientID: String?
    public var nextCommand: Int64
    public var pending: [SessionMachine.Pending]
    /// Acks of commands whose revision is confirmed, that pending commands may name.
    public var known: [Ack]

    public var json: JSON {
        var o: JSONObject = [
            "format": 1, "session": .string(session), "epoch": .string(epoch), "rev": .int(Int64(rev)),
            "state": state, "flow": flow, "nextCommand": .int(nextCommand),
            "pending": .array(pending.map { p in
                var e: JSONObject = ["id": .int(p.id), "ops": .array(p.ops),
                                     "message": (try? JSON.parse(p.bytes)) ?? .null]
                if let a = p.ackedAt { e["ackedAt"] = .int(Int64(a)) }
                return .object(e)
            }),
            "known": .array(known.map(\.json)),
        ]
        if let clientID { o["client"] = .string(clientID) }
        return .object(o)
    }

    /// Reads a saved session back; nil when it is not one (another format, damaged).
    public init?(json: JSON) {
        guard json["format"] == 1, let session = json["session"]?.stringValue, let epoch = json["epoch"]?.stringValue,
              let rev = json["rev"]?.intValue, let state = json["state"], state.objectValue != nil, let flow = json["flow"],
              let next = json["nextCommand"]?.intValue, let list = json["pending"]?.arrayValue else { return nil }
        var pending: [SessionMachine.Pending] = []
        for p in list {
            guard let id = p["id"]?.intValue, let ops = p["ops"]?.arrayValue, let message = p["message"], message.objectValue != nil else { return nil }
            pending.append(.init(id: id, ops: ops, bytes: message.encoded(), ackedAt: p["ackedAt"]?.intValue.map(Int.init)))
        }
        self.init(session: session, epoch: epoch, rev: Int(rev), state: state, flow: flow, clientID: json["client"]?.stringValue,
                  nextCommand: next, pending: pending, known: (json["known"]?.arrayValue ?? []).compactMap(Ack.init(json:)))
    }

    public init(session: String, epoch: String, rev: Int, state: JSON, flow: JSON, clientID: String?, nextCommand: Int64,
                pending: [SessionMachine.Pending], known: [Ack]) {
        self.session = session; self.epoch = epoch; self.rev = rev; self.state = state; self.flow = flow
        self.clientID = clientID; self.nextCommand = nextCommand; self.pending = pending; self.known = known
    }
}

extension SessionMachine {
    /// What to keep of the session now; nil before anything was ever joined or restored.
    public var saved: SavedSession? {
        guard let state, let epoch, let flowJSON else { return nil }
        return SavedSession(session: options.session, epoch: epoch, rev: rev, state: state, flow: flowJSON, clientID: clientID,
                            nextCommand: nextCommand, pending: pending, known: Array(known.values))
    }

    /// Starts from a saved session (before `start()`): its state is shown at once, its
    /// pending commands are replayed over it and go out once joined. Refused (false)
    /// for another session, or once this machine has state of its own.
    public mutating func restore(_ saved: SavedSession) -> Bool {
        guard saved.session == options.session, state == nil, connection == .idle,
              let loaded = try? Flow.load(saved.flow) else { return false }
        state = saved.state
        rev = saved.rev
        epoch = saved.epoch
        flowJSON = saved.flow
        flow = loaded
        clientID = saved.clientID
        nextCommand = max(nextCommand, saved.nextCommand)
        pending = saved.pending
        for ack in saved.known { if case .int(let id) = ack.id { known[id] = ack } }
        var ignored: [Effect] = []
        reshow(&ignored, notify: false)
        return true
    }
}
