import NavSync

/// The HTTP API (docs/protocol.md, "HTTP") and the upgrade's admission, decided as values:
/// a request, a read-only view of the hub, what the server is (`Site`) and the instant
/// in; an answer out. The routes, their methods, the origin check and the role each
/// needs are here; the runtime only carries the answer out (a response as it is, or the
/// parts only it has: the embedded files, metrics, the cluster's and the webhooks'
/// state, a command or a delete for the hub).
public struct HTTPAPI: Sendable {
    /// What the server is, as the API answers it.
    public struct Site: Sendable {
        /// The WebSocket address, for `GET /api`.
        public var webSocketURL: String
        /// Origins allowed besides the server's own (`--allow-origin`, the cluster's pages).
        public var allowedOrigins: [String]
        public var host: String
        public var port: Int
        /// This machine's interface addresses (a page loaded from one of them is the server's own).
        public var localAddresses: Set<String>
        /// `https` when the server speaks TLS itself.
        public var scheme: String
        /// In a cluster: this node's name, and why it cannot acknowledge now (nil: ready).
        public var clusterNode: String?
        public var notReady: String?
        /// With `--hooks`: `/api/webhooks` has something to say.
        public var hasBackend: Bool

        public init(webSocketURL: String, allowedOrigins: [String] = [], host: String, port: Int, localAddresses: Set<String> = [],
                    scheme: String = "http", clusterNode: String? = nil, notReady: String? = nil, hasBackend: Bool = false) {
            self.webSocketURL = webSocketURL; self.allowedOrigins = allowedOrigins; self.host = host; self.port = port
            self.localAddresses = localAddresses; self.scheme = scheme; self.clusterNode = clusterNode
            self.notReady = notReady; self.hasBackend = hasBackend
        }
    }

    /// One request as the API sees it: the request, the connection it came on, what a
    /// trusted proxy said of the client, and what the runtime's keys made of a JWT in it.
    public struct Asked: Sendable {
        public var request: HTTPRequest
        public var connection: Int
        public var forwarded: ProxyTrust.Client?
        public var verified: JWTVerification?
        /// Ms since the Unix epoch: a JWT's `exp` and `nbf` are judged against it.
        public var wallMS: Int64

        public init(_ request: HTTPRequest, connection: Int, forwarded: ProxyTrust.Client? = nil, verified: JWTVerification? = nil, wallMS: Int64) {
            self.request = request; self.connection = connection; self.forwarded = forwarded
            self.verified = verified; self.wallMS = wallMS
        }
    }

    /// The files navsyncd serves from its binary.
    public enum Page: Sendable, Equatable { case index, module, types }

    /// What to do with a request.
    public enum Answer: Sendable {
        case response(HTTPResponse)
        /// The runtime's parts: an embedded file (or 304), `/metrics`, `/api/cluster`,
        /// `/api/webhooks`: each allowed already.
        case page(Page)
        case metrics
        case clusterListing
        case webhookStatus
        /// For the hub: a command (`Hub.Event.httpCommand`), a delete (`.httpDelete`).
        case command(Hub.HTTPCommand)
        case delete(session: String)
    }

    public let site: Site

    public init(site: Site) { self.site = site }

    // MARK: Admission

    /// The upgrade: the origin must be allowed (403) and a token, when shown, valid (401).
    /// A connection without a token is admitted but may only `hello` and `ping`. The
    /// grant is the token's, nil for none.
    public enum Admission: Sendable {
        case admitted(AccessPolicy.Grant?)
        case refused(HTTPResponse)
    }

    public func admit(_ asked: Asked, hub: Hub) -> Admission {
        let request = asked.request
        guard originAllowed(asked) else {
            return .refused(.text(403, "origin \(request.header("Origin") ?? "") is not allowed here (navsyncd --allow-origin)\n"))
        }
        guard let token = AccessPolicy.token(of: request), let checked = hub.checkToken(token, verified: asked.verified, now: asked.wallMS) else {
            return .admitted(nil)
        }
        switch checked {
        case .failure(let refusal):
            var r = HTTPResponse.text(401, "\(refusal)\n")
            r.headers.append(("WWW-Authenticate", "Bearer"))
            return .refused(r)
        case .success(let grant):
            return .admitted(grant)
        }
    }

    /// Browsers are checked by `Origin` (docs/protocol.md, "Who may do what (--auth FILE)", `OriginPolicy`).
    public func originAllowed(_ asked: Asked) -> Bool {
        var listed = site.allowedOrigins
        // Behind a trusted proxy, the public origin the client asked for is the server's
        // own (`https://nav.example`).
        if let f = asked.forwarded, let host = f.host ?? asked.request.header("Host") {
            listed.append("\(f.scheme ?? "http")://\(host)")
        }
        return OriginPolicy(listed: listed, host: site.host, port: site.port, localAddresses: site.localAddresses, scheme: site.scheme)
            .allows(origin: asked.request.header("Origin"), host: asked.request.header("Host"))
    }

    /// The API's token check: without a valid token 401, with too little 403.
    func authorize(_ asked: Asked, hub: Hub, needs role: Hub.Role, session: String? = nil) -> (grant: AccessPolicy.Grant?, refusal: HTTPResponse?) {
        guard hub.checksTokens else { return (nil, nil) }
        let checked = AccessPolicy.token(of: asked.request).flatMap { hub.checkToken($0, verified: asked.verified, now: asked.wallMS) }
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

    // MARK: Routes

    public func answer(_ asked: Asked, hub: Hub) -> Answer {
        let request = asked.request
        let isRead = request.method == "GET" || request.method == "HEAD"
        /// The answer for the allowed method (GET includes HEAD); 405 with `Allow` else.
        /// `also` lists other methods the resource takes (handled before).
        func only(_ allowed: String, also: [String] = [], _ body: () -> Answer) -> Answer {
            let ok = allowed == "GET" ? isRead : request.method == allowed
            guard ok else {
                var r = HTTPResponse.text(405, "use \(([allowed] + also).joined(separator: " or ")) for \(request.path)\n")
                r.headers.append(("Allow", ((allowed == "GET" ? ["GET", "HEAD"] : [allowed]) + also).joined(separator: ", ")))
                return .response(r)
            }
            return body()
        }
        func refused(_ role: Hub.Role, session: String? = nil) -> Answer? {
            authorize(asked, hub: hub, needs: role, session: session).refusal.map(Answer.response)
        }
        func result(_ r: Result<JSON, NavError>) -> Answer {
            switch r {
            case .success(let json): return .response(.json(200, json))
            case .failure(let e): return .response(Self.error(e))
            }
        }
        switch Endpoint(ParsedURL(request.path)?.segments ?? []) {
        case .page(let page):
            return only("GET") { .page(page) }
        case .apiIndex:
            return only("GET") { .response(.text(200, Self.index(webSocketURL: site.webSocketURL))) }
        case .healthz:
            // Pages of other origins may ask (CORS): navsync.js reads whether its origin
            // would be refused, to tell a forbidden origin from a server that is gone.
            return only("GET") {
                var r = HTTPResponse.text(200, "ok\n")
                r.headers += [("Access-Control-Allow-Origin", "*"), ("Access-Control-Expose-Headers", "X-Navsync-Origin, X-Navsync-Cluster")]
                // In a cluster: the node's name (the page then asks /api/cluster for the others).
                if let node = site.clusterNode { r.headers.append(("X-Navsync-Cluster", node)) }
                if request.header("Origin") != nil {
                    r.headers.append(("X-Navsync-Origin", originAllowed(asked) ? "allowed" : "refused"))
                }
                return .response(r)
            }
        case .readyz:
            // Whether this node can acknowledge commands now (in a cluster: its store);
            // like /healthz, it needs no token.
            return only("GET") {
                guard let why = site.notReady else { return .response(.json(200, ["ready": true])) }
                return .response(.json(503, ["ready": false, "reason": .string(why)]))
            }
        case .metrics:
            return refused(.viewer) ?? only("GET") { .metrics }
        case .sessions:
            let (grant, refusal) = authorize(asked, hub: hub, needs: .viewer)
            if let refusal { return .response(refusal) }
            return only("GET") {
                .response(.json(200, ["sessions": .array(hub.sessionSummaries.filter { grant?.allows(session: $0.session) ?? true }.map(\.json))]))
            }
        case .cluster:
            return refused(.viewer) ?? only("GET") {
                guard site.clusterNode != nil else {
                    return .response(.json(404, ServerMessage.error(NavError(.notFound, "this navsyncd is not in a cluster (navsyncd --cluster redis://HOST:PORT)")).json(id: nil)))
                }
                return .clusterListing
            }
        case .webhooks:
            return refused(.admin) ?? only("GET") {
                guard site.hasBackend else {
                    return .response(.json(404, ServerMessage.error(NavError(.notFound, "this navsyncd has no hooks file (navsyncd --hooks FILE, docs/backend.md)")).json(id: nil)))
                }
                return .webhookStatus
            }
        case .flows:
            return refused(.viewer) ?? only("GET") { .response(.json(200, ["flows": .array(hub.flowNames.map { .string($0) })])) }
        case .flow(let name):
            return refused(.viewer) ?? only("GET") {
                switch hub.flowDocument(name) {
                case .success(let doc): return .response(.json(200, doc))
                case .failure(let e): return .response(.json(404, ServerMessage.error(e).json(id: nil)))
                }
            }
        case .session(let name) where request.method == "DELETE":
            guard originAllowed(asked) else {
                return .response(Self.error(NavError(.forbidden, "origin \(request.header("Origin") ?? "") may not delete sessions here")))
            }
            return refused(.admin, session: name) ?? .delete(session: name)
        case .session(let name):
            return refused(.viewer, session: name) ?? only("GET", also: ["DELETE"]) {
                guard hub.hasSession(name) else { return .response(Self.error(NavError(.unknownSession, "no session '\(name)'"))) }
                if let text = request.query("rev") {
                    // A revision history holds (docs/protocol.md, "History"): the snapshot message, historic when past.
                    guard let rev = Int(text), rev >= 0 else {
                        return .response(Self.error(NavError(.badRequest, "'rev' must be a revision (an integer >= 0), got '\(text)'")))
                    }
                    return result(hub.revision(rev, of: name).map { $0.json() })
                }
                return result(hub.sessionDocument(name))
            }
        case .log(let name):
            return refused(.viewer, session: name) ?? only("GET") {
                var from: Int?
                if let text = request.query("from") {
                    guard let f = Int(text), f >= 0 else {
                        return .response(Self.error(NavError(.badRequest, "'from' must be a revision (an integer >= 0), got '\(text)'")))
                    }
                    from = f
                }
                switch hub.recording(of: name, from: from) {
                case .failure(let e): return .response(Self.error(e))
                case .success(let lines):
                    var body: [UInt8] = []
                    for line in lines { line.write(into: &body); body.append(0x0A) }
                    return .response(HTTPResponse(status: 200, headers: [("Content-Type", "application/x-ndjson"),
                                                                         ("Content-Disposition", "attachment; filename=\"\(name).navsync-log\"")], body: body))
                }
            }
        case .history(let name):
            return refused(.viewer, session: name) ?? only("GET") {
                guard hub.hasSession(name) else { return .response(Self.error(NavError(.unknownSession, "no session '\(name)'"))) }
                var before: Int?
                if let text = request.query("before") {
                    guard let b = Int(text) else { return .response(Self.error(NavError(.badRequest, "'before' must be a revision, got '\(text)'"))) }
                    before = b
                }
                let limitText = request.query("limit") ?? "100"
                guard let limit = Int(limitText), (1...1_000).contains(limit) else {
                    return .response(Self.error(NavError(.badRequest, "'limit' must be 1 to 1000, got '\(limitText)'")))
                }
                return result(hub.historyPage(name, before: before, limit: limit).map { $0.json() })
            }
        case .commands(let name):
            return only("POST") {
                guard originAllowed(asked) else {
                    return .response(Self.error(NavError(.forbidden, "origin \(request.header("Origin") ?? "") may not send commands here")))
                }
                let (grant, refusal) = authorize(asked, hub: hub, needs: .controller, session: name)
                if let refusal { return .response(refusal) }
                return command(asked, session: name, role: grant?.role ?? .admin)
            }
        case nil:
            return .response(.json(404, ["type": "error", "code": "not_found", "message": .string("no resource at \(request.path)")]))
        }
    }

    /// The API's resources (docs/protocol.md, "HTTP").
    enum Endpoint {
        case page(Page)
        case apiIndex, healthz, readyz, metrics, sessions, flows, cluster, webhooks
        case flow(String)
        case session(String)
        case history(String)
        case log(String)
        case commands(String)

        init?(_ s: [String]) {
            switch s.count {
            case 0: self = .page(.index)
            case 1 where s[0] == "index.html": self = .page(.index)
            case 1 where s[0] == "navsync.js": self = .page(.module)
            case 1 where s[0] == "navsync.d.ts": self = .page(.types)
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
    func command(_ asked: Asked, session: String, role: Hub.Role) -> Answer {
        let request = asked.request
        let body: JSON
        do { body = try JSON.parse(request.body) } catch {
            return .response(Self.error(NavError(.badJSON, "the body is not valid JSON: \(error)")))
        }
        guard var object = body.objectValue else {
            return .response(Self.error(NavError(.badRequest, "the body must be a command object, got \(body.typeName)")))
        }
        let client = request.header("X-Navsync-Client")
        if let client, !ClientRequest.isValidClientID(client) {
            return .response(Self.error(NavError(.badRequest, "X-Navsync-Client must be 1-64 letters, digits or -_.: characters")))
        }
        var echo: JSON?
        if let key = request.header("Idempotency-Key") {
            guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else {
                return .response(Self.error(NavError(.badRequest, "Idempotency-Key must be 1-255 printable characters without spaces")))
            }
            echo = object["id"] ?? .string(key)
            object["id"] = .string(key)
        }
        return .command(.init(connection: asked.connection, request: request, session: session, command: object,
                              client: client ?? (echo != nil ? "http" : nil), role: role, echoID: echo))
    }

    public static func error(_ e: NavError, id: JSON? = nil) -> HTTPResponse {
        .json(e.code.httpStatus, ServerMessage.error(e).json(id: id))
    }

    static func index(webSocketURL: String) -> String {
        """
        navsyncd: one live navigation state per session, shared over WebSocket.

        WebSocket   \(webSocketURL)   (protocol navsync.v1)
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
