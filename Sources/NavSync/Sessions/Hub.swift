/// Every session of a server and every client connected to it: protocol v1 messages
/// in, deliveries out (DESIGN.md sections 5 and 6). No sockets and no clock of its own:
/// time, client ids and epochs are passed in, so it is tested as a plain value.
///
/// Connections are named by the runtime's connection id. A client identity (`client`)
/// belongs to a connection; `hello` may resume an earlier one, which is what makes
/// resending commands after a reconnect safe.
public final class Hub {
    /// What to send, in order.
    public enum Delivery: Sendable, Equatable {
        /// To one connection; `id` is the request's.
        case reply(to: Int, ServerMessage, id: JSON?)
        /// To every member of a session but `except`; encoded once for all of them.
        case broadcast(session: String, ServerMessage, except: Int?)
    }

    /// Roles (DESIGN.md section 10); without an auth file every client is `admin`
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
        /// The token's grant, with an auth file.
        var grant: AccessPolicy.Grant?
        /// A role asked for in `hello`: the connection never gets more than this.
        var requestedRole: Role?
        /// Whether any message came yet (`hello` must be the first).
        var greeted = false
        var rate: TokenBucket
        var sessions: Set<String> = []
    }

    public let configuration: HubConfiguration
    /// The auth file's tokens; nil when there is none (every client is admin).
    public private(set) var policy: AccessPolicy?
    public private(set) var flows: [String: Flow]
    public private(set) var sessions: [String: Session] = [:]
    private var peers: [Int: Peer] = [:]
    private let newClientID: () -> String
    private let newEpoch: () -> String
    /// Monotonic nanoseconds, for the latency histogram only.
    private let clock: () -> UInt64

    /// Commands by outcome: `applied`, `unchanged`, `duplicate`, or an error code.
    public private(set) var commandOutcomes: [String: Int] = [:]
    public private(set) var applyLatency = LatencyHistogram()
    /// Patch messages handed to members (one per member per patch).
    public var patchesSent = 0

    /// What the journal must record (DESIGN.md section 9).
    public enum Change {
        /// A new session, at revision 0.
        case created(Session)
        /// A command made a new revision; `sequencer` is the session's state after it.
        case applied(session: String, JournalRecord, sequencer: Sequencer)
    }

    /// Told of every change as it happens, on the caller's thread; nil keeps sessions
    /// in memory only.
    public var onChange: ((Change) -> Void)?

    /// Sessions that refuse commands (and creation under their name) with this error,
    /// while reads go on: the journal is reading them back after a failed write.
    public var frozen: [String: NavError] = [:]

    public init(configuration: HubConfiguration, flows: [Flow], policy: AccessPolicy? = nil, newClientID: @escaping () -> String,
                newEpoch: @escaping () -> String, clock: @escaping () -> UInt64) {
        self.configuration = configuration
        self.policy = policy
        var byName: [String: Flow] = [Flow.demo.name: Flow.demo]
        for flow in flows { byName[flow.name] = flow }
        self.flows = byName
        self.newClientID = newClientID
        self.newEpoch = newEpoch
        self.clock = clock
        if let demo = configuration.demoSession { _ = try? createSession(demo, flow: Flow.demo.name) }
    }

    // MARK: Sessions

    /// Makes a session of the named flow; `full` past the limit, `not_found` for an
    /// unknown flow.
    @discardableResult
    public func createSession(_ name: String, flow flowName: String) throws(NavError) -> Session {
        if let s = sessions[name] { return s }
        if let e = frozen[name] { throw e }
        guard sessions.count < configuration.maxSessions else {
            throw NavError(.full, "the server holds \(configuration.maxSessions) sessions, its limit")
        }
        guard let flow = flows[flowName] else {
            throw NavError(.notFound, "no flow '\(flowName)' (known: \(flows.keys.sorted().joined(separator: ", ")))")
        }
        let sequencer = Sequencer(flow: flow, epoch: newEpoch(), limits: configuration.limits.model,
                                  idempotencyCapacity: configuration.idempotency, logCapacity: configuration.patchLog)
        let session = Session(name: name, flow: flow, sequencer: sequencer)
        sessions[name] = session
        onChange?(.created(session))
        return session
    }

    /// A session restored from the data directory (replaces one of the same name that
    /// has no members, such as the demo session made at start).
    public func install(_ session: Session) {
        sessions[session.name] = session
    }

    /// Puts a session's sequencer back to an earlier value: its journal write failed, so
    /// the revisions after that value never happened.
    public func revert(_ name: String, to sequencer: Sequencer) {
        sessions[name]?.sequencer = sequencer
    }

    /// Forgets a session whose creation could not be recorded; its members leave it.
    public func removeSession(_ name: String) {
        guard let s = sessions.removeValue(forKey: name) else { return }
        for c in s.memberOrder { peers[c]?.sessions.remove(name) }
    }

    public var sessionSummaries: [SessionSummary] { sessions.keys.sorted().map { sessions[$0]!.summary } }

    /// Connection ids of a session's members, in join order.
    public func members(of session: String) -> [Int] { sessions[session]?.memberOrder ?? [] }

    public var memberCount: Int { sessions.values.reduce(0) { $0 + $1.members.count } }

    // MARK: Connections

    /// A new connection, with the grant of the token it showed on the upgrade, if any.
    public func connect(_ connection: Int, now: Int64, grant: AccessPolicy.Grant? = nil) {
        let id = newClientID()
        peers[connection] = Peer(client: id, name: grant?.label ?? id, role: policy == nil ? .admin : grant?.role, grant: grant,
                                 rate: TokenBucket(rate: configuration.commandRate, burst: configuration.commandBurst, now: now))
    }

    /// A new auth file (SIGHUP): grants follow their tokens; the connections whose token
    /// is gone are returned, to be closed with 1008.
    public func reload(policy newPolicy: AccessPolicy) -> [Int] {
        policy = newPolicy
        var lost: [Int] = []
        for (c, peer) in peers {
            guard let old = peer.grant else { continue }
            guard let grant = newPolicy.grant(for: old.token) else {
                lost.append(c)
                continue
            }
            peers[c]!.grant = grant
            peers[c]!.role = peer.requestedRole.map { min($0, grant.role) } ?? grant.role
        }
        return lost.sorted()
    }

    /// The grant's label of a connection, for logs.
    public func grantName(of connection: Int) -> String? { peers[connection]?.grant?.name }

    /// The connection is gone: it leaves every session it was in.
    public func disconnect(_ connection: Int) -> [Delivery] {
        guard let peer = peers.removeValue(forKey: connection) else { return [] }
        return peer.sessions.sorted().compactMap { name in
            guard sessions[name]?.remove(connection) != nil else { return nil }
            return .broadcast(session: name, .presence(session: name, .left(client: peer.client)), except: nil)
        }
    }

    public func client(of connection: Int) -> String? { peers[connection]?.client }

    // MARK: Messages

    public func handle(text: [UInt8], from connection: Int, now: Int64) -> [Delivery] {
        handle(ClientRequest(bytes: text), from: connection, now: now)
    }

    public func handle(_ request: ClientRequest, from c: Int, now: Int64) -> [Delivery] {
        guard var peer = peers[c] else { return [] }
        let first = !peer.greeted
        peer.greeted = true
        peers[c] = peer
        func reply(_ m: ServerMessage) -> [Delivery] { [.reply(to: c, m, id: request.id)] }
        func error(_ code: ErrorCode, _ message: String) -> [Delivery] { reply(.error(NavError(code, message))) }

        let message: ClientMessage
        switch request.message {
        case .failure(let e): return reply(.error(e))
        case .success(let m): message = m
        }
        if let refusal = permission(message, peer) { return reply(.error(refusal)) }

        switch message {
        case .hello(let h):
            guard first else { return error(.badRequest, "'hello' must be the first message of a connection") }
            if let client = h.client {
                guard Self.isValidClientID(client) else {
                    return error(.badRequest, "'client' must be 1-64 letters, digits or -_.: characters")
                }
                peer.client = client
            }
            if let token = h.token, let policy {
                guard let grant = policy.grant(for: token) else {
                    return error(.forbidden, "that token is not valid here")
                }
                peer.grant = grant
                peer.role = grant.role
            }
            if let role = h.role {
                guard let r = Role(rawValue: role) else { return error(.badRequest, "'role' must be viewer, controller or admin") }
                peer.requestedRole = r
                peer.role = peer.role.map { min(r, $0) }
            }
            peer.name = h.name.map { String($0.prefix(128)) } ?? peer.grant?.label ?? peer.client
            peers[c] = peer
            return reply(.welcome(.init(client: peer.client, server: configuration.serverName,
                                        heartbeat: configuration.heartbeat, limits: configuration.limits)))

        case .join(let j):
            return join(j, peer, c, request.id)

        case .leave(let name):
            if sessions[name]?.remove(c) != nil {
                peers[c]?.sessions.remove(name)
                return [.broadcast(session: name, .presence(session: name, .left(client: peer.client)), except: c)] + reply(.left(session: name))
            }
            return reply(.left(session: name))

        case .command(let name, let object):
            guard peers[c]!.rate.take(now: now) else {
                commandOutcomes["rate_limited", default: 0] += 1
                return error(.rateLimited, "more than \(Int(configuration.commandRate)) commands a second (burst \(configuration.commandBurst)); slow down")
            }
            let (patch, answer) = command(session: name, object, client: peer.client, role: peer.role ?? .viewer)
            return [patch].compactMap { $0 } + reply(answer)

        case .sync(let name, let since, let epoch):
            guard let s = sessions[name] else { return error(.unknownSession, "no session '\(name)'") }
            let seq = s.sequencer
            if epoch == seq.epoch, let patches = seq.log.patches(since: since, current: seq.rev) {
                return patches.map { .reply(to: c, .patch(session: name, $0), id: request.id) } + reply(.synced(session: name, rev: seq.rev))
            }
            return reply(.snapshot(session: name, rev: seq.rev, state: seq.state.json))

        case .status(let name, let rev, let focus):
            guard sessions[name] != nil else { return error(.unknownSession, "no session '\(name)'") }
            guard sessions[name]!.members[c] != nil else { return error(.badRequest, "not a member of '\(name)'; join it first") }
            sessions[name]!.setStatus(c, rev: rev, focus: focus)
            return [.broadcast(session: name, .presence(session: name, .status(client: peer.client, rev: rev, focus: focus)), except: c)]

        case .get(let name):
            guard let s = sessions[name] else { return error(.unknownSession, "no session '\(name)'") }
            return reply(.snapshot(session: name, rev: s.sequencer.rev, state: s.sequencer.state.json))

        case .sessions:
            return reply(.sessions(sessionSummaries.filter { peer.grant?.allows(session: $0.session) ?? true }))

        case .ping:
            return reply(.pong)
        }
    }

    private func join(_ j: ClientMessage.Join, _ peer: Peer, _ c: Int, _ id: JSON?) -> [Delivery] {
        func refuse(_ e: NavError) -> [Delivery] { [.reply(to: c, .error(e), id: id)] }
        if sessions[j.session] == nil {
            guard j.create else {
                return refuse(NavError(.unknownSession, "no session '\(j.session)'; send \"create\": true to make it"))
            }
            guard peer.role == .admin else {
                return refuse(NavError(.forbidden, "role \(peer.role?.rawValue ?? "none") may not create sessions: that needs admin"))
            }
            do throws(NavError) { try createSession(j.session, flow: j.flow ?? Flow.demo.name) } catch { return refuse(error) }
        }
        let existing = sessions[j.session]!.members[c]
        guard existing != nil || sessions[j.session]!.members.count < configuration.maxMembers else {
            return refuse(NavError(.full, "session '\(j.session)' has \(configuration.maxMembers) members, its limit"))
        }
        let rejoin = existing != nil
        let member = existing ?? Member(client: peer.client, name: peer.name, role: (peer.role ?? .viewer).rawValue)
        // In place: copying the session out and back would copy its member table on
        // every join (quadratic in a join burst).
        sessions[j.session]!.add(c, member)
        peers[c]!.sessions.insert(j.session)
        let s = sessions[j.session]!

        let seq = s.sequencer
        var catchUp = ServerMessage.CatchUp.state(seq.state.json)
        if let since = j.since, j.epoch == seq.epoch, let patches = seq.log.patches(since: since, current: seq.rev) {
            catchUp = .patches(patches)
        }
        let joined = ServerMessage.joined(.init(session: j.session, epoch: seq.epoch, rev: seq.rev, flow: s.flow.source,
                                                members: s.memberList, catchUp: catchUp))
        var out: [Delivery] = [.reply(to: c, joined, id: id)]
        if !rejoin { out.append(.broadcast(session: j.session, .presence(session: j.session, .joined(member)), except: c)) }
        return out
    }

    /// Runs a command from a connection or from the HTTP API. On a new revision the
    /// patch goes to every member before the answer goes to the sender.
    public func command(session name: String, _ object: JSONObject, client: String, role: Role)
        -> (patch: Delivery?, answer: ServerMessage) {
        func fail(_ e: NavError) -> (patch: Delivery?, answer: ServerMessage) {
            commandOutcomes[e.code.rawValue, default: 0] += 1
            return (nil, .error(e))
        }
        guard sessions[name] != nil else { return fail(NavError(.unknownSession, "no session '\(name)'")) }
        if let e = frozen[name] { return fail(e) }
        let started = clock()
        let (outcome, command) = sessions[name]!.sequencer.submitDecoding(object, client: client, refused: role.refusedOperations)
        applyLatency.record(nanoseconds: clock() &- started)
        switch outcome {
        case .applied(let ack, let patch):
            commandOutcomes["applied", default: 0] += 1
            if let onChange, let command {
                onChange(.applied(session: name, JournalRecord(rev: ack.rev, client: client, command: command),
                                  sequencer: sessions[name]!.sequencer))
            }
            return (.broadcast(session: name, .patch(session: name, patch), except: nil), .ack(session: name, ack))
        case .unchanged(let ack):
            commandOutcomes["unchanged", default: 0] += 1
            return (nil, .ack(session: name, ack))
        case .duplicate(let ack):
            commandOutcomes["duplicate", default: 0] += 1
            return (nil, .ack(session: name, ack))
        case .failed(let e):
            return fail(e)
        }
    }

    /// What a connection may send (DESIGN.md section 10): without a token only `hello`
    /// and `ping`; `viewer` no commands; a token with session patterns only those
    /// sessions. (Creating sessions and `reset` are checked where they happen.)
    private func permission(_ message: ClientMessage, _ peer: Peer) -> NavError? {
        switch message {
        case .hello, .ping: return nil
        default: break
        }
        guard let role = peer.role else {
            return NavError(.forbidden, "this connection has no token: send one in hello (\"token\"), an Authorization: Bearer header, or ?token= on the upgrade")
        }
        if case .command = message, role < .controller {
            return NavError(.forbidden, "role \(role.rawValue) may not send commands: that needs controller or admin")
        }
        let session: String?
        switch message {
        case .join(let j): session = j.session
        case .command(let s, _), .sync(let s, _, _), .status(let s, _, _), .get(let s): session = s
        default: session = nil
        }
        if let session, let grant = peer.grant, !grant.allows(session: session) {
            return NavError(.forbidden, "\(grant.name) may not use session '\(session)' (allowed: \(grant.sessions?.joined(separator: ", ") ?? "all"))")
        }
        return nil
    }

    /// Client identities: 1–64 letters, digits and `-_.:`.
    public static func isValidClientID(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64 && ClientRequest.isValidSessionName(s)
    }
}
