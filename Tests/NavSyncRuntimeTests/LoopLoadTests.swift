import Testing
@testable import NavSyncRuntime

/// When the presence tick tells the hub the server is busy (`Hub.Event.busyTick`).
@Suite("Loop load") struct LoopLoadTests {
    @Test func busyWhenTheLoopWaitedUnderATenthOfTheTime() {
        var load = LoopLoad(at: 1_000, idle: 500)
        let seen = [
            load.busy(at: 51_000, idle: 5_400),               // waited 4,900 of 50,000 ns
            load.busy(at: 101_000, idle: 10_400),             // 5,000 of 50,000: a tenth
            load.busy(at: 151_000, idle: 60_000),             // idle
            load.busy(at: 201_000, idle: 60_000),             // never waited
        ]
        #expect(seen == [true, false, false, true])
    }
}
