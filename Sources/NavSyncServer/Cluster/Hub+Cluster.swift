import NavSync
/// Cluster mode (docs/cluster.md, "How it works"): the hub's sessions are replicas of what Redis
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
///
/// This file holds cluster mode's state types; the rest is a file per concept:
/// `Hub+ClusterCommands` (queue, append, answer), `Hub+ClusterEvents` (what Redis
/// answers and publishes), `Hub+ClusterPresence` (presence across nodes) and
/// `Hub+ClusterJoins` (reads that wait for the replica, sessions made in Redis).
extension Hub {
    /// Cluster mode's state.
    struct ClusterSide: Sendable {
        /// Each session's side of the cluster.
        var replicas: [String: Replica] = [:]
        /// Whether Redis is reachable, and why not.
        var storeUp = false
        var storeDown: String?
        /// Names the appends out.
        var nextToken = 0
        /// Appends refused because the log had moved on (commands run again).
        var retries = 0
        /// `--redis-wait`: writes fewer replicas confirmed in time (answered `unconfirmed`).
        var unconfirmed = 0
        /// Sessions this node is making, with joins waiting for them.
        var creating: Set<String> = []
        var pendingCreations: [String: Session] = [:]
        var parkedJoins: [String: [(Int, ClientMessage.Join, JSON?)]] = [:]
        /// Presence across nodes: this node's changes since the last tick, and the
        /// other nodes' members per session (under negative connection ids, counted
        /// down from `nextRemoteID`).
        var localPresence: [String: LocalPresence] = [:]
        var remote: [String: [String: RemoteNode]] = [:]
        var nextRemoteID = 0
        var lastHeartbeat: Int64 = 0
        /// Joins, syncs and gets waiting for a read of their session from Redis.
        var parkedReads: [String: [Parked]] = [:]
        /// Sessions whose read failed: tried again at the next heartbeat.
        var failedReads: Set<String> = []
    }

    /// Appends refused because the log had moved on (metrics).
    public var clusterRetries: Int { cluster.retries }

    /// Who waits for the answer to a command.
    enum Reply: Sendable {
        case socket(Int, id: JSON?)
        case http(HTTPCommand)
    }

    /// A join, sync or get waiting for a read of its session from Redis (already
    /// decoded and allowed; `first` matters only to `hello`, which is never parked).
    struct Parked: Sendable {
        var connection: Int
        var message: ClientMessage
        var id: JSON?
        var now: Int64
    }

    /// A command waiting for its session's turn.
    struct Pending: Sendable {
        var object: JSONObject
        var client: String
        var name: String
        var role: Role
        var reply: Reply
        var user: String? = nil
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
        /// Live entries that came while the append was out, undecoded: Redis publishes an
        /// append's entries before it answers it, so most are this node's own, which the
        /// answer covers. Decoded and replayed, they were a node's commands run twice.
        var heldLive: [LiveEntry] = []
        /// A read is out (catching up): nothing is appended until it is back.
        var reading = false
        /// Records appended by this node since its last snapshot of the session.
        var sinceSnapshot = 0
        /// The highest revision this node acknowledged (answered `unconfirmed` is not):
        /// when Redis goes back below it, acknowledged writes were lost.
        var acknowledged = 0
    }

    /// A live log entry as the channel brought it (`ClusterEvent.live`).
    struct LiveEntry: Sendable {
        var prev: StreamID
        var id: StreamID
        var revision: Bool
        var record: [UInt8]
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
        /// `--redis-wait`: acknowledgements wait for replicas, also a duplicate's (its
        /// original may still be on its way to them).
        public var confirmsWrites: Bool
        public init(node: String = "node", incarnation: String = "1", snapshotEvery: Int = 10_000, confirmsWrites: Bool = false) {
            self.node = node; self.incarnation = incarnation; self.snapshotEvery = snapshotEvery; self.confirmsWrites = confirmsWrites
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

    /// Where each replica stands in its log (sessions not being read).
    public var replicaPositions: [String: StreamID] {
        var out: [String: StreamID] = [:]
        for (name, r) in cluster.replicas where sessions[name] != nil && !r.reading && r.inflight == nil { out[name] = r.last }
        return out
    }
}
