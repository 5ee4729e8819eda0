/// Cluster mode: reads (join, sync, get) that wait for the replica to catch up, and
/// sessions made in Redis before a join goes on.
extension Hub {
    /// Holds a join, sync or get until a read of the session from Redis is back.
    mutating func parkForRead(_ name: String, _ parked: Parked) {
        parkedReads[name, default: []].append(parked)
        guard storeUp else { return answerParkedReads(name) }   // Redis away: from the replica
        guard replicas[name]?.reading != true else { return }   // the read out answers them too
        replicas[name, default: Replica()].reading = true
        out.append(.cluster(.read(session: name, after: replicas[name]!.last)))
    }

    mutating func answerParkedReads(_ name: String) {
        guard let waiting = parkedReads.removeValue(forKey: name) else { return }
        for p in waiting { serve(p.message, id: p.id, from: p.connection, first: false, now: p.now) }
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
    mutating func finishJoins(_ name: String) {
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

    mutating func refuseJoins(_ name: String, _ e: NavError) {
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
