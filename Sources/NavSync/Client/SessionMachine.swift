/// One member of one session, as a pure state machine (docs/protocol.md, "Operations" and "Client messages"):
/// socket events and server messages in, a mirror of the session plus effects out.
/// `SessionClient` is its libuv shell; tests drive it as a value.
///
/// It mirrors the state by applying patches, checks that revisions follow each other
/// and resyncs on a gap, reconnects with capped, jittered backoff, resumes its client
/// identity, rejoins with `since`/`epoch`, and resends commands that were never
/// acknowledged (safe: command ids are idempotency keys).
public struct SessionMachine: Sendable {
    public enum Connection: Sendable, Equatable {
        case idle
        /// The socket is opening; `hello` and `join` go once it is open.
        case connecting
        /// Open, `join` sent, no `joined` yet.
        case joining
        case joined
        /// Lost; waiting for `retry()`.
        case waiting
        case stopped
    }

    public let options: Options
    public private(set) var connection = Connection.idle
    /// The confirmed state: the mirror as of the last patch applied.
    public package(set) var state: JSON? {
        didSet { confirmedModel = nil; speculation = nil; stale = true }
    }
    /// The revision of `state`.
    public package(set) var rev = 0
    /// What the program shows: with `speculative`, the pending commands replayed over
    /// `state`; else `state` itself.
    /// Answers arriving in a burst (a queue resent after an outage) make the replay
    /// stale once per message: it is made again when asked for, once (`showNow()`).
    public var shown: JSON? {
        guard options.speculative else { return state }
        return stale ? replay()?.state ?? state : replayed
    }
    private var replayed: JSON?
    /// `replayed` no longer follows from the confirmed state and what is pending.
    private var stale = false
    public package(set) var epoch: String?
    /// The session's flow as the server sent it.
    public package(set) var flow: Flow?
    /// The same as JSON (what a saved session keeps).
    public package(set) var flowJSON: JSON?
    public private(set) var members: [Member] = []
    /// Members not listed one by one (large sessions, docs/protocol.md, "Server messages, unasked").
    public private(set) var others = 0
    /// This client's identity; kept across reconnects.
    public package(set) var clientID: String?
    private var attempts = 0
    /// The next lost connection is tried again at once (`reconnectNow`).
    private var immediateRetry = false
    private var everJoined = false
    /// Which of `options.urls` the connection goes to.
    public private(set) var serverIndex = 0
    /// Servers tried in a row without joining (the first join tries each once).
    private var triedServers = 0

    public var currentURL: WebSocketURL { options.urls[serverIndex % max(1, options.urls.count)] }
    /// Seconds since the server last said anything (while connected).
    private var silentTicks = 0
    public package(set) var nextCommand: Int64 = 1
    /// A command not yet answered (resent after a reconnect), or (speculative) answered
    /// with its revision not yet in the confirmed state.
    public struct Pending: Sendable, Equatable {
        public var id: Int64
        public var ops: [JSON]
        /// The message as sent (resent byte for byte).
        public var bytes: [UInt8]
        /// The revision its ack names, once answered.
        public var ackedAt: Int?
        public init(id: Int64, ops: [JSON], bytes: [UInt8], ackedAt: Int? = nil) {
            self.id = id; self.ops = ops; self.bytes = bytes; self.ackedAt = ackedAt
        }
    }
    /// In the order made.
    public package(set) var pending: [Pending] = []
    /// Acks of this client's commands answered while others were pending: what a
    /// pending command's `"~C.N"` names. Let go once nothing is pending.
    var known: [Int64: Ack] = [:]
    /// Patches received but not yet applied to `state` (speculative): the first is the
    /// patch of a command of ours whose ack has not come, which alone tells the ids
    /// its entries got; the rest wait behind it, in order.
    private var held: [Patch] = []
    /// The confirmed state as a model, for the replay; made again when `state` changes.
    private var confirmedModel: NavState?
    /// The replay of `pending` over `state`, while it is that; a new command is replayed
    /// on top of it, anything else replays all.
    private var speculation: Speculation?
    /// Commands answered `unconfirmed` (cluster mode with `--redis-wait`): resent by id
    /// at the next tick, up to `unconfirmedRetries` times, before the error is theirs.
    private var unconfirmed: [Int64: Int] = [:]
    private var resendAtTick: Set<Int64> = []
    public static let unconfirmedRetries = 30
    /// Why the client ends, once it knows it will: a refusal of its join, its session
    /// deleted. The commands still waiting are answered with it.
    public private(set) var ending: NavError?
    /// How many commands were still waiting when it ended (each answered with `ending`).
    public private(set) var droppedAtEnd = 0
    /// Requests other than commands waiting for a reply, by request id.
    private var requests: Set<String> = []
    private var nextRequest = 1

    public init(options: Options) { self.options = options }

    public var isJoined: Bool { connection == .joined }
    /// Waiting to connect again (to the next server, or after backoff).
    public var willRetry: Bool { connection == .waiting }
    public var unacknowledged: Int { pending.count { $0.ackedAt == nil } }
    /// The newest revision received (patches held included).
    private var receivedRev: Int { held.last?.rev ?? rev }

    // MARK: Events from the program

    public mutating func start() -> [Effect] {
        guard connection == .idle || connection == .stopped else { return [] }
        connection = .connecting
        return [.connect]
    }

    public mutating func stop() -> [Effect] {
        let wasOpen = connection == .joining || connection == .joined
        connection = .stopped
        if ending == nil { ending = NavError(.closed, "the client was closed before the command was answered") }
        return wasOpen ? [.close] : finish()
    }

    /// Done for good: the commands still waiting are answered with why (they are never
    /// sent again), what is shown is the confirmed state again, and the shell may let go.
    private mutating func finish() -> [Effect] {
        let why = ending ?? NavError(.closed, "the client ended before the command was answered")
        var out: [Effect] = pending.filter { $0.ackedAt == nil }.map { .answered(command: $0.id, .failure(why)) }
        droppedAtEnd = out.count
        pending = []
        known = [:]
        unconfirmed = [:]
        resendAtTick = []
        if options.speculative { reshow(&out) }
        out.append(.finished)
        return out
    }

    /// The client will end, for this reason (the first one given stays).
    private mutating func end(_ why: NavError) {
        if ending == nil { ending = why }
        connection = .stopped
    }

    /// A command of operations; its answer comes as `.answered(command: id, …)`.
    /// Commands queue while disconnected and go out (or out again) once joined.
    /// `label` names the revision in history (docs/protocol.md, "History": 1 to 64 characters).
    public mutating func command(_ ops: [JSON], base: Int? = nil, onConflict: ConflictPolicy = .rebase,
                                 label: String? = nil) -> (id: Int64, effects: [Effect]) {
        let id = nextCommand
        nextCommand += 1
        guard pending.count < options.maxPending else {
            return (id, [.answered(command: id, .failure(NavError(.full, "\(pending.count) commands are waiting for the server already (at most \(options.maxPending)); nothing was sent")))])
        }
        var m: JSONObject = ["type": "command", "session": .string(options.session), "id": .int(id), "ops": .array(ops)]
        // Speculative commands are computed against the shown state, made over this revision.
        if let base = base ?? (options.speculative && epoch != nil ? rev : nil) { m["base"] = .int(Int64(base)) }
        if onConflict != .rebase { m["onConflict"] = .string(onConflict.rawValue) }
        if let label { m["label"] = .string(label) }
        let bytes = JSON.object(m).encoded()
        pending.append(Pending(id: id, ops: ops, bytes: bytes))
        var out: [Effect] = isJoined ? [.send(bytes)] : []
        if options.speculative {
            if speculation != nil, !stale {
                speculation!.replay(Speculation.Command(id: id, ops: ops))
                replayed = speculation!.state
            } else {
                stale = true
                showNow()
            }
            out.append(.event(.state))
            // Refused by the replay already (a guard, a route the stack does not have):
            // said at once; the server, which has the last word, is asked all the same.
            if let e = speculation?.failed[id] { out.append(.event(.refusedLocally(command: id, e))) }
        }
        return (id, out)
    }

    /// Any other request (`sessions`, `get`, `status`…); with `wantsReply` it gets an id
    /// and its answer comes as `.replied`.
    public mutating func request(_ message: JSONObject, wantsReply: Bool) -> (id: String?, effects: [Effect]) {
        guard connection == .joining || connection == .joined else { return (nil, []) }
        var m = message
        var id: String?
        if wantsReply {
            id = "r\(nextRequest)"
            nextRequest += 1
            m["id"] = .string(id!)
            requests.insert(id!)
        }
        return (id, [.send(JSON.object(m).encoded())])
    }

    /// Tells the other members which revision this client shows.
    public mutating func reportStatus(focus: String? = nil) -> [Effect] {
        guard isJoined else { return [] }
        var m: JSONObject = ["type": "status", "session": .string(options.session), "rev": .int(Int64(rev))]
        if let focus { m["focus"] = .string(focus) }
        return [.send(JSON.object(m).encoded())]
    }

    /// A second passed: a silent server is pinged, and dropped when it stays silent.
    public mutating func tick() -> [Effect] {
        guard connection == .joining || connection == .joined else { return [] }
        silentTicks += 1
        if silentTicks >= options.deadAfter { return [.abort] }
        // Commands answered `unconfirmed` go again (they are still pending).
        var out: [Effect] = isJoined ? pending.filter { $0.ackedAt == nil && resendAtTick.contains($0.id) }.map { .send($0.bytes) } : []
        resendAtTick = []
        if silentTicks == options.pingAfter { out.append(.send(JSON.object(["type": "ping"]).encoded())) }
        return out
    }

    /// The network is back (an app's path monitor says so, a browser's `online`): a wait
    /// for the next attempt ends now and the backoff starts over; an attempt under way
    /// (perhaps into the network that was gone) is dropped and made again at once; a
    /// joined connection is asked for a pong, and dropped if none comes within 2 s (the
    /// old network's socket may be dead without a word).
    public mutating func reconnectNow() -> [Effect] {
        attempts = 0
        switch connection {
        case .waiting:
            connection = .connecting
            return [.connect]
        case .connecting, .joining:
            immediateRetry = true
            return [.abort]
        case .joined:
            silentTicks = max(silentTicks, options.deadAfter - 2)
            return [.send(JSON.object(["type": "ping"]).encoded())]
        case .idle, .stopped:
            return []
        }
    }

    /// The backoff wait is over.
    public mutating func retry() -> [Effect] {
        guard connection == .waiting else { return [] }
        connection = .connecting
        return [.connect]
    }

    // MARK: Events from the socket

    public mutating func opened() -> [Effect] {
        guard connection == .connecting else { return [] }
        silentTicks = 0
        connection = .joining
        var hello: JSONObject = ["type": "hello", "name": .string(options.name)]
        if let clientID { hello["client"] = .string(clientID) }
        if let role = options.role { hello["role"] = .string(role) }
        if let token = options.token { hello["token"] = .string(token) }
        var join: JSONObject = ["type": "join", "session": .string(options.session)]
        if let epoch {
            join["since"] = .int(Int64(rev))
            join["epoch"] = .string(epoch)
        }
        if options.create { join["create"] = true }
        if let flow = options.flow { join["flow"] = .string(flow) }
        return [.send(JSON.object(hello).encoded()), .send(JSON.object(join).encoded())]
    }

    /// The socket is gone (`jitter` in 0...1 picks the wait within the backoff);
    /// `failure`: it never opened, for this kind of reason (`.offline`, `.tls`, `.rejected`).
    public mutating func closed(code: UInt16?, reason: String, jitter: Double, failure: ErrorCode? = nil) -> [Effect] {
        let why = code.map { "closed (\($0))\(reason.isEmpty ? "" : ": \(reason)")" } ?? reason
        var out: [Effect] = [.event(.connection(connected: false, reason: why))]
        let servers = options.urls.count
        // Before the first join, each server is tried once.
        if connection == .connecting, !everJoined, triedServers + 1 < servers {
            triedServers += 1
            serverIndex = (serverIndex + 1) % servers
            connection = .waiting
            return out + [.retry(after: 0)]
        }
        // Retrying is right only after a session was once joined: a server that cannot
        // be reached at all (a wrong address) is reported, not retried forever.
        guard connection != .stopped, options.reconnect, everJoined || options.retryFirstConnect else {
            end(everJoined ? NavError(.closed, "the connection was lost (\(why)) and this client does not reconnect")
                           : NavError(failure ?? .offline, "could not join '\(options.session)' at \(currentURL): \(why)"))
            return out + finish()
        }
        if immediateRetry {
            immediateRetry = false
            connection = .waiting
            return out + [.retry(after: 0)]
        }
        // With several servers, the next one at once (a node died: its clients move);
        // after a whole round of them, with backoff.
        if servers > 1 {
            serverIndex = (serverIndex + 1) % servers
            if attempts < servers {
                attempts += 1
                connection = .waiting
                return out + [.retry(after: Int64(50 * min(max(jitter, 0), 1)))]
            }
        }
        let delay = min(options.backoff.max, options.backoff.first << min(Int64(attempts), 16))
        attempts += 1
        connection = .waiting
        out.append(.retry(after: delay / 2 + Int64(Double(delay / 2) * min(max(jitter, 0), 1))))
        return out
    }

    public mutating func received(_ bytes: [UInt8]) -> [Effect] {
        silentTicks = 0
        guard let json = try? JSON.parse(bytes), let decoded = try? ServerMessage.decode(json) else { return [] }
        var out: [Effect] = [.received(json)]
        let requestID = decoded.id?.stringValue.flatMap { requests.contains($0) ? $0 : nil }
        switch decoded.message {
        case .welcome(let w):
            clientID = w.client
        case .joined(let j):
            joined(j, &out)
        case .patch(let session, let p):
            patch(session, p, notify: true, &out)
        case .snapshot(let session, let r, let s):
            if let requestID { out.append(reply(requestID, json)) }
            if session == options.session, r >= rev {
                state = s
                rev = r
                held.removeAll { $0.rev <= r }
                settle(&out)
            }
        case .ack(_, let ack):
            guard case .int(let id) = ack.id, let i = pending.firstIndex(where: { $0.id == id && $0.ackedAt == nil }) else { break }
            unconfirmed[id] = nil
            if options.speculative {
                // Replayed until its revision is confirmed; what it made is known now.
                pending[i].ackedAt = ack.rev
                known[id] = ack
                out.append(.answered(command: id, .success(ack)))
                settle(&out)
            } else {
                pending.remove(at: i)
                out.append(.answered(command: id, .success(ack)))
            }
        case .error(let e):
            if case .int(let id)? = decoded.id, let i = pending.firstIndex(where: { $0.id == id && $0.ackedAt == nil }) {
                // Redis has it but too few replicas confirmed it yet: the same id again is
                // safe, and is answered once they do.
                // A speculative client's commands are on screen already: one the rate limit
                // held back (a queue resent after an outage) goes again too.
                let retried = e.code == .unconfirmed || e.code == .unavailable || (options.speculative && e.code == .rateLimited)
                if retried, unconfirmed[id, default: 0] < Self.unconfirmedRetries {
                    unconfirmed[id, default: 0] += 1
                    resendAtTick.insert(id)
                    break
                }
                pending.remove(at: i)
                unconfirmed[id] = nil
                out.append(.answered(command: id, .failure(e)))
                // Its effect leaves the shown state; the commands after it stay if they still apply.
                if options.speculative { reshow(&out) }
            } else if let requestID {
                out.append(reply(requestID, json))
            } else {
                out.append(.event(.error(e)))
                // Refused before ever joining (no such session, forbidden): give up, and
                // the commands that waited (made offline) fail with the same reason.
                if !everJoined && !isJoined {
                    end(e)
                    out.append(.close)
                }
            }
        case .presence(let session, let p):
            guard session == options.session else { break }
            let gone = Set(p.left)
            members.removeAll { gone.contains($0.client) }
            for m in p.joined {
                members.removeAll { $0.client == m.client }
                members.append(m)
            }
            for st in p.status {
                if let i = members.firstIndex(where: { $0.client == st.client }) {
                    members[i].rev = st.rev
                    members[i].focus = st.focus
                }
            }
            others = p.others ?? 0
            out.append(.event(.presence))
        case .deleted(let session, let by):
            if let requestID { out.append(reply(requestID, json)) }
            guard session == options.session, requestID == nil else { break }
            // Our session is gone: say so and stop (rejoining would create it again).
            let deleted = NavError(.unknownSession, "session '\(session)' was deleted by \(by)")
            out.append(.event(.error(deleted)))
            end(deleted)
            out.append(.close)
        case .left, .synced, .sessions, .pong, .historic, .history, .auth:
            if let requestID { out.append(reply(requestID, json)) }
        }
        return out
    }

    private mutating func reply(_ id: String, _ json: JSON) -> Effect {
        requests.remove(id)
        return .replied(request: id, json)
    }

    /// An epoch's lineage: what stays when a cluster's Redis changes primary
    /// (`LINEAGE/GENERATION`; docs/protocol.md, "Epochs").
    static func lineage(_ epoch: String) -> Substring { epoch.prefix { $0 != "/" } }

    private mutating func joined(_ j: ServerMessage.Joined, _ out: inout [Effect]) {
        if j.flow != .null, j.flow != flowJSON {
            flow = try? Flow.load(j.flow)
            flowJSON = j.flow
        }
        members = j.members
        others = j.others ?? 0
        // Another lineage: made anew. Another generation of the same lineage (a cluster's
        // new Redis primary) is the same session: its state is taken whole, and what
        // waited is resent.
        let reset = epoch.map { Self.lineage($0) != Self.lineage(j.epoch) } ?? false
        switch j.catchUp {
        case .state(let s):
            state = s
            rev = j.rev
            held = []
        case .patches(let patches):
            for p in patches { patch(j.session, p, notify: false, &out) }
        }
        epoch = j.epoch
        if reset {
            out.append(.event(.reset(reason: "session '\(options.session)' was made anew (another epoch) while this client was away")))
            if options.speculative {
                // Made for a session that is gone: not replayed onto the new one.
                let gone = NavError(.reset, "session '\(options.session)' was made anew while this command waited; it was not sent to the new one")
                for p in pending where p.ackedAt == nil { out.append(.answered(command: p.id, .failure(gone))) }
                pending = []
                known = [:]
                unconfirmed = [:]
                resendAtTick = []
            }
        }
        connection = .joined
        everJoined = true
        attempts = 0
        triedServers = 0
        out.append(.event(.connection(connected: true, reason: "joined \(options.session) at rev \(rev)")))
        if options.speculative { settle(&out) } else { out.append(.event(.state)) }
        // Commands never acknowledged go out again, same ids, in order.
        for entry in pending where entry.ackedAt == nil { out.append(.send(entry.bytes)) }
    }

    private mutating func patch(_ session: String, _ p: Patch, notify: Bool, _ out: inout [Effect]) {
        guard session == options.session, p.rev > receivedRev else { return }   // another session, or already have it
        guard p.rev == receivedRev + 1 else { return resync(&out) }
        if options.speculative {
            held.append(p)
            return settle(&out, notify: notify)
        }
        guard let current = state, let next = try? current.applying(p.ops) else { return resync(&out) }
        state = next
        rev = p.rev
        if notify { out.append(.event(.state)) }
    }

    /// Whether a patch is of a command of ours still waiting for its ack.
    private func awaitsAck(_ p: Patch) -> Bool {
        guard p.by == clientID, case .int(let id) = p.cmd else { return false }
        return pending.contains { $0.id == id && $0.ackedAt == nil }
    }

    /// Speculative: applies the held patches that may be (up to one of ours whose ack
    /// has not come), lets go of the commands whose revision is confirmed, and shows
    /// the rest replayed.
    private mutating func settle(_ out: inout [Effect], notify: Bool = true) {
        var applied = 0
        while let p = held.first, !awaitsAck(p) {
            held.removeFirst()
            guard let current = state, let next = try? current.applying(p.ops) else {
                held = []
                resync(&out)
                break
            }
            state = next
            rev = p.rev
            applied += 1
        }
        let count = pending.count
        pending.removeAll { $0.ackedAt.map { $0 <= rev } ?? false }
        if pending.isEmpty { known = [:] }
        if applied > 0 || pending.count != count || stale { reshow(&out, notify: notify) }
    }

    /// What is pending is to be replayed over the confirmed state again: marked, and
    /// made when next shown (`showNow()`), so a burst of answers costs one replay.
    mutating func reshow(_ out: inout [Effect], notify: Bool = true) {
        stale = true
        speculation = nil
        if notify, out.last != .event(.state) { out.append(.event(.state)) }
    }

    /// Makes the shown state follow the confirmed one and what is pending, if it does
    /// not yet (a shell calls it once after a burst of messages, before it shows).
    public mutating func showNow() {
        guard options.speculative, stale else { return }
        stale = false
        if confirmedModel == nil, !pending.isEmpty, flow != nil, let state { confirmedModel = try? NavState(json: state) }
        speculation = replay()
        replayed = speculation?.state ?? state
    }

    /// What is pending replayed over the confirmed state (nil: nothing to replay).
    private func replay() -> Speculation? {
        guard !pending.isEmpty, let flow, let state, let model = confirmedModel ?? (try? NavState(json: state)) else { return nil }
        let answered = Set(pending.map(\.id))
        return Speculation.replay(over: model, flow: flow, pending: pending.map { Speculation.Command(id: $0.id, ops: $0.ops) },
                                  known: known.filter { !answered.contains($0.key) }.map(\.value))
    }

    /// A gap or a patch that does not apply: ask for what is missing (or a snapshot).
    private mutating func resync(_ out: inout [Effect]) {
        guard let epoch else { return }
        out += request(["type": "sync", "session": .string(options.session), "since": .int(Int64(rev)), "epoch": .string(epoch)],
                       wantsReply: false).effects
    }
}
