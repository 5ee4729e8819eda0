/// Messages a client sends (docs/protocol.md, "Client messages"), decoded from one text frame.
public enum ClientMessage: Sendable, Equatable {
    case hello(Hello)
    case join(Join)
    case leave(session: String)
    /// The command object is kept as sent: the sequencer reads its id first, so a
    /// duplicate is recognised before anything else is validated.
    case command(session: String, command: JSONObject)
    case sync(session: String, since: Int, epoch: String)
    case status(session: String, rev: Int, focus: String?)
    case get(session: String)
    /// `get` with `rev`: the state of a revision history holds (docs/protocol.md, "History").
    case getRevision(session: String, rev: Int)
    /// A page of history, newest first, below `before`.
    case history(session: String, before: Int?, limit: Int)
    /// Deletes a session (admin): its members are told (`deleted`) and leave it.
    case delete(session: String)
    case sessions
    case ping
    /// A fresh token for the live connection (a JWT about to expire): it replaces the
    /// one in force, which stays if this one is refused. It may not raise the role.
    case auth(token: String)

    public struct Hello: Sendable, Equatable {
        public var name: String?
        public var role: String?
        public var token: String?
        /// A client id from an earlier `welcome`, to resume that identity.
        public var client: String?
    }

    public struct Join: Sendable, Equatable {
        public var session: String
        public var since: Int?
        public var epoch: String?
        public var create: Bool
        public var flow: String?
    }

    public var type: String {
        switch self {
        case .hello: return "hello"
        case .join: return "join"
        case .leave: return "leave"
        case .command: return "command"
        case .sync: return "sync"
        case .status: return "status"
        case .get, .getRevision: return "get"
        case .history: return "history"
        case .delete: return "delete"
        case .sessions: return "sessions"
        case .ping: return "ping"
        case .auth: return "auth"
        }
    }

    /// The session a join, sync or get reads (cluster mode brings it up to date first).
    package var readSession: String? {
        switch self {
        case .join(let j): j.session
        case .sync(let s, _, _), .get(let s): s
        default: nil
        }
    }
}

/// One decoded request: its `id` (echoed in the reply) and the message or why not.
public struct ClientRequest: Sendable {
    /// A string or a number; anything else is dropped (and reported).
    public var id: JSON?
    public var message: Result<ClientMessage, NavError>

    /// Session names: 1–128 bytes of letters, digits and `-_.:`; keeps names safe in
    /// URLs, file names and logs.
    public static func isValidSessionName(_ s: String) -> Bool { isValidName(s, maxBytes: 128) }

    /// Client identities: the same characters, 1–64 bytes.
    public static func isValidClientID(_ s: String) -> Bool { isValidName(s, maxBytes: 64) }

    static func isValidName(_ s: String, maxBytes: Int) -> Bool {
        !s.isEmpty && s.utf8.count <= maxBytes && s.utf8.allSatisfy { b in
            (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 45 || b == 95 || b == 46 || b == 58
        }
    }

    /// Decodes one text message. Never throws: a bad message becomes a `bad_json` or
    /// `bad_request` error that says what is wrong, with the request id when it has one.
    public init(bytes: [UInt8]) {
        self.init(parsed: Result { () throws(JSONParseError) -> JSON in try JSON.parse(bytes) })
    }

    /// Decodes a message some parser read (the server's is jansson): a parse error is
    /// `bad_json` with where and why.
    public init(parsed: Result<JSON, JSONParseError>) {
        switch parsed {
        case .success(let json): self.init(json: json)
        case .failure(let error): self.init(id: nil, message: .failure(NavError(.badJSON, "not valid JSON: \(error)")))
        }
    }

    public init(json: JSON) {
        guard let o = json.objectValue else {
            self.init(id: nil, message: .failure(NavError(.badRequest, "a message must be a JSON object, got \(json.typeName)")))
            return
        }
        var id: JSON?
        switch o["id"] {
        case .string?, .int?, .double?: id = o["id"]
        default: id = nil
        }
        do throws(NavError) {
            if let bad = o["id"], id == nil, !bad.isNull {
                throw NavError(.badRequest, "'id' must be a string or a number, got \(bad.typeName)")
            }
            self.init(id: id, message: .success(try Self.decode(o)))
        } catch {
            self.init(id: id, message: .failure(error))
        }
    }

    public init(id: JSON?, message: Result<ClientMessage, NavError>) {
        self.id = id
        self.message = message
    }

    private static func decode(_ o: JSONObject) throws(NavError) -> ClientMessage {
        let f = Fields(object: o, code: .badRequest)
        let type = try f.string("type")
        switch type {
        case "hello":
            return .hello(.init(name: try f.optionalString("name"), role: try f.optionalString("role"),
                                token: try f.optionalString("token"), client: try f.optionalString("client")))
        case "join":
            let since = try f.optionalInt("since")
            if let since, since < 0 { throw NavError(.badRequest, "'since' must be a revision >= 0") }
            return .join(.init(session: try f.session(), since: since, epoch: try f.optionalString("epoch"),
                               create: try f.optionalBool("create") ?? false, flow: try f.optionalString("flow")))
        case "leave": return .leave(session: try f.session())
        case "command":
            // The command's own fields (id, ops, base, onConflict) are the sequencer's to check.
            guard o["id"] != nil else { throw NavError(.badRequest, "missing field 'id' (a string or an integer)") }
            return .command(session: try f.session(), command: o)
        case "sync":
            let since = try f.int("since")
            guard since >= 0 else { throw NavError(.badRequest, "'since' must be a revision >= 0") }
            return .sync(session: try f.session(), since: since, epoch: try f.string("epoch"))
        case "status":
            let rev = try f.int("rev")
            guard rev >= 0 else { throw NavError(.badRequest, "'rev' must be a revision >= 0") }
            return .status(session: try f.session(), rev: rev, focus: try f.optionalString("focus"))
        case "get":
            let session = try f.session()
            guard let rev = try f.optionalInt("rev") else { return .get(session: session) }
            guard rev >= 0 else { throw NavError(.badRequest, "'rev' must be a revision >= 0") }
            return .getRevision(session: session, rev: rev)
        case "history":
            let before = try f.optionalInt("before")
            let limit = try f.optionalInt("limit") ?? 100
            guard (1...1_000).contains(limit) else { throw NavError(.badRequest, "'limit' must be 1 to 1000, got \(limit)") }
            return .history(session: try f.session(), before: before, limit: limit)
        case "delete": return .delete(session: try f.session())
        case "sessions": return .sessions
        case "ping": return .ping
        case "auth": return .auth(token: try f.string("token"))
        default: throw NavError(.badRequest, "unknown message type '\(type)'")
        }
    }

    /// The message as a client sends it. A `command`'s `id` is its command id (the
    /// idempotency key, echoed by its `ack`), which takes the place of `id`.
    public static func encode(_ message: ClientMessage, id: JSON? = nil) -> JSON {
        var o: JSONObject = ["type": .string(message.type)]
        if let id { o["id"] = id }
        func put(_ key: String, _ value: JSON?) { if let value { o[key] = value } }
        switch message {
        case .hello(let h):
            put("name", h.name.map(JSON.string)); put("role", h.role.map(JSON.string))
            put("token", h.token.map(JSON.string)); put("client", h.client.map(JSON.string))
        case .join(let j):
            o["session"] = .string(j.session)
            put("since", j.since.map { .int(Int64($0)) }); put("epoch", j.epoch.map(JSON.string))
            if j.create { o["create"] = true }
            put("flow", j.flow.map(JSON.string))
        case .leave(let s), .get(let s), .delete(let s): o["session"] = .string(s)
        case .command(let s, let command):
            for (k, v) in command where k != "type" { o[k] = v }
            o["session"] = .string(s)
        case .sync(let s, let since, let epoch):
            o["session"] = .string(s); o["since"] = .int(Int64(since)); o["epoch"] = .string(epoch)
        case .getRevision(let s, let rev):
            o["session"] = .string(s); o["rev"] = .int(Int64(rev))
        case .history(let s, let before, let limit):
            o["session"] = .string(s); put("before", before.map { .int(Int64($0)) }); o["limit"] = .int(Int64(limit))
        case .status(let s, let rev, let focus):
            o["session"] = .string(s); o["rev"] = .int(Int64(rev)); put("focus", focus.map(JSON.string))
        case .auth(let token): o["token"] = .string(token)
        case .sessions, .ping: break
        }
        return .object(o)
    }
}

extension Fields {
    func session() throws(NavError) -> String {
        let s = try string("session")
        guard ClientRequest.isValidSessionName(s) else {
            throw NavError(.badRequest, "'session' must be 1-128 letters, digits or -_.: characters")
        }
        return s
    }
}
