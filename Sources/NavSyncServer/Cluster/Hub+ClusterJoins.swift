import NavSync
/// Cluster mode: reads (join, sync, get) that wait for the replica to catch up, and
/// sessions made in Redis before a join goes on.
extension Hub {
    /// Holds a join, sync or get until a read of the session from Redis is back.
    mutating func parkForRead(_ name: String, _ parked: Parked) {
        cluster.parkedReads[name, default: []].append(parked)
        guard cluster.storeUp else { return answerParkedReads(name) }   // Redis away: from the replica
        guard cluster.replicas[name]?.reading != true else { return }   // the read out answers them too
        cluster.replicas[name, default: Replica()].reading = true
        out.append(.cluster(.read(session: name, after: cluster.replicas[name]!.last)))
    }

    mutating func answerParkedReads(_ name: String) {
        if let waiting = cluster.parkedReads.removeValue(forKey: name) {
            for p in waiting { serve(p.message, id: p.id, from: p.connection, first: false, now: p.now) }
        }
        resumeAwaitingRead(name)
    }

    // MARK: Creating and joining

    mutating func requestCreate(_ name: String, flow: Flow) {
        guard cluster.creating.insert(name).inserted else { return }
        let seq = Sequencer(flow: flow, epoch: ids.nextEpoch(), limits: configuration.limits.model,
                            idempotencyCapacity: configuration.idempotency, logCapacity: configuration.patchLog,
                            historyCapacity: configuration.history)
        cluster.pendingCreations[name] = Session(name: name, flow: flow, sequencer: seq)
        out.append(.cluster(.create(session: name, flow: flow, epoch: seq.epoch, snapshot: seq.snapshot())))
    }

    /// Joins that waited for a session being created or read go on.
    mutating func finishJoins(_ name: String) {
        cluster.creating.remove(name)
        if let made = cluster.pendingCreations.removeValue(forKey: name), sessions[name] == nil {
            sessions[name] = made
            cluster.replicas[name, default: Replica()].last = .zero
        }
        for (c, j, id) in cluster.parkedJoins.removeValue(forKey: name) ?? [] {
            guard let peer = peers[c] else { continue }
            join(j, peer, c, id)
        }
    }

    mutating func refuseJoins(_ name: String, _ e: NavError) {
        cluster.creating.remove(name)
        cluster.pendingCreations[name] = nil
        for (c, _, id) in cluster.parkedJoins.removeValue(forKey: name) ?? [] { emit(.send(to: c, .error(e), id: id)) }
    }

    /// A join of a session this node does not hold (yet): made or read first.
    mutating func parkJoin(_ j: ClientMessage.Join, _ c: Int, _ id: JSON?, flow: Flow) {
        cluster.parkedJoins[j.session, default: []].append((c, j, id))
        guard cluster.storeUp else { return refuseJoins(j.session, NavError(.unavailable, "store unavailable: \(cluster.storeDown ?? "not connected to Redis")")) }
        requestCreate(j.session, flow: flow)
    }
}
