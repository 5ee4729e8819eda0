/// Which replicas a write waits for under `--redis-wait N`, by address: every replica
/// acknowledging the primary now, and every one that did within the last `hold` ms. A
/// replica that leaves the primary may be the one the Sentinels are promoting (a
/// promoted replica leaves its primary first; the nodes learn of the new primary a
/// second or two later), and acknowledging with the replicas left in between would
/// acknowledge writes the new primary never gets. So the one gone is waited for
/// (writes are answered `unconfirmed`, which every client resends by id) until it is
/// back, the node follows a new primary (`reset`), or `hold` ms have passed.
struct ReplicaHold {
    let hold: UInt64
    /// Replicas seen acknowledging (`ip:port`), and when last.
    private(set) var lastSeen: [String: UInt64] = [:]
    /// Those the latest look did not find: waited for until the hold is over.
    private(set) var missing: Set<String> = []

    init(hold: UInt64) { self.hold = hold }

    /// Every replica a write waits for.
    var waitedFor: Set<String> { Set(lastSeen.keys) }

    /// A look at the primary's replicas at `now` (ms): those acknowledging. Returns the
    /// ones newly missing (held from now on) and those whose hold ran out (forgotten).
    @discardableResult
    mutating func saw(_ replicas: Set<String>, at now: UInt64) -> (dropped: [String], released: [String]) {
        for r in replicas { lastSeen[r] = now }
        var gone = Set(lastSeen.keys).subtracting(replicas)
        var released: [String] = []
        for r in gone where now - lastSeen[r]! >= hold {
            lastSeen[r] = nil
            released.append(r)
        }
        gone.subtract(released)
        defer { missing = gone }
        return (gone.subtracting(missing).sorted(), released.sorted())
    }

    /// The primary changed (or the link to it): its replicas are counted anew.
    mutating func reset() {
        lastSeen = [:]
        missing = []
    }
}
