import NavSync
import NavSyncServer
import NavSyncLibuv
import CSSL
import CUV
@preconcurrency import Glibc

/// The app's backend as navsyncd reaches it (docs/backend.md): the hub's hook calls
/// posted and their answers handed back, and webhook events delivered from each
/// endpoint's outbox, every request signed (Standard Webhooks). All on the loop, through
/// one `HTTPClient`; nothing here blocks or waits.
final class Backend {
    private(set) var configuration: HooksConfiguration
    /// The file it came from (re-read on SIGHUP).
    let file: String
    private var signer: WebhookSigner
    private let http: HTTPClient
    private let loop: UnsafeMutablePointer<uv_loop_t>
    private let timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
    private var timerDue: Int64?
    private(set) var outboxes: [WebhookOutbox]
    /// With `--data`: where each endpoint's cursor is kept (`webhooks.json`).
    private let cursorFile: String?
    /// Per endpoint URL, per session: the last revision delivered (`epoch`, `rev`).
    private var cursors: [String: [String: (epoch: String, rev: Int)]] = [:]
    /// Per endpoint URL: session events (`session.created`…) not yet delivered, kept in the
    /// cursor file too: history does not hold them, so they could not be made again.
    private var held: [String: [WebhookEvent]] = [:]
    /// The hub's answer: the runtime hands it to `Hub.Event.hook`.
    var onAnswer: (Int, HookReply) -> Void = { _, _ in }
    var log: (LogLevel, String) -> Void = { _, _ in }
    /// Cluster mode: revision events come from the replicas of the sessions whose lease
    /// this node holds (`Backend+Cluster.swift`), not from the hub's own revisions.
    var cluster: ClusterDelivery? {
        didSet { if cluster != nil { startClusterTimer() } }
    }
    private let clusterTimer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
    private var clusterTicks = 0
    /// Hook round trips (post to answer), for /metrics and the benchmark.
    private(set) var hookLatency = LatencyHistogram()
    private var started: [Int: UInt64] = [:]

    /// The largest hook answer taken (docs/backend.md, "The join hook").
    static let maxAnswer = 64 * 1024

    /// Reads and checks the hooks file and its secret file: errors name the file and place.
    static func load(file: String) throws(FlowError) -> (HooksConfiguration, WebhookSigner) {
        let h = try HooksFile.load(file)
        return (h.configuration, h.signer)
    }

    init(configuration: HooksConfiguration, signer: WebhookSigner, file: String, loop: UnsafeMutablePointer<uv_loop_t>, dataDirectory: String?) {
        self.configuration = configuration
        self.signer = signer
        self.file = file
        self.loop = loop
        http = HTTPClient(loop: loop, caFile: configuration.caFile)
        outboxes = configuration.webhooks.map { WebhookOutbox(endpoint: $0, maxQueue: configuration.maxQueue) }
        cursorFile = dataDirectory.map { $0 + "/webhooks.json" }
        uv_timer_init(loop, timer)
        timer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_timer_init(loop, clusterTimer)
        clusterTimer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    /// Every 50 ms: events pulled from held replicas; every second, leases renewed and taken.
    private func startClusterTimer() {
        uv_timer_start(clusterTimer, { t in
            let me = Unmanaged<Backend>.fromOpaque(t!.pointee.data).takeUnretainedValue()
            guard let cluster = me.cluster else { return }
            if me.clusterTicks % 20 == 0 { cluster.tick(endpoints: me.configuration.webhooks) }
            me.clusterTicks += 1
            let events = cluster.pull()
            guard !events.isEmpty else { return }
            let t = me.now
            for e in events { for i in me.outboxes.indices { me.outboxes[i].add(e, now: t) } }
            me.pump()
        }, 50, 50)
    }

    private var now: Int64 { Int64(uv_now(loop)) }

    /// SIGHUP: the new file's settings; outboxes of endpoints still listed keep their queues.
    func reload(_ c: HooksConfiguration, signer: WebhookSigner) {
        configuration = c
        self.signer = signer
        var kept: [String: WebhookOutbox] = [:]
        for o in outboxes { kept[o.endpoint.url] = o }
        outboxes = c.webhooks.map { e in
            guard var o = kept[e.url] else { return WebhookOutbox(endpoint: e, maxQueue: c.maxQueue) }
            o.endpoint = e
            return o
        }
        pump()
    }

    // MARK: Hooks

    /// Posts a hook call; its answer (or why none) goes to `onAnswer`.
    func call(_ hook: HookCall) {
        guard let url = configuration.url else { return onAnswer(hook.id, .failed("no \"url\" in the hooks file")) }
        let body = hook.body.encoded()
        started[hook.id] = monotonicNanoseconds()
        http.post(url, headers: signer.headers(id: "hook_" + RandomIDs.hex(12), body: body), body: body,
                  timeoutMS: configuration.timeoutMS, maxBody: Self.maxAnswer) { [unowned self] result in
            if let t = started.removeValue(forKey: hook.id) { hookLatency.record(nanoseconds: monotonicNanoseconds() &- t) }
            onAnswer(hook.id, Self.reply(result))
        }
    }

    /// What an HTTP result means as a hook answer: a 2xx with a JSON body, else why not.
    static func reply(_ result: Result<HTTPClient.Response, HTTPClient.Failure>) -> HookReply {
        switch result {
        case .failure(let f): return .failed(f.description)
        case .success(let r):
            guard (200..<300).contains(r.status) else { return .failed("HTTP \(r.status)") }
            guard let json = try? Jansson.parse(r.body) else { return .failed("the answer is not JSON") }
            return .answered(json)
        }
    }

    // MARK: Webhooks

    /// A durable event: queued for every endpoint that wants it.
    func queue(_ event: WebhookEvent) {
        // In a cluster the lease holder pulls every revision from its replica.
        if cluster != nil, event.type == "revision" { return }
        let t = now
        var keep = false
        for i in outboxes.indices {
            if !outboxes[i].add(event, now: t) {
                log(.warn, "webhooks: \(outboxes[i].endpoint.url) holds \(outboxes[i].maxQueue) events, its maxQueue: the oldest was dropped")
            }
            if cursorFile != nil, event.type != "revision", outboxes[i].endpoint.wants(event.type, session: event.session) {
                held[outboxes[i].endpoint.url, default: []].append(event)
                keep = true
            }
        }
        if keep { saveCursors() }
        pump()
    }

    /// Posts every batch that is due and sets the timer for the next.
    private func pump() {
        let t = now
        var next: Int64?
        for i in outboxes.indices {
            if let batch = outboxes[i].take(now: t, newID: { "msg_" + RandomIDs.hex(12) }) { post(batch, endpoint: i) }
            if let w = outboxes[i].wake(now: t) { next = min(next ?? w, w) }
        }
        guard let next else { return }
        if let due = timerDue, due <= next, due > t { return }
        timerDue = next
        uv_timer_start(timer, { t in
            let me = Unmanaged<Backend>.fromOpaque(t!.pointee.data).takeUnretainedValue()
            me.timerDue = nil
            me.pump()
        }, UInt64(max(0, next - t)), 0)
    }

    private func post(_ batch: WebhookOutbox.Batch, endpoint i: Int) {
        let url = outboxes[i].endpoint.url
        http.post(url, headers: signer.headers(id: batch.id, body: batch.body), body: batch.body,
                  timeoutMS: configuration.timeoutMS, maxBody: 64 * 1024) { [unowned self] result in
            guard let at = outboxes.firstIndex(where: { $0.endpoint.url == url }), outboxes[at].inflight?.id == batch.id else { return }
            switch result {
            case .success(let r) where (200..<300).contains(r.status):
                let events = outboxes[at].succeeded()
                if outboxes[at].failures > 0, outboxes[at].backoff == 0, outboxes[at].lastError != nil {
                    log(.info, "webhooks: \(url) answers again; \(outboxes[at].pending) events pending")
                }
                advance(url, past: events)
                cluster?.delivered(events, url: url)
            case .success(let r):
                fail(at, "HTTP \(r.status)")
            case .failure(let f):
                fail(at, f.description)
            }
            pump()
        }
    }

    private func fail(_ i: Int, _ why: String) {
        let first = outboxes[i].backoff == 0
        outboxes[i].failed(why, now: now)
        if first { log(.warn, "webhooks: \(outboxes[i].endpoint.url) failed (\(why)); retrying with backoff, \(outboxes[i].pending) events held") }
    }

    // MARK: Cursors (with --data)

    /// Each endpoint's last delivered revision per session, kept in the data directory:
    /// a restart resumes from it, replaying revisions the sessions' history holds.
    private func advance(_ url: String, past events: [WebhookEvent]) {
        guard cursorFile != nil else { return }
        var changed = false
        for e in events {
            if e.type == "revision" {
                cursors[url, default: [:]][e.session] = (e.epoch, e.rev)
            } else {
                held[url]?.removeAll { $0.id == e.id }
            }
            changed = true
        }
        if changed { saveCursors() }
    }

    private func saveCursors() {
        guard let cursorFile else { return }
        var endpoints = JSONObject()
        for o in outboxes {
            var sessions = JSONObject()
            for (name, c) in (cursors[o.endpoint.url] ?? [:]).sorted(by: { $0.key < $1.key }) {
                sessions[name] = ["epoch": .string(c.epoch), "rev": .int(Int64(c.rev))]
            }
            var entry: JSONObject = ["sessions": .object(sessions)]
            if let pending = held[o.endpoint.url], !pending.isEmpty { entry["pending"] = .array(pending.map(\.json)) }
            endpoints[o.endpoint.url] = .object(entry)
        }
        let bytes = JSON.object(["format": "navsync-webhooks/1", "endpoints": .object(endpoints)]).encoded()
        let tmp = cursorFile + ".tmp"
        guard let f = fopen(tmp, "wb") else { return log(.error, "webhooks: cannot write \(tmp): \(String(cString: strerror(errno)))") }
        let ok = fwrite(bytes, 1, bytes.count, f) == bytes.count
        fclose(f)
        if !ok || rename(tmp, cursorFile) != 0 { log(.error, "webhooks: cannot write \(cursorFile): \(String(cString: strerror(errno)))") }
    }

    /// At start with `--data`: each endpoint resumes after its cursor, from the revisions
    /// the restored sessions' history holds. An endpoint new to the file starts at the
    /// sessions' current revisions; a session new to a known endpoint's cursor (made
    /// after the last cursor was written) from the start of its history.
    func resume(sessions: [Session]) {
        guard let cursorFile else { return }
        var known: Set<String> = []
        if let bytes = FileSystem.read(cursorFile), let json = try? Jansson.parse(bytes), let endpoints = json["endpoints"]?.objectValue {
            for (url, value) in endpoints {
                known.insert(url)
                for (name, c) in value["sessions"]?.objectValue ?? [:] {
                    guard let epoch = c["epoch"]?.stringValue, let rev = c["rev"]?.intValue else { continue }
                    cursors[url, default: [:]][name] = (epoch, Int(rev))
                }
                held[url] = (value["pending"]?.arrayValue ?? []).compactMap(WebhookEvent.init(json:))
            }
        }
        let t = now
        var replayed = 0
        for i in outboxes.indices {
            let url = outboxes[i].endpoint.url
            // Session events kept and revisions history holds, in the order they happened
            // per session: by revision, a revision before the session events made after it.
            var again: [WebhookEvent] = held[url] ?? []
            for s in sessions.sorted(by: { $0.name < $1.name }) where outboxes[i].endpoint.wants("revision", session: s.name) {
                let seq = s.sequencer
                let from: Int
                if !known.contains(url) {
                    from = seq.rev
                    cursors[url, default: [:]][s.name] = (seq.epoch, seq.rev)
                } else if let c = cursors[url]?[s.name], c.epoch == seq.epoch {
                    from = c.rev
                } else {
                    from = seq.history.earliest
                }
                if from < seq.history.earliest {
                    log(.warn, "webhooks: \(url): revisions \(from + 1)...\(seq.history.earliest) of '\(s.name)' fell out of history undelivered")
                }
                for entry in seq.history.entries(after: max(from, seq.history.earliest)) {
                    again.append(.revision(session: s.name, epoch: seq.epoch, entry: entry))
                }
            }
            let order = Dictionary(again.enumerated().map { ($0.element.id, $0.offset) }, uniquingKeysWith: { a, _ in a })
            again.sort { a, b in
                if a.rev != b.rev { return a.rev < b.rev }
                if (a.type == "revision") != (b.type == "revision") { return a.type == "revision" }
                return order[a.id]! < order[b.id]!
            }
            for e in again { outboxes[i].add(e, now: t) }
            replayed += again.count
        }
        saveCursors()
        if replayed > 0 { log(.info, "webhooks: \(replayed) events not yet delivered before the restart are queued again") }
        pump()
    }

    // MARK: Reading

    /// `GET /api/webhooks`: each endpoint's counts.
    var status: JSON {
        let t = now
        return ["endpoints": .array(outboxes.map { o in
            var e: JSONObject = ["url": .string(o.endpoint.url), "delivered": .int(Int64(o.delivered)), "pending": .int(Int64(o.pending)),
                                 "oldestPendingMs": .int(o.oldestAge(now: t)), "failures": .int(Int64(o.failures)),
                                 "dropped": .int(Int64(o.dropped)), "batches": .int(Int64(o.batches)),
                                 "backoffMs": .int(o.backoff)]
            e["lastError"] = o.lastError.map(JSON.string) ?? .null
            return .object(e)
        }), "hooks": ["url": configuration.url.map(JSON.string) ?? .null, "inFlight": .int(Int64(started.count))]]
    }

    func close() {
        http.close()
        uv_timer_stop(timer)
        uv_close(UV.handle(timer)) { h in h!.deallocate() }
        uv_timer_stop(clusterTimer)
        uv_close(UV.handle(clusterTimer)) { h in h!.deallocate() }
    }
}

/// Standard Webhooks signatures: `webhook-signature` = `v1,` + base64(HMAC-SHA256(key,
/// id + "." + timestamp + "." + body)), one per key, space-separated while rotating.
struct WebhookSigner: Sendable {
    let keys: [[UInt8]]

    func signature(id: String, timestamp: Int64, body: [UInt8]) -> String {
        let content = Array("\(id).\(timestamp).".utf8) + body
        return keys.map { key in
            var mac = [UInt8](repeating: 0, count: 32)
            var length: UInt32 = 0
            _ = HMAC(EVP_sha256(), key, Int32(key.count), content, content.count, &mac, &length)
            return "v1," + Digests.base64(Array(mac.prefix(Int(length))))
        }.joined(separator: " ")
    }

    /// The request's headers, signed now.
    func headers(id: String, body: [UInt8], timestamp: Int64 = unixMilliseconds() / 1000) -> [String] {
        ["Content-Type: application/json", "webhook-id: \(id)", "webhook-timestamp: \(timestamp)",
         "webhook-signature: \(signature(id: id, timestamp: timestamp, body: body))"]
    }
}

/// `--hooks FILE`, read and checked (with its secret file), before the server starts.
public struct HooksFile: Sendable {
    public let file: String
    public let configuration: HooksConfiguration
    let signer: WebhookSigner

    public static func load(_ file: String) throws(FlowError) -> HooksFile {
        guard let bytes = FileSystem.read(file) else {
            throw FlowError(file: file, path: "", message: "cannot read: \(String(cString: strerror(errno)))")
        }
        let c = try HooksConfiguration.load(bytes: bytes, file: file)
        guard let secret = FileSystem.read(c.secretFile) else {
            throw FlowError(file: file, path: "secretFile", message: "cannot read \(c.secretFile): \(String(cString: strerror(errno)))")
        }
        let keys = try HooksConfiguration.secrets(from: String(decoding: secret, as: UTF8.self), file: c.secretFile)
        if let ca = c.caFile, FileSystem.read(ca) == nil {
            throw FlowError(file: file, path: "caFile", message: "cannot read \(ca): \(String(cString: strerror(errno)))")
        }
        return HooksFile(file: file, configuration: c, signer: WebhookSigner(keys: keys))
    }
}
