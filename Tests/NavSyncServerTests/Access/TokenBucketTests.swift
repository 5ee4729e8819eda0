import Testing
@testable import NavSync
@testable import NavSyncServer

/// The per-connection message rate limit (`--rate`, `--burst`).
@Suite("TokenBucket")
struct TokenBucketTests {
    /// Whether each take, at the times given, got a token.
    private func takes(_ bucket: inout TokenBucket, at times: [Int64], rate: Double, burst: Int) -> [Bool] {
        times.map { bucket.take(now: $0, rate: rate, burst: burst) }
    }

    @Test func aFullBucketGivesItsBurstThenRefusesUntilTimeRefillsIt() {
        var bucket = TokenBucket(burst: 3, now: 1_000)
        let taken = takes(&bucket, at: [1_000, 1_000, 1_000, 1_000, 1_000], rate: 10, burst: 3)
        #expect(taken == [true, true, true, false, false])
        // Half a token after 50 ms at 10 a second, a whole one after 100 ms, then none.
        let later = takes(&bucket, at: [1_050, 1_100, 1_100], rate: 10, burst: 3)
        #expect(later == [false, true, false])
    }

    @Test func refillingStopsAtTheBurst() {
        var bucket = TokenBucket(burst: 2, now: 0)
        #expect(takes(&bucket, at: [0, 0, 0], rate: 1, burst: 2) == [true, true, false])
        // An hour idle refills two tokens, not 3,600.
        #expect(takes(&bucket, at: [3_600_000, 3_600_000, 3_600_000], rate: 1, burst: 2) == [true, true, false])
    }

    @Test func aClockThatGoesBackRefillsNothing() {
        var bucket = TokenBucket(burst: 1, now: 5_000)
        // Back a second: no credit for it when the clock returns; 10 ms later, one token.
        #expect(takes(&bucket, at: [5_000, 4_000, 5_000, 5_010], rate: 100, burst: 1) == [true, false, false, true])
    }
}
