import Testing
@testable import NavSync
import TestSupport
@testable import NavSyncRuntime

/// Cluster mode's Redis side as values: addresses and the live channel's messages.
@Suite("Cluster store")
struct ClusterStoreTests {
    @Test func streamIDsAndAddresses() {
        #expect(StreamID("12-3") == StreamID(12, 3) && StreamID("12") == nil && StreamID("a-1") == nil && StreamID("-1-2") == nil)
        #expect(StreamID(3, 1) < StreamID(3, 2) && StreamID(3, 9) < StreamID(4, 1) && StreamID(5, 1).isRevision && !StreamID(5, 2).isRevision)
        #expect(ClusterStore.Address("redis://127.0.0.1:6380/2").map { "\($0)" } == "redis://127.0.0.1:6380/2")
        #expect(ClusterStore.Address("redis://localhost").map { "\($0)" } == "redis://127.0.0.1:6379/0")
        #expect(ClusterStore.Address("redis://[::1]:7000").map { "\($0)" } == "redis://[::1]:7000/0")
        for bad in ["http://127.0.0.1:6379", "redis://127.0.0.1:0", "redis://127.0.0.1:6379/99", "redis://example.com:6379", "redis://"] {
            #expect(ClusterStore.Address(bad) == nil, "\(bad)")
        }
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
