/// Cluster mode (DESIGN.md section 17): the hub's sessions are replicas of what Redis
/// holds, and Redis orders every command.
///
/// A command is not applied to the replica: it runs on a copy, and the records it made
/// are appended to the session's log by one compare-and-append call that succeeds only
/// while the log still ends where the replica does. Then the copy becomes the replica,
/// members get the patches, and the sender its ack: an acknowledged revision is in
/// Redis. When the log has moved on (another node appended), the copy is dropped, the
/// replica catches up from the log and the commands run again. Commands arriving while
/// an append is out wait, and go together in the next one.
///
/// The replica changes only by records Redis holds, in log order: its own appends, the
/// live channel (each entry names the one before it, so a gap is seen) and reads.
extension Hub {
    /// Who waits for the answer to a command.
    enum Reply: Sendable {
        case socket(Int, id: JSON?)
        case http(HTTPCommand)
    }

    /// A command waiting for its session's turn.
    struct Pending: Sendable {
        var object: JSONObject
        var client: String
        var name: String
        var role: Role
        var reply: Reply
        /// Monotonic ns when it arrived (latency).
        var arrived: UInt64
    }

    /// One session's side of the cluster.
    struct Replica: Sendable {
        /// The log entry the replica has applied last.
        var last = StreamID.zero
        /// Commands waiting for the append out to finish.
        var queue: [Pending] = []
        /// The append out: its commands, the copy they ran on, their answers and patches.
        var inflight: Inflight?
        /// A read is out (catching up): nothing is appended until it is back.
        var reading = false
        /// Records appended by this node since its last snapshot of the session.
        var sinceSnapshot = 0
    }

    struct Inflight: Sendable {
        var token: Int
        var commands: [Pending]
        var copy: Sequencer
        /// Whether `copy` is a scratch copy (to adopt) or a whole one (to take as it is).
        var scratch: Bool
        var answers: [ServerMessage]
        /// Per command: `applied`, `unchanged`, `duplicate` or an error code (metrics).
        var outcomes: [String]
        var patches: [Patch]
        /// Log entries the append carries.
        var records: Int
    }

    /// Settings of cluster mode (`navsyncd --cluster`).
    public struct ClusterSettings: Sendable {
        /// Records after which the node that appended them stores a snapshot.
        public var snapshotEvery = 10_000
        /// This node's name, and this run of it (a restarted node's old members go).
        public var node: String
        public var incarnation: String
        public init(node: String = "node", incarnation: String = "1", snapshotEvery: Int = 10_000) {
            self.node = node; self.incarnation = incarnation; self.snapshotEvery = snapshotEvery
        }
    }

    /// This node's presence changes of one session since the last tick.
    struct LocalPresence: Sendable {
        var joined: [Member] = []
        var left: [String] = []
        var status: [Member] = []
    }

    /// Another node's members of one session, each standing in the session's member
    /// table under a negative connection id (so listings and presence treat them alike;
    /// nothing is ever sent to them).
    struct RemoteNode: Sendable {
        var incarnation: String
        var ids: [String: Int] = [:]
        /// When it was first heard of (the last heartbeat's time then).
        var since: Int64
    }

    public var isClustered: Bool { clusterSettings != nil }

    /// Where each replica stands in its log (sessions not being read).
    public var replicaPositions: [String: StreamID] {
        var out: [String: StreamID] = [:]
        for (name, r) in replicas where sessions[name] != nil && !r.reading && r.inflight == nil { out[name] = r.last }
        return out
    }

    // MARK: Commands

    /// A command in cluster mode: queued for its session, answered once Redis has it.
    mutating func clusterCommand(session name: String, _ object: JSONObject, client: String, name senderName: String,
                                 role: Role, reply: Reply) {
        guard sessions[name] != nil else {
            commandOutcomes[ErrorCode.unknownSession.rawValue, default: 0] += 1
            return answer(reply, .error(NavError(.unknownSession, "no session '\(name)'")))
        }
        guard storeUp else {
            commandOutcomes[ErrorCode.internal.rawValue, default: 0] += 1
            return answer(reply, .error(NavError(.internal, "store unavailable: \(storeDown ?? "not connected to Redis"); nothing was applied, try again")))
        }
        replicas[name, default: Replica()].queue.append(Pending(object: object, client: client, name: senderName, role: role,
                                                                reply: reply, arrived: time.nanos))
        pump(name)
    }

    /// Sends the session's waiting commands as one append, when none is out.
    mutating func pump(_ name: String) {
        guard var r = replicas[name], r.inflight == nil, !r.reading, !r.queue.isEmpty, let s = sessions[name] else { return }
        // `restore` reads history, which a scratch copy does not hold: those pay a full copy.
        let restores = r.queue.contains { $0.object["ops"]?.arrayValue?.contains { $0["op"] == "restore" } ?? false }
        var copy = restores ? s.sequencer : s.sequencer.scratchCopy()
        var records: [ClusterRecord] = []
        var answers: [ServerMessage] = []
        var outcomes: [String] = []
        var patches: [Patch] = []
        let ts = time.wallMS
        for p in r.queue {
            let sender = Sequencer.Sender(name: p.name, ts: ts, mayLoad: p.role == .admin)
            let (outcome, command) = copy.submitDecoding(p.object, client: p.client, refused: p.role.refusedOperations, sender: sender)
            func entry(_ command: Command, rev: Int, revision: Bool) -> ClusterRecord {
                ClusterRecord(record: JournalRecord(rev: rev, client: p.client, command: command, name: p.name, ts: ts), revision: revision)
            }
            switch outcome {
            case .applied(let ack, let patch):
                if let command { records.append(entry(command, rev: ack.rev, revision: true)) }
                patches.append(patch)
                answers.append(.ack(session: name, ack))
                outcomes.append("applied")
            case .unchanged(let ack):
                // Logged too (without a revision), so the ack survives this node.
                if let command { records.append(entry(command, rev: ack.rev, revision: false)) }
                answers.append(.ack(session: name, ack))
                outcomes.append("unchanged")
            case .duplicate(let ack):
                answers.append(.ack(session: name, ack))
                outcomes.append("duplicate")
            case .failed(let e):
                answers.append(.error(e))
                outcomes.append(e.code.rawValue)
            }
        }
        let commands = r.queue
        r.queue = []
        nextToken += 1
        r.inflight = Inflight(token: nextToken, commands: commands, copy: copy, scratch: !restores, answers: answers,
                              outcomes: outcomes, patches: patches, records: records.count)
        replicas[name] = r
        if records.isEmpty {
            // Nothing to store: the answers only depend on what the replica holds.
            return finish(name, token: nextToken, last: r.last)
        }
        out.append(.cluster(.append(session: name, epoch: s.sequencer.epoch, after: r.last, records: records, token: nextToken)))
    }

    /// The append is in Redis (or there was nothing to append): the copy is the replica
    /// (unless the live channel got there first), members get the patches, senders their
    /// answers.
    private mutating func finish(_ name: String, token: Int, last: StreamID) {
        guard var r = replicas[name], let f = r.inflight, f.token == token, sessions[name] != nil else { return }
        r.inflight = nil
        if last > r.last {
            // The live channel may have brought the first of these revisions already:
            // members get each revision once.
            let had = sessions[name]!.sequencer.rev
            if f.scratch { sessions[name]!.sequencer.adopt(f.copy, patches: f.patches) } else { sessions[name]!.sequencer = f.copy }
            r.last = last
            r.sinceSnapshot += f.records
            for p in f.patches where p.rev > had { broadcast(name, .patch(session: name, p)) }
        }
        replicas[name] = r
        for (i, p) in f.commands.enumerated() {
            commandOutcomes[f.outcomes[i], default: 0] += 1
            applyLatency.record(nanoseconds: time.nanos &- p.arrived)
            answer(p.reply, f.answers[i])
        }
        if r.sinceSnapshot >= clusterSettings!.snapshotEvery, let s = sessions[name] {
            replicas[name]!.sinceSnapshot = 0
            out.append(.cluster(.snapshot(session: name, epoch: s.sequencer.epoch, at: r.last, data: s.sequencer.snapshot())))
        }
        pump(name)
    }

    private mutating func answer(_ reply: Reply, _ m: ServerMessage) {
        switch reply {
        case .socket(let c, let id):
            emit(.send(to: c, m, id: id))
        case .http(let h):
            var m = m
            if let echo = h.echoID, case .ack(let s, var ack) = m, let id = try? CommandID(field: echo) {
                ack.id = id
                m = .ack(session: s, ack)
            }
            emit(.answer(connection: h.connection, h.request, m, id: h.echoID ?? h.command["id"]))
        }
    }

    // MARK: The store's answers

    mutating func cluster(_ event: ClusterEvent) {
        switch event {
        case .connected(let names):
            let wasDown = storeDown
            storeUp = true
            storeDown = nil
            if let wasDown { out.append(.log(.info, "cluster: Redis is reachable again (was: \(wasDown)); catching up")) }
            let held = Set(names)
            for name in sessions.keys.sorted() where !held.contains(name) { dropSession(name, because: "it is no longer in Redis") }
            for name in names.sorted() {
                replicas[name, default: Replica()].reading = true
                out.append(.cluster(.read(session: name, after: sessions[name] == nil ? nil : replicas[name]!.last)))
            }
            if let demo = configuration.demoSession, !held.contains(demo), sessions[demo] == nil {
                requestCreate(demo, flow: Flow.demo)
            }
        case .disconnected(let reason):
            if storeUp { out.append(.log(.error, "cluster: Redis unreachable: \(reason); commands fail until it is back, reads go on")) }
            storeUp = false
            storeDown = reason
            // Commands not yet sent never ran.
            for name in replicas.keys.sorted() {
                let waiting = replicas[name]!.queue
                replicas[name]!.queue = []
                replicas[name]!.reading = false
                for p in waiting { fail(p, NavError(.internal, "store unavailable: \(reason); nothing was applied, try again")) }
                answerParkedReads(name)
            }
        case .created(let name, let made):
            if made {
                out.append(.log(.info, "cluster: session '\(name)' created"))
                finishJoins(name)
            } else {
                // Someone made it first: read it.
                replicas[name, default: Replica()].reading = true
                out.append(.cluster(.read(session: name, after: nil)))
            }
        case .appended(let name, let token, let last):
            finish(name, token: token, last: last)
        case .refused(let name, let token, let why):
            refused(name, token: token, why)
        case .read(let name, let result):
            readDone(name, result)
        case .live(let name, let prev, let id, let revision, let record):
            live(name, prev: prev, id: id, revision: revision, record)
        case .deleted(let name):
            dropSession(name, because: "it was deleted on another node")
        case .appeared(let name):
            guard sessions[name] == nil, !creating.contains(name), replicas[name]?.reading != true else { return }
            replicas[name, default: Replica()].reading = true
            out.append(.cluster(.read(session: name, after: nil)))
        case .heartbeat(let nodes, let now):
            expireRemoteMembers(nodes: nodes, now: now)
            out.append(.cluster(.checkPositions(replicaPositions)))
            for name in failedReads.sorted() where replicas[name]?.reading != true {
                failedReads.remove(name)
                replicas[name, default: Replica()].reading = true
                out.append(.cluster(.read(session: name, after: sessions[name] == nil ? nil : replicas[name]!.last)))
            }
        case .presence(let name, let payload):
            remotePresence(name, payload)
        case .membersWanted(let name):
            guard let s = sessions[name] else { return }
            let mine = s.memberOrder.filter { $0 > 0 }.compactMap { s.members[$0] }
            if !mine.isEmpty { out.append(.cluster(.presence(session: name, presencePayload(LocalPresence(joined: mine), full: true)))) }
        case .behind(let name):
            guard sessions[name] != nil, let r = replicas[name], !r.reading, r.inflight == nil else { return }
            replicas[name]!.reading = true
            out.append(.cluster(.read(session: name, after: r.last)))
        case .epochChanged(let name):
            guard sessions[name] != nil, replicas[name]?.reading != true else { return }
            replicas[name, default: Replica()].reading = true
            out.append(.cluster(.read(session: name, after: nil)))
        }
    }

    private mutating func refused(_ name: String, token: Int, _ why: AppendRefusal) {
        guard var r = replicas[name], let f = r.inflight, f.token == token else { return }
        r.inflight = nil
        switch why {
        case .moved:
            // Run them again on the newer state, after catching up.
            clusterRetries += 1
            r.queue = f.commands + r.queue
            r.reading = true
            replicas[name] = r
            out.append(.cluster(.read(session: name, after: r.last)))
        case .gone:
            replicas[name] = r
            for p in f.commands + r.queue { fail(p, NavError(.unknownSession, "no session '\(name)' (deleted)")) }
            dropSession(name, because: "it is gone from Redis")
        case .unavailable(let reason):
            replicas[name] = r
            for p in f.commands { fail(p, NavError(.internal, "store unavailable: \(reason); nothing was applied, try again")) }
        case .unknown(let reason):
            // They may be in Redis: no answer at all. A WebSocket client is closed with
            // 1013 and resends the same ids, which find their records if they are stored.
            r.reading = true
            replicas[name] = r
            for p in f.commands {
                switch p.reply {
                case .socket(let c, _):
                    out.append(.close(c, code: 1013, reason: "store did not answer; resend unacknowledged commands"))
                case .http:
                    answer(p.reply, .error(NavError(.internal, "the store did not answer (\(reason)); the command may have been applied: send it again with the same id and X-Navsync-Client to find out")))
                }
            }
            out.append(.cluster(.read(session: name, after: r.last)))
        }
    }

    private mutating func fail(_ p: Pending, _ e: NavError) {
        commandOutcomes[e.code.rawValue, default: 0] += 1
        answer(p.reply, .error(e))
    }

    /// A live entry: applied when it follows the replica's last; a gap makes a read.
    private mutating func live(_ name: String, prev: StreamID, id: StreamID, revision: Bool, _ bytes: [UInt8]) {
        guard sessions[name] != nil else {
            // A session made on another node: read it whole.
            guard replicas[name]?.reading != true, !creating.contains(name) else { return }
            replicas[name, default: Replica()].reading = true
            return out.append(.cluster(.read(session: name, after: nil)))
        }
        var r = replicas[name, default: Replica()]
        guard id > r.last else { return }   // had it already (our own append, or a read)
        guard prev == r.last, !r.reading else {
            if !r.reading {
                r.reading = true
                replicas[name] = r
                out.append(.cluster(.read(session: name, after: r.last)))
            }
            return
        }
        replicas[name] = r
        guard let json = try? JSON.parse(bytes), let record = ClusterRecord(json: json, revision: revision) else {
            out.append(.log(.warn, "cluster: a live entry of '\(name)' does not parse; reading the log"))
            replicas[name]!.reading = true
            return out.append(.cluster(.read(session: name, after: r.last)))
        }
        apply([(id, record)], to: name)
    }

    /// Applies log entries in order to the replica, sending members the patches (unless
    /// they get the whole state after). false when one does not apply as recorded (then
    /// the session is read whole).
    @discardableResult
    private mutating func apply(_ entries: [(StreamID, ClusterRecord)], to name: String, broadcasting: Bool = true) -> Bool {
        for (id, entry) in entries where id > replicas[name]!.last {
            let r = entry.record
            let sender = Sequencer.Sender(name: r.name ?? r.client, ts: r.ts)
            let (outcome, _) = sessions[name]!.sequencer.submitJournaling(r.command, client: r.client, refused: [:], sender: sender, trusted: true)
            switch (outcome, entry.revision) {
            case (.applied(let ack, let patch), true) where ack.rev == r.rev:
                if broadcasting { broadcast(name, .patch(session: name, patch)) }
            case (.unchanged, false), (.duplicate, false):
                break
            default:
                out.append(.log(.error, "cluster: session '\(name)': log entry \(id) does not apply to the replica as recorded; reading the session whole"))
                replicas[name]!.reading = true
                out.append(.cluster(.read(session: name, after: nil)))
                return false
            }
            replicas[name]!.last = id
        }
        return true
    }

    private mutating func readDone(_ name: String, _ result: ReadResult) {
        replicas[name, default: Replica()].reading = false
        switch result {
        case .gone:
            dropSession(name, because: "it is not in Redis")
            refuseJoins(name, NavError(.unknownSession, "no session '\(name)'"))
            answerParkedReads(name)
        case .failed(let reason):
            out.append(.log(.warn, "cluster: reading session '\(name)' failed: \(reason); tried again in a second"))
            failedReads.insert(name)
            refuseJoins(name, NavError(.internal, "store unavailable: \(reason)"))
            answerParkedReads(name)
        case .entries(let epoch, let entries):
            guard let s = sessions[name], s.sequencer.epoch == epoch else {
                replicas[name]!.reading = true
                return out.append(.cluster(.read(session: name, after: nil)))
            }
            guard apply(entries, to: name) else { return }
        case .whole(let flowJSON, let epoch, let snapshot, let at, let entries):
            do {
                let flow = try sessions[name]?.flow ?? flows[flowJSON["name"]?.stringValue ?? ""] ?? Flow.load(flowJSON)
                var seq = try Sequencer(restoring: snapshot, flow: flow, limits: configuration.limits.model,
                                        idempotencyCapacity: configuration.idempotency, logCapacity: configuration.patchLog,
                                        historyCapacity: configuration.history)
                seq.epoch = epoch
                let previous = sessions[name]
                if previous == nil {
                    sessions[name] = Session(name: name, flow: flow, sequencer: seq)
                    out.append(.cluster(.askMembers(session: name)))
                } else {
                    sessions[name]!.sequencer = seq
                }
                replicas[name]!.last = at
                // Members get the state at the end, not patches from the snapshot on.
                guard apply(entries, to: name, broadcasting: previous == nil) else { return }
                if let previous, previous.sequencer.epoch != epoch || previous.sequencer.rev > sessions[name]!.sequencer.rev {
                    out.append(.log(.warn, "cluster: session '\(name)' now has epoch \(epoch) at revision \(sessions[name]!.sequencer.rev) (it was \(previous.sequencer.epoch) at \(previous.sequencer.rev)): Redis lost writes or restarted empty; members resync"))
                }
                if previous != nil {
                    let s = sessions[name]!
                    for c in s.memberOrder {
                        emit(.send(to: c, .snapshot(session: name, rev: s.sequencer.rev, state: s.sequencer.state.json), id: nil))
                    }
                }
            } catch {
                out.append(.log(.error, "cluster: session '\(name)' in Redis cannot be read: \(error)"))
                refuseJoins(name, NavError(.internal, "session '\(name)' in Redis cannot be read: \(error)"))
                return answerParkedReads(name)
            }
        }
        finishJoins(name)
        answerParkedReads(name)
        pump(name)
    }

    /// Forgets a session: its members are told it was deleted, waiting commands fail.
    private mutating func dropSession(_ name: String, because why: String) {
        let members = sessions[name]?.memberOrder ?? []
        if let r = replicas.removeValue(forKey: name) {
            for p in (r.inflight?.commands ?? []) + r.queue { fail(p, NavError(.unknownSession, "no session '\(name)'")) }
        }
        remote[name] = nil
        localPresence[name] = nil
        guard sessions[name] != nil else { return answerParkedReads(name) }
        removeSession(name)
        out.append(.log(.info, "cluster: session '\(name)' dropped: \(why)"))
        answerParkedReads(name)
        if !members.isEmpty { emit(.broadcast(session: name, .deleted(session: name, by: "cluster"), to: members)) }
    }

    // MARK: Presence across nodes (section 17)

    /// Records a change of a local member, for the other nodes.
    mutating func noteLocal(_ session: String, joined: Member? = nil, left: String? = nil, status: Member? = nil) {
        guard isClustered else { return }
        if let joined { localPresence[session, default: LocalPresence()].joined.append(joined) }
        if let left { localPresence[session, default: LocalPresence()].left.append(left) }
        if let status { localPresence[session, default: LocalPresence()].status.append(status) }
    }

    /// With each presence tick: what changed here goes to the other nodes.
    mutating func publishLocalPresence() {
        guard isClustered, !localPresence.isEmpty, storeUp else { return }
        for name in localPresence.keys.sorted() where sessions[name] != nil {
            out.append(.cluster(.presence(session: name, presencePayload(localPresence[name]!, full: false))))
        }
        localPresence = [:]
    }

    func presencePayload(_ p: LocalPresence, full: Bool) -> JSON {
        ["node": .string(clusterSettings!.node), "inc": .string(clusterSettings!.incarnation), "full": .bool(full),
         "joined": .array(p.joined.map(\.json)), "left": .array(p.left.map { .string($0) }), "status": .array(p.status.map(\.json))]
    }

    private mutating func remotePresence(_ name: String, _ payload: JSON) {
        guard sessions[name] != nil, let node = payload["node"]?.stringValue, node != clusterSettings!.node,
              let inc = payload["inc"]?.stringValue else { return }
        let members = { (key: String) in (payload[key]?.arrayValue ?? []).compactMap { try? ServerMessage.member($0) } }
        var known = remote[name]?[node] ?? RemoteNode(incarnation: inc, since: lastHeartbeat)
        let detail = configuration.presenceDetail
        // A full list, or a new run of that node: what it had before goes.
        if payload["full"] == true || known.incarnation != inc {
            let keep = payload["full"] == true && known.incarnation == inc ? Set(members("joined").map(\.client)) : []
            for (client, id) in known.ids where !keep.contains(client) {
                sessions[name]!.remove(id, detail: detail)
                known.ids[client] = nil
            }
            known.incarnation = inc
        }
        for m in members("joined") where known.ids[m.client] == nil {
            nextRemoteID -= 1
            known.ids[m.client] = nextRemoteID
            sessions[name]!.add(nextRemoteID, m)
        }
        for client in (payload["left"]?.arrayValue ?? []).compactMap(\.stringValue) {
            if let id = known.ids.removeValue(forKey: client) { sessions[name]!.remove(id, detail: detail) }
        }
        for m in members("status") {
            if let id = known.ids[m.client], let rev = m.rev { sessions[name]!.setStatus(id, rev: rev, focus: m.focus) }
        }
        remote[name, default: [:]][node] = known
    }

    /// Members of nodes silent for over 5 s (or gone from the list, or restarted since)
    /// leave their sessions.
    private mutating func expireRemoteMembers(nodes: [String: NodeBeat], now: Int64) {
        lastHeartbeat = now
        for name in remote.keys.sorted() {
            for (node, known) in remote[name]! {
                let beat = nodes[node]
                let alive = beat.map { now - $0.seen <= 5_000 && $0.incarnation == known.incarnation } ?? (now - known.since <= 5_000)
                guard alive else {
                    for id in known.ids.values { sessions[name]?.remove(id, detail: configuration.presenceDetail) }
                    remote[name]![node] = nil
                    out.append(.log(.info, "cluster: node \(node) is silent: its \(known.ids.count) members of '\(name)' left"))
                    continue
                }
            }
        }
    }

    // MARK: Reads that wait for the replica

    /// Holds a join, sync or get until a read of the session from Redis is back.
    mutating func parkForRead(_ name: String, _ c: Int, _ request: ClientRequest, now: Int64) {
        parkedReads[name, default: []].append((c, request, now))
        guard storeUp else { return answerParkedReads(name) }   // Redis away: from the replica
        guard replicas[name]?.reading != true else { return }   // the read out answers them too
        replicas[name, default: Replica()].reading = true
        out.append(.cluster(.read(session: name, after: replicas[name]!.last)))
    }

    mutating func answerParkedReads(_ name: String) {
        guard let waiting = parkedReads.removeValue(forKey: name) else { return }
        answeringParked = true
        defer { answeringParked = false }
        for (c, request, now) in waiting where peers[c] != nil { message(request, from: c, now: now) }
    }

    // MARK: Creating and joining

    mutating func requestCreate(_ name: String, flow: Flow) {
        guard creating.insert(name).inserted else { return }
        let seq = Sequencer(flow: flow, epoch: ids.nextEpoch(), limits: configuration.limits.model,
                            idempotencyCapacity: configuration.idempotency, logCapacity: configuration.patchLog,
                            historyCapacity: configuration.history)
        pendingCreations[name] = Session(name: name, flow: flow, sequencer: seq)
        out.append(.cluster(.create(session: name, flow: flow, epoch: seq.epoch, snapshot: seq.snapshot())))
    }

    /// Joins that waited for a session being created or read go on.
    private mutating func finishJoins(_ name: String) {
        creating.remove(name)
        if let made = pendingCreations.removeValue(forKey: name), sessions[name] == nil {
            sessions[name] = made
            replicas[name, default: Replica()].last = .zero
        }
        for (c, j, id) in parkedJoins.removeValue(forKey: name) ?? [] {
            guard let peer = peers[c] else { continue }
            join(j, peer, c, id)
        }
    }

    private mutating func refuseJoins(_ name: String, _ e: NavError) {
        creating.remove(name)
        pendingCreations[name] = nil
        for (c, _, id) in parkedJoins.removeValue(forKey: name) ?? [] { emit(.send(to: c, .error(e), id: id)) }
    }

    /// A join of a session this node does not hold (yet): made or read first.
    mutating func parkJoin(_ j: ClientMessage.Join, _ c: Int, _ id: JSON?, flow: Flow) {
        parkedJoins[j.session, default: []].append((c, j, id))
        guard storeUp else { return refuseJoins(j.session, NavError(.internal, "store unavailable: \(storeDown ?? "not connected to Redis")")) }
        requestCreate(j.session, flow: flow)
    }
}
