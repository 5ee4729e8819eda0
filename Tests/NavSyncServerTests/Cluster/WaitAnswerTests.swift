import Testing
import NavSync
@testable import NavSyncServer

/// `--redis-wait`: the hub's verdict on what WAIT and ROLE said of a write (the store
/// only reports them): acknowledged only when every replica waited for is still the
/// primary's and confirmed it, and no new one may lack it.
@Suite("Cluster: write confirmation")
struct WaitAnswerTests {
    func verdict(_ n: Int, _ waited: Set<String>, _ role: Set<String>?, lagging: Set<String> = [], attempt: Int = 0) -> WaitAnswer.Verdict {
        WaitAnswer(waited: waited, needed: max(1, waited.count), confirmed: n, replicas: role, lagging: lagging, attempt: attempt).verdict
    }

    @Test func aWriteIsAcknowledgedOnlyWhenEveryReplicaWaitedForHasIt() {
        #expect(verdict(2, ["a:1", "b:2"], ["a:1", "b:2"]) == .acknowledged)
        #expect(verdict(1, ["a:1", "b:2"], ["a:1", "b:2"]) == .unconfirmed("1 of 2 replicas confirmed it in time"))
        #expect(verdict(2, ["a:1", "b:2"], ["a:1", "c:3"]) == .unconfirmed("replica b:2 left the primary (it may be the one the Sentinels are promoting)"),
                "one left while another joined: the one that joined may have made the count")
        #expect(verdict(1, ["a:1"], ["a:1", "c:3"]) == .waitAlsoFor(["a:1", "c:3"]), "a new one is waited for too")
        #expect(verdict(1, ["a:1"], ["a:1", "c:3"], attempt: 2) == .unconfirmed("the primary's replicas kept changing"), "at most two more WAITs")
        #expect(verdict(1, ["a:1"], ["a:1", "c:3"], lagging: ["c:3"]) == .acknowledged, "not one that is not acknowledging anyway")
        #expect(verdict(2, ["a:1", "b:2"], nil) == .unconfirmed("Redis is no longer the primary"))
        #expect(WaitAnswer(waited: ["a:1"], needed: 1, replicas: nil, failure: "no answer from Redis in 3000 ms").verdict
                == .unconfirmed("no answer from Redis in 3000 ms"))
    }
}
