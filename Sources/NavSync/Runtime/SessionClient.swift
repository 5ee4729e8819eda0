/// A member of one session, kept in sync (DESIGN.md sections 5 and 6): it mirrors the
/// state by applying patches, checks that revisions follow each other and resyncs on
/// a gap, reconnects by itself with capped, jittered backoff, resumes its client
/// identity, rejoins with `since`/`epoch`, and resends commands that were never
/// acknowledged (safe: command ids are idempotency keys).
public final class SessionClient {
    public struct Options {
        public var url = WebSocketURL.default
        public var session = "demo"
        public var name = "navclient"
        public var role: String?
        /// An access token, sent on the upgrade (Authorization: Bearer) and in `hello`.
        public var token: String?
        public var create = false
        public var flow: String?
        /// Reconnect after a lost connection (not after a refusal at the first join).
        public var reconnect = true
        /// First reconnect delay and its cap, in ms; each attempt doubles the delay and
        /// waits a random 50–100% of it, so many clients do not return in lockstep.
        public var backoff: (first: Int64, max: Int64) = (250, 8_000)
        public init() {}
    }

    public enum Event {
        /// The mirrored state changed (a patch, a snapshot, or the first join).
        case state
        /// Someone joined, left, or reported what they show.
        case presence
        /// Connected and joined, or the connection was lost (with why).
        case connection(connected: Bool, reason: String)
        /// The server refused something not tied to a command (join, get…).
        case error(NavError)
    }

    public let options: Options
    public private(set) var state: JSON?
    public private(set) var rev = 0
    public private(set) var epoch: String?
    /// The session's flow as the server sent it.
    public private(set) var flow: Flow?
    public private(set) var members: [Member] = []
    /// This client's identity; kept across reconnects.
    public private(set) var clientID: String?
    public private(set) var isJoined = false
    public var onEvent: ((Event) -> Void)?
    /// Every message from the server, as it came (for `navclient watch --json`).
    public var onMessage: ((JSON) -> Void)?

    unowned let loop: ClientLoop
    private var socket: WebSocketClient?
    private var attempts = 0
    private var stopped = false
    private var everJoined = false
    private var nextCommand: Int64 = 1
    /// Commands sent and not yet answered, in order: resent after a reconnect.
    private var pending: [(id: Int64, json: JSON, done: (Result<Ack, NavError>) -> Void)] = []
    /// Replies to requests other than commands (`get`, `sessions`), by request id.
    private var requests: [String: (JSON) -> Void] = [:]
    private var nextRequest = 1

    public init(loop: ClientLoop, options: Options) {
        self.loop = loop
        self.options = options
    }

    public func start() {
        stopped = false
        connect()
    }

    public func stop() {
        stopped = true
        socket?.close()
    }

    // MARK: Sending

    /// Sends a command of operations; `done` gets its ack or error. Commands queue up
    /// while disconnected and go out (or out again) once joined.
    public func send(_ ops: [JSON], base: Int? = nil, onConflict: ConflictPolicy = .rebase,
                     done: @escaping (Result<Ack, NavError>) -> Void = { _ in }) {
        let id = nextCommand
        nextCommand += 1
        var command: JSONObject = ["type": "command", "session": .string(options.session), "id": .int(id), "ops": .array(ops)]
        if let base { command["base"] = .int(Int64(base)) }
        if onConflict != .rebase { command["onConflict"] = .string(onConflict.rawValue) }
        pending.append((id, .object(command), done))
        if isJoined { socket?.send(text: JSON.object(command).encoded()) }
    }

    public func send(_ operations: [Operation], done: @escaping (Result<Ack, NavError>) -> Void = { _ in }) {
        send(operations.map(\.json), done: done)
    }

    /// Any other request (`sessions`, `get`, `status`…): `reply` gets the answer.
    public func request(_ message: JSONObject, reply: ((JSON) -> Void)? = nil) {
        var m = message
        if let reply {
            let id = "r\(nextRequest)"
            nextRequest += 1
            m["id"] = .string(id)
            requests[id] = reply
        }
        socket?.send(text: JSON.object(m).encoded())
    }

    /// Tells the other members which revision this client shows.
    public func reportStatus(focus: String? = nil) {
        guard isJoined else { return }
        var m: JSONObject = ["type": "status", "session": .string(options.session), "rev": .int(Int64(rev))]
        if let focus { m["focus"] = .string(focus) }
        socket?.send(text: JSON.object(m).encoded())
    }

    public var unacknowledged: Int { pending.count }

    // MARK: Connection

    private func connect() {
        let socket = WebSocketClient(loop: loop, url: options.url, headers: options.token.map { [("Authorization", "Bearer \($0)")] } ?? [])
        self.socket = socket
        socket.onOpen = { [weak self] in self?.opened() }
        socket.onText = { [weak self] bytes in self?.received(bytes) }
        socket.onClose = { [weak self] code, reason in self?.lost(code, reason) }
        socket.connect()
    }

    private func opened() {
        var hello: JSONObject = ["type": "hello", "name": .string(options.name)]
        if let clientID { hello["client"] = .string(clientID) }
        if let role = options.role { hello["role"] = .string(role) }
        if let token = options.token { hello["token"] = .string(token) }
        socket?.send(text: JSON.object(hello).encoded())
        var join: JSONObject = ["type": "join", "session": .string(options.session)]
        if let epoch {
            join["since"] = .int(Int64(rev))
            join["epoch"] = .string(epoch)
        }
        if options.create { join["create"] = true }
        if let flow = options.flow { join["flow"] = .string(flow) }
        socket?.send(text: JSON.object(join).encoded())
    }

    private func lost(_ code: UInt16?, _ reason: String) {
        isJoined = false
        socket = nil
        let why = code.map { "closed (\($0))\(reason.isEmpty ? "" : ": \(reason)")" } ?? reason
        onEvent?(.connection(connected: false, reason: why))
        guard !stopped, options.reconnect else {
            // Done for good: let go of the callbacks, which often capture this client.
            onEvent = nil
            onMessage = nil
            return
        }
        let delay = min(options.backoff.max, options.backoff.first << min(attempts, 16))
        attempts += 1
        let jittered = delay / 2 + Int64.random(in: 0...max(1, delay / 2), using: &loop.random)
        loop.after(jittered) { [weak self] in
            guard let self, !self.stopped else { return }
            self.connect()
        }
    }

    // MARK: Messages

    private func received(_ bytes: [UInt8]) {
        guard let message = try? JSON.parse(bytes), let type = message["type"]?.stringValue else { return }
        onMessage?(message)
        switch type {
        case "welcome":
            clientID = message["client"]?.stringValue
        case "joined":
            joined(message)
        case "patch":
            patch(message, viaSync: false)
        case "snapshot":
            if let id = message["id"]?.stringValue, let reply = requests.removeValue(forKey: id) {
                reply(message)
                if message["session"]?.stringValue != options.session { return }
            }
            guard message["session"]?.stringValue == options.session, let r = message["rev"]?.intValue else { return }
            state = message["state"]
            rev = Int(r)
            onEvent?(.state)
        case "synced":
            break
        case "ack":
            guard let id = message["id"]?.intValue, let i = pending.firstIndex(where: { $0.id == id }) else { return }
            let entry = pending.remove(at: i)
            let results = message["results"]?.arrayValue?.compactMap { $0.stringValue.flatMap(OpResult.init(rawValue:)) } ?? []
            entry.done(.success(Ack(id: .int(id), rev: Int(message["rev"]?.intValue ?? 0), results: results)))
        case "error":
            let error = NavError(ErrorCode(rawValue: message["code"]?.stringValue ?? "") ?? .internal,
                                 message["message"]?.stringValue ?? "", op: message["op"]?.intValue.map(Int.init),
                                 rev: message["rev"]?.intValue.map(Int.init))
            if let id = message["id"]?.intValue, let i = pending.firstIndex(where: { $0.id == id }) {
                pending.remove(at: i).done(.failure(error))
            } else if let id = message["id"]?.stringValue, let reply = requests.removeValue(forKey: id) {
                reply(message)
            } else {
                onEvent?(.error(error))
                if !everJoined && !isJoined { stopped = true; socket?.close() }
            }
        case "presence":
            presence(message)
        default:
            if let id = message["id"]?.stringValue, let reply = requests.removeValue(forKey: id) { reply(message) }
        }
    }

    private func joined(_ m: JSON) {
        let newEpoch = m["epoch"]?.stringValue
        if let source = m["flow"] { flow = try? Flow.load(source) }
        members = m["members"]?.arrayValue?.compactMap(Self.member) ?? []
        if let s = m["state"] {
            state = s
            rev = Int(m["rev"]?.intValue ?? 0)
        } else if let patches = m["patches"]?.arrayValue {
            for p in patches { patch(p, viaSync: true) }
        }
        epoch = newEpoch
        isJoined = true
        everJoined = true
        attempts = 0
        onEvent?(.connection(connected: true, reason: "joined \(options.session) at rev \(rev)"))
        onEvent?(.state)
        // Commands never acknowledged go out again, same ids, in order.
        for entry in pending { socket?.send(text: entry.json.encoded()) }
    }

    private func patch(_ m: JSON, viaSync: Bool) {
        guard m["session"]?.stringValue == options.session, let r = m["rev"]?.intValue.map(Int.init) else { return }
        if r <= rev { return }   // already have it
        guard r == rev + 1, let current = state, let ops = m["ops"]?.arrayValue else {
            return resync()
        }
        do {
            state = try current.applying(ops.map { try PatchOperation(json: $0) })
            rev = r
            if !viaSync { onEvent?(.state) }
        } catch {
            resync()
        }
    }

    /// A gap or a patch that does not apply: ask for what is missing (or a snapshot).
    private func resync() {
        guard let epoch else { return }
        request(["type": "sync", "session": .string(options.session), "since": .int(Int64(rev)), "epoch": .string(epoch)])
    }

    private func presence(_ m: JSON) {
        guard m["session"]?.stringValue == options.session else { return }
        if let joined = m["joined"].flatMap(Self.member) {
            members.removeAll { $0.client == joined.client }
            members.append(joined)
        } else if let left = m["left"]?.stringValue {
            members.removeAll { $0.client == left }
        } else if let s = m["status"], let client = s["client"]?.stringValue, let i = members.firstIndex(where: { $0.client == client }) {
            members[i].rev = s["rev"]?.intValue.map(Int.init)
            members[i].focus = s["focus"]?.stringValue
        }
        onEvent?(.presence)
    }

    static func member(_ j: JSON) -> Member? {
        guard let client = j["client"]?.stringValue else { return nil }
        return Member(client: client, name: j["name"]?.stringValue ?? client, role: j["role"]?.stringValue ?? "",
                      rev: j["rev"]?.intValue.map(Int.init), focus: j["focus"]?.stringValue)
    }
}

extension ClientOptions {
    /// The session client's options for these command-line options.
    public func sessionOptions(reconnect: Bool) -> SessionClient.Options {
        var s = SessionClient.Options()
        s.url = url
        s.session = session
        s.name = name
        s.create = create
        s.flow = flow
        s.reconnect = reconnect
        s.token = token
        return s
    }
}
