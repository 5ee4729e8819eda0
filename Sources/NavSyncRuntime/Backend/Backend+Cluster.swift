import NavSync
import NavSyncServer
import CUV

/// Cluster mode's webhooks (docs/backend.md, "Webhooks"): each session's revision events
/// are delivered by one node at a time, the holder of the session's lease in Redis
/// (`navsync:webhooks:{S}:lease`, renewed every second, gone 5 s after its node dies).
/// The holder takes the revisions from its replica, which follows the session's log,
/// and keeps each endpoint's cursor in Redis (`navsync:webhooks:{S}:cursor`, a hash of
/// endpoint URL to `LINEAGE:REV`), so whoever takes the lease next resumes after it: at
/// least once, in order per session. Session events (`session.*`) are told by the node
/// where they happened.
final class ClusterDelivery {
    let store: ClusterStore
    /// Sessions whose lease this node holds: the revision its events are queued through,
    /// of which lineage; nil `through` until the cursor is read.
    private(set) var held: [String: (lineage: String, through: Int?)] = [:]
    /// The hub's sessions (replicas), read when events are pulled.
    var sessions: () -> [String: Session] = { [:] }
    /// Asks the hub for a session's replica (`Hub.Event.holdReplica`).
    var holdReplica: (String) -> Void = { _ in }
    var log: (LogLevel, String) -> Void = { _, _ in }
    static let leaseMS = 5000
    private var scanning = false

    init(store: ClusterStore) { self.store = store }

    static func leaseKey(_ s: String) -> String { "navsync:webhooks:{\(s)}:lease" }
    static func cursorKey(_ s: String) -> String { "navsync:webhooks:{\(s)}:cursor" }
    static func lineage(_ epoch: String) -> String { String(epoch.split(separator: "/").first ?? Substring(epoch)) }

    /// Renews the leases held and takes free ones (every second).
    func tick(endpoints: [HooksConfiguration.Endpoint]) {
        guard store.connected else { return }
        let node = store.node
        for name in held.keys.sorted() {
            store.webhookCommand(["EVAL", Self.renew, "1", Self.leaseKey(name), node, String(Self.leaseMS)]) { [weak self] result in
                guard let self, case .success(let r) = result, r != .int(1) else { return }
                if held.removeValue(forKey: name) != nil { log(.warn, "webhooks: the lease of '\(name)' went to another node") }
            }
        }
        guard !scanning else { return }
        scanning = true
        store.webhookCommand(["SMEMBERS", ClusterScripts.sessionsKey]) { [weak self] result in
            guard let self else { return }
            scanning = false
            guard case .success(.array(let names)) = result else { return }
            for case let name? in names.map(\.text) where held[name] == nil
                && endpoints.contains(where: { $0.wants("revision", session: name) }) {
                store.webhookCommand(["SET", Self.leaseKey(name), node, "NX", "PX", String(Self.leaseMS)]) { [weak self] r in
                    guard let self, case .success(.status("OK")) = r else { return }
                    take(name)
                }
            }
        }
    }

    /// The lease is this node's: its cursors are read, then events are pulled after them.
    private func take(_ name: String) {
        held[name] = ("", nil)
        holdReplica(name)
        store.webhookCommand(["HGETALL", Self.cursorKey(name)]) { [weak self] result in
            guard let self, held[name] != nil else { return }
            var lowest: (String, Int)?
            if case .success(.array(let parts)) = result {
                var i = 0
                while i + 1 < parts.count {
                    if let v = parts[i + 1].text, let colon = v.lastIndex(of: ":"), let rev = Int(v[v.index(after: colon)...]) {
                        let lineage = String(v[..<colon])
                        if lowest == nil || rev < lowest!.1 { lowest = (lineage, rev) }
                    }
                    i += 2
                }
            }
            // No cursor: nothing of this session was delivered yet, from the start of history.
            held[name] = (lowest?.0 ?? "", lowest?.1 ?? -1)
            log(.info, "webhooks: this node delivers '\(name)' now, after revision \(max(lowest?.1 ?? 0, 0))")
        }
    }

    /// Revisions of held sessions past what was queued: their events, in order.
    func pull() -> [WebhookEvent] {
        var events: [WebhookEvent] = []
        let all = sessions()
        for (name, h) in held {
            guard let through = h.through, let s = all[name] else { continue }
            let seq = s.sequencer
            let lineage = Self.lineage(seq.epoch)
            var from = through
            if !h.lineage.isEmpty, h.lineage != lineage { from = -1 }   // another session under the name: from its start
            guard seq.rev > from else { held[name] = (lineage, from); continue }
            if from + 1 < seq.history.earliest, from >= 0 {
                log(.warn, "webhooks: revisions \(from + 1)...\(seq.history.earliest) of '\(name)' fell out of history undelivered")
            }
            for entry in seq.history.entries(after: max(from, seq.history.earliest)) {
                events.append(.revision(session: name, epoch: seq.epoch, entry: entry))
            }
            held[name] = (lineage, seq.rev)
        }
        return events
    }

    /// A batch went through: the endpoint's cursor of each session moves on (held ones).
    func delivered(_ events: [WebhookEvent], url: String) {
        var last: [String: WebhookEvent] = [:]
        for e in events where e.type == "revision" && held[e.session] != nil { last[e.session] = e }
        for (name, e) in last {
            store.webhookCommand(["HSET", Self.cursorKey(name), url, "\(Self.lineage(e.epoch)):\(e.rev)"]) { _ in }
        }
    }

    /// Renews a lease only while it is still this node's.
    static let renew = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
        return 0
        """
}
