@preconcurrency import Glibc

/// Monotonic nanoseconds (the latency histogram; the loop's own clock is `Server.now`).
public func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}
