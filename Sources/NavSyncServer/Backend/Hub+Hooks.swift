import NavSync
/// The app's backend in the loop (docs/backend.md): the join hook, the command hook and
/// the webhook events, as part of the reducer. The hub asks (`Effect.hook`) and is
/// answered (`Event.hook`); it never waits: a join or command waiting for its answer is
/// parked here, and nobody else is held.
extension Hub {
    /// The hooks' part of the hub; untouched without `--hooks`.
    public struct HookSide: Sendable {
        /// The file's settings; nil without `--hooks`.
        public internal(set) var configuration: HooksConfiguration?
        var nextCall = 0
        /// What each call in flight was asked for.
        var calls: [Int: Waiting] = [:]
        /// Commands waiting for their hook, by (session, client, id): a resend of one
        /// waits for the same answer (one call per command id).
        var asking: [CommandKey: Asked] = [:]
        /// Each client identity's commands behind one that waits for its hook, in the
        /// order sent (the first is the one asked about).
        var lines: [String: [Submission]] = [:]
        /// Sessions that have had members since the last `session.vacated`, and when an
        /// empty one is due to be told vacated (loop ms).
        var occupied: Set<String> = []
        var vacating: [String: Int64] = [:]
        /// Cluster mode: commands for a session this node does not hold yet, waiting for
        /// its read (its flow decides whether they go to the hook).
        var awaitingRead: [String: [Submission]] = [:]
        /// Tells apart session events of one type at one revision.
        var eventCount = 0
        /// Hook calls by outcome (`allowed`, `refused`, `failed`), for /metrics.
        public internal(set) var outcomes: [String: Int] = [:]

        enum Waiting: Sendable {
            case join(connection: Int, ClientMessage.Join, id: JSON?)
            case command(CommandKey)
        }

        struct CommandKey: Hashable, Sendable {
            var session: String
            var client: String
            var id: CommandID
        }

        struct Asked: Sendable {
            var call: Int
            /// Resends of the same command while it was asked about.
            var resends: [Submission] = []
        }
    }

    /// A command as it came, with where its answer goes.
    struct Submission: Sendable {
        var session: String
        var object: JSONObject
        var client: String
        var name: String
        var role: Role
        var reply: Reply
        /// The join hook's answer for this connection and session, if any.
        var admission: Admission?
    }

    /// What the join hook said of a connection in a session.
    struct Admission: Sendable, Equatable {
        var user: String?
        var data: JSONObject?
    }

    /// What a peer carries for the hooks: the upgrade's address and allowed headers, and
    /// the join hook's answers per session (one answer per connection and session).
    struct PeerBackend: Sendable {
        var addr: String
        var headers: [String: String]
        var admitted: [String: Admission] = [:]
    }

    /// The upgrade of a WebSocket, as the join hook needs it.
    public struct Upgrade: Sendable, Equatable {
        public var addr: String
        /// Only the headers the hooks file lists, names lowercased.
        public var headers: [String: String]
        public init(addr: String, headers: [String: String]) { self.addr = addr; self.headers = headers }
    }

    /// Seconds a client is told to wait before sending again after a failed hook.
    static let hookRetryAfter = 1

    // MARK: Configuration

    /// A new hooks file (start or SIGHUP). Calls in flight are answered as before.
    mutating func configure(hooks newConfiguration: HooksConfiguration?) {
        hooks.configuration = newConfiguration
    }

    /// The hooks file before the hub's first event (the runtime's start).
    public mutating func configureHooks(_ configuration: HooksConfiguration?) { configure(hooks: configuration) }

    // MARK: Commands

    /// A command from a connection or over HTTP: run at once, or held for its hook, or
    /// behind an earlier command of the same client that is held.
    mutating func submit(_ s: Submission) {
        // `by` is the server's, with or without hooks: a client's would pass for the backend's.
        if let ops = s.object["ops"]?.arrayValue, let at = ops.firstIndex(where: { $0.objectValue?["by"] != nil }) {
            commandOutcomes[ErrorCode.badParams.rawValue, default: 0] += 1
            return answer(s.reply, .error(NavError(.badParams, "'by' is the server's to set (the command hook's set): a client may not send it", op: at)))
        }
        guard hooks.configuration != nil else { return run(s) }
        // Cluster mode: a session not held here yet is read first, or its flow is unknown.
        if isClustered, sessions[s.session] == nil, hooks.configuration!.commands.values.contains(where: { !$0.isEmpty }) {
            guard cluster.storeUp else {
                return answer(s.reply, .error(NavError(.unavailable, "store unavailable: \(cluster.storeDown ?? "not connected to Redis"); nothing was applied, try again",
                                                       retryAfter: Self.hookRetryAfter)))
            }
            hooks.awaitingRead[s.session, default: []].append(s)
            guard cluster.replicas[s.session]?.reading != true else { return }
            cluster.replicas[s.session, default: Replica()].reading = true
            return out.append(.cluster(.read(session: s.session, after: cluster.replicas[s.session]!.last)))
        }
        if let line = hooks.lines[s.client], !line.isEmpty {
            if let key = commandKey(s), hooks.asking[key] != nil {
                hooks.asking[key]!.resends.append(s)
            } else {
                hooks.lines[s.client]!.append(s)
            }
            return
        }
        if !ask(s) { run(s) }
    }

    /// Cluster mode: the session was read (or found missing): the commands that waited go on.
    mutating func resumeAwaitingRead(_ name: String) {
        guard let waiting = hooks.awaitingRead.removeValue(forKey: name) else { return }
        for s in waiting {
            if sessions[name] == nil {
                commandOutcomes[ErrorCode.unknownSession.rawValue, default: 0] += 1
                answer(s.reply, .error(NavError(.unknownSession, "no session '\(name)'")))
            } else {
                submit(s)
            }
        }
    }

    /// Cluster mode: this node delivers the session's webhooks (docs/backend.md,
    /// "Webhooks"): its replica is read here when the node does not hold it yet.
    mutating func holdReplica(_ name: String) {
        guard isClustered, sessions[name] == nil, cluster.storeUp, cluster.replicas[name]?.reading != true else { return }
        cluster.replicas[name, default: Replica()].reading = true
        out.append(.cluster(.read(session: name, after: cluster.replicas[name]!.last)))
    }

    /// Runs a command now, in this mode's way.
    mutating func run(_ s: Submission) {
        if isClustered {
            return clusterCommand(session: s.session, s.object, client: s.client, name: s.name, role: s.role, reply: s.reply, user: s.admission?.user)
        }
        answer(s.reply, command(session: s.session, s.object, client: s.client, name: s.name, role: s.role, user: s.admission?.user))
    }

    private func commandKey(_ s: Submission) -> HookSide.CommandKey? {
        guard let id = try? CommandID(field: s.object["id"]) else { return nil }
        return HookSide.CommandKey(session: s.session, client: s.client, id: id)
    }

    /// Asks the command hook about `s` when the file wants it: true when it is asked
    /// (and heads its client's line), false when it runs without one (no rule for its
    /// flow and ops, a malformed command, or an id already acknowledged: its answer is
    /// the sequencer's, `duplicate` or `id_reused`).
    private mutating func ask(_ s: Submission) -> Bool {
        guard let configuration = hooks.configuration, let session = sessions[s.session], let key = commandKey(s),
              let ops = s.object["ops"]?.arrayValue else { return false }
        let names = ops.compactMap { op in op["op"]?.stringValue.map { OpName(wire: $0)?.rawValue ?? $0 } }
        guard configuration.wantsCommandHook(flow: session.flow.name, ops: names),
              session.sequencer.idempotency.entry(client: s.client, id: key.id) == nil else { return false }
        var command: JSONObject = ["id": key.id.json, "ops": .array(ops)]
        if let base = s.object["base"], !base.isNull { command["base"] = base }
        if let policy = s.object["onConflict"], !policy.isNull { command["onConflict"] = policy }
        var body: JSONObject = ["type": "command", "session": .string(s.session), "flow": .string(session.flow.name),
                                "rev": .int(Int64(session.sequencer.rev)), "client": .string(s.client), "name": .string(s.name)]
        if let user = s.admission?.user { body["user"] = .string(user) }
        if let data = s.admission?.data { body["data"] = .object(data) }
        body["command"] = .object(command)
        let call = startCall(.command(key), body: .object(body))
        hooks.asking[key] = HookSide.Asked(call: call)
        hooks.lines[s.client, default: []].insert(s, at: 0)
        return true
    }

    private mutating func startCall(_ waiting: HookSide.Waiting, body: JSON) -> Int {
        hooks.nextCall += 1
        hooks.calls[hooks.nextCall] = waiting
        out.append(.hook(HookCall(id: hooks.nextCall, body: body)))
        return hooks.nextCall
    }

    /// The hook endpoint answered call `id` (or failed to).
    mutating func hookAnswered(_ id: Int, _ reply: HookReply) {
        guard let waiting = hooks.calls.removeValue(forKey: id) else { return }
        switch waiting {
        case .join(let c, let j, let requestID): joinAnswered(c, j, requestID, reply)
        case .command(let key): commandAnswered(key, reply)
        }
    }

    private mutating func commandAnswered(_ key: HookSide.CommandKey, _ reply: HookReply) {
        guard let asked = hooks.asking.removeValue(forKey: key), var line = hooks.lines[key.client], !line.isEmpty else { return }
        let head = line.removeFirst()
        hooks.lines[key.client] = line
        switch verdict(reply, what: "command \(key.id) of \(key.client) in '\(key.session)'") {
        case .allowed(_, let set, _):
            var object = head.object
            if let set, !set.isEmpty, let ops = object["ops"]?.arrayValue {
                object["ops"] = .array([Command.hookOp(set: set)] + ops)
            }
            run(Submission(session: head.session, object: object, client: head.client, name: head.name, role: head.role,
                           reply: head.reply, admission: head.admission))
            // A resend while it was asked is now a duplicate: it gets the same ack.
            for r in asked.resends { run(r) }
        case .refused(let e), .failed(let e):
            commandOutcomes[e.code.rawValue, default: 0] += 1
            answer(head.reply, .error(e))
            for r in asked.resends { answer(r.reply, .error(e)) }
        }
        advance(key.client)
    }

    /// The client's line moves on: commands behind run in order until one needs its hook.
    private mutating func advance(_ client: String) {
        while var line = hooks.lines[client], !line.isEmpty {
            let next = line.removeFirst()
            hooks.lines[client] = line
            if let key = commandKey(next), hooks.asking[key] != nil {
                // Sent again while it waited in line behind another: it waits for the same answer.
                hooks.asking[key]!.resends.append(next)
                continue
            }
            // Asked: `ask` put it back at the head, and the rest wait for its answer.
            if ask(next) { return }
            run(next)
        }
        hooks.lines[client] = nil
    }

    enum Verdict {
        case allowed(role: Role?, set: JSONObject?, admission: Admission)
        case refused(NavError)
        case failed(NavError)
    }

    /// What a hook's answer says (docs/backend.md, "The command hook"); anything malformed is a
    /// failure of the backend, logged with the reason, and `unavailable` for the client.
    private mutating func verdict(_ reply: HookReply, what: String) -> Verdict {
        func failed(_ why: String) -> Verdict {
            hooks.outcomes["failed", default: 0] += 1
            out.append(.log(.warn, "hook for \(what) failed: \(why)"))
            return .failed(NavError(.unavailable, "the app's backend did not answer (\(why)); nothing was applied, try again",
                                    retryAfter: Self.hookRetryAfter))
        }
        guard case .answered(let json) = reply else {
            if case .failed(let why) = reply { return failed(why) }
            return failed("no answer")
        }
        guard let o = json.objectValue, case .bool(let allow)? = o["allow"] else { return failed("the answer has no \"allow\": true or false") }
        guard allow else {
            hooks.outcomes["refused", default: 0] += 1
            var message = "the app's backend refused"
            if let m = o["message"], !m.isNull {
                guard let s = m.stringValue else { return failed("\"message\" is not a string") }
                message = s
            }
            var details: JSON?
            if let d = o["details"], !d.isNull {
                guard d.objectValue != nil else { return failed("\"details\" is not an object") }
                details = d
            }
            return .refused(NavError(.refused, message, details: details))
        }
        var role: Role?
        if let r = o["role"], !r.isNull {
            guard let name = r.stringValue, let parsed = Role(rawValue: name) else { return failed("\"role\" is not viewer, controller or admin") }
            role = parsed
        }
        var admission = Admission()
        if let u = o["user"], !u.isNull {
            guard let s = u.stringValue, !s.isEmpty, s.count <= 128 else { return failed("\"user\" is not a string of 1 to 128 characters") }
            admission.user = s
        }
        if let d = o["data"], !d.isNull {
            guard let obj = d.objectValue else { return failed("\"data\" is not an object") }
            guard JSON.object(obj).encoded().count <= 16 * 1024 else { return failed("\"data\" is over 16 KiB") }
            admission.data = obj
        }
        var set: JSONObject?
        if let v = o["set"], !v.isNull {
            guard let obj = v.objectValue else { return failed("\"set\" is not an object (a merge patch of the session's data)") }
            guard JSON.object(obj).encoded().count <= 16 * 1024 else { return failed("\"set\" is over 16 KiB") }
            set = obj
        }
        hooks.outcomes["allowed", default: 0] += 1
        return .allowed(role: role, set: set, admission: admission)
    }

    // MARK: Joins

    /// A join: asked of the join hook first, once per connection and session, when the
    /// file turns it on.
    mutating func joinAsking(_ j: ClientMessage.Join, _ peer: Peer, _ c: Int, _ id: JSON?) {
        guard let configuration = hooks.configuration, configuration.join, configuration.url != nil,
              peer.backend?.admitted[j.session] == nil else { return join(j, peer, c, id) }
        let flow = sessions[j.session]?.flow.name ?? j.flow ?? Flow.demo.name
        var body: JSONObject = ["type": "join", "session": .string(j.session), "flow": .string(flow), "client": .string(peer.client),
                                "name": .string(peer.name), "role": .string((peer.role ?? .viewer).rawValue),
                                "addr": .string(peer.backend?.addr ?? ""),
                                "headers": .object(JSONObject((peer.backend?.headers ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) }))]
        if let claims = peer.grant?.claims { body["claims"] = .object(claims) }
        _ = startCall(.join(connection: c, j, id: id), body: .object(body))
    }

    private mutating func joinAnswered(_ c: Int, _ j: ClientMessage.Join, _ id: JSON?, _ reply: HookReply) {
        let what = "join of '\(j.session)' by #\(c)"
        let v = verdict(reply, what: what)
        guard var peer = peers[c] else { return }
        switch v {
        case .allowed(let role, _, let admission):
            if let role, let current = peer.role, role < current { peer.role = role }
            var backend = peer.backend ?? PeerBackend(addr: "", headers: [:])
            backend.admitted[j.session] = admission
            peer.backend = backend
            peers[c] = peer
            join(j, peer, c, id)
        case .refused(var e):
            e.code = .forbidden
            emit(.send(to: c, .error(e), id: id))
        case .failed(let e):
            emit(.send(to: c, .error(e), id: id))
        }
    }

    /// The join hook's answer for a connection in a session.
    func admission(_ c: Int, _ session: String) -> Admission? { peers[c]?.backend?.admitted[session] }

    // MARK: Webhook events

    /// Whether any endpoint wants events of this type from this session.
    func wantsEvent(_ type: String, session: String) -> Bool {
        hooks.configuration?.webhooks.contains { $0.wants(type, session: session) } ?? false
    }

    /// A new revision's event, after it is durable (it goes through the gate like the patch).
    mutating func noteRevision(_ session: String, rev: Int, user: String?, ack: Ack?) {
        guard wantsEvent("revision", session: session), let s = sessions[session],
              let entry = s.sequencer.history.entries(after: rev - 1).first, entry.rev == rev else { return }
        emit(.webhook(.revision(session: session, epoch: s.sequencer.epoch, entry: entry, user: user, ack: ack)))
    }

    /// A session event (`session.created`…).
    mutating func noteSession(_ type: String, _ session: String, epoch: String? = nil, rev: Int? = nil, extra: JSONObject = [:]) {
        guard wantsEvent(type, session: session) else { return }
        let s = sessions[session]
        hooks.eventCount += 1
        emit(.webhook(.session(type, session: session, epoch: epoch ?? s?.sequencer.epoch ?? "", rev: rev ?? s?.sequencer.rev ?? 0,
                               ts: time.wallMS, n: hooks.eventCount, extra: extra)))
    }

    /// Members came or went: `session.occupied` at the first, `session.vacated` once the
    /// last has been gone `vacatedDelayMs` (checked on the tick).
    mutating func noteMembers(_ session: String) {
        guard hooks.configuration != nil, let s = sessions[session] else { return }
        if s.members.isEmpty {
            if hooks.occupied.contains(session), hooks.vacating[session] == nil {
                hooks.vacating[session] = time.ms + Int64(hooks.configuration!.vacatedDelayMS)
            }
        } else {
            hooks.vacating[session] = nil
            if hooks.occupied.insert(session).inserted { noteSession("session.occupied", session) }
        }
    }

    /// On the tick: sessions empty for `vacatedDelayMs` are told vacated.
    mutating func vacate() {
        guard !hooks.vacating.isEmpty else { return }
        for (name, due) in hooks.vacating.sorted(by: { $0.key < $1.key }) where due <= time.ms {
            hooks.vacating[name] = nil
            hooks.occupied.remove(name)
            if sessions[name]?.members.isEmpty ?? false { noteSession("session.vacated", name) }
        }
    }
}
