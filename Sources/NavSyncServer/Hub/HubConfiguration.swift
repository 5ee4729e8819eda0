import NavSync
/// Limits and defaults of the session layer (docs/protocol.md, "Operations" and "Messages: fine points"). Each is a
/// `navsyncd` flag.
public struct HubConfiguration: Sendable {
    /// Sessions a server holds; creating one more is `full`.
    public var maxSessions = 1_000
    /// Members of one session; one more `join` is `full`.
    public var maxMembers = 10_000
    /// Patches kept per session for catch-up with `since` (at least 1,000).
    public var patchLog = 1_024
    /// Acknowledged command ids remembered per client identity (at least 1,024).
    public var idempotency = 1_024
    /// Revisions of history held per session (`--history`); 0 turns history off.
    public var history = 10_000
    /// History's bytes on the whole node (`--history-bytes`): past it, the oldest
    /// revisions of the sessions holding most go first (their states become `gone`).
    /// nil: bounded by `history` per session only.
    public var historyBytes: Int?
    /// Commands a connection may send per second, on average, and in a burst; more
    /// are `rate_limited`. Generous for people and agents, small against floods.
    public var commandRate: Double = 200
    public var commandBurst = 400
    /// Seconds between the server's pings of an idle connection (`welcome.heartbeat`).
    public var heartbeat = 30
    public var limits = ProtocolLimits()
    /// `welcome.server`.
    public var serverName = "navsyncd/0.1.0"
    /// The session made at start with the demo flow, so a client can join at once;
    /// nil for none.
    public var demoSession: String? = "demo"
    /// Presence changes of a session are gathered and sent at most this often (ms):
    /// N members joining at once cost O(N) presence messages, not O(N²) (docs/protocol.md, "Server messages, unasked").
    public var presenceInterval: Int64 = 50
    /// Members listed one by one in `presence` and `joined`; the rest are a count
    /// (`others`), so no presence message grows with the session.
    public var presenceDetail = 256
    /// In a session past `presenceDetail`, a change of the count of the others alone
    /// (`others`: a herd joining) goes to the members at most this often (ms).
    public var presenceCountInterval: Int64 = 1_000
    /// While the server is saturated (`Hub.Event.busyTick`), a session's presence waits
    /// this long at most (ms): a herd's CPU goes to its joins, and every wait folds more
    /// changes into one message.
    public var presenceMaxDelay: Int64 = 1_000

    public init() {}
}

/// Command-apply latency, as the `/metrics` histogram reports it (seconds).
public struct LatencyHistogram: Sendable {
    public static let bounds: [Double] = [0.000_005, 0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.1]
    public private(set) var counts = [Int](repeating: 0, count: bounds.count)
    public private(set) var count = 0
    public private(set) var sum = 0.0

    public init() {}

    public mutating func record(nanoseconds: UInt64) {
        let seconds = Double(nanoseconds) / 1e9
        count += 1
        sum += seconds
        if let i = Self.bounds.firstIndex(where: { seconds <= $0 }) { counts[i] += 1 }
    }

    /// Cumulative counts per bound, as Prometheus wants them.
    public var cumulative: [Int] {
        var running = 0
        return counts.map { running += $0; return running }
    }
}
