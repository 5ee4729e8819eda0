import NavSync
/// Cluster mode: presence across nodes, published on the live channel and expired
/// with a silent node (docs/cluster.md, "How it works").
extension Hub {
    /// Records a change of a local member, for the other nodes.
    mutating func noteLocal(_ session: String, joined: Member? = nil, left: String? = nil, status: Member? = nil) {
        guard isClustered else { return }
        if let joined { cluster.localPresence[session, default: LocalPresence()].joined.append(joined) }
        if let left { cluster.localPresence[session, default: LocalPresence()].left.append(left) }
        if let status { cluster.localPresence[session, default: LocalPresence()].status.append(status) }
    }

    /// With each presence tick: what changed here goes to the other nodes.
    mutating func publishLocalPresence() {
        guard isClustered, !cluster.localPresence.isEmpty, cluster.storeUp else { return }
        for name in cluster.localPresence.keys.sorted() where sessions[name] != nil {
            out.append(.cluster(.presence(session: name, presencePayload(cluster.localPresence[name]!, full: false))))
        }
        cluster.localPresence = [:]
    }

    func presencePayload(_ p: LocalPresence, full: Bool) -> JSON {
        ["node": .string(clusterSettings!.node), "inc": .string(clusterSettings!.incarnation), "full": .bool(full),
         "joined": .array(p.joined.map(\.json)), "left": .array(p.left.map { .string($0) }), "status": .array(p.status.map(\.json))]
    }

    mutating func remotePresence(_ name: String, _ payload: JSON) {
        guard sessions[name] != nil, let node = payload["node"]?.stringValue, node != clusterSettings!.node,
              let inc = payload["inc"]?.stringValue else { return }
        let members = { (key: String) in (payload[key]?.arrayValue ?? []).compactMap { try? ServerMessage.member($0) } }
        var known = cluster.remote[name]?[node] ?? RemoteNode(incarnation: inc, since: cluster.lastHeartbeat)
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
            cluster.nextRemoteID -= 1
            known.ids[m.client] = cluster.nextRemoteID
            sessions[name]!.add(cluster.nextRemoteID, m)
        }
        for client in (payload["left"]?.arrayValue ?? []).compactMap(\.stringValue) {
            if let id = known.ids.removeValue(forKey: client) { sessions[name]!.remove(id, detail: detail) }
        }
        for m in members("status") {
            if let id = known.ids[m.client], let rev = m.rev { sessions[name]!.setStatus(id, rev: rev, focus: m.focus) }
        }
        cluster.remote[name, default: [:]][node] = known
    }

    /// Members of nodes silent for over 5 s (or gone from the list, or restarted since)
    /// leave their sessions.
    mutating func expireRemoteMembers(nodes: [String: NodeBeat], now: Int64) {
        cluster.lastHeartbeat = now
        for name in cluster.remote.keys.sorted() {
            for (node, known) in cluster.remote[name]! {
                let beat = nodes[node]
                let alive = beat.map { now - $0.seen <= 5_000 && $0.incarnation == known.incarnation } ?? (now - known.since <= 5_000)
                guard alive else {
                    for id in known.ids.values { sessions[name]?.remove(id, detail: configuration.presenceDetail) }
                    cluster.remote[name]![node] = nil
                    out.append(.log(.info, "cluster: node \(node) is silent: its \(known.ids.count) members of '\(name)' left"))
                    continue
                }
            }
        }
    }
}
