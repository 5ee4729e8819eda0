import NavSync
import NavSyncServer
import NavSyncLibuv
@preconcurrency import Glibc

/// Cluster mode's store (docs/cluster.md, "How it works"): carries the hub's `ClusterRequest`s to
/// Redis and turns what Redis answers and publishes into `ClusterEvent`s. Two
/// connections: one for commands (scripts, reads, heartbeats), one subscribed to every
/// session's live channel. Every change to a session is one Lua script, so it is
/// atomic in Redis: see `ClusterScripts`.
public final class ClusterStore {
    public struct SetupError: Error, CustomStringConvertible { public var description: String }

    /// Where Redis is and how to reach it (`--cluster`).
    public let url: RedisURL
    public let node: String
    /// `--redis-password-file`: read at start and again on SIGHUP (used at the next connect).
    public let passwordFile: String?
    /// `--redis-wait N`: a command is acknowledged once N replicas have it (`WAIT`), or
    /// answered `unconfirmed` after `waitTimeout` ms.
    public let waitReplicas: Int
    public let waitTimeout: Int
    /// `--redis-wait-hold`: a replica that stops acknowledging is still waited for this
    /// long (it may be the one the Sentinels are promoting; see `ReplicaHold`).
    public var waitHold: Int { Int(replicaHold.hold) }
    /// What this node tells the others clients may connect to (`GET /api/cluster`).
    public var advertised = ""
    /// Hands the hub what Redis said.
    var onEvent: ((ClusterEvent) -> Void)?
    var logger: Logger?

    private var password: String?
    private let tls: TLSContext?
    private var sentinel: SentinelWatcher?
    private var commands: RedisConnection?
    private var subscriber: RedisConnection?
    private var runID = ""
    private var subscribed = false
    private var newEpoch: () -> String = { "" }
    private var lastWarning: (reason: String, at: UInt64)?
    private var startedAt: UInt64 = 0
    private var replicaHold: ReplicaHold

    // Metrics (`navsync_cluster_*`).
    public private(set) var appends = 0
    public private(set) var appendedRecords = 0
    public private(set) var catchUps = 0
    public private(set) var connected = false
    /// The nodes Redis lists, refreshed every second: name -> (url, last heartbeat ms, run).
    public private(set) var nodes: [String: (url: String, seen: Int64, incarnation: String)] = [:]
    /// Redis's own view, from `INFO replication` every second: its role and replicas.
    public private(set) var replication: (role: String, replicas: [[String: String]]) = ("", []) {
        didSet {
            let online = replication.replicas.filter { $0["state"] == "online" }
            let acks = { (r: [String: String]) in Int(r["lag"] ?? "") ?? 0 <= 2 }
            acknowledging = Set(online.filter(acks).map(Self.address))
            lagging = Set(online.filter { !acks($0) }.map(Self.address))
        }
    }
    /// From `replication`, by address (`ip:port`): the replicas online and acknowledging
    /// (a replica acks every second; `lag` is the seconds since its last), and those
    /// online but not (frozen, cut off). Worked out once a look, not on every append.
    private var acknowledging: Set<String> = [], lagging: Set<String> = []
    /// This run of the node (a restarted node's old members are dropped by the others).
    public let incarnation = RandomIDs.hex(8)
    public var roundTripMs: Double { commands?.lastRoundTrip ?? 0 }

    /// Reads the password file and makes the TLS context: what is wrong with either is
    /// an error at start.
    public init(url: RedisURL, node: String, passwordFile: String? = nil, waitReplicas: Int = 0, waitTimeout: Int = 1_000,
                waitHold: Int = 5_000) throws(SetupError) {
        self.url = url
        self.node = node
        self.passwordFile = passwordFile
        self.waitReplicas = waitReplicas
        self.waitTimeout = waitTimeout
        replicaHold = ReplicaHold(hold: UInt64(waitHold))
        password = url.password
        if let passwordFile {
            guard url.password == nil else {
                throw SetupError(description: "--redis-password-file and a password in the URL exclude each other: give it once")
            }
            password = try Self.readPassword(passwordFile)
        }
        if url.tls {
            do { tls = try TLSContext.client(caFile: url.caFile, certificate: url.certificateFile, key: url.keyFile) } catch {
                throw SetupError(description: "rediss://: \(error)")
            }
        } else {
            tls = nil
        }
    }

    static func readPassword(_ file: String) throws(SetupError) -> String {
        guard let bytes = FileSystem.read(file) else { throw SetupError(description: "cannot read --redis-password-file \(file)") }
        var text = String(decoding: bytes, as: UTF8.self)
        if text.hasSuffix("\n") { text.removeLast() }
        if text.hasSuffix("\r") { text.removeLast() }
        guard !text.isEmpty else { throw SetupError(description: "--redis-password-file \(file) is empty") }
        return text
    }

    /// SIGHUP: the password file read again (the next connect uses it); the error, if any.
    public func reloadPassword() -> String? {
        guard let passwordFile else { return nil }
        do { password = try Self.readPassword(passwordFile) } catch { return "\(error); the old password stays in use" }
        return nil
    }

    /// nil when this node can acknowledge commands; else why not (`/readyz`).
    public var notReady: String? {
        if let sentinel, sentinel.primary == nil { return "store: no primary for '\(sentinel.master)': \(sentinel.problem ?? "asking the Sentinels")" }
        guard let commands else { return "store: not started" }
        guard connected, commands.isReady else { return "store: \(commands.lastError ?? "connecting to Redis at \(commands.target)")" }
        guard subscribed, let subscriber, subscriber.isReady else { return "store: subscribing at Redis \(commands.target): \(subscriber?.lastError ?? "connecting")" }
        if waitReplicas > 0 {
            // Online and acknowledging (a replica acks every second; `lag` is the seconds
            // since its last): one frozen or cut off would fail every WAIT.
            let online = acknowledging.count
            if online < waitReplicas {
                return "store: Redis at \(commands.target) has \(online) replicas online and acknowledging, --redis-wait needs \(waitReplicas)"
            }
            if let gone = replicaHold.missing.sorted().first {
                return "store: replica \(gone) of Redis at \(commands.target) stopped acknowledging and may be the one the Sentinels are "
                    + "promoting: writes wait for it until it is back, a new primary is named, or --redis-wait-hold (\(waitHold) ms) has passed"
            }
        }
        return nil
    }

    /// The primary's address now (what the connections point to).
    public var primary: String { commands.map { "\($0.target)" } ?? "" }

    func start(on server: Server, newEpoch: @escaping () -> String) {
        self.newEpoch = newEpoch
        logger = server.logger
        // With Sentinel, the first host is only a placeholder until the primary is known.
        let target = url.hosts[0]
        let commands = RedisConnection(loop: server.loop, target: target, db: url.db, subscriber: false, primaryOnly: true, tls: tls)
        let subscriber = RedisConnection(loop: server.loop, target: target, db: url.db, subscriber: true, primaryOnly: true, tls: tls)
        // WAIT blocks this connection's later commands: its deadline covers the wait.
        if waitReplicas > 0 { commands.timeout = 2_000 + UInt64(waitTimeout) }
        for c in [commands, subscriber] { c.credentials = { [unowned self] in (url.user, password) } }
        self.commands = commands
        self.subscriber = subscriber
        startedAt = commands.now
        commands.onReady = { [unowned self] in commandsReady() }
        commands.onDown = { [unowned self] reason in
            if reason.hasPrefix(RedisConnection.moving) {
                // A failover the Sentinels made: nothing is lost, the node follows.
                logger?.info("cluster: leaving Redis at \(commands.target), \(reason)")
            } else if connected {
                logger?.error("cluster: lost Redis at \(commands.target): \(reason)")
            }
            connected = false
            // The replicas were the lost primary's: the next one's are read anew.
            replication = ("", [])
            replicaHold.reset()
            sentinel?.ask()
            onEvent?(.disconnected(reason))
        }
        subscriber.onReady = { [unowned self] in
            self.subscriber?.send(["PSUBSCRIBE", ClusterScripts.livePattern]) { [unowned self] result in
                if case .success(.error(let e)) = result {
                    // An ACL without the pattern: said, and tried again with backoff.
                    let why = RedisConnection.explain(e, target: subscriber.target, user: url.user) + " (PSUBSCRIBE \(ClusterScripts.livePattern))"
                    logger?.error("cluster: \(why)")
                    return subscriber.drop(why)
                }
                guard case .success(.array) = result else { return }
                subscribed = true
                refresh()
            }
        }
        subscriber.onDown = { [unowned self] _ in subscribed = false }
        subscriber.onMessage = { [unowned self] in message($0) }
        if url.isSentinel {
            let sentinel = SentinelWatcher(server: server, url: url, tls: tls)
            self.sentinel = sentinel
            var started = false
            sentinel.onPrimary = { host in
                commands.retarget(host)
                subscriber.retarget(host)
                if !started {
                    started = true
                    commands.connect()
                    subscriber.connect()
                }
            }
            sentinel.start()
        } else {
            commands.connect()
            subscriber.connect()
        }
        server.every(1_000) { [unowned self] in
            heartbeat()
            warnWhileNotReady()
        }
    }

    /// A node that cannot acknowledge says why in its log: when the reason changes,
    /// and every 5 s while it lasts (the first 2 s are for connecting).
    private func warnWhileNotReady() {
        guard let reason = notReady, let commands else {
            // Said once when it was said not to be: the last line is not left "not ready".
            if let last = lastWarning { logger?.info("cluster: ready again (after: \(last.reason))") }
            return lastWarning = nil
        }
        let now = commands.now
        guard now - startedAt >= 2_000 else { return }
        if let last = lastWarning, last.reason == reason, now - last.at < 5_000 { return }
        logger?.warn("cluster: not ready: \(reason)")
        lastWarning = (reason, now)
    }

    func stop() {
        commands?.send(["HDEL", ClusterScripts.nodesKey, node]) { _ in }
        commands?.stop()
        subscriber?.stop()
        sentinel?.stop()
    }

    private func commandsReady() {
        commands?.send(["INFO", "server"]) { [unowned self] result in
            guard case .success(let r) = result, let info = r.text,
                  let line = info.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("run_id:") }) else { return }
            runID = String(line.dropFirst("run_id:".count))
            if !connected { logger?.info("cluster: connected to Redis at \(primary) (run \(runID.prefix(8))) as node \(node)") }
            connected = true
            heartbeat()
            refresh()
        }
    }

    /// Once both connections are up: the session list, and every session read from
    /// where its replica stands (what was published while away is in the log).
    private func refresh() {
        guard connected, subscribed else { return }
        commands?.send(["SMEMBERS", ClusterScripts.sessionsKey]) { [unowned self] result in
            guard case .success(let r) = result, let list = r.array else { return }
            catchUps += 1
            onEvent?(.connected(sessions: list.compactMap(\.text)))
        }
    }

    /// Every second: this node's heartbeat, the node list, Redis's replication, and
    /// each session's position in Redis (a silent pub/sub stall hides nothing for
    /// longer than that).
    private func heartbeat() {
        guard connected, let commands else { return }
        onEvent?(.heartbeat(nodes: nodes.mapValues { NodeBeat(seen: $0.seen, incarnation: $0.incarnation) }, now: unixMilliseconds()))
        let now = unixMilliseconds()
        let me = JSON.object(["url": .string(advertised), "seen": .int(now), "inc": .string(incarnation)]).encodedString()
        commands.send(["HSET", ClusterScripts.nodesKey, node, me]) { _ in }
        commands.send(["HGETALL", ClusterScripts.nodesKey]) { [unowned self] result in
            guard case .success(let r) = result, let list = r.array else { return }
            var seen: [String: (String, Int64, String)] = [:]
            for i in stride(from: 0, to: list.count - 1, by: 2) {
                guard let name = list[i].text, let v = list[i + 1].text, let j = try? JSON.parse(Array(v.utf8)) else { continue }
                seen[name] = (j["url"]?.stringValue ?? "", j["seen"]?.intValue ?? 0, j["inc"]?.stringValue ?? "")
            }
            nodes = seen
        }
        commands.send(["INFO", "replication"]) { [unowned self] result in
            guard case .success(let r) = result, let info = r.text else { return }
            replication = Self.replication(info)
            if waitReplicas > 0 { look(at: acknowledging) }
        }
    }

    /// `INFO replication`'s role and its `slaveN:ip=…,port=…,state=…,offset=…,lag=…` lines.
    static func replication(_ info: String) -> (role: String, replicas: [[String: String]]) {
        var role = "", replicas: [[String: String]] = []
        for line in info.split(whereSeparator: \.isNewline) {
            if line.hasPrefix("role:") { role = String(line.dropFirst(5)) }
            if line.hasPrefix("slave"), let colon = line.firstIndex(of: ":"), Int(line[line.index(line.startIndex, offsetBy: 5)..<colon]) != nil {
                var fields: [String: String] = [:]
                for kv in line[line.index(after: colon)...].split(separator: ",") {
                    guard let eq = kv.firstIndex(of: "=") else { continue }
                    fields[String(kv[..<eq])] = String(kv[kv.index(after: eq)...])
                }
                replicas.append(fields)
            }
        }
        return (role, replicas)
    }

    // MARK: Requests

    func perform(_ request: ClusterRequest) {
        guard commands != nil else { return }
        switch request {
        case .checkPositions(let positions):
            for (name, at) in positions {
                commands?.send(["HGET", ClusterScripts.key(name, "meta"), "last"]) { [unowned self] result in
                    guard case .success(let r) = result, let text = r.text, let last = StreamID(text), last > at else { return }
                    catchUps += 1
                    onEvent?(.behind(session: name))
                }
            }

        case .create(let name, let flow, let epoch, let snapshot):
            let keys = [ClusterScripts.key(name, "meta"), ClusterScripts.key(name, "snap"), ClusterScripts.sessionsKey, ClusterScripts.key(name, "live")]
            let args = [name, flow.source.encodedString(), epoch, String(unixMilliseconds()), snapshot.encodedString(), runID]
            eval(ClusterScripts.create, keys: keys, args: args) { [unowned self] result in
                switch result {
                case .success(let r): onEvent?(.created(session: name, made: r.int == 1))
                case .failure(let f): onEvent?(.read(session: name, .failed(f.reason)))
                }
            }
        case .append(let name, let epoch, let after, let records, let token):
            appends += 1
            appendedRecords += records.count
            let keys = [ClusterScripts.key(name, "meta"), ClusterScripts.key(name, "log"), ClusterScripts.key(name, "live")]
            var args: [[UInt8]] = [epoch, after.description, runID, newEpoch()].map { Array($0.utf8) }
            for r in records {
                args.append(Array((r.revision ? "r" : "n").utf8))
                args.append(r.json.encoded())
            }
            evalBytes(ClusterScripts.append, keys: keys, args: args) { [unowned self] result in
                switch result {
                case .success(let r):
                    let list = r.array ?? []
                    switch list.first?.text {
                    case "ok":
                        guard list.count > 1, let text = list[1].text, let last = StreamID(text) else { fallthrough }
                        confirm(name, token: token, last: last)
                    case "moved": onEvent?(.refused(session: name, token: token, .moved))
                    case "gone": onEvent?(.refused(session: name, token: token, .gone))
                    default:
                        logger?.error("cluster: append to '\(name)': unexpected answer \(r)")
                        onEvent?(.refused(session: name, token: token, .unknown("unexpected answer from Redis")))
                    }
                case .failure(.notSent(let reason)): onEvent?(.refused(session: name, token: token, .unavailable(reason)))
                case .failure(.unknown(let reason)): onEvent?(.refused(session: name, token: token, .unknown(reason)))
                }
            }
        case .confirm(let name, let token, let last, let also, let attempt):
            confirm(name, token: token, last: last, also: also, attempt: attempt)
        case .read(let name, let after):
            read(name, after: after, adding: nil)
        case .snapshot(let name, let epoch, let at, let data):
            let keys = [ClusterScripts.key(name, "meta"), ClusterScripts.key(name, "snap"), ClusterScripts.key(name, "log")]
            evalBytes(ClusterScripts.snapshot, keys: keys, args: [Array(epoch.utf8), Array(at.description.utf8), data]) { _ in }
        case .presence(let name, let payload):
            commands?.send([Array("PUBLISH".utf8), Array(ClusterScripts.key(name, "live").utf8), Array("p ".utf8) + payload.encoded()]) { _ in }
        case .askMembers(let name):
            commands?.send(["PUBLISH", ClusterScripts.key(name, "live"), "c members"]) { _ in }
        case .delete(let name):
            let keys = ["meta", "snap", "log", "live"].map { ClusterScripts.key(name, $0) } + [ClusterScripts.sessionsKey]
            eval(ClusterScripts.delete, keys: keys, args: [name]) { _ in }
        }
    }

    /// Entries one read script returns at most: a node far behind (back from a
    /// partition) reads page by page, so Redis never runs one long script for it.
    static let readPage = 2_000

    /// Reads a session's log after `after` page by page; the hub gets the pages as one
    /// result. A page that comes back whole (the epoch changed meanwhile) starts over.
    private func read(_ name: String, after: StreamID?, adding earlier: ReadResult?) {
        let keys = [ClusterScripts.key(name, "meta"), ClusterScripts.key(name, "snap"), ClusterScripts.key(name, "log"), ClusterScripts.key(name, "live")]
        eval(ClusterScripts.read, keys: keys, args: [after?.description ?? "", runID, newEpoch(), String(Self.readPage)]) { [unowned self] result in
            guard case .success(let r) = result else {
                if case .failure(let f) = result { onEvent?(.read(session: name, .failed(f.reason))) }
                return
            }
            let (sofar, next) = Self.adding(Self.readResult(r), to: earlier, pageSize: Self.readPage)
            if let next { return read(name, after: next, adding: sofar) }
            onEvent?(.read(session: name, sofar))
        }
    }

    /// A page of a paged read after the pages before it: the result so far, and where
    /// to read on when the page was full. A page of another epoch, or whole, starts over.
    static func adding(_ page: ReadResult, to earlier: ReadResult?, pageSize: Int) -> (ReadResult, next: StreamID?) {
        let sofar: ReadResult, added: [(StreamID, ClusterRecord)]
        switch (earlier, page) {
        case (.whole(let flow, let epoch, let snapshot, let at, let before)?, .entries(let same, let more)) where same == epoch:
            (sofar, added) = (.whole(flow: flow, epoch: epoch, snapshot: snapshot, at: at, before + more), more)
        case (.entries(let epoch, let before)?, .entries(let same, let more)) where same == epoch:
            (sofar, added) = (.entries(epoch: epoch, before + more), more)
        case (_, .entries(_, let more)), (_, .whole(_, _, _, _, let more)):
            (sofar, added) = (page, more)
        default:
            return (page, nil)
        }
        return (sofar, added.count == pageSize ? added.last?.0 : nil)
    }

    private static func address(_ replica: [String: String]) -> String { "\(replica["ip"] ?? ""):\(replica["port"] ?? "")" }

    /// A look at the replicas acknowledging: the hold follows, and the log says when
    /// one goes missing or is given up.
    private func look(at replicas: Set<String>) {
        guard let commands else { return }
        let (dropped, released) = replicaHold.saw(replicas, at: commands.now)
        for r in dropped {
            logger?.warn("cluster: replica \(r) of Redis at \(commands.target) stopped acknowledging; writes wait for it for up to "
                         + "\(waitHold) ms (--redis-wait-hold), in case it is the one the Sentinels are promoting")
        }
        for r in released {
            let left = replicaHold.waitedFor.count
            logger?.warn("cluster: replica \(r) of Redis at \(commands.target) not back within --redis-wait-hold (\(waitHold) ms); "
                         + (left >= waitReplicas ? "writes go on with the \(left) left"
                            : "\(left) left, fewer than --redis-wait \(waitReplicas): every write is answered unconfirmed until one is back"))
        }
    }

    /// `--redis-wait N`: WAIT for every replica a write must reach, then ROLE on the same
    /// connection, and report what they said for the hub to judge (`WaitAnswer`): N
    /// replicas, and every one online and acknowledging too, or that was within
    /// `--redis-wait-hold` (Sentinel may promote any of them: it knows their offsets only
    /// as of its last look), and those `also` named. WAIT on the connection that
    /// appended covers every write it made before.
    private func confirm(_ name: String, token: Int, last: StreamID, also more: Set<String> = [], attempt: Int = 0) {
        guard waitReplicas > 0, let commands else { return onEvent?(.appended(session: name, token: token, last: last)) ?? () }
        let waited = replicaHold.waitedFor.union(acknowledging).union(more)
        let needed = max(waitReplicas, waited.count)
        var confirmed: Result<RedisReply, RedisFailure> = .success(.null)
        commands.send(["WAIT", String(needed), String(waitTimeout)]) { confirmed = $0 }
        // Right after WAIT on the same connection: which replicas the primary has now.
        commands.send(["ROLE"]) { [unowned self] role in
            var answer = WaitAnswer(waited: waited, needed: needed, replicas: nil, lagging: lagging, attempt: attempt)
            switch (confirmed, role) {
            case (.failure(let f), _), (_, .failure(let f)):
                answer.failure = f.reason
            case (.success(.int(let n)), .success(let r)):
                if case .error(let e) = r {
                    answer.failure = "ROLE answered \(e)"   // an ACL without +role
                } else {
                    answer.confirmed = Int(n)
                    answer.replicas = Self.roleReplicas(r)
                    if let replicas = answer.replicas { look(at: replicas.subtracting(lagging)) }
                }
            case (.success(let w), _):
                answer.failure = "WAIT answered \(w)"
            }
            onEvent?(.waited(session: name, token: token, last: last, answer))
        }
    }

    /// `ROLE`'s replicas (`ip:port`), those online; nil when Redis is not a primary.
    static func roleReplicas(_ reply: RedisReply) -> Set<String>? {
        guard let parts = reply.array, parts.first?.text == "master", parts.count >= 3 else { return nil }
        var out: Set<String> = []
        for replica in parts[2].array ?? [] {
            guard let r = replica.array, r.count >= 2, let ip = r[0].text, let port = r[1].text ?? r[1].int.map(String.init) else { continue }
            out.insert("\(ip):\(port)")
        }
        return out
    }

    /// A command of the webhooks' delivery (leases and cursors, `Backend+Cluster.swift`)
    /// on the command connection; a failure when Redis is away.
    func webhookCommand(_ args: [String], _ done: @escaping (Result<RedisReply, RedisFailure>) -> Void) {
        guard let commands, connected else { return done(.failure(.notSent("not connected"))) }
        commands.send(args, done)
    }

    private func eval(_ script: String, keys: [String], args: [String], _ done: @escaping (Result<RedisReply, RedisFailure>) -> Void) {
        evalBytes(script, keys: keys, args: args.map { Array($0.utf8) }, done)
    }

    private func evalBytes(_ script: String, keys: [String], args: [[UInt8]], _ done: @escaping (Result<RedisReply, RedisFailure>) -> Void) {
        guard let commands else { return done(.failure(.notSent("not started"))) }
        let argv: [[UInt8]] = [Array("EVAL".utf8), Array(script.utf8), Array(String(keys.count).utf8)] + keys.map { Array($0.utf8) } + args
        commands.send(argv) { [unowned self] result in
            if case .success(.error(let e)) = result {
                logger?.error("cluster: a script failed in Redis: \(e)")
                return done(.failure(.notSent("Redis: \(e)")))
            }
            done(result)
        }
    }

    static func readResult(_ r: RedisReply) -> ReadResult {
        guard let list = r.array, let kind = list.first?.text else { return .failed("unexpected answer from Redis") }
        func entries(from i: Int) -> [(StreamID, ClusterRecord)]? {
            var out: [(StreamID, ClusterRecord)] = []
            var i = i
            while i + 2 < list.count {
                guard let id = list[i].text.flatMap(StreamID.init), let k = list[i + 1].text, case .string(let bytes) = list[i + 2],
                      let json = try? JSON.parse(bytes), let record = ClusterRecord(json: json, revision: k == "r") else { return nil }
                out.append((id, record))
                i += 3
            }
            return out
        }
        switch kind {
        case "gone": return .gone
        case "entries":
            guard list.count >= 2, let epoch = list[1].text, let e = entries(from: 2) else { return .failed("a log entry in Redis does not parse") }
            return .entries(epoch: epoch, e)
        case "whole":
            guard list.count >= 5, case .string(let flow) = list[1], let epoch = list[2].text, case .string(let snap) = list[3],
                  let at = list[4].text.flatMap(StreamID.init), let flowJSON = try? JSON.parse(flow), let snapshot = try? JSON.parse(snap),
                  let e = entries(from: 5) else { return .failed("the session's snapshot or log in Redis does not parse") }
            return .whole(flow: flowJSON, epoch: epoch, snapshot: snapshot, at: at, e)
        default:
            return .failed("unexpected answer from Redis")
        }
    }

    // MARK: The live channel

    /// `pmessage PATTERN CHANNEL PAYLOAD` from the live channel of a session.
    private func message(_ reply: RedisReply) {
        guard let parts = reply.array, parts.count == 4, let channel = parts[2].text, case .string(let payload) = parts[3],
              let name = ClusterScripts.session(ofLive: channel) else { return }
        guard let event = Self.liveEvent(session: name, payload: payload) else {
            logger?.warn("cluster: a live message of '\(name)' does not parse; reading the log")
            return onEvent?(.epochChanged(session: name)) ?? ()
        }
        onEvent?(event)
    }

    /// A live message's payload as an event: `r PREV ID K{json}` a log entry (K: `r` a
    /// revision, `n` none; the record is read later, when needed), `p {json}` presence,
    /// `c created|deleted|members|epoch` the rest. nil when it does not parse.
    static func liveEvent(session name: String, payload: [UInt8]) -> ClusterEvent? {
        guard payload.count > 2, payload[1] == UInt8(ascii: " ") else { return nil }
        switch payload[0] {
        case UInt8(ascii: "c"):
            switch String(decoding: payload.dropFirst(2), as: UTF8.self) {
            case "created": return .appeared(session: name)
            case "deleted": return .deleted(session: name)
            case "members": return .membersWanted(session: name)
            case "epoch": return .epochChanged(session: name)
            default: return nil
            }
        case UInt8(ascii: "p"):
            return (try? JSON.parse(Array(payload.dropFirst(2)))).map { .presence(session: name, $0) }
        case UInt8(ascii: "r"):
            // PREV and ID, each followed by a space, then the kind byte and the record.
            let rest = payload[2...]
            guard let s1 = rest.firstIndex(of: UInt8(ascii: " ")), let s2 = rest[(s1 + 1)...].firstIndex(of: UInt8(ascii: " ")),
                  s2 + 2 < payload.count,
                  let prev = StreamID(String(decoding: rest[..<s1], as: UTF8.self)),
                  let id = StreamID(String(decoding: payload[(s1 + 1)..<s2], as: UTF8.self)) else { return nil }
            let kind = payload[s2 + 1]
            guard kind == UInt8(ascii: "r") || kind == UInt8(ascii: "n") else { return nil }
            return .live(session: name, prev: prev, id: id, revision: kind == UInt8(ascii: "r"), record: Array(payload[(s2 + 2)...]))
        default:
            return nil
        }
    }
}
