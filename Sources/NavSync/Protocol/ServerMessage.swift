/// Messages the server sends (docs/protocol.md, "Client messages"), as values; `json(id:)` gives the
/// wire object. A broadcast `patch` is encoded once and its bytes shared.
public enum ServerMessage: Sendable, Equatable {
    case welcome(Welcome)
    case joined(Joined)
    case left(session: String)
    case patch(session: String, Patch)
    case ack(session: String, Ack)
    case error(NavError)
    case synced(session: String, rev: Int)
    case snapshot(session: String, rev: Int, state: JSON)
    /// The state of a past revision (`get` with `rev`): a `snapshot` with `historic`.
    case historic(session: String, rev: Int, state: JSON)
    /// A page of history (docs/protocol.md, "History"): the current revision, the oldest held, and
    /// entries newest first.
    case history(session: String, rev: Int, earliest: Int, entries: [HistoryEntry])
    case sessions([SessionSummary])
    case pong
    case presence(session: String, Presence)
    /// The session is gone (an admin deleted it, `by` is the client id): the answer to
    /// `delete`, and what its members are told as they are made to leave it.
    case deleted(session: String, by: String)
    /// The answer to `auth`: the role the connection now has, and until when its token
    /// holds (`exp`, seconds since the epoch; nil for a token of the auth file).
    case auth(role: String, expires: Int64?)

    public struct Welcome: Sendable, Equatable {
        public var client: String
        public var server: String
        /// Seconds between the server's pings of an idle connection.
        public var heartbeat: Int
        public var limits: ProtocolLimits
        public init(client: String, server: String, heartbeat: Int, limits: ProtocolLimits) {
            self.client = client; self.server = server; self.heartbeat = heartbeat; self.limits = limits
        }
    }

    public struct Joined: Sendable, Equatable {
        public var session: String
        public var epoch: String
        public var rev: Int
        public var flow: JSON
        /// The members listed one by one, the joiner among them.
        public var members: [Member] {
            get { unlisted.map { listed + [$0] } ?? listed }
            set { listed = newValue; unlisted = nil }
        }
        /// `members` as the session keeps them (a list shared by a join storm, not
        /// copied per join), and the joiner when it is not among them.
        private var listed: [Member]
        private var unlisted: Member?
        /// Members not listed in `members` (past `presenceDetail`); nil when all are.
        public var others: Int?
        /// Either the whole state, or the patches since the joiner's `since`.
        public var catchUp: CatchUp
        /// `flow` and `members` already encoded (by the session, once for many joins);
        /// `bytes(id:)` splices them in. Not part of what the message means.
        public var encoded: Encoded?
        public init(session: String, epoch: String, rev: Int, flow: JSON, members: [Member], others: Int? = nil, catchUp: CatchUp) {
            self.session = session; self.epoch = epoch; self.rev = rev; self.flow = flow
            self.listed = members; self.others = others; self.catchUp = catchUp
        }

        package init(session: String, epoch: String, rev: Int, flow: JSON, listed: [Member], unlisted: Member?, others: Int?, catchUp: CatchUp) {
            self.init(session: session, epoch: epoch, rev: rev, flow: flow, members: listed, others: others, catchUp: catchUp)
            self.unlisted = unlisted
        }

        public struct Encoded: Sendable {
            public var flow: [UInt8]
            /// The listed members as a JSON array (shared by many joins) ...
            public var members: [UInt8]
            /// ... and the joiner when it is not among them, written after them.
            public var joiner: [UInt8]?
            /// The state when `catchUp` is the state (encoded once per revision).
            public var state: [UInt8]?

            public init(flow: [UInt8], members: [UInt8], joiner: [UInt8]? = nil, state: [UInt8]? = nil) {
                self.flow = flow; self.members = members; self.joiner = joiner; self.state = state
            }
        }

        public static func == (a: Joined, b: Joined) -> Bool {
            a.session == b.session && a.epoch == b.epoch && a.rev == b.rev && a.flow == b.flow && a.members == b.members
                && a.others == b.others && a.catchUp == b.catchUp
        }

        // A `joined` with encoded parts and the state as its catch-up is written in five
        // pieces: the head, the flow with `afterFlow`, the listing without its `]`, the
        // middle, and the state with `afterState`. The second, third and fifth are the
        // same for every join of the session at one revision, so the server frames them
        // once and queues them by reference (`JoinedFrames`); `write(id:into:)` writes
        // all five into one buffer.

        /// `{"type":"joined",…,"flow":`
        package func writeHead(id: JSON?, into out: inout ByteWriter) {
            out.append(ascii: #"{"type":"joined""#)
            if let id { out.append(ascii: #","id":"#); id.write(into: &out) }
            out.append(ascii: #","session":"#); JSON.writeString(session, into: &out)
            out.append(ascii: #","epoch":"#); JSON.writeString(epoch, into: &out)
            out.append(ascii: #","rev":"#); out.append(decimal: rev)
            out.append(ascii: #","flow":"#)
        }

        package static let afterFlow: StaticString = #","members":"#

        /// The joiner when it is not listed, the listing's `]`, `others`, `,"state":`,
        /// and the state and `}` themselves when they are not encoded.
        package func writeMiddle(_ e: Encoded, state: JSON, into out: inout ByteWriter) {
            if let joiner = e.joiner {
                if e.members.count > 2 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: joiner)
            }
            out.append(UInt8(ascii: "]"))
            if let others { out.append(ascii: #","others":"#); out.append(decimal: others) }
            out.append(ascii: #","state":"#)
            if e.state == nil {
                state.write(into: &out)
                out.append(ascii: Joined.afterState)
            }
        }

        package static let afterState: StaticString = "}"
    }

    /// The wire bytes: `json(id:).encoded()`, except that a `patch` is written
    /// straight from its ops (every command's broadcast: no object tree built to be
    /// walked once), and a `joined` with encoded parts is written around them (a join
    /// storm must not encode the flow and the member list once per join). Same bytes
    /// either way.
    public func bytes(id: JSON? = nil) -> [UInt8] {
        ByteWriter.bytes(capacity: sizeHint) { write(id: id, into: &$0) }
    }

    /// About how many bytes the message takes when that is known up front (a joined
    /// message's encoded parts), else 0: the room a writer starts with.
    package var sizeHint: Int {
        guard case .joined(let j) = self, let e = j.encoded else { return 0 }
        return e.flow.count + e.members.count + (e.joiner?.count ?? 0) + (e.state?.count ?? 1024) + 128
    }

    /// Writes the wire bytes (`bytes(id:)`) into `out`: the server writes them straight
    /// into the frame a member is sent (`OutgoingBuffer(text:)`).
    package func write(id: JSON?, into out: inout ByteWriter) {
        if case .patch(let session, let patch) = self, id == nil { return Self.write(session: session, patch, into: &out) }
        if case .ack(let session, let ack) = self { return Self.write(session: session, ack, into: &out) }
        guard case .joined(let j) = self, let e = j.encoded, case .state(let state) = j.catchUp else {
            return json(id: id).write(into: &out)
        }
        j.writeHead(id: id, into: &out)
        out.append(contentsOf: e.flow)
        out.append(ascii: Joined.afterFlow)
        out.append(contentsOf: e.members.dropLast())
        j.writeMiddle(e, state: state, into: &out)
        if let bytes = e.state {
            out.append(contentsOf: bytes)
            out.append(ascii: Joined.afterState)
        }
    }

    /// A `patch` message, in the key order of `json(id:)`.
    private static func write(session: String, _ patch: Patch, into out: inout ByteWriter) {
        out.append(ascii: #"{"type":"patch","session":"#)
        JSON.writeString(session, into: &out)
        out.append(ascii: #","rev":"#)
        out.append(decimal: patch.rev)
        out.append(ascii: #","base":"#)
        out.append(decimal: patch.base)
        out.append(ascii: #","by":"#)
        JSON.writeString(patch.by, into: &out)
        out.append(ascii: #","cmd":"#)
        patch.cmd.write(into: &out)
        out.append(ascii: #","ops":["#)
        patch.operations.write(into: &out)
        out.append(ascii: "]}")
    }

    /// An `ack` message, in the key order of `json(id:)` (whose `id` is the command's).
    private static func write(session: String, _ ack: Ack, into out: inout ByteWriter) {
        out.append(ascii: #"{"type":"ack","id":"#)
        ack.id.write(into: &out)
        out.append(ascii: #","session":"#)
        JSON.writeString(session, into: &out)
        out.append(ascii: #","rev":"#)
        out.append(decimal: ack.rev)
        out.append(ascii: #","results":["#)
        for (i, result) in ack.results.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: result.rawValue.utf8)
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "]"))
        if ack.duplicate { out.append(ascii: #","duplicate":true"#) }
        if !ack.redirects.isEmpty {
            out.append(ascii: #","redirects":"#)
            JSON.array(ack.redirects.map(\.json)).write(into: &out)
        }
        if !ack.created.isEmpty {
            out.append(ascii: #","created":["#)
            for (i, id) in ack.created.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                out.append(ascii: "\"e")
                out.append(decimal: id.number)
                out.append(UInt8(ascii: "\""))
            }
            out.append(UInt8(ascii: "]"))
        }
        out.append(UInt8(ascii: "}"))
    }

    public enum CatchUp: Sendable, Equatable {
        case state(JSON)
        case patches([Patch])
    }

    /// What changed in who is there since the last `presence` of the session (
    /// docs/protocol.md, "Server messages, unasked"): gathered per interval, so N joins cost O(N) messages in all. Past
    /// `presenceDetail` members only the listed ones appear; `others` counts the rest.
    public struct Presence: Sendable, Equatable {
        public var joined: [Member]
        public var left: [String]
        public var status: [Status]
        /// Members not listed one by one (nil when every member is listed).
        public var others: Int?

        public struct Status: Sendable, Equatable {
            public var client: String
            public var rev: Int
            public var focus: String?
            public init(client: String, rev: Int, focus: String?) { self.client = client; self.rev = rev; self.focus = focus }
            public var json: JSON {
                var o: JSONObject = ["client": .string(client), "rev": .int(Int64(rev))]
                if let focus { o["focus"] = .string(focus) }
                return .object(o)
            }
        }

        public init(joined: [Member] = [], left: [String] = [], status: [Status] = [], others: Int? = nil) {
            self.joined = joined; self.left = left; self.status = status; self.others = others
        }

        public var isEmpty: Bool { joined.isEmpty && left.isEmpty && status.isEmpty }
    }

    /// The wire object; `id` is the request's, for replies.
    public func json(id: JSON? = nil) -> JSON {
        var o = JSONObject()
        func type(_ t: String) { o["type"] = .string(t); if let id { o["id"] = id } }
        switch self {
        case .welcome(let w):
            type("welcome")
            o["client"] = .string(w.client); o["server"] = .string(w.server); o["protocol"] = 1
            o["heartbeat"] = .int(Int64(w.heartbeat)); o["limits"] = w.limits.json
        case .joined(let j):
            type("joined")
            o["session"] = .string(j.session); o["epoch"] = .string(j.epoch); o["rev"] = .int(Int64(j.rev))
            o["flow"] = j.flow; o["members"] = .array(j.members.map(\.json))
            if let others = j.others { o["others"] = .int(Int64(others)) }
            switch j.catchUp {
            case .state(let s): o["state"] = s
            case .patches(let ps): o["patches"] = .array(ps.map { ServerMessage.patch(session: j.session, $0).json() })
            }
        case .left(let s):
            type("left"); o["session"] = .string(s)
        case .patch(let s, let p):
            type("patch")
            o["session"] = .string(s); o["rev"] = .int(Int64(p.rev)); o["base"] = .int(Int64(p.base))
            o["by"] = .string(p.by); o["cmd"] = p.cmd.json; o["ops"] = .array(p.ops.map(\.json))
        case .ack(let s, let a):
            type("ack")
            o["id"] = a.id.json
            o["session"] = .string(s); o["rev"] = .int(Int64(a.rev))
            o["results"] = .array(a.results.map { .string($0.rawValue) })
            if a.duplicate { o["duplicate"] = true }
            if !a.redirects.isEmpty { o["redirects"] = .array(a.redirects.map(\.json)) }
            if !a.created.isEmpty { o["created"] = .array(a.created.map { .string($0.description) }) }
        case .error(let e):
            type("error")
            o["code"] = .string(e.code.rawValue); o["message"] = .string(e.message)
            if let op = e.op { o["op"] = .int(Int64(op)) }
            if let rev = e.rev { o["rev"] = .int(Int64(rev)) }
            if let after = e.retryAfter { o["retryAfter"] = .int(Int64(after)) }
            if let details = e.details { o["details"] = details }
            if let g = e.guarded {
                o["guard"] = .string(g.guard); o["route"] = .string(g.route); o["entry"] = .string(g.entry)
                if !g.chain.isEmpty { o["chain"] = .array(g.chain.map(\.json)) }
            }
        case .synced(let s, let rev):
            type("synced"); o["session"] = .string(s); o["rev"] = .int(Int64(rev))
        case .snapshot(let s, let rev, let state):
            type("snapshot"); o["session"] = .string(s); o["rev"] = .int(Int64(rev)); o["state"] = state
        case .historic(let s, let rev, let state):
            type("snapshot"); o["session"] = .string(s); o["rev"] = .int(Int64(rev)); o["state"] = state; o["historic"] = true
        case .history(let s, let rev, let earliest, let entries):
            type("history"); o["session"] = .string(s); o["rev"] = .int(Int64(rev)); o["earliest"] = .int(Int64(earliest))
            o["entries"] = .array(entries.map(\.json))
        case .sessions(let list):
            type("sessions"); o["sessions"] = .array(list.map(\.json))
        case .pong:
            type("pong")
        case .deleted(let s, let by):
            type("deleted"); o["session"] = .string(s); o["by"] = .string(by)
        case .auth(let role, let expires):
            type("auth"); o["role"] = .string(role)
            if let expires { o["expires"] = .int(expires) }
        case .presence(let s, let p):
            type("presence"); o["session"] = .string(s)
            if !p.joined.isEmpty { o["joined"] = .array(p.joined.map(\.json)) }
            if !p.left.isEmpty { o["left"] = .array(p.left.map(JSON.string)) }
            if !p.status.isEmpty { o["status"] = .array(p.status.map(\.json)) }
            if let others = p.others { o["others"] = .int(Int64(others)) }
        }
        return .object(o)
    }
}

/// A session member as presence shows it.
public struct Member: Sendable, Equatable {
    public var client: String
    public var name: String
    public var role: String
    /// The revision the member's device shows, from its last `status`.
    public var rev: Int?
    public var focus: String?
    /// Who the app's backend says this is (its join hook's `user`), beside `name`.
    public var user: String?

    public init(client: String, name: String, role: String, rev: Int? = nil, focus: String? = nil, user: String? = nil) {
        self.client = client; self.name = name; self.role = role; self.rev = rev; self.focus = focus; self.user = user
    }

    public var json: JSON {
        var o: JSONObject = ["client": .string(client), "name": .string(name), "role": .string(role)]
        if let user { o["user"] = .string(user) }
        if let rev { o["rev"] = .int(Int64(rev)) }
        if let focus { o["focus"] = .string(focus) }
        return .object(o)
    }
}

/// One line of the `sessions` list; `members` is a count.
public struct SessionSummary: Sendable, Equatable {
    public var session: String
    public var flow: String
    public var rev: Int
    public var members: Int

    public init(session: String, flow: String, rev: Int, members: Int) {
        self.session = session; self.flow = flow; self.rev = rev; self.members = members
    }

    public var json: JSON {
        ["session": .string(session), "flow": .string(flow), "rev": .int(Int64(rev)), "members": .int(Int64(members))]
    }
}

/// `welcome.limits`.
public struct ProtocolLimits: Sendable, Equatable {
    public var maxMessage: Int
    public var model: ModelLimits

    public init(maxMessage: Int = 1 << 20, model: ModelLimits = ModelLimits()) {
        self.maxMessage = maxMessage
        self.model = model
    }

    public var json: JSON {
        ["maxMessage": .int(Int64(maxMessage)), "maxOps": .int(Int64(model.maxOps)),
         "maxStackDepth": .int(Int64(model.maxStackDepth)), "maxTabs": .int(Int64(model.maxTabs))]
    }
}

extension CommandID {
    /// `json.write(into:)`, without making the JSON value.
    package func write(into out: inout ByteWriter) {
        switch self {
        case .int(let n): out.append(decimal: n)
        case .string(let s): JSON.writeString(s, into: &out)
        }
    }
}
