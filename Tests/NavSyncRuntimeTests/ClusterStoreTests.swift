import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport
@testable import NavSyncRuntime

/// Cluster mode's Redis side as values: addresses and the live channel's messages.
@Suite("Cluster store")
struct ClusterStoreTests {
    @Test func streamIDs() {
        #expect(StreamID("12-3") == StreamID(12, 3) && StreamID("12") == nil && StreamID("a-1") == nil && StreamID("-1-2") == nil)
        #expect(StreamID(3, 1) < StreamID(3, 2) && StreamID(3, 9) < StreamID(4, 1) && StreamID(5, 1).isRevision && !StreamID(5, 2).isRevision)
    }

    @Test func redisURLs() throws {
        func url(_ s: String) throws -> RedisURL { try RedisURL(s) }
        #expect("\(try url("redis://127.0.0.1:6380/2"))" == "redis://127.0.0.1:6380/2")
        #expect("\(try url("redis://localhost"))" == "redis://localhost:6379/0")
        #expect("\(try url("redis://[::1]:7000"))" == "redis://[::1]:7000/0")
        // Credentials: percent-decoded, never printed; `:password@` is the default user.
        let acl = try url("redis://nav%2Dapp:p%40ss%3Aw%25rd@redis.internal.example:6390/3")
        #expect(acl.user == "nav-app" && acl.password == "p@ss:w%rd" && acl.hosts == [.init(name: "redis.internal.example", port: 6390)] && acl.db == 3)
        #expect("\(acl)" == "redis://nav-app@redis.internal.example:6390/3")
        let plain = try url("redis://:secret@10.0.0.5")
        #expect(plain.user == nil && plain.password == "secret" && "\(plain)" == "redis://:***@10.0.0.5:6379/0")
        #expect(try url("redis://nav@h").user == "nav" && url("redis://nav@h").password == nil)
        // TLS and its files.
        let tls = try url("rediss://h:6380?cacert=/etc/ca.pem&cert=/c.pem&key=/k.pem")
        #expect(tls.tls && tls.caFile == "/etc/ca.pem" && tls.certificateFile == "/c.pem" && tls.keyFile == "/k.pem")
        // Sentinel: several hosts, the master's name, the Sentinels' own password.
        let s = try url("rediss+sentinel://u:p@s1:26379,s2:26380,[::1]:26381/mymaster?sentinel_password=sp&db=2&cacert=/ca")
        #expect(s.tls && s.isSentinel && s.master == "mymaster" && s.hosts.map(\.port) == [26379, 26380, 26381])
        #expect(s.user == "u" && s.password == "p" && s.sentinelPassword == "sp" && s.db == 2 && s.caFile == "/ca")
        #expect("\(s)" == "rediss+sentinel://u@s1:26379,s2:26380,[::1]:26381/mymaster")
        let bad: [(String, String)] = [
            ("http://127.0.0.1:6379", "starts with redis://"), ("redis://127.0.0.1:0", "port"), ("redis://127.0.0.1:6379/99", "0-15"),
            ("redis://", "not a host name"), ("redis://a:1,b:2", "one host"), ("redis+sentinel://s:26379", "master's name"),
            ("redis://h?cacert=/x", "for rediss://"), ("rediss://h?cert=/c", "go together"), ("redis://h?nope=1", "unknown parameter"),
            ("redis://u:p%zz@h", "bad %-escape"), ("redis://ex ample", "not a host name"), ("redis://[::1", "closing ]"),
        ]
        for (text, why) in bad {
            #expect(throws: RedisURL.Invalid.self, "\(text)") { try RedisURL(text) }
            do { _ = try RedisURL(text) } catch { #expect(error.description.contains(why), "\(text): \(error)") }
        }
    }

    @Test func pagedReadsAddUpAndStartOverOnANewEpoch() throws {
        let record = try #require(ClusterRecord(json: try JSON.parse(Array(#"{"rev":1,"client":"w","command":{"id":1,"ops":[{"op":"pop"}]}}"#.utf8)),
                                                revision: true))
        func entries(_ from: Int, _ n: Int) -> [(StreamID, ClusterRecord)] { (from..<from + n).map { (StreamID($0, 1), record) } }
        func ids(_ r: ReadResult) -> [Int] {
            switch r {
            case .entries(_, let e), .whole(_, _, _, _, let e): e.map(\.0.ms)
            default: []
            }
        }
        // A full first page: read on after its last entry.
        let first: ReadResult = .whole(flow: ["name": "f"], epoch: "e", snapshot: [:], at: .zero, entries(1, 3))
        let (a, next) = ClusterStore.adding(first, to: nil, pageSize: 3)
        #expect(ids(a) == [1, 2, 3] && next == StreamID(3, 1))
        // Then entries of the same epoch: added, whole stays whole; a short page ends it.
        let (b, more) = ClusterStore.adding(.entries(epoch: "e", entries(4, 2)), to: a, pageSize: 3)
        guard case .whole(_, "e", _, .zero, _) = b else { Issue.record("\(b)"); return }
        #expect(ids(b) == [1, 2, 3, 4, 5] && more == nil)
        // A page of another epoch, or whole again, starts over (the hub then reads whole).
        let (c, _) = ClusterStore.adding(.entries(epoch: "other", entries(9, 1)), to: a, pageSize: 3)
        #expect(ids(c) == [9])
        let (d, again) = ClusterStore.adding(first, to: b, pageSize: 3)
        #expect(ids(d) == [1, 2, 3] && again == StreamID(3, 1))
        let (e, none) = ClusterStore.adding(.failed("no answer"), to: a, pageSize: 3)
        guard case .failed = e, none == nil else { Issue.record("a failed page ends the read"); return }
    }

    @Test func replicationInfoParses() {
        let info = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\nslave0:ip=127.0.0.1,port=6381,state=online,offset=4242,lag=0\r\nslave1:ip=10.0.0.2,port=6379,state=wait_bgsave,offset=0,lag=1\r\nslave_read_only:1\r\nmaster_repl_offset:4242\r\n"
        let r = ClusterStore.replication(info)
        #expect(r.role == "master" && r.replicas.count == 2)
        #expect(r.replicas[0] == ["ip": "127.0.0.1", "port": "6381", "state": "online", "offset": "4242", "lag": "0"])
        #expect(r.replicas[1]["state"] == "wait_bgsave")
        #expect(ClusterStore.replication("role:slave\r\nmaster_host:127.0.0.1\r\n").role == "slave")
    }

    /// A replica that leaves the primary is still waited for until it is back, the
    /// primary changes, or the hold runs out (it may be the one promoted): by address,
    /// so one leaving as another joins is seen too.
    @Test func aReplicaThatLeavesIsHeld() {
        var h = ReplicaHold(hold: 5_000)
        #expect(h.saw(["a:1"], at: 1_000) == ([], []) && h.saw(["a:1", "b:2"], at: 2_000) == ([], []))
        #expect(h.saw(["b:2", "c:3"], at: 3_000) == (["a:1"], []) && h.waitedFor == ["a:1", "b:2", "c:3"] && h.missing == ["a:1"],
                "one swapped for another: the count is the same, the one gone is still waited for")
        #expect(h.saw(["b:2", "c:3"], at: 4_000) == ([], []), "the drop is said once")
        #expect(h.saw(["b:2", "c:3"], at: 6_999).released.isEmpty && h.waitedFor.count == 3, "held until 5 s after it was last seen")
        #expect(h.saw(["b:2", "c:3"], at: 7_000) == ([], ["a:1"]) && h.waitedFor == ["b:2", "c:3"] && h.missing.isEmpty)
        #expect(h.saw(["c:3"], at: 8_000) == (["b:2"], []) && h.saw(["b:2", "c:3"], at: 9_000) == ([], []) && h.missing.isEmpty, "back: nothing held")
        h.reset()
        #expect(h.waitedFor.isEmpty && h.saw(["d:4"], at: 10_000) == ([], []) && h.waitedFor == ["d:4"], "a new primary's replicas are counted anew")
        var none = ReplicaHold(hold: 0)
        #expect(none.saw(["a:1", "b:2"], at: 1_000) == ([], []) && none.saw(["b:2"], at: 2_000) == ([], ["a:1"]), "--redis-wait-hold 0: no hold")
    }

    /// ROLE's answer read as the primary's online replicas (what the hub judges a write by).
    @Test func roleNamesThePrimarysReplicas() {
        let role = RedisReply.array([.string(Array("master".utf8)), .int(3129659), .array([
            .array([.string(Array("127.0.0.1".utf8)), .string(Array("9001".utf8)), .string(Array("3129242".utf8))]),
            .array([.string(Array("127.0.0.1".utf8)), .string(Array("9002".utf8)), .string(Array("3129543".utf8))]),
        ])])
        #expect(ClusterStore.roleReplicas(role) == ["127.0.0.1:9001", "127.0.0.1:9002"])
        #expect(ClusterStore.roleReplicas(.array([.string(Array("slave".utf8)), .string(Array("127.0.0.1".utf8))])) == nil)
    }

    @Test func refusalsAreSaidForOperators() {
        let at = RedisURL.Host(name: "r", port: 6379)
        #expect(RedisConnection.explain("WRONGPASS invalid username-password pair", target: at, user: "nav").contains("refused the password of user 'nav'"))
        #expect(RedisConnection.explain("NOAUTH Authentication required.", target: at, user: nil).contains("--redis-password-file"))
        #expect(RedisConnection.explain("NOPERM no permission", target: at, user: "nav").contains("lacks a permission"))
    }

    @Test func liveMessagesParseAndBrokenOnesAreRefused() {
        func event(_ text: String) -> ClusterEvent? { ClusterStore.liveEvent(session: "s", payload: Array(text.utf8)) }
        guard case .live("s", let prev, let id, let revision, let record)? = event(#"r 4-1 5-1 r{"rev":5}"#) else { Issue.record(); return }
        #expect(prev == StreamID(4, 1) && id == StreamID(5, 1) && revision && record == Array(#"{"rev":5}"#.utf8))
        guard case .live(_, _, StreamID(5, 2), false, _)? = event(#"r 5-1 5-2 n{"rev":5}"#) else { Issue.record(); return }
        guard case .presence("s", let p)? = event(#"p {"node":"a"}"#) else { Issue.record(); return }
        #expect(p["node"] == "a")
        guard case .appeared? = event("c created"), case .deleted? = event("c deleted"), case .membersWanted? = event("c members"),
              case .epochChanged? = event("c epoch") else { Issue.record(); return }
        for broken in ["", "r", "r 4-1", "r 4-1 5-1", "r 4-1 5-1 r", "r x-1 5-1 r{}", "r 4-1 5-1 q{}", "p {", "c nonsense", "z 1-1 2-1 r{}", "r4-1 5-1 r{}"] {
            #expect(event(broken) == nil, "\(broken)")
        }
    }

    @Test func readAnswersFromRedisParse() {
        let record = #"{"rev":1,"client":"w","command":{"id":1,"ops":[{"op":"pop"}]}}"#
        let entries: RedisReply = .array([.string(Array("entries".utf8)), .string(Array("ep".utf8)),
                                          .string(Array("1-1".utf8)), .string(Array("r".utf8)), .string(Array(record.utf8))])
        guard case .entries("ep", let list) = ClusterStore.readResult(entries) else { Issue.record(); return }
        #expect(list.count == 1 && list[0].0 == StreamID(1, 1) && list[0].1.revision && list[0].1.record.client == "w")
        guard case .gone = ClusterStore.readResult(.array([.string(Array("gone".utf8))])) else { Issue.record(); return }
        let broken: RedisReply = .array([.string(Array("entries".utf8)), .string(Array("ep".utf8)),
                                         .string(Array("1-1".utf8)), .string(Array("r".utf8)), .string(Array("{".utf8))])
        guard case .failed = ClusterStore.readResult(broken) else { Issue.record("a broken entry must not parse"); return }
    }
}
