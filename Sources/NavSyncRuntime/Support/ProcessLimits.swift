import NavSync
@preconcurrency import Glibc

/// Raises the soft open-files limit to the hard one (thousands of connections need
/// thousands of descriptors); returns the limit now in force.
@discardableResult
public func raiseOpenFilesLimit() -> Int {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
    if limit.rlim_cur < limit.rlim_max {
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
    return Int(limit.rlim_cur)
}
