import NavSync
/// Cluster mode's vocabulary (docs/cluster.md, "How it works"): what the hub asks of the store
/// (Redis) and what the store tells the hub. Pure values; `ClusterStore` carries them.

/// A position in a session's log: a Redis stream id `MS-SEQ`. A revision R is at
/// `R-1`; a command that changed nothing is logged after it at `R-2`, `R-3`, …
public struct StreamID: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var ms: Int
    public var seq: Int

    public init(_ ms: Int, _ seq: Int) { self.ms = ms; self.seq = seq }

    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let a = Int(parts[0]), let b = Int(parts[1]), a >= 0, b >= 0 else { return nil }
        self.init(a, b)
    }

    public static let zero = StreamID(0, 0)
    public var description: String { "\(ms)-\(seq)" }
    /// Whether the entry here made a revision (rather than log a command that changed nothing).
    public var isRevision: Bool { seq == 1 }
    public static func < (a: StreamID, b: StreamID) -> Bool { (a.ms, a.seq) < (b.ms, b.seq) }
}

/// One log entry: the journal record of a command, and whether it made a revision.
public struct ClusterRecord: Sendable, Equatable {
    public var record: JournalRecord
    public var revision: Bool

    public init(record: JournalRecord, revision: Bool) { self.record = record; self.revision = revision }

    /// As the log stores it: the journal record's JSON (`rev` is the revision it made,
    /// or the current one for a command that changed nothing).
    public var json: JSON {
        var o: JSONObject = ["rev": .int(Int64(record.rev)), "client": .string(record.client), "command": record.command.json]
        if let name = record.name { o["name"] = .string(name) }
        if record.ts != 0 { o["ts"] = .int(record.ts) }
        return .object(o)
    }

    public init?(json: JSON, revision: Bool) {
        guard let rev = json["rev"]?.intValue, let client = json["client"]?.stringValue,
              let object = json["command"]?.objectValue, let command = try? Command(json: object) else { return nil }
        self.init(record: JournalRecord(rev: Int(rev), client: client, command: command, name: json["name"]?.stringValue,
                                        ts: json["ts"]?.intValue ?? 0), revision: revision)
    }
}

/// What the hub asks of the store.
public enum ClusterRequest: Sendable {
    /// Make the session in Redis unless it exists (one script): meta, first snapshot, name.
    case create(session: String, flow: Flow, epoch: String, snapshot: JSON)
    /// Compare-and-append: the records go to the log, in order, only while Redis's epoch
    /// and last position are still `epoch` and `after`. `token` names the attempt.
    case append(session: String, epoch: String, after: StreamID, records: [ClusterRecord], token: Int)
    /// `--redis-wait`: confirm that the replicas have everything this node wrote (a
    /// duplicate's answer waits for its original): WAIT for them, and the replicas `also`
    /// named (a new one ROLE showed), then ROLE; answered `waited` (what they said, for
    /// the hub to judge), or `appended` when no confirmation is asked.
    case confirm(session: String, token: Int, last: StreamID, also: Set<String> = [], attempt: Int = 0)
    /// Read the log after `after`, or (nil, or the log no longer reaches back to it)
    /// the newest snapshot and the log after it.
    case read(session: String, after: StreamID?)
    /// Store a snapshot taken at `at` (only if newer than the one there), and trim the
    /// log below it. `data`: the sequencer's snapshot, encoded (`encodedSnapshot`).
    case snapshot(session: String, epoch: String, at: StreamID, data: [UInt8])
    case delete(session: String)
    /// Presence of this node's members, for the other nodes (the live channel): what
    /// changed since the last, or all of them (`full`).
    case presence(session: String, JSON)
    /// Asks every node for all its members of the session (a node that just read it).
    case askMembers(session: String)
    /// At each heartbeat: where each replica stands, for the store to compare with
    /// Redis (a silent pub/sub stall hides nothing for longer than a second).
    case checkPositions([String: StreamID])

    public var session: String {
        switch self {
        case .create(let s, _, _, _), .append(let s, _, _, _, _), .read(let s, _), .snapshot(let s, _, _, _), .delete(let s),
             .presence(let s, _), .askMembers(let s), .confirm(let s, _, _, _, _): s
        case .checkPositions: ""
        }
    }
}

extension ClusterRequest: Equatable {
    /// Requests are equal when they are the same request: kind, session and position.
    public static func == (a: ClusterRequest, b: ClusterRequest) -> Bool {
        switch (a, b) {
        case (.create(let x, _, let e, _), .create(let y, _, let f, _)): x == y && e == f
        case (.append(let x, _, let p, let r, let t), .append(let y, _, let q, let s, let u)): x == y && p == q && r == s && t == u
        case (.read(let x, let p), .read(let y, let q)): x == y && p == q
        case (.snapshot(let x, _, let p, _), .snapshot(let y, _, let q, _)): x == y && p == q
        case (.delete(let x), .delete(let y)), (.askMembers(let x), .askMembers(let y)): x == y
        case (.presence(let x, let p), .presence(let y, let q)): x == y && p == q
        case (.checkPositions(let p), .checkPositions(let q)): p == q
        case (.confirm(let x, let t, let p, let a, let n), .confirm(let y, let u, let q, let b, let m)): x == y && t == u && p == q && a == b && n == m
        default: false
        }
    }
}

/// What the store tells the hub.
public enum ClusterEvent: Sendable {
    /// Connected to Redis (again): the sessions it holds. Unknown ones are read,
    /// vanished ones dropped, and every one read from where its replica stands.
    case connected(sessions: [String])
    /// The store cannot be reached: commands fail until it can.
    case disconnected(String)
    /// A `create` was done (`made`), or the session already existed.
    case created(session: String, made: Bool)
    case appended(session: String, token: Int, last: StreamID)
    /// `--redis-wait`: what WAIT and ROLE said of an append (or of a duplicate's
    /// original); the hub judges it (`WaitAnswer.verdict`).
    case waited(session: String, token: Int, last: StreamID, WaitAnswer)
    case refused(session: String, token: Int, AppendRefusal)
    case read(session: String, ReadResult)
    /// A log entry from the live channel, with the entry before it; the record as JSON,
    /// read only when the replica needs it (a node gets its own entries back too).
    case live(session: String, prev: StreamID, id: StreamID, revision: Bool, record: [UInt8])
    /// Another node made a session, deleted one, or changed its epoch.
    case appeared(session: String)
    case deleted(session: String)
    case epochChanged(session: String)
    /// Redis's log of the session goes further than the replica (the once-a-second check).
    case behind(session: String)
    /// Once a second while connected: reads that failed are tried again, and members
    /// of nodes whose heartbeat (ms since the Unix epoch) is over 5 s old are removed.
    case heartbeat(nodes: [String: NodeBeat], now: Int64)
    /// Another node's presence (`ClusterRequest.presence`), and a node asking for it.
    case presence(session: String, JSON)
    case membersWanted(session: String)
}

/// `--redis-wait`: what WAIT, and the ROLE sent right after it on the same connection,
/// said of a write, as the store saw it.
public struct WaitAnswer: Sendable, Equatable {
    /// The replicas waited for (`ip:port`: those acknowledging now or within
    /// `--redis-wait-hold`, and any named again), and how many WAIT asked for.
    public var waited: Set<String>
    public var needed: Int
    /// WAIT's count, and ROLE's online replicas (nil: Redis is no longer a primary).
    public var confirmed: Int
    public var replicas: Set<String>?
    /// Replicas online but not acknowledging (a frozen replica is not promoted).
    public var lagging: Set<String>
    /// Why WAIT or ROLE gave no answer (then the rest says nothing).
    public var failure: String?
    /// 0 for the first WAIT of a write, 1 and 2 for those after a new replica showed up.
    public var attempt: Int

    public init(waited: Set<String>, needed: Int, confirmed: Int = 0, replicas: Set<String>?, lagging: Set<String> = [],
                failure: String? = nil, attempt: Int = 0) {
        self.waited = waited; self.needed = needed; self.confirmed = confirmed; self.replicas = replicas
        self.lagging = lagging; self.failure = failure; self.attempt = attempt
    }

    /// The write is acknowledged only when every replica waited for is still the
    /// primary's, enough confirmed it, and no new one may lack it (`lagging` ones aside).
    /// A new one is waited for too, in one more WAIT (at most two more).
    public enum Verdict: Sendable, Equatable { case acknowledged, waitAlsoFor(Set<String>), unconfirmed(String) }

    public var verdict: Verdict {
        if let failure { return .unconfirmed(failure) }
        guard let replicas else { return .unconfirmed("Redis is no longer the primary") }
        if let gone = waited.subtracting(replicas).sorted().first {
            return .unconfirmed("replica \(gone) left the primary (it may be the one the Sentinels are promoting)")
        }
        guard confirmed >= needed else { return .unconfirmed("\(confirmed) of \(needed) replicas confirmed it in time") }
        let new = replicas.subtracting(waited).subtracting(lagging)
        if new.isEmpty { return .acknowledged }
        return attempt < 2 ? .waitAlsoFor(waited.union(new)) : .unconfirmed("the primary's replicas kept changing")
    }
}

/// A node's entry in `navsync:nodes`: its last heartbeat (ms since the Unix epoch) and
/// which run of it that is.
public struct NodeBeat: Sendable, Equatable {
    public var seen: Int64
    public var incarnation: String
    public init(seen: Int64, incarnation: String) { self.seen = seen; self.incarnation = incarnation }
}

public enum AppendRefusal: Sendable, Equatable {
    /// The log moved on (another node appended) or the epoch changed: catch up, run again.
    case moved
    /// The session is gone from Redis.
    case gone
    /// Not sent (no connection): nothing happened.
    case unavailable(String)
    /// Sent, and no answer came: it may have been appended.
    case unknown(String)
}

public enum ReadResult: Sendable {
    case gone
    case failed(String)
    /// The entries after the position asked for.
    case entries(epoch: String, [(StreamID, ClusterRecord)])
    /// The whole session: its flow, epoch, newest snapshot and where it stands, and the
    /// entries after it.
    case whole(flow: JSON, epoch: String, snapshot: JSON, at: StreamID, [(StreamID, ClusterRecord)])
}
