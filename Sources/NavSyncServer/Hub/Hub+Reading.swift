import NavSync
/// What the runtime may read of the hub, and nothing else: the answers of the HTTP API's
/// GET routes and the figures of `/metrics`. Reads change nothing; everything that
/// changes the hub goes through `handle(_:at:)`.
extension Hub {
    /// Whether a token shown on an upgrade or an HTTP request is taken, and with which
    /// grant, at wall time `now` (ms since the Unix epoch, for a JWT's `exp` and `nbf`):
    /// the hub's access policy read, nothing changed. nil when there is no policy (no
    /// `--auth`, no `--jwt-key`: every connection is admin).
    /// A JWT comes with what the runtime's keys made of it (`verified`).
    public func checkToken(_ token: String, verified: JWTVerification?, now: Int64) -> Result<AccessPolicy.Grant, AccessPolicy.Refusal>? {
        policy?.check(token, verification: verified, wallMS: now)
    }

    /// Whether a token shown is one the runtime checks the signature of (`--jwt-key` is
    /// on and it has a JWT's shape).
    public func takesJWT(_ token: String) -> Bool { policy?.jwt != nil && JWT.looksLike(token) }

    /// The JWTs connections hold now: checked again with the keys of a SIGHUP.
    public var heldJWTs: Set<String> {
        Set(peers.values.compactMap { $0.grant?.claims != nil ? $0.grant?.token : nil })
    }

    /// `--redis-wait`: writes answered `unconfirmed` (fewer replicas confirmed them in time).
    public var unconfirmedWrites: Int { cluster.unconfirmed }

    /// Whether a member's patches of `session` are paused while it lags (`Event.lagging`).
    public func patchesPaused(for c: Int, in session: String) -> Bool { peers[c]?.paused.contains(session) ?? false }

    /// Whether tokens are checked at all.
    public var checksTokens: Bool { policy != nil }

    /// Whether the session is held here.
    public func hasSession(_ name: String) -> Bool { sessions[name] != nil }

    /// `GET /api/sessions/NAME`: the session's flow, epoch, revision, members and state.
    public func sessionDocument(_ name: String) -> Result<JSON, NavError> {
        guard let s = sessions[name] else { return .failure(NavError(.unknownSession, "no session '\(name)'")) }
        return .success(["session": .string(name), "flow": .string(s.flow.name), "epoch": .string(s.sequencer.epoch),
                         "rev": .int(Int64(s.sequencer.rev)), "members": .int(Int64(s.members.count)), "state": s.sequencer.state.json])
    }

    /// A page of history (docs/protocol.md, "History"), newest first, below `before`.
    public func historyPage(_ name: String, before: Int?, limit: Int) -> Result<ServerMessage, NavError> {
        guard let s = sessions[name] else { return .failure(NavError(.unknownSession, "no session '\(name)'")) }
        let h = s.sequencer.history
        return .success(.history(session: name, rev: s.sequencer.rev, earliest: h.earliest, entries: h.page(before: before, limit: limit)))
    }

    /// The flows sessions may be made of, the built-in demo first.
    public var flowNames: [String] { [Flow.demo.name] + flows.keys.filter { $0 != Flow.demo.name }.sorted() }

    /// `GET /api/flows/NAME`: the flow as clients receive it in `joined.flow` (its
    /// coordinators, links and guards).
    public func flowDocument(_ name: String) -> Result<JSON, NavError> {
        guard let flow = flows[name] else {
            return .failure(NavError(.notFound, "no flow '\(name)' (known: \(flowNames.joined(separator: ", ")))"))
        }
        return .success(flow.source)
    }

    public var sessionCount: Int { sessions.count }

    /// Revisions history holds, all sessions together.
    public var heldRevisions: Int { sessions.values.reduce(0) { $0 + $1.sequencer.history.count } }

    /// History's bytes, all sessions (`History.bytes`).
    public var historyBytes: Int { sessions.values.reduce(0) { $0 + $1.sequencer.history.bytes } }

    /// The oldest revision history holds, per session, by name.
    public var earliestRevisions: [(session: String, rev: Int)] {
        sessions.keys.sorted().map { ($0, sessions[$0]!.sequencer.history.earliest) }
    }
}
