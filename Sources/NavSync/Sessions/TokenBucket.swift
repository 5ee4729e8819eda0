/// A token bucket: `rate` tokens a second, at most `burst` saved up. Time is passed in
/// (ms), so tests need no sleeping.
public struct TokenBucket: Sendable, Equatable {
    public let rate: Double
    public let burst: Double
    private var tokens: Double
    private var last: Int64

    public init(rate: Double, burst: Int, now: Int64) {
        self.rate = rate
        self.burst = Double(burst)
        tokens = Double(burst)
        last = now
    }

    /// Takes one token if there is one.
    public mutating func take(now: Int64) -> Bool {
        if now > last {
            tokens = min(burst, tokens + Double(now - last) * rate / 1000)
            last = now
        }
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
