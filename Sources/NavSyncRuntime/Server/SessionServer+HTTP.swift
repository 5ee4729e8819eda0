import NavSync
import NavSyncServer
import NavSyncLibuv
/// The HTTP API (docs/protocol.md, "HTTP"): routes, the token check, and the answers of
/// commands the hub runs.
extension SessionServer {
    /// Browsers are checked by `Origin` (docs/protocol.md, "Who may do what (--auth FILE)", `OriginPolicy`).
    func originAllowed(_ request: HTTPRequest, on connection: Connection) -> Bool {
        // Behind a trusted proxy, the public origin the client asked for is the
        // server's own (`https://nav.example`).
        var listed = allowedOrigins + clusterOrigins
        if let f = connection.forwarded, let host = f.host ?? request.header("Host") {
            listed.append("\(f.scheme ?? "http")://\(host)")
        }
        // The nodes of a cluster trust each other's pages (the page moves between them).
        let server = connection.server
        return OriginPolicy(listed: listed, host: server.host, port: server.port, localAddresses: localAddresses,
                            scheme: server.tlsContext == nil ? "http" : "https")
            .allows(origin: request.header("Origin"), host: request.header("Host"))
    }

    /// The HTTP API's check: without a valid token 401, with too little 403.
    func authorize(_ request: HTTPRequest, needs role: Hub.Role, session: String? = nil) -> (grant: AccessPolicy.Grant?, refusal: HTTPResponse?) {
        guard hub.checksTokens else { return (nil, nil) }
        let checked = AccessPolicy.token(of: request).flatMap { hub.checkToken($0, verified: verification(of: $0), now: unixMilliseconds()) }
        guard case .success(let grant)? = checked else {
            var why = "this needs a valid token: Authorization: Bearer TOKEN"
            if case .failure(let refusal)? = checked, case .jwt = refusal { why = "\(refusal)" }
            var r = Self.error(NavError(.forbidden, why))
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

    public func respond(to request: HTTPRequest, on connection: Connection) -> HTTPResponse? {
        let segments = ParsedURL(request.path)?.segments ?? []
        let isRead = request.method == "GET" || request.method == "HEAD"
        /// The body for the allowed method (GET includes HEAD); 405 with `Allow` else.
        /// `also` lists other methods the resource takes (handled before).
        func only(_ allowed: String, also: [String] = [], _ body: () -> HTTPResponse?) -> HTTPResponse? {
            let ok = allowed == "GET" ? isRead : request.method == allowed
            guard ok else {
                var r = HTTPResponse.text(405, "use \(([allowed] + also).joined(separator: " or ")) for \(request.path)\n")
                r.headers.append(("Allow", ((allowed == "GET" ? ["GET", "HEAD"] : [allowed]) + also).joined(separator: ", ")))
                return r
            }
            return body()
        }
        switch Endpoint(segments) {
        case .file(let file):
            return only("GET") { file.response(for: request) }
        case .apiIndex:
            return only("GET") { .text(200, Self.index(connection.server)) }
        case .healthz:
            // Pages of other origins may ask (CORS): navsync.js reads whether its origin
            // would be refused, to tell a forbidden origin from a server that is gone.
            return only("GET") {
                var r = HTTPResponse.text(200, "ok\n")
                r.headers += [("Access-Control-Allow-Origin", "*"), ("Access-Control-Expose-Headers", "X-Navsync-Origin, X-Navsync-Cluster")]
                // In a cluster: the node's name (the page then asks /api/cluster for the others).
                if let cluster { r.headers.append(("X-Navsync-Cluster", cluster.node)) }
                if request.header("Origin") != nil {
                    r.headers.append(("X-Navsync-Origin", originAllowed(request, on: connection) ? "allowed" : "refused"))
                }
                return r
            }
        case .readyz:
            // Whether this node can acknowledge commands now (in a cluster: its store);
            // like /healthz, it needs no token.
            return only("GET") {
                guard let why = cluster?.notReady else { return .json(200, ["ready": true]) }
                return .json(503, ["ready": false, "reason": .string(why)])
            }
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
        case .cluster:
            if let refusal = authorize(request, needs: .viewer).refusal { return refusal }
            return only("GET") {
                guard let cluster else {
                    return .json(404, ServerMessage.error(NavError(.notFound, "this navsyncd is not in a cluster (navsyncd --cluster redis://HOST:PORT)")).json(id: nil))
                }
                return .json(200, clusterListing(cluster))
            }
        case .webhooks:
            if let refusal = authorize(request, needs: .admin).refusal { return refusal }
            return only("GET") {
                guard let backend else {
                    return .json(404, ServerMessage.error(NavError(.notFound, "this navsyncd has no hooks file (navsyncd --hooks FILE, docs/backend.md)")).json(id: nil))
                }
                return .json(200, backend.status)
            }
        case .flows:
            if let refusal = authorize(request, needs: .viewer).refusal { return refusal }
            return only("GET") {
                .json(200, ["flows": .array(hub.flowNames.map { .string($0) })])
            }
        case .flow(let name):
            if let refusal = authorize(request, needs: .viewer).refusal { return refusal }
            return only("GET") {
                switch hub.flowDocument(name) {
                case .success(let doc): return .json(200, doc)
                case .failure(let e): return .json(404, ServerMessage.error(e).json(id: nil))
                }
            }
        case .session(let name) where request.method == "DELETE":
            guard originAllowed(request, on: connection) else {
                return Self.error(NavError(.forbidden, "origin \(request.header("Origin") ?? "") may not delete sessions here"))
            }
            if let refusal = authorize(request, needs: .admin, session: name).refusal { return refusal }
            handle(.httpDelete(connection: connection.id, request: request, session: name), on: connection.server)
            return nil
        case .session(let name):
            if let refusal = authorize(request, needs: .viewer, session: name).refusal { return refusal }
            return only("GET", also: ["DELETE"]) {
                guard hub.hasSession(name) else { return Self.error(NavError(.unknownSession, "no session '\(name)'")) }
                if let text = request.query("rev") {
                    // A revision history holds (docs/protocol.md, "History"): the snapshot message, historic when past.
                    guard let rev = Int(text), rev >= 0 else { return Self.error(NavError(.badRequest, "'rev' must be a revision (an integer >= 0), got '\(text)'")) }
                    switch hub.revision(rev, of: name) {
                    case .success(let message): return .json(200, message.json())
                    case .failure(let e): return Self.error(e)
                    }
                }
                switch hub.sessionDocument(name) {
                case .success(let document): return .json(200, document)
                case .failure(let e): return Self.error(e)
                }
            }
        case .log(let name):
            if let refusal = authorize(request, needs: .viewer, session: name).refusal { return refusal }
            return only("GET") {
                var from: Int?
                if let text = request.query("from") {
                    guard let f = Int(text), f >= 0 else { return Self.error(NavError(.badRequest, "'from' must be a revision (an integer >= 0), got '\(text)'")) }
                    from = f
                }
                switch hub.recording(of: name, from: from) {
                case .failure(let e): return Self.error(e)
                case .success(let lines):
                    var body: [UInt8] = []
                    for line in lines { line.write(into: &body); body.append(0x0A) }
                    return HTTPResponse(status: 200, headers: [("Content-Type", "application/x-ndjson"),
                                                               ("Content-Disposition", "attachment; filename=\"\(name).navsync-log\"")], body: body)
                }
            }
        case .history(let name):
            if let refusal = authorize(request, needs: .viewer, session: name).refusal { return refusal }
            return only("GET") {
                guard hub.hasSession(name) else { return Self.error(NavError(.unknownSession, "no session '\(name)'")) }
                var before: Int?
                if let text = request.query("before") {
                    guard let b = Int(text) else { return Self.error(NavError(.badRequest, "'before' must be a revision, got '\(text)'")) }
                    before = b
                }
                let limitText = request.query("limit") ?? "100"
                guard let limit = Int(limitText), (1...1_000).contains(limit) else {
                    return Self.error(NavError(.badRequest, "'limit' must be 1 to 1000, got '\(limitText)'"))
                }
                switch hub.historyPage(name, before: before, limit: limit) {
                case .success(let page): return .json(200, page.json())
                case .failure(let e): return Self.error(e)
                }
            }
        case .commands(let name):
            return only("POST") {
                guard originAllowed(request, on: connection) else {
                    return Self.error(NavError(.forbidden, "origin \(request.header("Origin") ?? "") may not send commands here"))
                }
                let (grant, refusal) = authorize(request, needs: .controller, session: name)
                if let refusal { return refusal }
                return postCommand(request, session: name, on: connection, role: grant?.role ?? .admin)
            }
        case nil:
            return .json(404, ["type": "error", "code": "not_found", "message": .string("no resource at \(request.path)")])
        }
    }

    /// The HTTP API's resources (docs/protocol.md, "HTTP").
    enum Endpoint {
        case file(WebPage)
        case apiIndex, healthz, readyz, metrics, sessions, flows, cluster, webhooks
        case flow(String)
        case session(String)
        case history(String)
        case log(String)
        case commands(String)

        init?(_ s: [String]) {
            switch s.count {
            case 0: self = .file(.index)
            case 1 where s[0] == "index.html": self = .file(.index)
            case 1 where s[0] == "navsync.js": self = .file(.module)
            case 1 where s[0] == "navsync.d.ts": self = .file(.types)
            case 1 where s[0] == "api": self = .apiIndex
            case 1 where s[0] == "healthz": self = .healthz
            case 1 where s[0] == "readyz": self = .readyz
            case 1 where s[0] == "metrics": self = .metrics
            case 2 where s == ["api", "sessions"]: self = .sessions
            case 2 where s == ["api", "flows"]: self = .flows
            case 2 where s == ["api", "cluster"]: self = .cluster
            case 2 where s == ["api", "webhooks"]: self = .webhooks
            case 3 where s[0] == "api" && s[1] == "sessions": self = .session(s[2])
            case 3 where s[0] == "api" && s[1] == "flows": self = .flow(s[2])
            case 4 where s[0] == "api" && s[1] == "sessions" && s[3] == "commands": self = .commands(s[2])
            case 4 where s[0] == "api" && s[1] == "sessions" && s[3] == "history": self = .history(s[2])
            case 4 where s[0] == "api" && s[1] == "sessions" && s[3] == "log": self = .log(s[2])
            default: return nil
            }
        }
    }

    /// `POST /api/sessions/NAME/commands`: the body is a command object; the answer is
    /// its ack (200) or error, once the hub answers (after the journal, with `--data`).
    ///
    /// Idempotency (docs/protocol.md, "Operations: fine points"): `X-Navsync-Client` names the client identity;
    /// `Idempotency-Key` stands for the body's `id` (the ack still echoes the body's
    /// `id`); a request with neither is a client of its own. A replayed answer carries
    /// `"duplicate": true` and `Idempotent-Replayed: true`; an id reused for another
    /// command is `id_reused`, 409.
    private func postCommand(_ request: HTTPRequest, session: String, on connection: Connection, role: Hub.Role) -> HTTPResponse? {
        let body: JSON
        do { body = try Jansson.parse(request.body) } catch {
            return Self.error(NavError(.badJSON, "the body is not valid JSON: \(error)"))
        }
        guard var object = body.objectValue else {
            return Self.error(NavError(.badRequest, "the body must be a command object, got \(body.typeName)"))
        }
        let client = request.header("X-Navsync-Client")
        if let client, !ClientRequest.isValidClientID(client) {
            return Self.error(NavError(.badRequest, "X-Navsync-Client must be 1-64 letters, digits or -_.: characters"))
        }
        var echo: JSON?
        if let key = request.header("Idempotency-Key") {
            guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else {
                return Self.error(NavError(.badRequest, "Idempotency-Key must be 1-255 printable characters without spaces"))
            }
            echo = object["id"] ?? .string(key)
            object["id"] = .string(key)
        }
        handle(.httpCommand(.init(connection: connection.id, request: request, session: session, command: object,
                                  client: client ?? (echo != nil ? "http" : nil), role: role, echoID: echo)), on: connection.server)
        return nil
    }

    /// The origins of the cluster's nodes' pages (`http://HOST:PORT` of each node's URL).
    var clusterOrigins: [String] {
        cluster?.nodes.values.compactMap { n in
            guard n.url.hasPrefix("ws://"), let end = n.url.dropFirst(5).firstIndex(of: "/") else { return nil }
            return "http://" + n.url[n.url.index(n.url.startIndex, offsetBy: 5)..<end]
        } ?? []
    }

    /// `GET /api/cluster`: this node, Redis, and the nodes Redis lists; a node whose
    /// heartbeat is older than 5 s is `down` (its members are no longer counted).
    func clusterListing(_ cluster: ClusterStore) -> JSON {
        let now = unixMilliseconds()
        let nodes: [JSON] = cluster.nodes.keys.sorted().map { name in
            let n = cluster.nodes[name]!
            return ["node": .string(name), "url": .string(n.url), "seen": .int(n.seen), "up": .bool(now - n.seen <= 5_000)]
        }
        let replicas: [JSON] = cluster.replication.replicas.map { r in
            .object(JSONObject(r.keys.sorted().map { k in (k, Int64(r[k]!).map(JSON.int) ?? .string(r[k]!)) }))
        }
        var redis: JSONObject = ["url": .string(cluster.url.description), "primary": .string(cluster.primary),
                                 "link": .string(cluster.connected ? "up" : "down"), "role": .string(cluster.replication.role),
                                 "replicas": .array(replicas), "wait": .int(Int64(cluster.waitReplicas))]
        if let why = cluster.notReady { redis["problem"] = .string(why) }
        return ["node": .string(cluster.node), "redis": .object(redis), "connected": .bool(cluster.connected),
                "ready": .bool(cluster.notReady == nil), "nodes": .array(nodes)]
    }

    static func error(_ e: NavError, id: JSON? = nil) -> HTTPResponse {
        .json(e.code.httpStatus, ServerMessage.error(e).json(id: id))
    }

    static func index(_ server: Server) -> String {
        """
        navsyncd: one live navigation state per session, shared over WebSocket.

        WebSocket   \(server.webSocketURL)   (protocol navsync.v1)
        GET  /                              the web device page (?session=NAME, &flow=NAME to create)
        GET  /navsync.js                    the browser client module (docs/javascript.md)
        GET  /navsync.d.ts                  its TypeScript declarations
        GET  /api                           this list
        GET  /healthz                       liveness: the process serves
        GET  /readyz                        readiness: 200, or 503 with the reason (a cluster node whose Redis is away)
        GET  /metrics                       Prometheus metrics
        GET  /api/sessions                  sessions, as JSON
        GET  /api/flows                     the names of the flows sessions may be created with
        GET  /api/flows/NAME                one flow: its coordinators, links and guards
        GET  /api/cluster                   with --cluster: this node, Redis (link, role, replicas), every node with its heartbeat
        GET  /api/webhooks                  with --hooks (admin): each webhook endpoint's delivered, pending, oldest pending, failures, last error
        GET  /api/sessions/NAME             one session's state, as JSON (?rev=R: a revision history holds)
        GET  /api/sessions/NAME/history     its history, newest first (?before=R&limit=N)
        GET  /api/sessions/NAME/log         a recording (NDJSON) from the oldest held revision (?from=R)
        DELETE /api/sessions/NAME           delete a session (admin); its members are told
        POST /api/sessions/NAME/commands    body: a command object; answer: its ack or error

        """
    }
}
