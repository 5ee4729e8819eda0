import NavSync
@preconcurrency import Glibc

/// Monotonic nanoseconds (the latency histogram; the loop's own clock is `Server.now`).
public func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Milliseconds since the Unix epoch (history's `ts`).
public func unixMilliseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

/// This machine's offset from UTC now, in seconds (for showing times as people read them).
public func localUTCOffset() -> Int {
    var now = time(nil)
    var parts = tm()
    localtime_r(&now, &parts)
    return parts.tm_gmtoff
}
