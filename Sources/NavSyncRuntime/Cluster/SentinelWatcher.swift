import NavSync
import NavSyncServer
import NavSyncLibuv
@preconcurrency import Glibc

/// Finds a Sentinel-monitored primary and follows it (`redis+sentinel://`): asks one
/// Sentinel `SENTINEL get-master-addr-by-name` at start, every second and whenever
/// the store asks, and listens on `+switch-master` for a failover as it happens. A
/// Sentinel that does not answer is skipped for the next one of the list.
final class SentinelWatcher {
    let sentinels: [RedisURL.Host]
    let master: String
    /// The primary the Sentinels named (first, or changed).
    var onPrimary: ((RedisURL.Host) -> Void)?
    var logger: Logger?

    private(set) var primary: RedisURL.Host?
    /// Why no primary is known (no Sentinel answers, or none knows the master).
    private(set) var problem: String? = "asking the Sentinels"
    private var index = 0
    /// Why each Sentinel that failed last did (all of them named when none answers).
    private var failures: [Int: String] = [:]
    private let query: RedisConnection
    private let events: RedisConnection

    init(server: Server, url: RedisURL, tls: TLSContext?) {
        sentinels = url.hosts
        master = url.master ?? ""
        query = RedisConnection(loop: server.loop, target: url.hosts[0], db: nil, subscriber: false, tls: tls)
        events = RedisConnection(loop: server.loop, target: url.hosts[0], db: nil, subscriber: true, tls: tls)
        let password = url.sentinelPassword
        query.credentials = { (nil, password) }
        events.credentials = { (nil, password) }
        logger = server.logger
        query.onReady = { [unowned self] in
            failures[index] = nil
            ask()
        }
        query.onDown = { [unowned self] reason in skip(reason) }
        events.onReady = { [unowned self] in
            events.send(["SUBSCRIBE", "+switch-master"]) { _ in }
        }
        events.onDown = { [unowned self] _ in events.retarget(sentinels[index]) }
        events.onMessage = { [unowned self] in switched($0) }
        server.every(1_000) { [unowned self] in ask() }
    }

    var sentinel: RedisURL.Host { sentinels[index] }

    func start() {
        query.connect()
        events.connect()
    }

    func stop() {
        query.stop()
        events.stop()
    }

    /// Asks the current Sentinel where the primary is now.
    func ask() {
        guard query.isReady else { return }
        query.send(["SENTINEL", "get-master-addr-by-name", master]) { [unowned self] result in
            switch result {
            case .success(.array(let a)) where a.count == 2:
                guard let ip = a[0].text, let port = a[1].int.map(Int.init), (1...65535).contains(port) else { fallthrough }
                problem = nil
                found(RedisURL.Host(name: ip, port: port))
            case .success(.null), .success(.array):
                problem = "the Sentinel at \(sentinel) does not know the master '\(master)'"
            case .success(let other):
                problem = "the Sentinel at \(sentinel) answered \(other)"
            case .failure(let f):
                problem = "the Sentinel at \(sentinel): \(f.reason)"
            }
        }
    }

    private func found(_ host: RedisURL.Host) {
        guard host != primary else { return }
        if let primary { logger?.warn("cluster: Sentinel says the primary of '\(master)' moved from \(primary) to \(host)") }
        primary = host
        onPrimary?(host)
    }

    /// `+switch-master`: `MASTER OLD-IP OLD-PORT NEW-IP NEW-PORT`.
    private func switched(_ reply: RedisReply) {
        guard let parts = reply.array, parts.count == 3, let text = parts[2].text else { return }
        let words = text.split(separator: " ")
        guard words.count == 5, words[0] == master, let port = Int(words[4]) else { return }
        found(RedisURL.Host(name: String(words[3]), port: port))
    }

    /// This Sentinel did not answer: the next one.
    private func skip(_ reason: String) {
        failures[index] = reason
        problem = "no Sentinel answers: " + failures.keys.sorted().map { "\(sentinels[$0]): \(failures[$0]!)" }.joined(separator: "; ")
        guard sentinels.count > 1 else { return }
        index = (index + 1) % sentinels.count
        query.retarget(sentinels[index])
        events.retarget(sentinels[index])
    }
}
