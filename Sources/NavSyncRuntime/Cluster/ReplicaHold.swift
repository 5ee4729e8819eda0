/// How many replicas a write waits for under `--redis-wait N`: N, and every replica
/// that acknowledged the primary within the last `hold` ms. A replica that drops out of
/// the primary's `INFO replication` may be the one the Sentinels are promoting (a
/// promoted replica leaves its primary first, and the nodes learn of the new primary a
/// second or two later): acknowledging with the replicas left in between could
/// acknowledge writes the new primary never gets. So the one gone is waited for (writes
/// are answered `unconfirmed`, which every client resends by id) until it is back, the
/// node follows a new primary (`reset`), or `hold` ms have passed.
struct ReplicaHold {
    let hold: UInt64
    /// The most replicas acknowledging at once within the last `hold` ms.
    private(set) var peak = 0
    /// When `peak` replicas last acknowledged at once.
    private(set) var peakSeen: UInt64 = 0

    init(hold: UInt64) { self.hold = hold }

    /// A sample of `INFO replication` at `now` (ms): `acknowledging` replicas. What
    /// changed, for the log: `.dropped` when fewer than before acknowledge (held),
    /// `.released` when the hold ran out without them.
    enum Change: Equatable { case none, dropped(from: Int, to: Int), released(from: Int, to: Int) }

    @discardableResult
    mutating func saw(_ acknowledging: Int, at now: UInt64) -> Change {
        if acknowledging >= peak {
            (peak, peakSeen, holding) = (acknowledging, now, false)
            return .none
        }
        if now - peakSeen >= hold {
            defer { (peak, peakSeen, holding) = (acknowledging, now, false) }
            return .released(from: peak, to: acknowledging)
        }
        if holding { return .none }
        holding = true
        return .dropped(from: peak, to: acknowledging)
    }

    /// The primary changed (or the link to it): its replicas are counted anew.
    mutating func reset() {
        (peak, peakSeen, holding) = (0, 0, false)
    }

    /// Fewer than `peak` acknowledge now (the drop is said once).
    private(set) var holding = false
}
