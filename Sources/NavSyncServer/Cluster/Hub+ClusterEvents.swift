import NavSync
/// Cluster mode: what the store answers or the live channel carries, applied to the
/// replicas strictly in log order (see `Hub+Cluster.swift`).
extension Hub {
    mutating func clusterEvent(_ event: ClusterEvent) {
        switch event {
        case .connected(let names):
            let wasDown = cluster.storeDown
            cluster.storeUp = true
            cluster.storeDown = nil
            if let wasDown { out.append(.log(.info, "cluster: Redis is reachable again (was: \(wasDown)); catching up")) }
            let held = Set(names)
            for name in sessions.keys.sorted() where !held.contains(name) { dropSession(name, because: "it is no longer in Redis") }
            for name in names.sorted() {
                cluster.replicas[name, default: Replica()].reading = true
                out.append(.cluster(.read(session: name, after: sessions[name] == nil ? nil : cluster.replicas[name]!.last)))
            }
            if let demo = configuration.demoSession, !held.contains(demo), sessions[demo] == nil {
                requestCreate(demo, flow: Flow.demo)
            }
        case .disconnected(let reason):
            if cluster.storeUp { out.append(.log(.error, "cluster: Redis unreachable: \(reason); commands fail until it is back, reads go on")) }
            cluster.storeUp = false
            cluster.storeDown = reason
            // Commands not yet sent never ran.
            for name in cluster.replicas.keys.sorted() {
                let waiting = cluster.replicas[name]!.queue
                cluster.replicas[name]!.queue = []
                cluster.replicas[name]!.reading = false
                for p in waiting { fail(p, NavError(.unavailable, "store unavailable: \(reason); nothing was applied, try again")) }
                answerParkedReads(name)
            }
        case .created(let name, let made):
            if made {
                out.append(.log(.info, "cluster: session '\(name)' created"))
                finishJoins(name)
            } else {
                // Someone made it first: read it.
                cluster.replicas[name, default: Replica()].reading = true
                out.append(.cluster(.read(session: name, after: nil)))
            }
        case .appended(let name, let token, let last):
            finish(name, token: token, last: last)
        case .waited(let name, let token, let last, let answer):
            switch answer.verdict {
            case .acknowledged:
                finish(name, token: token, last: last)
            case .waitAlsoFor(let more):
                out.append(.cluster(.confirm(session: name, token: token, last: last, also: more, attempt: answer.attempt + 1)))
            case .unconfirmed(let reason):
                cluster.unconfirmed += 1
                finish(name, token: token, last: last, unconfirmed: reason)
            }
        case .refused(let name, let token, let why):
            refused(name, token: token, why)
        case .read(let name, let result):
            readDone(name, result)
        case .live(let name, let prev, let id, let revision, let record):
            live(name, prev: prev, id: id, revision: revision, record)
        case .deleted(let name):
            dropSession(name, because: "it was deleted on another node")
        case .appeared(let name):
            guard sessions[name] == nil, !cluster.creating.contains(name), cluster.replicas[name]?.reading != true else { return }
            cluster.replicas[name, default: Replica()].reading = true
            out.append(.cluster(.read(session: name, after: nil)))
        case .heartbeat(let nodes, let now):
            expireRemoteMembers(nodes: nodes, now: now)
            out.append(.cluster(.checkPositions(replicaPositions)))
            for name in cluster.failedReads.sorted() where cluster.replicas[name]?.reading != true {
                cluster.failedReads.remove(name)
                cluster.replicas[name, default: Replica()].reading = true
                out.append(.cluster(.read(session: name, after: sessions[name] == nil ? nil : cluster.replicas[name]!.last)))
            }
        case .presence(let name, let payload):
            remotePresence(name, payload)
        case .membersWanted(let name):
            guard let s = sessions[name] else { return }
            let mine = s.memberOrder.filter { $0 > 0 }.compactMap { s.members[$0] }
            if !mine.isEmpty { out.append(.cluster(.presence(session: name, presencePayload(LocalPresence(joined: mine), full: true)))) }
        case .behind(let name):
            guard sessions[name] != nil, let r = cluster.replicas[name], !r.reading, r.inflight == nil else { return }
            cluster.replicas[name]!.reading = true
            out.append(.cluster(.read(session: name, after: r.last)))
        case .epochChanged(let name):
            guard sessions[name] != nil, cluster.replicas[name]?.reading != true else { return }
            cluster.replicas[name, default: Replica()].reading = true
            out.append(.cluster(.read(session: name, after: nil)))
        }
    }

    mutating func refused(_ name: String, token: Int, _ why: AppendRefusal) {
        guard var r = cluster.replicas[name], let f = r.inflight, f.token == token else { return }
        r.inflight = nil
        // Another node's entries, if any (none is this node's): a read brings them when
        // one is made; else they follow the replica's last.
        defer { releaseLive(name) }
        switch why {
        case .moved:
            // Run them again on the newer state, after catching up.
            cluster.retries += 1
            r.queue = f.commands + r.queue
            r.reading = true
            cluster.replicas[name] = r
            out.append(.cluster(.read(session: name, after: r.last)))
        case .gone:
            cluster.replicas[name] = r
            for p in f.commands + r.queue { fail(p, NavError(.unknownSession, "no session '\(name)' (deleted)")) }
            dropSession(name, because: "it is gone from Redis")
        case .unavailable(let reason):
            cluster.replicas[name] = r
            for p in f.commands { fail(p, NavError(.unavailable, "store unavailable: \(reason); nothing was applied, try again")) }
        case .unknown(let reason):
            // They may be in Redis: no answer at all. A WebSocket client is closed with
            // 1013 and resends the same ids, which find their records if they are stored.
            r.reading = true
            cluster.replicas[name] = r
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

    mutating func fail(_ p: Pending, _ e: NavError) {
        commandOutcomes[e.code.rawValue, default: 0] += 1
        answer(p.reply, .error(e))
    }

    /// A live entry: applied when it follows the replica's last; a gap makes a read.
    mutating func live(_ name: String, prev: StreamID, id: StreamID, revision: Bool, _ bytes: [UInt8]) {
        // Without the command link nothing can be read: `connected` reads every session
        // from where its replica stands once it is back.
        guard cluster.storeUp else { return }
        guard sessions[name] != nil else {
            // A session made on another node: read it whole.
            guard cluster.replicas[name]?.reading != true, !cluster.creating.contains(name) else { return }
            cluster.replicas[name, default: Replica()].reading = true
            return out.append(.cluster(.read(session: name, after: nil)))
        }
        var r = cluster.replicas[name, default: Replica()]
        guard id > r.last else { return }   // had it already (our own append, or a read)
        if r.inflight != nil {
            r.heldLive.append(LiveEntry(prev: prev, id: id, revision: revision, record: bytes))
            cluster.replicas[name] = r
            return
        }
        guard prev == r.last, !r.reading else {
            if !r.reading {
                r.reading = true
                cluster.replicas[name] = r
                out.append(.cluster(.read(session: name, after: r.last)))
            }
            return
        }
        cluster.replicas[name] = r
        guard let json = try? JSON.parse(bytes), let record = ClusterRecord(json: json, revision: revision) else {
            out.append(.log(.warn, "cluster: a live entry of '\(name)' does not parse; reading the log"))
            cluster.replicas[name]!.reading = true
            return out.append(.cluster(.read(session: name, after: r.last)))
        }
        apply([(id, record)], to: name)
    }

    /// The live entries held while an append was out, now that it is not: this node's
    /// own are behind the replica's last and cost nothing; another node's apply.
    mutating func releaseLive(_ name: String) {
        guard sessions[name] != nil, let held = cluster.replicas[name]?.heldLive, !held.isEmpty else { return }
        cluster.replicas[name]!.heldLive = []
        for e in held { live(name, prev: e.prev, id: e.id, revision: e.revision, e.record) }
    }

    /// Applies log entries in order to the replica, sending members the patches (unless
    /// they get the whole state after). false when one does not apply as recorded (then
    /// the session is read whole).
    @discardableResult
    mutating func apply(_ entries: [(StreamID, ClusterRecord)], to name: String, broadcasting: Bool = true) -> Bool {
        for (id, entry) in entries where id > cluster.replicas[name]!.last {
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
                cluster.replicas[name]!.reading = true
                out.append(.cluster(.read(session: name, after: nil)))
                return false
            }
            cluster.replicas[name]!.last = id
        }
        return true
    }

    mutating func readDone(_ name: String, _ result: ReadResult) {
        cluster.replicas[name, default: Replica()].reading = false
        switch result {
        case .gone:
            // Joins that waited for this read are refused; reads parked on it are served
            // now (a join with `create` then goes on to make the session).
            refuseJoins(name, NavError(.unknownSession, "no session '\(name)'"))
            return dropSession(name, because: "it is not in Redis")
        case .failed(let reason):
            out.append(.log(.warn, "cluster: reading session '\(name)' failed: \(reason); tried again in a second"))
            cluster.failedReads.insert(name)
            refuseJoins(name, NavError(.unavailable, "store unavailable: \(reason)"))
            answerParkedReads(name)
        case .entries(let epoch, let entries):
            guard let s = sessions[name], s.sequencer.epoch == epoch else {
                cluster.replicas[name]!.reading = true
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
                cluster.replicas[name]!.last = at
                // Members get the state at the end, not patches from the snapshot on.
                guard apply(entries, to: name, broadcasting: previous == nil) else { return }
                // A new primary is another Redis process, so every failover brings a new
                // epoch; only revisions this node had and Redis no longer has are a loss.
                if let previous {
                    let now = sessions[name]!.sequencer.rev
                    let acknowledged = cluster.replicas[name]!.acknowledged
                    cluster.replicas[name]!.acknowledged = min(acknowledged, now)
                    if previous.sequencer.rev > now && acknowledged > now {
                        out.append(.log(.error, "cluster: session '\(name)' went back from revision \(previous.sequencer.rev) to \(now) (epoch \(previous.sequencer.epoch) -> \(epoch)): Redis lost writes this node acknowledged (up to revision \(acknowledged)): without --redis-wait a failover can lose them, or Redis restarted empty; members resync"))
                    } else if previous.sequencer.rev > now {
                        out.append(.log(.warn, "cluster: session '\(name)' went back from revision \(previous.sequencer.rev) to \(now) (epoch \(previous.sequencer.epoch) -> \(epoch)): Redis lost writes this node never acknowledged (it acknowledged up to revision \(acknowledged)); their senders resend them; members resync"))
                    } else if previous.sequencer.epoch != epoch {
                        out.append(.log(.info, "cluster: session '\(name)' goes on at revision \(now) under epoch \(epoch) (a new Redis primary; nothing lost); members resync"))
                    }
                }
                // Another lineage: the session was made anew in Redis (docs/protocol.md, "Epochs").
                if let previous, previous.sequencer.epoch.split(separator: "/").first != epoch.split(separator: "/").first {
                    noteSession("session.reset", name, extra: ["previousEpoch": .string(previous.sequencer.epoch)])
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
    mutating func dropSession(_ name: String, because why: String) {
        let members = sessions[name]?.memberOrder ?? []
        if let r = cluster.replicas.removeValue(forKey: name) {
            for p in (r.inflight?.commands ?? []) + r.queue { fail(p, NavError(.unknownSession, "no session '\(name)'")) }
        }
        cluster.remote[name] = nil
        cluster.localPresence[name] = nil
        guard sessions[name] != nil else { return answerParkedReads(name) }
        removeSession(name)
        out.append(.log(.info, "cluster: session '\(name)' dropped: \(why)"))
        answerParkedReads(name)
        if !members.isEmpty { emit(.broadcast(session: name, .deleted(session: name, by: "cluster"), to: members)) }
    }
}
