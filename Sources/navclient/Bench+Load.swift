import Dispatch
import NavSync
import NavSyncLibuv

/// One run of `navclient bench` with members (`Bench.runLoad`): its state, shared by
/// the members' and publishers' callbacks on the loop, and its steps.
final class LoadRun {
    let bench: Bench
    let loop: ClientLoop
    let stats = MemberStats()
    let slowStats = Bench.SlowStats()
    let publisherStats = Bench.PublisherStats()
    let publishersDone = DispatchSemaphore(value: 0)
    let publishersFinished = Flag()
    let sessionNames: [String]
    /// Members per session, slow ones left out (they do not count for "last member").
    var membersPerSession: [String: Int] = [:]
    var members: [WebSocketClient] = []
    var joined = 0
    var failure: String?
    /// When the publishers started (0: not yet).
    var started: UInt64 = 0
    var serverBefore: ProcessStats?
    private var closing = false

    typealias MemberStats = Bench.MemberStats

    init(_ bench: Bench) {
        self.bench = bench
        loop = bench.makeLoop()
        sessionNames = (1...bench.sessions).map { "bench-\($0)" }
        for i in bench.slow..<max(bench.slow, bench.clients) { membersPerSession[sessionNames[i % bench.sessions], default: 0] += 1 }
        serverBefore = ProcessStats.read(bench.pid)
    }

    /// Every member connects and joins its session; the publishers start once all have.
    func joinMembers() {
        stats.joinStarted = monotonicNanoseconds()
        for i in 0..<bench.clients {
            let m = WebSocketClient(loop: loop, url: bench.urls[i % bench.urls.count], compression: bench.compression)
            let session = sessionNames[i % bench.sessions]
            m.onOpen = { m.send(text: Array(#"{"type":"join","session":"\#(session)","create":true}"#.utf8)) }
            m.onText = i < bench.slow ? slowMember(m, index: i) : member(index: i, session: session)
            m.onClose = { [unowned self] _, reason in
                if started == 0 && failure == nil { failure = reason; loop.stop() }
            }
            members.append(m)
            m.connect()
        }
    }

    /// A member that stops reading once joined (until the publishers stop).
    private func slowMember(_ m: WebSocketClient, index i: Int) -> ([UInt8]) -> Void {
        { [unowned self, unowned m] bytes in
            guard let message = try? JSON.parse(bytes) else { return }
            switch message["type"]?.stringValue {
            case "joined":
                m.pauseReading()
                memberJoined()
            case "patch":
                slowStats.patches += 1
                slowStats.rev[i] = Int(message["rev"]?.intValue ?? 0)
            case "snapshot":
                slowStats.snapshots[i, default: 0] += 1
                slowStats.rev[i] = Int(message["rev"]?.intValue ?? 0)
                slowStats.caughtUp[i] = monotonicNanoseconds()
            default: break
            }
        }
    }

    /// A member counting deliveries: patches are recognized unparsed (the generator must
    /// not be the bottleneck), and the last member's arrival is noted per command.
    private func member(index i: Int, session: String) -> ([UInt8]) -> Void {
        let sessionIndex = Int64(i % bench.sessions)
        let sessions = Int64(bench.sessions)
        let expected = Int32(membersPerSession[session] ?? 0)
        // Called for every message a member reads (millions a second): the stats and the
        // loop it touches are captured strongly, so a call holds them with no reference
        // counting; through `[unowned self]` each message paid a checked retain and a
        // release of each, and the generator read 0.7x the messages. (The member lets go
        // of this closure when it closes; the run outlives its members.)
        return { [unowned(unsafe) self, stats, loop] bytes in
            if let id = Bench.patchCommand(bytes) {
                stats.deliveries += 1
                stats.lastDelivery = loop.now
                guard id >= 0 else { return }
                let slot = Int((id &* sessions &+ sessionIndex) & Int64(MemberStats.ringSize - 1))
                stats.received[slot] += 1
                if stats.received[slot] == expected { stats.lastArrival[slot] = monotonicNanoseconds() }
                return
            }
            if Bench.isPresence(bytes) {
                stats.presence += 1
                return
            }
            // `joined` carries the state, the flow and the member list: counted
            // unparsed, so the generator does not become the bottleneck of a join storm.
            if bytes.withUnsafeBufferPointer({ Bench.startsWith($0, Bench.joinedPrefix) }) { return memberJoined() }
            guard let message = try? JSON.parse(bytes) else { return }
            if message["type"] == "error" {
                stats.errors[message["code"]?.stringValue ?? "?", default: 0] += 1
                if failure == nil, joined < bench.clients { failure = "join refused: \(message["message"]?.stringValue ?? "")"; loop.stop() }
            }
        }
    }

    private func memberJoined() {
        joined += 1
        if joined == bench.clients {
            stats.allJoined = monotonicNanoseconds()
            startPublishers()
        }
    }

    /// Without members, one short connection per session creates it (joins and
    /// leaves), then the publishers start: a pure write load.
    func createSessions() {
        var created = 0
        for session in sessionNames {
            let c = WebSocketClient(loop: loop, url: bench.url)
            c.onOpen = { c.send(text: Array(#"{"type":"join","session":"\#(session)","create":true}"#.utf8)) }
            var done = false
            c.onText = { [unowned self, unowned c] bytes in
                guard let m = try? JSON.parse(bytes), m["type"] == "joined" || m["type"] == "error" else { return }
                if m["type"] == "error", failure == nil { failure = "join refused: \(m["message"]?.stringValue ?? "")"; loop.stop() }
                c.send(text: Array(#"{"type":"leave","session":"\#(session)"}"#.utf8))
                c.close()
                done = true
                created += 1
                if created == sessionNames.count { startPublishers() }
            }
            // Only a creator closed before its session was made is a failure (one
            // that closed after its own join, while another is still joining, is not).
            c.onClose = { [unowned self] _, reason in
                if !done && failure == nil { failure = "creating '\(session)': \(reason.isEmpty ? "connection closed" : reason)"; loop.stop() }
            }
            members.append(c)
            c.connect()
        }
    }

    /// The publishers, on a loop and thread of their own; the members close a while
    /// after they stop (at the duration, or once --commands are all answered).
    private func startPublishers() {
        started = monotonicNanoseconds()
        stats.publishingStarted = loop.now
        stats.bytesAtStart = members.reduce(0) { $0 + $1.bytesIn }
        serverBefore = ProcessStats.read(bench.pid)
        let (bench, sessionNames, publisherStats, publishersDone, publishersFinished) =
            (self.bench, self.sessionNames, self.publisherStats, self.publishersDone, self.publishersFinished)
        startThread {
            let ploop = bench.makeLoop()
            let publishers = sessionNames.flatMap { session in
                (0..<bench.publishers).map { Bench.Publisher(loop: ploop, url: bench.urls[$0 % bench.urls.count], session: session, index: $0, bench: bench, stats: publisherStats) }
            }
            func stopAll() {
                guard publisherStats.stoppedAt == 0 else { return }
                publisherStats.stoppedAt = monotonicNanoseconds()
                publishers.forEach { $0.stop() }
                ploop.after(100) { ploop.stop() }
            }
            // With --commands, the run ends once every command is answered.
            let total = bench.commands.map { $0 * publishers.count }
            for p in publishers {
                p.onAnswered = {
                    guard let total, publisherStats.acked + publisherStats.errors.values.reduce(0, +) >= total else { return }
                    stopAll()
                }
            }
            publishers.forEach { $0.start() }
            ploop.after(Int64(bench.duration * 1000)) { stopAll() }
            // Optimized builds may release `publishers` after its last use above.
            withExtendedLifetime(publishers) {
                ploop.run()
                ploop.shutdown()
            }
            publishersFinished.value = true
            publishersDone.signal()
        }
        loop.after(Int64(bench.duration * 1000)) { [unowned self] in closeMembers() }
        loop.every(100) { [unowned self] in if publishersFinished.value { closeMembers() } }
    }

    /// Members keep reading a second after the publishers stop (slow ones read again).
    private func closeMembers() {
        guard !closing else { return }
        closing = true
        slowStats.resumed = monotonicNanoseconds()
        for m in members.prefix(bench.slow) { m.resumeReading() }
        loop.after(bench.slow > 0 ? 3_000 : 1_000) { [unowned self] in
            for m in members { m.close() }
            loop.after(200) { [unowned self] in loop.stop() }
        }
    }

    /// Deliveries per second while publishing, joins before.
    func showProgress() {
        var lastDeliveries = 0
        loop.every(1000) { [unowned self] in
            guard started > 0 else {
                progress("connecting: \(joined)/\(bench.clients) members joined")
                return
            }
            let elapsed = Double(monotonicNanoseconds() - started) / 1e9
            progress(String(format: "%5.1fs  deliveries %9d/s", elapsed, stats.deliveries - lastDeliveries))
            lastDeliveries = stats.deliveries
        }
    }

    /// After the loop ended: the figures (or why the run failed).
    func finish() -> Int32 {
        if let failure {
            Stderr.line("navclient bench: \(failure)")
            return 1
        }
        publishersDone.wait()
        if let f = publisherStats.failure {
            Stderr.line("navclient bench: publisher: \(f)")
            return 1
        }
        let elapsed = Double(monotonicNanoseconds() - started) / 1e9
        let spans = Bench.Spans(total: elapsed,
                                publishing: publisherStats.stoppedAt > started ? Double(publisherStats.stoppedAt - started) / 1e9 : elapsed,
                                delivering: stats.lastDelivery > stats.publishingStarted ? Double(stats.lastDelivery - stats.publishingStarted) / 1e3 : elapsed)
        let serverAfter = ProcessStats.read(bench.pid)
        // Command -> last member: the last member's arrival minus the send time.
        var lastMember: [UInt64] = []
        for (index, session) in sessionNames.enumerated() {
            for (id, sent) in publisherStats.sent[session] ?? [:] {
                let slot = Int((id &* Int64(bench.sessions) &+ Int64(index)) & Int64(MemberStats.ringSize - 1))
                let arrival = stats.lastArrival[slot]
                if arrival > sent { lastMember.append(arrival &- sent) }
            }
        }
        var errors = publisherStats.errors
        for (k, v) in stats.errors { errors[k, default: 0] += v }
        let wireBytes = members.reduce(0) { $0 + $1.bytesIn } - stats.bytesAtStart
        bench.report(deliveries: stats.deliveries, wireBytes: wireBytes, acked: publisherStats.acked, errors: errors,
                     ack: Percentiles(publisherStats.ackLatencies), last: Percentiles(lastMember), spans: spans,
                     before: serverBefore, after: serverAfter, slow: slowStats,
                     joins: (seconds: bench.clients == 0 ? 0 : Double(stats.allJoined &- stats.joinStarted) / 1e9, presence: stats.presence))
        return 0
    }
}
