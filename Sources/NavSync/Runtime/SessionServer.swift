/// navsyncd's application: protocol v1 over WebSocket, and the HTTP API, on top of a
/// `Hub` (DESIGN.md sections 6–8).
///
/// A broadcast is encoded and framed once; the same bytes are queued on every member.
/// A member whose queue passes `lagThreshold` stops getting patches of that session
/// and is sent a `snapshot` once its queue has drained: memory stays bounded and the
/// others are not slowed (section 8).
public final class SessionServer: ServerApplication {
    public let hub: Hub
    /// Queued bytes past which a member is lagging and patches stop being queued for it.
    public let lagThreshold: Int
    /// Origins browsers may connect or POST from; nil: the server's own host and port.
    public let allowedOrigins: [String]?
    /// The auth file, re-read on SIGHUP; nil without one.
    public let authFile: String?
    /// With `--data`: where sessions are journaled. Output waits in `gate` until the
    /// journal records it depends on are durable.
    public let store: DataStore?
    private var gate = DurabilityGate()
    private weak var server: Server?

    /// Per connection, kept in `Connection.context`.
    final class ClientState {
        /// Sessions whose patches this client missed; it gets a snapshot when drained.
        var lagging: Set<String> = []
        /// The grant of the token shown on the upgrade.
        var grant: AccessPolicy.Grant?
    }

    public init(hub: Hub, lagThreshold: Int = 1 << 20, allowedOrigins: [String]? = nil, authFile: String? = nil, store: DataStore? = nil) {
        self.hub = hub
        self.lagThreshold = lagThreshold
        self.allowedOrigins = allowedOrigins
        self.authFile = authFile
        self.store = store
        guard let store else { return }
        // Sessions made before the store was attached (the demo session) are recorded now.
        for name in hub.sessions.keys.sorted() where !store.knows(name) { store.record(.created(hub.sessions[name]!)) }
        hub.onChange = { [unowned store] in store.record($0) }
        store.onDurable = { [unowned self] _, events in self.durable(events) }
    }

    // MARK: Durability

    public func beforeSleep(on server: Server) {
        self.server = server
        store?.submit(on: server.loop)
    }

    public func stopping(on server: Server) { store?.stop() }

    /// Sessions being read back from disk after a failed write, and why they failed.
    private var reloading: [String: String] = [:]

    /// Journal batches are on disk: what waited for them goes out. A session whose write
    /// failed is read back from disk (its commands are refused meanwhile); then its held
    /// acks past the durable revision become errors and the rest goes out.
    private func durable(_ events: [DataStore.Event]) {
        guard let server else { return }
        for event in events {
            switch event {
            case .gone(let s, let reason):
                server.logger.error("data: session '\(s)' could not be created: \(reason)")
                hub.removeSession(s)
                gate.fail(session: s, .gone, because: reason)
            case .reloading(let s, let reason):
                server.logger.error("data: session '\(s)': journal write failed: \(reason); its commands are refused while it is read back from disk")
                hub.frozen[s] = NavError(.internal, "session '\(s)' could not write its journal (\(reason)); it is being restored, try again")
                reloading[s] = reason
            case .reloaded(let s, let sequencer):
                server.logger.warn("data: session '\(s)' is back at revision \(sequencer.rev), as on disk; it takes commands again")
                hub.revert(s, to: sequencer)
                hub.frozen[s] = nil
                gate.fail(session: s, .to(rev: sequencer.rev, state: sequencer.state.json), because: reloading.removeValue(forKey: s) ?? "a failed write")
            case .lost(let s, let reason):
                server.logger.error("data: session '\(s)' could not be read back (\(reason)); it is unavailable until navsyncd restarts")
                hub.removeSession(s)
                hub.frozen[s] = NavError(.internal, "session '\(s)' is unavailable after a disk error; restart navsyncd")
                gate.fail(session: s, .gone, because: reloading.removeValue(forKey: s) ?? reason)
            }
        }
        // Nothing goes out while a session is being read back: what is held for it may
        // still have to be rewritten.
        guard reloading.isEmpty else { return }
        for item in gate.release(through: store.map { $0.outstanding == nil ? Int.max : $0.durableThrough } ?? Int.max) {
            switch item {
            case .delivery(let d, let members): send(d, to: members, on: server)
            case .answer(let c, let request, let response, _, _, _): server.connections[c]?.answer(request, with: response)
            }
        }
    }

    // MARK: Access

    /// Browsers name their page's origin; other clients send none and are not checked.
    func originAllowed(_ request: HTTPRequest, on server: Server) -> Bool {
        guard let origin = request.header("Origin") else { return true }
        if let allowedOrigins { return allowedOrigins.contains(origin) }
        let host = server.host.contains(":") ? "[\(server.host)]" : server.host
        var own = ["http://\(host):\(server.port)"]
        if server.host == "127.0.0.1" || server.host == "::1" { own.append("http://localhost:\(server.port)") }
        return own.contains(origin)
    }

    /// The upgrade: the origin must be allowed (403) and a token, when shown, valid (401).
    /// A connection without a token is admitted but may only `hello` and `ping`.
    public func admit(_ request: HTTPRequest, on connection: Connection) -> HTTPResponse? {
        guard originAllowed(request, on: connection.server) else {
            return .text(403, "origin \(request.header("Origin") ?? "") is not allowed here (navsyncd --allow-origin)\n")
        }
        let state = ClientState()
        connection.context = state
        if let policy = hub.policy, let token = AccessPolicy.token(of: request) {
            guard let grant = policy.grant(for: token) else {
                var r = HTTPResponse.text(401, "that token is not valid here\n")
                r.headers.append(("WWW-Authenticate", "Bearer"))
                return r
            }
            state.grant = grant
        }
        return nil
    }

    /// SIGHUP: re-reads the auth file; connections whose token is gone are closed with
    /// 1008. A file that does not load leaves everything as it was.
    public func reload(on server: Server) {
        guard let authFile else { return server.logger.info("SIGHUP: no auth file to reload") }
        do {
            let policy = try AccessPolicy.load(file: authFile)
            let lost = hub.reload(policy: policy)
            server.logger.info("SIGHUP: auth file reloaded: \(policy.grants.count) tokens; \(lost.count) connections lost theirs")
            for id in lost { server.connections[id]?.close(code: CloseCode.policyViolation, reason: "token no longer valid") }
        } catch {
            server.logger.error("SIGHUP: auth file not reloaded, the old one stays: \(error)")
        }
    }

    /// The HTTP API's check: without a valid token 401, with too little 403.
    private func authorize(_ request: HTTPRequest, needs role: Hub.Role, session: String? = nil) -> (grant: AccessPolicy.Grant?, refusal: HTTPResponse?) {
        guard let policy = hub.policy else { return (nil, nil) }
        guard let token = AccessPolicy.token(of: request), let grant = policy.grant(for: token) else {
            var r = Self.error(NavError(.forbidden, "this needs a valid token: Authorization: Bearer TOKEN"))
            r.status = 401
            r.headers.append(("WWW-Authenticate", "Bearer"))
            return (nil, r)
        }
        if grant.role < role {
            return (grant, Self.error(NavError(.forbidden, "role \(grant.role.rawValue) may not do this: it needs \(role.rawValue)")))
        }
        if let session, !grant.allows(session: session) {
            return (grant, Self.error(NavError(.forbidden, "\(grant.name) may not use session '\(session)'")))
        }
        return (grant, nil)
    }

    // MARK: WebSocket

    public func opened(_ connection: Connection, request: HTTPRequest, subprotocol: String?) {
        let state = connection.context as? ClientState ?? ClientState()
        connection.context = state
        hub.connect(connection.id, now: connection.server.now, grant: state.grant)
        if let grant = state.grant { connection.server.logger.info("#\(connection.id) \(connection.peer) is \(grant.name) (\(grant.role.rawValue))") }
    }

    public func received(text: [UInt8], from connection: Connection) {
        deliver(hub.handle(text: text, from: connection.id, now: connection.server.now), on: connection.server)
    }

    public func received(binary: [UInt8], from connection: Connection) {
        connection.close(code: CloseCode.unsupportedData, reason: "protocol navsync.v1 is text only")
    }

    public func closed(_ connection: Connection) {
        guard connection.context != nil else { return }
        deliver(hub.disconnect(connection.id), on: connection.server)
    }

    public func drained(_ connection: Connection) {
        guard let state = connection.context as? ClientState, !state.lagging.isEmpty, connection.isOpen else { return }
        for name in state.lagging.sorted() {
            guard let s = hub.sessions[name], s.members[connection.id] != nil else { continue }
            let seq = s.sequencer
            connection.server.logger.info("#\(connection.id) \(connection.peer) caught up on '\(name)' with a snapshot at rev \(seq.rev)")
            deliver([.reply(to: connection.id, .snapshot(session: name, rev: seq.rev, state: seq.state.json), id: nil)], on: connection.server)
        }
        state.lagging = []
    }

    /// Sends at once, or holds until the journal writes outstanding now are durable.
    func deliver(_ deliveries: [Hub.Delivery], on server: Server) {
        if let batch = store?.outstanding {
            for d in deliveries {
                if case .broadcast(let session, _, _) = d {
                    gate.hold(.delivery(d, members: hub.members(of: session)), until: batch)
                } else {
                    gate.hold(.delivery(d), until: batch)
                }
            }
            return
        }
        for d in deliveries { send(d, on: server) }
    }

    /// `members`: a broadcast's recipients when it was held (default: the members now).
    private func send(_ delivery: Hub.Delivery, to members: [Int]? = nil, on server: Server) {
        switch delivery {
        case .reply(let to, let message, let id):
            if let connection = server.connections[to] { send(message, id: id, to: connection) }
        case .broadcast(let session, let message, let except):
            broadcast(message, to: members ?? hub.members(of: session), of: session, except: except, on: server)
        }
    }

    private func send(_ message: ServerMessage, id: JSON?, to connection: Connection) {
        guard connection.isOpen else { return }
        if !connection.sendText(message.json(id: id).encoded()) { connection.abort(.overflow) }
    }

    private func broadcast(_ message: ServerMessage, to members: [Int], of session: String, except: Int?, on server: Server) {
        guard members.contains(where: { $0 != except }) else { return }
        let frame = OutgoingBuffer(WebSocketEncoder.frame(.text, message.json().encoded()))
        let isPatch: Bool
        if case .patch = message { isPatch = true } else { isPatch = false }
        for id in members where id != except {
            guard let connection = server.connections[id], connection.isOpen,
                  let state = connection.context as? ClientState else { continue }
            if isPatch {
                if state.lagging.contains(session) { continue }
                if connection.queuedBytes > lagThreshold {
                    state.lagging.insert(session)
                    server.logger.info("#\(id) \(connection.peer) is lagging on '\(session)' (\(connection.queuedBytes) bytes queued): patches paused until it drains")
                    continue
                }
            }
            if connection.send(frame) {
                if isPatch { hub.patchesSent += 1 }
            } else if isPatch {
                state.lagging.insert(session)
            } else {
                connection.abort(.overflow)
            }
        }
    }

    // MARK: HTTP

    public func respond(to request: HTTPRequest, on connection: Connection) -> HTTPResponse? {
        let segments = ParsedURL(request.path)?.segments ?? []
        let isRead = request.method == "GET" || request.method == "HEAD"
        func only(_ allowed: String, _ body: () -> HTTPResponse) -> HTTPResponse {
            let ok = allowed == "GET" ? isRead : request.method == allowed
            guard ok else {
                var r = HTTPResponse.text(405, "use \(allowed) for \(request.path)\n")
                r.headers.append(("Allow", allowed == "GET" ? "GET, HEAD" : allowed))
                return r
            }
            return body()
        }
        switch Endpoint(segments) {
        case .index:
            return only("GET") { WebPage.response(for: request) }
        case .apiIndex:
            return only("GET") { .text(200, Self.index(connection.server)) }
        case .healthz:
            return only("GET") { .text(200, "ok\n") }
        case .metrics:
            if let refusal = authorize(request, needs: .viewer).refusal { return refusal }
            return only("GET") {
                var r = HTTPResponse.text(200, connection.server.transportMetrics() + metrics())
                r.headers = [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")]
                return r
            }
        case .sessions:
            let (grant, refusal) = authorize(request, needs: .viewer)
            if let refusal { return refusal }
            return only("GET") {
                .json(200, ["sessions": .array(hub.sessionSummaries.filter { grant?.allows(session: $0.session) ?? true }.map(\.json))])
            }
        case .session(let name):
            if let refusal = authorize(request, needs: .viewer, session: name).refusal { return refusal }
            return only("GET") {
                guard let s = hub.sessions[name] else { return Self.error(NavError(.unknownSession, "no session '\(name)'")) }
                return .json(200, ["session": .string(name), "flow": .string(s.flow.name), "epoch": .string(s.sequencer.epoch),
                                   "rev": .int(Int64(s.sequencer.rev)), "members": .int(Int64(s.members.count)), "state": s.sequencer.state.json])
            }
        case .commands(let name):
            let response = only("POST") {
                guard originAllowed(request, on: connection.server) else {
                    return Self.error(NavError(.forbidden, "origin \(request.header("Origin") ?? "") may not send commands here"))
                }
                let (grant, refusal) = authorize(request, needs: .controller, session: name)
                if let refusal { return refusal }
                return postCommand(request, session: name, server: connection.server, role: grant?.role ?? .admin)
            }
            // The answer waits for the journal like every other reply.
            guard let batch = store?.outstanding else { return response }
            let answer = try? JSON.parse(response.body)
            gate.hold(.answer(connection: connection.id, request: request, response: response, session: name,
                              rev: response.status == 200 ? answer?["rev"]?.intValue.map(Int.init) : nil, id: answer?["id"]),
                      until: batch)
            return nil
        case nil:
            return .json(404, ["type": "error", "code": "not_found", "message": .string("no resource at \(request.path)")])
        }
    }

    /// The HTTP API's resources (DESIGN.md section 7).
    enum Endpoint {
        case index, apiIndex, healthz, metrics, sessions
        case session(String)
        case commands(String)

        init?(_ s: [String]) {
            switch s.count {
            case 0: self = .index
            case 1 where s[0] == "index.html": self = .index
            case 1 where s[0] == "api": self = .apiIndex
            case 1 where s[0] == "healthz": self = .healthz
            case 1 where s[0] == "metrics": self = .metrics
            case 2 where s == ["api", "sessions"]: self = .sessions
            case 3 where s[0] == "api" && s[1] == "sessions": self = .session(s[2])
            case 4 where s[0] == "api" && s[1] == "sessions" && s[3] == "commands": self = .commands(s[2])
            default: return nil
            }
        }
    }

    /// `POST /api/sessions/NAME/commands`: the body is a command object; the answer is
    /// its ack (200) or error. `X-Navsync-Client` names the client identity for
    /// idempotency (default `http`).
    private func postCommand(_ request: HTTPRequest, session: String, server: Server, role: Hub.Role) -> HTTPResponse {
        let body: JSON
        do { body = try JSON.parse(request.body) } catch {
            return Self.error(NavError(.badJSON, "the body is not valid JSON: \(error)"))
        }
        guard let object = body.objectValue else {
            return Self.error(NavError(.badRequest, "the body must be a command object, got \(body.typeName)"))
        }
        let client = request.header("X-Navsync-Client") ?? "http"
        guard Hub.isValidClientID(client) else {
            return Self.error(NavError(.badRequest, "X-Navsync-Client must be 1-64 letters, digits or -_.: characters"))
        }
        let (patch, answer) = hub.command(session: session, object, client: client, role: role)
        if let patch { deliver([patch], on: server) }
        if case .error(let e) = answer { return Self.error(e, id: object["id"]) }
        return .json(200, answer.json())
    }

    /// Error codes to HTTP statuses for the HTTP API.
    public static func status(for code: ErrorCode) -> Int {
        switch code {
        case .badJSON, .badRequest: return 400
        case .forbidden: return 403
        case .unknownSession: return 404
        case .conflict, .busy: return 409
        case .tooLarge: return 413
        case .unknownRoute, .badParams, .invalidOp, .notFound: return 422
        case .rateLimited: return 429
        case .full: return 503
        case .internal: return 500
        }
    }

    static func error(_ e: NavError, id: JSON? = nil) -> HTTPResponse {
        .json(status(for: e.code), ServerMessage.error(e).json(id: id))
    }

    private func metrics() -> String {
        var m = PrometheusText()
        if let store {
            m.counter("navsync_journal_batches_total", "Journal batches written (group commits).", store.batchesWritten)
            m.counter("navsync_journal_records_total", "Journal records written.", store.recordsWritten)
            m.counter("navsync_journal_bytes_total", "Bytes written to the data directory.", store.bytesWritten)
            m.counter("navsync_journal_syncs_total", "fdatasync/fsync calls on journal files.", store.syncs)
            m.counter("navsync_journal_write_failures_total", "Session writes that failed (their commands were rejected).", store.failedWrites)
        }
        m.gauge("navsync_sessions", "Sessions held.", hub.sessions.count)
        m.gauge("navsync_members", "Session memberships (a connection in two sessions counts twice).", hub.memberCount)
        m.counter("navsync_commands_total", "Commands by outcome: applied, unchanged, duplicate, or the error code.",
                  labelled: hub.commandOutcomes.sorted { $0.key < $1.key }.map { ("result=\"\($0.key)\"", $0.value) })
        m.counter("navsync_patches_sent_total", "Patch messages queued to members.", hub.patchesSent)
        let h = hub.applyLatency
        m.histogram("navsync_command_apply_seconds", "Time to sequence and apply one command.", bounds: LatencyHistogram.bounds,
                    cumulative: h.cumulative, sum: h.sum, count: h.count)
        return m.text
    }

    static func index(_ server: Server) -> String {
        """
        navsyncd: one live navigation state per session, shared over WebSocket.

        WebSocket   \(server.webSocketURL)   (protocol navsync.v1)
        GET  /                              the web device page (?session=NAME)
        GET  /api                           this list
        GET  /healthz                       liveness
        GET  /metrics                       Prometheus metrics
        GET  /api/sessions                  sessions, as JSON
        GET  /api/sessions/NAME             one session's state, as JSON
        POST /api/sessions/NAME/commands    body: a command object; answer: its ack or error

        """
    }
}
