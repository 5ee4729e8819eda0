import NavSync
/// Cluster mode: commands run on a copy of the replica and go to Redis as one
/// compare-and-append; answered once Redis has them (see `Hub+Cluster.swift`).
extension Hub {
    /// A command in cluster mode: queued for its session, answered once Redis has it.
    mutating func clusterCommand(session name: String, _ object: JSONObject, client: String, name senderName: String,
                                 role: Role, reply: Reply, user: String? = nil) {
        guard cluster.storeUp else {
            commandOutcomes[ErrorCode.internal.rawValue, default: 0] += 1
            return answer(reply, .error(NavError(.unavailable, "store unavailable: \(cluster.storeDown ?? "not connected to Redis"); nothing was applied, try again")))
        }
        cluster.replicas[name, default: Replica()].queue.append(Pending(object: object, client: client, name: senderName, role: role,
                                                                reply: reply, user: user, arrived: time.nanos))
        // A session this node does not hold (yet) may be in Redis: it is read first, and
        // the command fails with `unknown_session` only when Redis has no such session.
        if sessions[name] == nil, cluster.replicas[name]!.reading != true {
            cluster.replicas[name]!.reading = true
            return out.append(.cluster(.read(session: name, after: nil)))
        }
        pump(name)
    }

    /// Sends the session's waiting commands as one append, when none is out.
    mutating func pump(_ name: String) {
        guard var r = cluster.replicas[name], r.inflight == nil, !r.reading, !r.queue.isEmpty, let s = sessions[name] else { return }
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
        cluster.nextToken += 1
        r.inflight = Inflight(token: cluster.nextToken, commands: commands, copy: copy, scratch: !restores, answers: answers,
                              outcomes: outcomes, patches: patches, records: records.count)
        cluster.replicas[name] = r
        if records.isEmpty {
            // Nothing to store: the answers only depend on what the replica holds (a
            // duplicate's, with --redis-wait, on the replicas having its original).
            if clusterSettings!.confirmsWrites, outcomes.contains("duplicate") {
                return out.append(.cluster(.confirm(session: name, token: cluster.nextToken, last: r.last)))
            }
            return finish(name, token: cluster.nextToken, last: r.last)
        }
        out.append(.cluster(.append(session: name, epoch: s.sequencer.epoch, after: r.last, records: records, token: cluster.nextToken)))
    }

    /// The append is in Redis (or there was nothing to append): the copy is the replica,
    /// members get the patches, senders their
    /// answers. `unconfirmed`: too few replicas confirmed it (`--redis-wait`): what it
    /// stored is answered `unconfirmed` instead of acknowledged.
    mutating func finish(_ name: String, token: Int, last: StreamID, unconfirmed: String? = nil) {
        guard var r = cluster.replicas[name], let f = r.inflight, f.token == token, sessions[name] != nil else { return }
        r.inflight = nil
        if last > r.last {
            // (Live entries wait while an append is out: none of these came before it.)
            if f.scratch { sessions[name]!.sequencer.adopt(f.copy, patches: f.patches) } else { sessions[name]!.sequencer = f.copy }
            r.last = last
            r.sinceSnapshot += f.records
            for p in f.patches { broadcast(name, .patch(session: name, p)) }
        }
        // This node made these revisions: it tells the webhooks of them.
        if unconfirmed == nil, hooks.configuration != nil {
            for (i, p) in f.commands.enumerated() {
                if case .ack(_, let ack) = f.answers[i], f.outcomes[i] == "applied" { noteRevision(name, rev: ack.rev, user: p.user, ack: ack) }
            }
        }
        if unconfirmed == nil {
            for case .ack(_, let ack) in f.answers { r.acknowledged = max(r.acknowledged, ack.rev) }
        }
        cluster.replicas[name] = r
        for (i, p) in f.commands.enumerated() {
            applyLatency.record(nanoseconds: time.nanos &- p.arrived)
            if let unconfirmed, ["applied", "unchanged", "duplicate"].contains(f.outcomes[i]) {
                fail(p, NavError(.unconfirmed, "Redis has it, but \(unconfirmed): it may not survive a failover; sending it again with the same id is safe"))
                continue
            }
            commandOutcomes[f.outcomes[i], default: 0] += 1
            answer(p.reply, f.answers[i])
        }
        if r.sinceSnapshot >= clusterSettings!.snapshotEvery, let s = sessions[name] {
            cluster.replicas[name]!.sinceSnapshot = 0
            out.append(.cluster(.snapshot(session: name, epoch: s.sequencer.epoch, at: r.last, data: s.sequencer.encodedSnapshot())))
        }
        releaseLive(name)
        pump(name)
    }

    mutating func answer(_ reply: Reply, _ m: ServerMessage) {
        switch reply {
        case .socket(let c, let id):
            emit(.send(to: c, m, id: id))
        case .http(let h):
            var m = m
            if let echo = h.echoID, case .ack(let s, var ack) = m, let id = try? CommandID(field: echo) {
                ack.id = id
                m = .ack(session: s, ack)
            }
            // "Send it again with the same id" is safe only under the same identity: a
            // request that named none is told the one it was recorded under.
            if let client = h.assigned, case .error(var e) = m, e.code == .unconfirmed || e.message.contains("with the same id") {
                e.message += " (over HTTP, with the header X-Navsync-Client: \(client), the identity it was recorded under; without it a resend is a new command)"
                m = .error(e)
            }
            emit(.answer(connection: h.connection, h.request, m, id: h.echoID ?? h.command["id"]))
        }
    }
}
