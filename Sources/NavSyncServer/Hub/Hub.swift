import NavSync
/// The server's middle as one pure reducer (docs/protocol.md, "Operations", "History" and "Durable sessions (--data DIR)"): every
/// session, every connected client, and the output that waits for the journal.
///
/// Events come in (a message from a connection, an HTTP command, a journal batch written
/// or failed, a session read back, a new auth file); effects go out (a reply, a
/// broadcast frame to a member list, journal entries to write, a close, an HTTP answer,
/// a log line). The runtime only carries effects out: it never changes the hub. Time
/// comes in with each event; client ids and epochs from the generators given at init.
///
/// Connections are named by the runtime's connection id. A client identity (`client`)
/// belongs to a connection; `hello` may resume an earlier one, which is what makes
/// resending commands after a reconnect safe.
///
/// With a journal (mode `.journaled`), nothing is sent before what it depends on is durable:
/// every output waits in the `DurabilityGate` until the journal entries made before it
/// are written, and a failed write rewrites what waits (see `Hub+Journal.swift`).
public struct Hub {
    public enum Event: Sendable {
        /// The runtime starts: the demo session is made (and journaled) if it is missing.
        case started
        /// A WebSocket opened, with the grant of the token it showed on the upgrade (and,
        /// with a join hook, its address and the headers the hooks file names).
        case connected(Int, grant: AccessPolicy.Grant?, upgrade: Upgrade? = nil)
        /// A message from a connection, decoded (or why not) by the runtime: the server
        /// parses its hot path with jansson, the core with its own parser (`text`). A
        /// `hello` or `auth` carrying a JWT comes with what the runtime's keys made of it.
        case request(Int, ClientRequest, verified: JWTVerification? = nil)
        /// The connection is gone: it leaves every session it was in.
        case disconnected(Int)
        /// A member's output was past the lag threshold (or its queue full) when a patch
        /// of `session` was to be queued to it (the runtime queued it not): its patches
        /// of that session pause until it drains, `queued` bytes behind.
        case lagging(Int, session: String, queued: Int)
        /// A member whose patches were paused has written all its output: it gets each
        /// such session's state, and its patches again.
        case drained(Int)
        /// `POST /api/sessions/NAME/commands`, already authorized by the HTTP routes.
        case httpCommand(HTTPCommand)
        /// `DELETE /api/sessions/NAME`, already authorized (admin) by the HTTP routes.
        case httpDelete(connection: Int, request: HTTPRequest, session: String)
        /// A new auth file (SIGHUP): grants follow their tokens, lost tokens are closed.
        /// The JWTs connections hold (`heldJWTs`) come checked again with the keys as
        /// they are now.
        case policy(AccessPolicy, verified: [String: JWTVerification] = [:])
        /// The journal writer finished entries through `through` (or failed some).
        case journal(JournalResult)
        /// The presence interval passed: gathered presence goes out (docs/protocol.md, "Server messages, unasked").
        case tick
        /// The presence interval passed with the server saturated (its loop idle under a
        /// tenth of the interval): the rest of `tick`, but a session's presence waits,
        /// up to `presenceMaxDelay` (docs/protocol.md, "Server messages, unasked").
        case busyTick
        /// Cluster mode: what Redis answered or published (docs/cluster.md, "How it works").
        case cluster(ClusterEvent)
        /// The hook endpoint answered a `hook` effect's call (docs/backend.md).
        case hook(Int, HookReply)
        /// A hooks file (SIGHUP), or none.
        case hooks(HooksConfiguration?)
        /// Cluster mode: this node delivers the session's webhooks; it needs its replica.
        case holdReplica(String)
    }

    /// A command from the HTTP API: answered with `.answer`.
    public struct HTTPCommand: Sendable {
        public var connection: Int
        public var request: HTTPRequest
        public var session: String
        /// The command object; its `id` is the idempotency key (the `Idempotency-Key`
        /// header's value when one was sent).
        public var command: JSONObject
        /// The idempotency identity (`X-Navsync-Client`); nil: a client of its own, so
        /// this request is never taken for another caller's command.
        public var client: String?
        public var role: Role
        /// The id the answer echoes when it is not the key (the body's `id`, when an
        /// `Idempotency-Key` header stood for it).
        public var echoID: JSON?
        /// The identity the hub gave a request that named none (`http-…`): a resend is the
        /// same command only under it, so an answer that invites one names it.
        public var assigned: String?
        public init(connection: Int, request: HTTPRequest, session: String, command: JSONObject, client: String?, role: Role,
                    echoID: JSON? = nil) {
            self.connection = connection; self.request = request; self.session = session
            self.command = command; self.client = client; self.role = role; self.echoID = echoID
        }
    }

    public enum Effect: Sendable, Equatable {
        /// A message to one connection; `id` is the request's.
        case send(to: Int, ServerMessage, id: JSON?)
        /// One message to these connections, encoded once for all of them.
        case broadcast(session: String, ServerMessage, to: [Int])
        /// The answer to an HTTP command (an ack or an error; the runtime picks the status).
        case answer(connection: Int, HTTPRequest, ServerMessage, id: JSON?)
        /// An entry for the journal; only in mode `.journaled`.
        case journal(JournalEntry)
        /// Close a WebSocket with this code (1008 for a token that is no longer valid).
        case close(Int, code: UInt16, reason: String)
        case log(LogLevel, String)
        /// Cluster mode: a request to Redis (docs/cluster.md, "How it works").
        case cluster(ClusterRequest)
        /// Post this to the hook endpoint and answer with `Event.hook` (docs/backend.md).
        case hook(HookCall)
        /// A webhook event, now durable, for the endpoints that want it.
        case webhook(WebhookEvent)
    }

    /// Roles (docs/protocol.md, "Who may do what (--auth FILE)"); without an auth file every client is `admin`
    /// unless it asks for less in `hello`.
    public enum Role: String, Sendable, Comparable {
        case viewer, controller, admin
        public static func < (a: Role, b: Role) -> Bool {
            let order: [Role] = [.viewer, .controller, .admin]
            return order.firstIndex(of: a)! < order.firstIndex(of: b)!
        }

        /// The operations this role may not run, with why. The sequencer checks them on
        /// the decoded operations that actually run, links expanded, never on raw JSON.
        public var refusedOperations: [OpName: String] {
            self == .admin ? [:] : [.reset: "role \(rawValue) may not reset a session: that needs admin"]
        }
    }

    struct Peer {
        var client: String
        var name: String
        /// What the connection may do; nil while an auth file is in force and it has
        /// shown no valid token (then only `hello` and `ping`).
        var role: Role?
        /// The token's grant, with an auth file. Boxed: most peers have none, and every
        /// peer's inline size is paid in the hub's table.
        var grant: AccessPolicy.Grant? {
            get { grantBox?.value }
            set { grantBox = newValue.map(Boxed.init) }
        }
        private var grantBox: Boxed<AccessPolicy.Grant>?
        /// A role asked for in `hello`: the connection never gets more than this.
        var requestedRole: Role?
        /// Whether any message came yet (`hello` must be the first).
        var greeted = false
        var rate: TokenBucket
        /// The sessions it joined: a list, not a set (a set is a heap block per peer
        /// even for one name, and a peer joins a few at most).
        var sessions: [String] = []
        /// Sessions whose patches it is not sent while it lags (`Event.lagging`), until it
        /// drains and gets their state.
        var paused: [String] = []
        /// With a join hook: the upgrade's address and headers, and the hook's answers.
        /// Boxed, like the grant: most servers have no hooks.
        var backend: PeerBackend? {
            get { backendBox?.value }
            set { backendBox = newValue.map(Boxed.init) }
        }
        private var backendBox: Boxed<PeerBackend>?

        init(client: String, name: String, role: Role?, grant: AccessPolicy.Grant?, rate: TokenBucket) {
            self.client = client
            self.name = name
            self.role = role
            self.rate = rate
            self.grant = grant
        }
    }

    public let configuration: HubConfiguration
    /// The auth file's tokens; nil when there is none (every client is admin).
    public internal(set) var policy: AccessPolicy?
    /// The earliest JWT expiry among the connections (ms since the epoch), if any.
    var nextExpiry: Int64?
    public private(set) var flows: [String: Flow]
    public internal(set) var sessions: [String: Session] = [:]
    var peers: [Int: Peer] = [:]
    /// Client ids and session epochs: counted in tests, random (from a seed the runtime
    /// gives) in a server. A value, not a closure, so the hub stays a plain value.
    var ids: IDSource
    /// When the event being handled happened (`handle(_:at:)`): the hub reads no clock.
    public private(set) var time = Instant(ms: 0)

    /// Commands by outcome: `applied`, `unchanged`, `duplicate`, or an error code.
    public internal(set) var commandOutcomes: [String: Int] = [:]
    /// Cluster mode: from a command's arrival to its answer (the append's round trip
    /// included), by the events' times. A plain server measures its own handling.
    public internal(set) var applyLatency = LatencyHistogram()

    /// Sessions that refuse commands (and creation under their name) with this error,
    /// while reads go on: read back after a failed write, or lost.
    public internal(set) var frozen: [String: NavError] = [:]

    /// Effects of the event being handled, in order.
    var out: [Effect] = []

    // MARK: The modes

    /// Where sessions live: the one switch between the modes. Each mode beyond `plain`
    /// keeps its own state in its own part below, and only its own files touch it.
    public enum Mode: Sendable {
        /// In memory only: output is never held.
        case plain
        /// Every change is journaled, and output waits until what it depends on is
        /// durable (`Hub+Journal.swift`, part `journal`).
        case journaled
        /// Sessions are replicas of Redis, which orders every command
        /// (`Hub+Cluster*.swift`, part `cluster`).
        case clustered(ClusterSettings)
    }

    public let mode: Mode
    /// The journaled mode's part; untouched in the other modes.
    var journal = JournalSide()
    /// Cluster mode's part; untouched in the other modes.
    var cluster = ClusterSide()
    /// The hooks' part (`--hooks`, docs/backend.md); untouched without one.
    public internal(set) var hooks = HookSide()

    public var journaled: Bool { if case .journaled = mode { true } else { false } }
    public var isClustered: Bool { clusterSettings != nil }
    public var clusterSettings: ClusterSettings? { if case .clustered(let settings) = mode { settings } else { nil } }

    public init(configuration: HubConfiguration, flows: [Flow], policy: AccessPolicy? = nil, restored: [Session] = [],
                mode: Mode = .plain, ids: IDSource, hooks: HooksConfiguration? = nil) {
        self.configuration = configuration
        self.hooks.configuration = hooks
        self.policy = policy
        var byName: [String: Flow] = [Flow.demo.name: Flow.demo]
        for flow in flows { byName[flow.name] = flow }
        self.flows = byName
        self.mode = mode
        self.ids = ids
        for s in restored { sessions[s.name] = s }
    }

    // MARK: The reducer

    public mutating func handle(_ event: Event, at time: Instant) -> [Effect] {
        // The hub keeps no effects once they are returned: one would hold a copy of a
        // sequencer, and the session's next command would copy its tables.
        defer { out = [] }
        out = []
        self.time = time
        let now = time.ms
        switch event {
        case .started:
            // In cluster mode the demo session is made once Redis answers.
            if let demo = configuration.demoSession, sessions[demo] == nil, !isClustered { _ = try? createSession(demo, flow: Flow.demo.name) }
        case .connected(let c, let grant, let upgrade):
            connect(c, grant: grant, now: now)
            if let upgrade { peers[c]?.backend = PeerBackend(addr: upgrade.addr, headers: upgrade.headers) }
        case .request(let c, let request, let verified):
            message(request, from: c, verified: verified, now: now)
        case .disconnected(let c):
            disconnect(c)
        case .lagging(let c, let name, let queued):
            guard var peer = peers[c], !peer.paused.contains(name) else { break }
            peer.paused.append(name)
            peers[c] = peer
            out.append(.log(.info, "#\(c) \(peer.name) is lagging on '\(name)' (\(queued) bytes queued): patches paused until it drains"))
        case .drained(let c):
            guard var peer = peers[c], !peer.paused.isEmpty else { break }
            let names = peer.paused.sorted()
            peer.paused = []
            peers[c] = peer
            out.append(.log(.info, "#\(c) \(peer.name) drained: catching up on \(names.joined(separator: ", ")) with a snapshot"))
            for name in names {
                guard let s = sessions[name], s.members[c] != nil else { continue }
                emit(.send(to: c, .snapshot(session: name, rev: s.sequencer.rev, state: s.sequencer.state.json), id: nil))
            }
        case .httpCommand(var h):
            let client = h.client ?? "http-" + ids.nextClient()
            if h.client == nil { h.assigned = client }
            submit(Submission(session: h.session, object: h.command, client: client, name: client, role: h.role, reply: .http(h)))
        case .httpDelete(let c, let request, let name):
            let by = "http"
            let refusal = deleteSession(name, by: by, requester: nil)
            emit(.answer(connection: c, request, refusal.map { .error($0) } ?? .deleted(session: name, by: by), id: nil))
        case .policy(let p, let verified):
            reload(policy: p, verified: verified)
        case .journal(let result):
            journalDone(result)
        case .tick:
            tick(busy: false)
        case .busyTick:
            tick(busy: true)
        case .cluster(let e):
            clusterEvent(e)
        case .hook(let call, let reply):
            hookAnswered(call, reply)
        case .hooks(let configuration):
            configure(hooks: configuration)
        case .holdReplica(let name):
            holdReplica(name)
        }
        return out
    }

    /// Output: sent now, or held until the journal entries made so far are written.
    /// (Consumed, not copied: copying an effect goes through every payload of the
    /// enum and its message, twice per command.)
    mutating func emit(_ effect: consuming Effect) {
        if journal.seq > journal.durableThrough { journal.gate.hold(effect, until: journal.seq) } else { out.append(effect) }
    }

    /// A broadcast to a session's members now (but `except`); nothing if there are none.
    mutating func broadcast(_ session: String, _ message: ServerMessage, except: Int? = nil) {
        // Patches leave no one out: the member list is shared as it is, not copied.
        let all = members(of: session)
        let to = except.map { c in all.filter { $0 != c } } ?? all
        guard !to.isEmpty else { return }
        emit(.broadcast(session: session, message, to: to))
    }

    // MARK: Reading (for the HTTP routes and metrics)

    /// A recording of a session (docs/protocol.md, "History", `GET /api/sessions/NAME/log`): a first line
    /// with the flow, the epoch, the state at `from` and the id counter there, then a
    /// line per revision after it with its command and patch; a `restore` also carries
    /// the state it restored, so a recording replays without history.
    public func recording(of name: String, from: Int?) -> Result<[JSON], NavError> {
        guard let s = sessions[name] else { return .failure(NavError(.unknownSession, "no session '\(name)'")) }
        let h = s.sequencer.history
        let from = from ?? h.earliest
        let current = s.sequencer.state.json
        let state: JSON
        do { state = try h.state(at: from, current: current) } catch { return .failure(error) }
        let nextID = from == s.sequencer.rev ? s.sequencer.document.nextID : h.nextID(at: from) ?? s.sequencer.document.nextID
        var lines: [JSON] = [["format": "navsync-log/1", "session": .string(name), "flow": s.flow.source, "epoch": .string(s.sequencer.epoch),
                              "from": .int(Int64(from)), "state": state, "nextId": .int(Int64(nextID))]]
        for e in h.entries(after: from) {
            guard case .object(var o) = e.json else { continue }
            o["results"] = nil
            o["patch"] = .array(e.patch.map(\.json))
            if e.ops.contains(where: { $0["op"] == "restore" }) { o["state"] = (try? h.state(at: e.rev, current: current)) ?? .null }
            lines.append(.object(o))
        }
        return .success(lines)
    }

    /// The state of revision `rev` (docs/protocol.md, "History"): the current one as a plain snapshot,
    /// an older one held by history as a historic one.
    public func revision(_ rev: Int, of name: String) -> Result<ServerMessage, NavError> {
        guard let s = sessions[name] else { return .failure(NavError(.unknownSession, "no session '\(name)'")) }
        let current = s.sequencer.state.json
        if rev == s.sequencer.rev { return .success(.snapshot(session: name, rev: rev, state: current)) }
        do { return .success(.historic(session: name, rev: rev, state: try s.sequencer.history.state(at: rev, current: current))) }
        catch { return .failure(error) }
    }

    public var sessionSummaries: [SessionSummary] { sessions.keys.sorted().map { sessions[$0]!.summary } }

    /// Connection ids of a session's members, in join order.
    public func members(of session: String) -> [Int] { sessions[session]?.memberOrder ?? [] }

    public var memberCount: Int { sessions.values.reduce(0) { $0 + $1.members.count } }

    public func client(of connection: Int) -> String? { peers[connection]?.client }

    /// Messages held until the journal catches up.
    public var heldCount: Int { journal.gate.count }

    // MARK: Sessions

    /// Makes a session of the named flow; `full` past the limit, `not_found` for an
    /// unknown flow.
    mutating func createSession(_ name: String, flow flowName: String) throws(NavError) {
        if sessions[name] != nil { return }
        if let e = frozen[name] { throw e }
        guard sessions.count < configuration.maxSessions else {
            throw NavError(.full, "the server holds \(configuration.maxSessions) sessions, its limit")
        }
        guard let flow = flows[flowName] else {
            throw NavError(.notFound, "no flow '\(flowName)' (known: \(flows.keys.sorted().joined(separator: ", ")))")
        }
        let sequencer = Sequencer(flow: flow, epoch: ids.nextEpoch(), limits: configuration.limits.model,
                                  idempotencyCapacity: configuration.idempotency, logCapacity: configuration.patchLog,
                                  historyCapacity: configuration.history)
        sessions[name] = Session(name: name, flow: flow, sequencer: sequencer)
        writeJournal(.create(session: name, flow: flow, sequencer))
        noteSession("session.created", name, extra: ["flow": .string(flow.name)])
    }

    /// Forgets a session (its creation was never written, or it cannot be read back);
    /// its members leave it.
    mutating func removeSession(_ name: String) {
        guard let s = sessions.removeValue(forKey: name) else { return }
        for c in s.memberOrder { peers[c]?.sessions.removeAll { $0 == name }; peers[c]?.paused.removeAll { $0 == name } }   // its pending presence goes with it
    }

    /// Runs a command from a connection or from the HTTP API. On a new revision the
    /// patch goes to every member before the answer goes to the sender.
    mutating func command(session name: String, _ object: JSONObject, client: String, name senderName: String, role: Role,
                          user: String? = nil) -> ServerMessage {
        func fail(_ e: NavError) -> ServerMessage {
            commandOutcomes[e.code.rawValue, default: 0] += 1
            return .error(e)
        }
        guard let at = sessions.index(forKey: name) else { return fail(NavError(.unknownSession, "no session '\(name)'")) }
        if let e = frozen[name] { return fail(e) }
        let sender = Sequencer.Sender(name: senderName, ts: time.wallMS, mayLoad: role == .admin)
        // Through the dictionary's values in place (`sessions[name]!` copies the session
        // out and back).
        let (outcome, command) = sessions.values[at].sequencer.submitDecoding(object, client: client, refused: role.refusedOperations, sender: sender)
        switch outcome {
        case .applied(let ack, let patch):
            commandOutcomes["applied", default: 0] += 1
            if journaled, let command {
                writeJournal(.append(session: name, JournalRecord(rev: ack.rev, client: client, command: command, name: senderName, ts: sender.ts),
                                sessions[name]!.sequencer))
            }
            broadcast(name, .patch(session: name, patch))
            if hooks.configuration != nil { noteRevision(name, rev: ack.rev, user: user, ack: ack) }
            return .ack(session: name, ack)
        case .unchanged(let ack):
            commandOutcomes["unchanged", default: 0] += 1
            return .ack(session: name, ack)
        case .duplicate(let ack):
            commandOutcomes["duplicate", default: 0] += 1
            return .ack(session: name, ack)
        case .failed(let e):
            return fail(e)
        }
    }
}

extension Hub.Event {
    /// A command, from a connection or over HTTP.
    public var isCommand: Bool {
        switch self {
        case .httpCommand: return true
        case .request(_, let r, _): if case .success(.command) = r.message { return true } else { return false }
        default: return false
        }
    }

    /// A text message from a connection, parsed by the core's parser.
    public static func text(_ connection: Int, _ bytes: [UInt8]) -> Hub.Event {
        .request(connection, ClientRequest(bytes: bytes))
    }
}

extension Hub {
    /// When an event happened, as the runtime's clocks read it.
    public struct Instant: Sendable, Equatable {
        /// Monotonic milliseconds (the loop's clock): rate limits, presence intervals.
        public var ms: Int64
        /// Milliseconds since the Unix epoch: history's `ts`.
        public var wallMS: Int64
        /// Monotonic nanoseconds: latencies across events.
        public var nanos: UInt64

        public init(ms: Int64, wallMS: Int64 = 0, nanos: UInt64? = nil) {
            self.ms = ms
            self.wallMS = wallMS
            self.nanos = nanos ?? UInt64(max(ms, 0)) &* 1_000_000
        }
    }

    /// The reducer with only the monotonic milliseconds (tests; history's `ts` is 0).
    public mutating func handle(_ event: Event, now: Int64) -> [Effect] {
        handle(event, at: Instant(ms: now))
    }

    /// Where client ids and epochs come from.
    public struct IDSource: Sendable {
        enum Kind: Sendable { case counting(client: String, epoch: String), random }
        let kind: Kind
        private var count = 0
        private var epochs = 0
        /// Random ids' generator.
        private var random: SplitMix64

        /// `c1`, `c2`, … and `ep1`, `ep2`, …: tests.
        public static func counting(client: String = "c", epoch: String = "ep") -> IDSource {
            IDSource(kind: .counting(client: client, epoch: epoch), random: SplitMix64(seed: 0))
        }

        /// Random ids from `seed` (client ids in base 36, epochs in hex): a server seeds
        /// it from the system's generator, so ids never repeat across restarts or nodes.
        public static func random(seed: UInt64) -> IDSource { IDSource(kind: .random, random: SplitMix64(seed: seed)) }

        private init(kind: Kind, random: SplitMix64) { self.kind = kind; self.random = random }

        /// A client id: `c` and 64 random bits in 13 base-36 digits (unique across the
        /// nodes of a cluster). 14 characters fit in a Swift small string, held inline
        /// with no allocation: as `c` and 16 hex digits every connection's id was a
        /// 64-byte heap block.
        mutating func nextClient() -> String {
            switch kind {
            case .counting(let prefix, _): count += 1; return prefix + String(count)
            case .random: return "c" + String(random.next(), radix: 36).leftPadded(13)
            }
        }

        /// An epoch: 16 hex digits.
        mutating func nextEpoch() -> String {
            switch kind {
            case .counting(_, let prefix): epochs += 1; return prefix + String(epochs)
            case .random: return String(random.next(), radix: 16).leftPadded(16)
            }
        }
    }
}

extension String {
    fileprivate func leftPadded(_ n: Int) -> String { String(repeating: "0", count: max(0, n - count)) + self }
}

/// SplitMix64: a small seeded generator. The hub's random ids come from one seeded by
/// the runtime; tests seed one so that every failure replays exactly.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
