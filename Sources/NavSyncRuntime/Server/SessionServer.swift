import CUV
import NavSync
import NavSyncServer
import NavSyncLibuv
/// navsyncd's application: protocol v1 over WebSocket and the HTTP API, around one
/// `Hub` (docs/protocol.md, "Client messages" and "HTTP"). Every event goes to the hub; this class only
/// carries out the effects that come back: frames to connections, HTTP answers,
/// journal entries to the `DataStore`, closes and log lines.
///
/// A broadcast is encoded and framed once; the same bytes are queued on every member.
/// A member whose queue passes `lagThreshold` is not queued the patch, and the hub is
/// told (`Hub.Event.lagging`): it pauses that member's patches of the session and, once
/// its queue has drained (`.drained`), sends it the session's state: memory stays bounded
/// and the others are not slowed (docs/protocol.md, "Transport").
public final class SessionServer: ServerApplication {
    public private(set) var hub: Hub
    /// Queued bytes past which a member is lagging and patches stop being queued for it.
    public let lagThreshold: Int
    /// `--allow-origin`: origins browsers may connect or POST from, besides the server's own.
    public let allowedOrigins: [String]
    /// This machine's IP addresses, for the server's own origin (`OriginPolicy`).
    let localAddresses = Set(interfaceAddresses(includingLoopback: true))
    /// The auth file, re-read on SIGHUP; nil without one.
    public let authFile: String?
    /// With `--data`: where the hub's journal entries are written.
    public let store: DataStore?
    /// With `--cluster`: Redis, where the hub's sessions live (docs/cluster.md, "How it works").
    public let cluster: ClusterStore?
    /// The server this application runs in, set on its first loop iteration. Not
    /// `weak`: a weak reference gives the server a side table, and every retain and
    /// release of it then takes the slow path, on every send to every member.
    private(set) unowned(unsafe) var server: Server?
    /// Patch messages queued to members (one per member per patch), for /metrics.
    public private(set) var patchesSent = 0
    /// Presence messages queued to members (a herd's cost), for /metrics.
    public private(set) var presenceSent = 0
    /// Time to handle one command (decode, sequence, apply, encode), outside cluster mode.
    public private(set) var commandLatency = LatencyHistogram()

    /// Members whose queue overflowed while effects were carried out, for the hub once
    /// they are done (`Hub.Event.lagging`).
    private var overflows: [(connection: Int, session: String, queued: Int)] = []
    /// `Connection.context` of a connection whose upgrade was admitted (the hub hears of
    /// its close); the same object for all.
    private static let admitted = Admitted()
    private final class Admitted: Sendable {}
    /// The grants of tokens shown on upgrades, from admission until the WebSocket opens
    /// and the hub takes them (kept here, not with every connection).
    private var admittedGrants: [Int: AccessPolicy.Grant] = [:]

    /// `--hooks`: the file, read and checked, waiting for the loop (the backend starts
    /// on the first iteration); then the backend itself.
    private var hooksFile: HooksFile?
    private(set) var backend: Backend?
    /// `--jwt-key`'s keys: signatures are checked here, and the hub gets what verified.
    public private(set) var jwtKeys: JWTKeys?

    /// What the keys make of a token shown, when it is a JWT this server checks.
    func verification(of token: String) -> JWTVerification? {
        guard let jwtKeys, hub.takesJWT(token) else { return nil }
        return jwtKeys.verify(token)
    }

    /// Webhook events made before the backend started (the demo session's creation).
    private var earlyEvents: [WebhookEvent] = []

    /// `hub` must be `journaled` exactly when there is a `store`.
    public init(hub: Hub, lagThreshold: Int = 1 << 20, allowedOrigins: [String] = [], authFile: String? = nil, store: DataStore? = nil,
                cluster: ClusterStore? = nil, hooks: HooksFile? = nil, jwtKeys: JWTKeys? = nil) {
        hooksFile = hooks
        self.jwtKeys = jwtKeys
        precondition(hub.journaled == (store != nil), "a journaled hub needs a store, and a store a journaled hub")
        precondition(hub.isClustered == (cluster != nil), "a clustered hub needs Redis, and Redis a clustered hub")
        self.cluster = cluster
        self.hub = hub
        self.lagThreshold = lagThreshold
        self.allowedOrigins = allowedOrigins
        self.authFile = authFile
        self.store = store
        store?.onResult = { [unowned self] in handle(.journal($0), on: server) }
        if let h = self.hooksFile { self.hub.configureHooks(h.configuration) }
        handle(.started, on: nil)
    }

    /// The one way into the hub: the event, then its effects carried out.
    /// The hub reads no clock: each event comes with the loop's time, the wall clock (for
    /// history) and monotonic nanoseconds. A command's handling is timed here, around
    /// the reducer (in cluster mode the hub times arrival to answer itself).
    package func handle(_ event: Hub.Event, on server: Server?) {
        let started = monotonicNanoseconds()
        let effects = hub.handle(event, at: Hub.Instant(ms: server?.now ?? 0, wallMS: unixMilliseconds(), nanos: started))
        if !hub.isClustered, event.isCommand { commandLatency.record(nanoseconds: monotonicNanoseconds() &- started) }
        perform(effects, on: server)
        // Members that could not take a patch: the hub decides what follows.
        while !overflows.isEmpty {
            let due = overflows
            overflows = []
            for o in due { handle(.lagging(o.connection, session: o.session, queued: o.queued), on: server) }
        }
    }

    private func perform(_ effects: [Hub.Effect], on server: Server?) {
        // By index: iterating made one more whole copy of each effect (some 600
        // instructions through the payloads of the effect and its message).
        for i in effects.indices {
            switch effects[i] {
            case .journal(let entry):
                store?.write(entry)
            case .cluster(let request):
                cluster?.perform(request)
            case .send(let to, let message, let id):
                guard let connection = server?.connections[to], connection.isOpen else { continue }
                // A `joined` goes in parts its session's joins share; the rest whole.
                let parts = joinedFrames.frame(message, id: id)
                let sent = parts.map { connection.send($0) } ?? connection.sendMessage(OutgoingBuffer(text: message, id: id))
                if !sent { connection.abort(.overflow); continue }
                connection.writeFirst()
            case .broadcast(let session, let message, let members):
                if let server { broadcast(message, to: members, of: session, on: server) }
            case .answer(let c, let request, let message, let id):
                var response: HTTPResponse
                if case .error(let e) = message { response = HTTPAPI.error(e, id: id) } else { response = .json(200, message.json()) }
                if case .ack(_, let ack) = message, ack.duplicate { response.headers.append(("Idempotent-Replayed", "true")) }
                guard let connection = server?.connections[c] else { continue }
                connection.answer(request, with: response)
                connection.writeFirst()
            case .close(let c, let code, let reason):
                server?.connections[c]?.close(code: code, reason: reason)
            case .log(let level, let line):
                server?.logger.log(level, line)
            case .hook(let call):
                backend?.call(call)
            case .webhook(let event):
                if let backend { backend.queue(event) } else { earlyEvents.append(event) }
            }
        }
    }

    /// A session's members as connections, for the hub's member list `ids`: a
    /// broadcast to the same list (the same array, while membership is unchanged)
    /// reuses them instead of looking each member up. The
    /// references are unretained: a member's connection is open while it is on the
    /// hub's list, and a connection that closes leaves the list (`closed` tells the
    /// hub) before it is freed, so a list with it is never equal to a newer one.
    private struct Audience {
        var ids: [Int]
        var members: [Unmanaged<Connection>]
    }
    private var audiences: [String: Audience] = [:]
    /// The parts of `joined` messages the joins of a session share.
    private var joinedFrames = JoinedFrames()

    private func audience(of session: String, ids: [Int], on server: Server) -> Audience {
        // Array == is O(1) when both share storage: the usual case.
        if let known = audiences[session], known.ids == ids { return known }
        var members: [Unmanaged<Connection>] = []
        members.reserveCapacity(ids.count)
        for id in ids {
            guard let connection = server.connections[id] else { continue }
            members.append(.passUnretained(connection))
        }
        let made = Audience(ids: ids, members: members)
        audiences[session] = made
        return made
    }

    /// The message is encoded and framed once; every member queues the same buffer.
    /// Per member: no lookup, cast, retain or counter update beyond queueing it.
    private func broadcast(_ message: ServerMessage, to ids: [Int], of session: String, on server: Server) {
        let frame = OutgoingBuffer(text: message)
        // Compressed once per window size asked for, when a member agreed to it: the
        // same bytes go to every such member.
        let compressible = server.deflater.map { frame.payload.count >= $0.threshold } ?? false
        var deflated: [Int: OutgoingBuffer] = [:]
        let isPatch: Bool
        if case .patch = message { isPatch = true } else { isPatch = false }
        let audience = audience(of: session, ids: ids, on: server)
        let lagThreshold = self.lagThreshold
        var sent = 0
        for member in audience.members {
            member._withUnsafeGuaranteedRef { connection in
                guard connection.isOpen else { return }
                // A patch is not queued past the threshold: the hub hears of it after
                // these effects and pauses the member's patches of the session. Only a
                // connection that overflowed (`wantsDrained`) is looked up in the hub.
                func overflowed() {
                    overflows.append((connection.id, session, connection.queuedBytes))
                    connection.wantsDrained = true
                }
                if isPatch {
                    if connection.wantsDrained, hub.patchesPaused(for: connection.id, in: session) { return }
                    if connection.queuedBytes > lagThreshold { return overflowed() }
                }
                // The frame is passed on, not copied into a variable: a copy is a
                // retain and a release per member.
                let queued: Bool
                if compressible, let window = connection.deflateWindow {
                    let made = deflated[window] ?? server.deflater!.frame(compressing: frame, windowBits: window)
                    deflated[window] = made
                    queued = connection.send(made)
                } else {
                    queued = connection.send(frame)
                }
                if queued {
                    sent += 1
                } else if isPatch {
                    overflowed()
                } else {
                    connection.abort(.overflow)
                }
            }
        }
        if isPatch { patchesSent += sent } else if case .presence = message { presenceSent += sent }
        if case .deleted = message { audiences[session] = nil }
    }

    // MARK: The loop

    public func beforeSleep(on server: Server) {
        if self.server == nil {
            // Presence is gathered per session and sent once per interval (docs/protocol.md, "Server messages, unasked").
            var load = LoopLoad(at: uv_hrtime(), idle: server.idleTime)
            server.every(hub.configuration.presenceInterval) { [unowned self, unowned server] in
                handle(load.busy(at: uv_hrtime(), idle: server.idleTime) ? .busyTick : .tick, on: server)
            }
            if let h = hooksFile {
                let b = Backend(configuration: h.configuration, signer: h.signer, file: h.file, loop: server.loop, dataDirectory: store?.path)
                b.onAnswer = { [unowned self, unowned server] id, reply in handle(.hook(id, reply), on: server) }
                b.log = { [unowned server] level, line in server.logger.log(level, line) }
                backend = b
                if let cluster {
                    let delivery = ClusterDelivery(store: cluster)
                    delivery.sessions = { [unowned self] in hub.sessions }
                    delivery.holdReplica = { [unowned self, unowned server] name in handle(.holdReplica(name), on: server) }
                    delivery.log = { [unowned server] level, line in server.logger.log(level, line) }
                    b.cluster = delivery
                }
                b.resume(sessions: Array(hub.sessions.values))
                for e in earlyEvents { b.queue(e) }
                earlyEvents = []
                server.logger.info("hooks: \(h.configuration.summary) (\(h.file))")
            }
            if let cluster {
                cluster.onEvent = { [unowned self, unowned server] in handle(.cluster($0), on: server) }
                if cluster.advertised.isEmpty { cluster.advertised = server.webSocketURL }
                cluster.start(on: server, newEpoch: { RandomIDs.hex(8) })
            }
        }
        self.server = server
        store?.submit(on: server.loop)
    }

    public func stopping(on server: Server) {
        backend?.close()
        store?.stop()
        cluster?.stop()
    }

    // MARK: Access

    /// The upgrade: the origin must be allowed (403) and a token, when shown, valid (401)
    /// (`HTTPAPI.admit`). A connection without a token is admitted but may only `hello`
    /// and `ping`.
    public func admit(_ request: HTTPRequest, on connection: Connection) -> HTTPResponse? {
        switch HTTPAPI(site: site(connection.server)).admit(asked(request, on: connection), hub: hub) {
        case .refused(let refusal):
            return refusal
        case .admitted(let grant):
            connection.context = Self.admitted
            if let grant { admittedGrants[connection.id] = grant }
            return nil
        }
    }

    /// SIGHUP: re-reads the auth file, the `--jwt-key` files and the Redis password file; connections whose
    /// token is gone are closed with 1008. What does not load leaves everything as it was.
    public func reload(on server: Server) {
        if let backend {
            do {
                let (configuration, signer) = try Backend.load(file: backend.file)
                backend.reload(configuration, signer: signer)
                handle(.hooks(configuration), on: server)
                server.logger.info("SIGHUP: hooks file re-read: \(configuration.summary)")
            } catch {
                server.logger.error("SIGHUP: hooks file not reloaded, the old one stays: \(error)")
            }
        }
        if let cluster, cluster.passwordFile != nil {
            if let problem = cluster.reloadPassword() { server.logger.error("SIGHUP: \(problem)") } else {
                server.logger.info("SIGHUP: --redis-password-file re-read (used from the next connect to Redis)")
            }
        }
        let jwt = hub.policy?.jwt
        if let keys = jwtKeys {
            do { jwtKeys = try JWTKeys(files: keys.files) } catch {
                return server.logger.error("SIGHUP: not reloaded, the old keys and tokens stay: \(error)")
            }
        }
        // The JWTs connections hold, checked again with the keys as they are now.
        let verified = Dictionary(uniqueKeysWithValues: hub.heldJWTs.compactMap { t in verification(of: t).map { (t, $0) } })
        guard let authFile else {
            guard jwt != nil else { return server.logger.info("SIGHUP: no auth file to reload") }
            return handle(.policy(AccessPolicy(grants: [], jwt: jwt), verified: verified), on: server)
        }
        do {
            var policy = try AccessPolicy.load(file: authFile)
            policy.jwt = jwt
            let loopback = server.host.hasPrefix("127.") || server.host == "::1"
            if !loopback, let (i, reason) = policy.weakTokens.first {
                return server.logger.error("SIGHUP: auth file not reloaded, the old one stays: \(authFile): tokens[\(i)].token \(reason), and the server listens on \(server.host)")
            }
            handle(.policy(policy, verified: verified), on: server)
        } catch {
            server.logger.error("SIGHUP: auth file not reloaded, the old one stays: \(error)")
        }
    }

    // MARK: WebSocket

    public func opened(_ connection: Connection, request: HTTPRequest, subprotocol: String?) {
        if connection.context == nil { connection.context = Self.admitted }
        let grant = admittedGrants.removeValue(forKey: connection.id)
        var upgrade: Hub.Upgrade?
        if let h = backend?.configuration, h.join {
            var headers: [String: String] = [:]
            for name in h.headers { if let v = request.header(name) { headers[name] = v } }
            upgrade = Hub.Upgrade(addr: connection.forwarded?.address ?? UV.Address.host(ofPeer: connection.peer), headers: headers)
        }
        handle(.connected(connection.id, grant: grant, upgrade: upgrade), on: connection.server)
        if let grant { connection.server.logger.info("#\(connection.id) \(connection.peer) is \(grant.name) (\(grant.role.rawValue))") }
    }

    public func received(text: [UInt8], from connection: Connection) {
        let request = ClientRequest(parsed: Result { () throws(JSONParseError) -> JSON in try Jansson.parse(text) })
        // A token in `hello` or `auth`: a JWT's signature is checked here, with the keys.
        var verified: JWTVerification?
        switch request.message {
        case .success(.hello(let h)): verified = h.token.flatMap(verification(of:))
        case .success(.auth(let token)): verified = verification(of: token)
        default: break
        }
        handle(.request(connection.id, request, verified: verified), on: connection.server)
    }

    public func received(binary: [UInt8], from connection: Connection) {
        connection.close(code: CloseCode.unsupportedData, reason: "protocol navsync.v1 is text only")
    }

    public func closed(_ connection: Connection) {
        guard connection.context != nil else { return }
        admittedGrants[connection.id] = nil
        handle(.disconnected(connection.id), on: connection.server)
    }

    public func drained(_ connection: Connection) {
        guard connection.isOpen, connection.context != nil else { return }
        handle(.drained(connection.id), on: connection.server)
    }
}

extension OutgoingBuffer {
    /// The text frame of a server message, written straight into the buffer (the
    /// message's bytes are `message.bytes(id:)`; no array of them is made).
    public convenience init(text message: ServerMessage, id: JSON? = nil) {
        self.init(frame: .text, capacity: message.sizeHint) { message.write(id: id, into: &$0) }
    }
}

/// Whether the loop was saturated since the last look: it waited for events under a
/// tenth of the time (`Hub.Event.busyTick`). Times in nanoseconds, the idle time as
/// `Server.idleTime` counts it.
struct LoopLoad {
    private var at: UInt64
    private var idle: UInt64

    init(at: UInt64, idle: UInt64) {
        self.at = at
        self.idle = idle
    }

    mutating func busy(at now: UInt64, idle nowIdle: UInt64) -> Bool {
        defer { (at, idle) = (now, nowIdle) }
        return (nowIdle - idle) * 10 < now - at
    }
}
