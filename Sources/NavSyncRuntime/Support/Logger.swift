import NavSync
import NavSyncServer
import CUV
@preconcurrency import Glibc

/// Log lines to standard error: `2026-11-30T00:12:03.123Z info  message`. One loop
/// thread logs; the level is fixed at start. Tokens never reach a log line: callers
/// log redacted targets (see `redactedTarget`).
public struct Logger: Sendable {
    public typealias Level = LogLevel

    public var level: Level

    public init(level: Level) { self.level = level }

    public func log(_ level: Level, _ message: @autoclosure () -> String) {
        guard level >= self.level, level != .off else { return }
        let name: String
        switch level {
        case .debug: name = "debug"
        case .info: name = "info "
        case .warn: name = "warn "
        case .error: name = "error"
        case .off: return
        }
        let line = Array("\(Self.timestamp()) \(name) \(message())\n".utf8)
        // One write(2) per line: lines from one process never interleave mid-line.
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }

    public func debug(_ m: @autoclosure () -> String) { log(.debug, m()) }
    public func info(_ m: @autoclosure () -> String) { log(.info, m()) }
    public func warn(_ m: @autoclosure () -> String) { log(.warn, m()) }
    public func error(_ m: @autoclosure () -> String) { log(.error, m()) }

    static func timestamp() -> String {
        var tv = timeval()
        gettimeofday(&tv, nil)
        var t = time_t(tv.tv_sec)
        var parts = tm()
        gmtime_r(&t, &parts)
        func pad(_ v: Int32, _ n: Int = 2) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, n - s.count)) + s
        }
        return "\(parts.tm_year + 1900)-\(pad(parts.tm_mon + 1))-\(pad(parts.tm_mday))T\(pad(parts.tm_hour)):\(pad(parts.tm_min)):\(pad(parts.tm_sec)).\(pad(Int32(tv.tv_usec / 1000), 3))Z"
    }
}

/// A request target with the values of secret query items replaced, for logs.
public func redactedTarget(_ target: String) -> String {
    guard let q = target.firstIndex(of: "?") else { return target }
    let items = target[target.index(after: q)...].split(separator: "&", omittingEmptySubsequences: false).map { item -> String in
        let name = item.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
        return ["token", "access_token"].contains(name.lowercased()) ? "\(name)=REDACTED" : String(item)
    }
    return String(target[..<q]) + "?" + items.joined(separator: "&")
}
