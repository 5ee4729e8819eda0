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

/// The kernel's cap on a listening socket's queue of connections not yet accepted
/// (`net.core.somaxconn`, 4096 on current kernels); 511 where it cannot be read. A
/// herd of clients connecting at once overflows a shorter queue, and the kernel then
/// drops their SYNs, which they send again only after 1, 3, 7 s.
public func kernelListenBacklog() -> Int32 {
    guard let bytes = FileSystem.read("/proc/sys/net/core/somaxconn"),
          let n = Int32(String(decoding: bytes.filter { $0 >= 48 && $0 <= 57 }, as: UTF8.self)), n > 0 else { return 511 }
    return n
}
