import Foundation
import NavSync
import NavSyncLibuv

/// `navclient bench`: a load generator on the client runtime. N members in M sessions
/// read every patch; one publisher per session keeps K commands in flight (or sends at
/// a fixed rate). Prints deliveries per second, latency percentiles, errors, and the
/// server's CPU and memory when given its pid.
struct Bench {
    /// The servers; members and publishers are spread over them in turn (a cluster).
    var urls = [WebSocketURL.default]
    var url: WebSocketURL { urls[0] }
    var clients = 100
    var sessions = 1
    /// Publishers (writers) per session, each on its own connection.
    var publishers = 1
    var inFlight = 64
    var rate: Double?
    var commands: Int?
    var duration: Double = 10
    var pid: Int32?
    var idle: Int?
    /// With --idle: also join sessions (idle-0 … idle-9), not only connect.
    var idleJoin = false
    /// Members that stop reading once joined and read again when the publishers stop.
    var slow = 0
    var json = false
    /// `--cacert FILE`: what `wss://` servers are checked against.
    var cacert: String?
    /// `--compression`: members offer permessage-deflate.
    var compression = false
    /// `--update BYTES`: commands are session-data updates of a product list of about
    /// this size (realistic screen data) instead of push and pop.
    var updateBytes: Int?

    /// A loop whose `wss://` connections trust `--cacert` (or the system's CAs).
    func makeLoop() -> ClientLoop {
        let loop = ClientLoop()
        if let cacert { loop.tls = try? TLSContext.client(caFile: cacert) }
        return loop
    }

    static let usage = """
    usage: navclient bench [URL[,URL...]] [--server URL]... [options]

    Load generator: --clients members in --sessions sessions (bench-1, bench-2, ...) read
    every patch while publishers (one per session unless --publishers) send commands:
    setRoot main, then push and pop of a detail screen, alternating (each one revision
    and one patch).

      --clients N        members, spread over the sessions (default 100; 0: writers only)
      --server URL       a server (repeatable); with several (the nodes of a cluster),
                         members and publishers are spread over them in turn
      --sessions N       sessions (default 1)
      --publishers N     publishers per session, each on its own connection (default 1)
      --in-flight K      commands each publisher keeps unanswered (default 64)
      --rate R           commands per second per publisher instead of a window
      --commands N       send N commands per publisher, and end once all are answered
      --duration S       stop after S seconds at the latest (default 10)
      --pid PID          the server's pid: report its CPU time and resident memory
      --slow N           N of the members stop reading once joined and read again when the
                         publishers stop: each should get a snapshot, and the others keep pace
      --idle N           instead: open N idle connections and report server memory per connection
                         (all from one address: start navsyncd with --max-connections-per-ip above N)
      --join             with --idle: each connection also joins one of 10 sessions
      --update BYTES     publishers send an update of the session's data instead: a product
                         list of about BYTES of JSON, changing with every command
      --compression      members offer permessage-deflate; the report gives wire bytes per delivery
      --cacert FILE      check wss:// servers against the CA certificates in FILE
      --json             print the result as one JSON object

    Commands per second are counted over the time the publishers send; deliveries per
    second from the first command to the last patch a member read (members read on
    for a second after the publishers stop, three with --slow).

    exit codes: 0 done, 1 the server could not be reached or refused, 2 bad usage
    """

    static func parse(_ args: [String]) -> Result<Bench, UsageError> {
        var b = Bench()
        var rest = args[...]
        func int(_ flag: String) throws(UsageError) -> Int {
            guard let v = rest.popFirst(), let n = Int(v), n >= 0 else { throw UsageError("\(flag) needs a whole number") }
            return n
        }
        do throws(UsageError) {
            var servers: [WebSocketURL] = []
            func list(_ text: String) throws(UsageError) -> [WebSocketURL] {
                var out: [WebSocketURL] = []
                for part in text.split(separator: ",").map(String.init) {
                    guard let u = WebSocketURL(part) else { throw UsageError(WebSocketURL.refusal(part)) }
                    out.append(u)
                }
                return out
            }
            defer { if !servers.isEmpty { b.urls = servers } }
            while let arg = rest.popFirst() {
                switch arg {
                case "--clients": b.clients = try int(arg)
                case "--sessions": b.sessions = max(1, try int(arg))
                case "--publishers": b.publishers = max(1, try int(arg))
                case "--in-flight": b.inFlight = max(1, try int(arg))
                case "--rate":
                    // 0 would send nothing and report a run of silence.
                    let r = try int(arg)
                    guard r > 0 else { throw UsageError("--rate needs commands per second above 0") }
                    b.rate = Double(r)
                case "--commands": b.commands = try int(arg)
                case "--duration":
                    guard let v = rest.popFirst(), let d = Double(v), d > 0 else { throw UsageError("--duration needs seconds") }
                    b.duration = d
                case "--pid": b.pid = Int32(try int(arg))
                case "--idle": b.idle = try int(arg)
                case "--join": b.idleJoin = true
                case "--slow": b.slow = try int(arg)
                case "--json": b.json = true
                case "--compression": b.compression = true
                case "--update": b.updateBytes = try int(arg)
                case "--cacert":
                    guard let v = rest.popFirst() else { throw UsageError("--cacert needs a PEM file") }
                    do { _ = try TLSContext.client(caFile: v) } catch { throw UsageError("--cacert: \(error)") }
                    b.cacert = v
                case "-h", "--help": throw UsageError.help
                case "--server":
                    guard let v = rest.popFirst() else { throw UsageError("--server needs a URL") }
                    servers += try list(v)
                default:
                    guard !arg.hasPrefix("-"), WebSocketURL.looksLikeAddress(arg.split(separator: ",").first.map(String.init) ?? arg) else {
                        throw UsageError("unknown argument '\(arg)'")
                    }
                    servers = try list(arg) + servers
                }
            }
        } catch {
            return .failure(error)
        }
        return .success(b)
    }

    func run() -> Int32 {
        raiseOpenFilesLimit()
        return idle.map(runIdle) ?? runLoad()
    }

    // MARK: Load

    /// What the member thread observes: deliveries, and per command how many members
    /// still miss its patch, then when the last one got it.
    final class MemberStats {
        var deliveries = 0
        /// What the members had read when the publishers started (joins excluded).
        var bytesAtStart = 0
        /// Presence messages members received (docs/protocol.md, "Server messages, unasked": O(N) for N joins).
        var presence = 0
        /// When the first member connected and when the last one had joined.
        var joinStarted: UInt64 = 0
        var allJoined: UInt64 = 0
        /// Per command (slot = command id × sessions + session, in a ring): members that
        /// got its patch so far, and when the last one did. A ring of 2^20 slots holds
        /// far more commands than are ever outstanding.
        var received = [Int32](repeating: 0, count: ringSize)
        var lastArrival = [UInt64](repeating: 0, count: ringSize)
        /// The loop's clock (milliseconds) when the publishers started and at the last
        /// patch a member read: deliveries per second are counted over that span, not
        /// over the run's tail of reading after the last patch.
        var publishingStarted: Int64 = 0
        var lastDelivery: Int64 = 0
        var errors: [String: Int] = [:]
        static let ringSize = 1 << 20
    }

    /// What the publisher thread observes: when each command went out, its ack latency.
    final class PublisherStats: @unchecked Sendable {
        var sent: [String: [Int64: UInt64]] = [:]
        var ackLatencies: [UInt64] = []
        var acked = 0
        var errors: [String: Int] = [:]
        var failure: String?
        /// When the publishers stopped sending (read once their thread is done).
        var stoppedAt: UInt64 = 0
    }

    /// Members read on the main thread's loop; publishers run on a loop of their own, so
    /// a new command goes out as soon as an ack comes back, while members still read
    /// the previous patches (the server and the readers then work at the same time).
    /// The fan-out run: members join (`LoadRun.joinMembers`; with no members, one
    /// short connection per session makes it), publishers send once all joined, and the
    /// figures are reported when the members have read what was sent.
    func runLoad() -> Int32 {
        let run = LoadRun(self)
        if clients > 0 { run.joinMembers() } else { run.createSessions() }
        run.showProgress()
        run.loop.run()
        run.loop.shutdown()
        return run.finish()
    }

    /// How long the run took in all (members read on after the publishers stop), how
    /// long the publishers sent, and from their start to the last patch a member read:
    /// rates are counted over the last two.
    struct Spans {
        let total: Double
        let publishing: Double
        let delivering: Double
    }

    /// What the slow members saw once they read again.
    final class SlowStats {
        var patches = 0
        var snapshots: [Int: Int] = [:]
        /// The newest revision each one holds at the end.
        var rev: [Int: Int] = [:]
        var resumed: UInt64 = 0
        /// When each one got its (last) snapshot.
        var caughtUp: [Int: UInt64] = [:]
    }

    /// The command id of a patch message, found without parsing the whole message: the
    /// server writes `"cmd":` among the first fields. -1 for a patch without one, nil for
    /// any other message.
    static func patchCommand(_ bytes: [UInt8]) -> Int64? {
        bytes.withUnsafeBufferPointer { b -> Int64? in
            guard startsWith(b, patchPrefix) else { return nil }
            // memchr jumps from quote to quote; only a quote can start `"cmd":`.
            let window = min(b.count, 512) - cmdKey.count
            var i = patchPrefix.count
            var at: Int?
            while i < window, let q = memchr(b.baseAddress! + i, 0x22, window - i) {
                let k = UnsafeRawPointer(q) - UnsafeRawPointer(b.baseAddress!)
                if startsWith(UnsafeBufferPointer(rebasing: b[k...]), cmdKey) { at = k; break }
                i = k + 1
            }
            guard let at else { return -1 }
            return digits(in: b, at: at + cmdKey.count)?.value ?? -1
        }
    }

    /// The unsigned decimal number starting at `start`, and where it ends.
    static func digits(in b: UnsafeBufferPointer<UInt8>, at start: Int) -> (value: Int64, end: Int)? {
        var j = start
        var value: Int64 = 0
        while j < b.count, b[j] >= 48, b[j] <= 57 {
            value = value &* 10 &+ Int64(b[j] - 48)
            j += 1
        }
        return j > start ? (value, j) : nil
    }

    /// Presence floods every member at join time; members skip it unparsed.
    static func isPresence(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { startsWith($0, presencePrefix) }
    }

    static let patchPrefix = Array(#"{"type":"patch""#.utf8)
    static let presencePrefix = Array(#"{"type":"presence""#.utf8)
    static let joinedPrefix = Array(#"{"type":"joined""#.utf8)
    static let cmdKey = Array(#""cmd":"#.utf8)

    static func startsWith(_ b: UnsafeBufferPointer<UInt8>, _ prefix: [UInt8]) -> Bool {
        guard b.count >= prefix.count else { return false }
        for k in 0..<prefix.count where b[k] != prefix[k] { return false }
        return true
    }

    func report(deliveries: Int, wireBytes: Int = 0, acked: Int, errors: [String: Int], ack: Percentiles, last: Percentiles,
                spans: Spans, before: ProcessStats?, after: ProcessStats?, slow slowStats: SlowStats,
                joins: (seconds: Double, presence: Int)) {
        let revs = slowStats.rev.values
        let catchUp = Percentiles(slowStats.caughtUp.values.map { $0 &- slowStats.resumed })
        let perSecond = Double(deliveries) / spans.delivering
        let ackedPerSecond = Double(acked) / spans.publishing
        var cpuPerMillion: Double?
        if let before, let after, deliveries > 0 {
            cpuPerMillion = (after.cpuSeconds - before.cpuSeconds) / (Double(deliveries) / 1e6)
        }
        if json {
            var o: JSONObject = ["clients": .int(Int64(clients)), "sessions": .int(Int64(sessions)), "publishers": .int(Int64(publishers)), "seconds": .double(spans.total),
                                 "publishSeconds": .double(spans.publishing), "deliverySeconds": .double(spans.delivering),
                                 "deliveries": .int(Int64(deliveries)), "deliveriesPerSecond": .double(perSecond),
                                 "commands": .int(Int64(acked)), "errors": .int(Int64(errors.values.reduce(0, +))),
                                 "ackLatencyMs": ack.json, "lastMemberLatencyMs": last.json]
            if let cpuPerMillion { o["serverCpuSecondsPerMillionDeliveries"] = .double(cpuPerMillion) }
            if let after { o["serverRssKiB"] = .int(Int64(after.rssKiB)) }
            o["joinSeconds"] = .double(joins.seconds)
            if deliveries > 0 { o["wireBytesPerDelivery"] = .double(Double(wireBytes) / Double(deliveries)) }
            o["presenceMessages"] = .int(Int64(joins.presence))
            if slow > 0 {
                o["slow"] = ["members": .int(Int64(slow)), "withSnapshot": .int(Int64(slowStats.snapshots.count)),
                             "patchesAfterResume": .int(Int64(slowStats.patches)), "minRev": .int(Int64(revs.min() ?? 0)),
                             "maxRev": .int(Int64(revs.max() ?? 0)), "catchUpMs": catchUp.json]
            }
            printLine(JSON.object(o).encodedString())
            return
        }
        printLine("navclient bench: \(clients) members in \(sessions) session(s), \(publishers) publisher(s) per session, \(rate.map { "\(Int($0)) commands/s" } ?? "\(inFlight) in flight") per publisher, \(String(format: "%.1f", spans.total)) s")
        printLine(String(format: "  joins             %d members joined in %.2f s; %d presence messages received in all", clients, joins.seconds, joins.presence))
        printLine(String(format: "  deliveries        %d (%.0f/s over the %.1f s from the first command to the last patch read)", deliveries, perSecond, spans.delivering))
        printLine(String(format: "  commands acked    %d (%.0f/s over the %.1f s of publishing)", acked, ackedPerSecond, spans.publishing))
        if deliveries > 0 {
            printLine(String(format: "  wire bytes        %.0f per delivery, as members read them%@", Double(wireBytes) / Double(deliveries), compression ? " (permessage-deflate offered)" : ""))
        }
        printLine("  errors            \(errors.isEmpty ? "none" : errors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
        printLine("  command -> ack          \(ack.text)")
        printLine("  command -> last member  \(last.text)")
        if let after {
            if let cpuPerMillion { printLine(String(format: "  server CPU        %.3f s per million deliveries", cpuPerMillion)) }
            printLine("  server RSS        \(after.rssKiB) KiB")
        }
        if slow > 0 {
            printLine("  slow members      \(slow): \(slowStats.snapshots.count) caught up with a snapshot, \(slowStats.patches) patches read after resuming, revision \(revs.min() ?? 0)...\(revs.max() ?? 0) at the end (\(acked) commands acked)")
            printLine("  resume -> snapshot      \(catchUp.text)")
        }
    }
}

