import NavSync
/// A token bucket: `rate` tokens a second, at most `burst` saved up. Time is passed in
/// (ms), so tests need no sleeping. The rate and burst are passed in too: they are the
/// hub's (`HubConfiguration`), the same for every client, and a bucket kept in every
/// peer holds only what changes.
public struct TokenBucket: Sendable, Equatable {
    private var tokens: Double
    private var last: Int64

    /// A full bucket.
    public init(burst: Int, now: Int64) {
        tokens = Double(burst)
        last = now
    }

    /// Takes one token if there is one.
    public mutating func take(now: Int64, rate: Double, burst: Int) -> Bool {
        if now > last {
            tokens = min(Double(burst), tokens + Double(now - last) * rate / 1000)
            last = now
        }
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
