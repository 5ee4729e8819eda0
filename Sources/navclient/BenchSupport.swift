import Foundation
import NavSync
import NavSyncLibuv

/// A flag one thread sets and another polls.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var set = false
    var value: Bool {
        get { lock.lock(); defer { lock.unlock() }; return set }
        set { lock.lock(); set = newValue; lock.unlock() }
    }
}

/// p50/p90/p99/max of nanosecond samples, shown in milliseconds.
struct Percentiles {
    let p50, p90, p99, max: Double
    let count: Int

    init(_ samples: [UInt64]) {
        let sorted = samples.sorted()
        count = sorted.count
        func at(_ q: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            return Double(sorted[min(sorted.count - 1, Int(q * Double(sorted.count)))]) / 1e6
        }
        p50 = at(0.5); p90 = at(0.9); p99 = at(0.99)
        self.max = Double(sorted.last ?? 0) / 1e6
    }

    var text: String { String(format: "p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  max %.2f ms  (%d samples)", p50, p90, p99, max, count) }
    var json: JSON { ["p50": .double(p50), "p90": .double(p90), "p99": .double(p99), "max": .double(max)] }
}

/// CPU time and resident memory of a process, from /proc.
struct ProcessStats {
    let cpuSeconds: Double
    let rssKiB: Int

    static func read(_ pid: Int32?) -> ProcessStats? {
        guard let pid, let stat = FileSystem.read("/proc/\(pid)/stat"), let status = FileSystem.read("/proc/\(pid)/status") else { return nil }
        // Fields after the ")" of the command name: utime is 14th, stime 15th overall.
        let text = String(decoding: stat, as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let utime = Double(fields[11]), let stime = Double(fields[12]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let rss = String(decoding: status, as: UTF8.self).split(separator: "\n")
            .first { $0.hasPrefix("VmRSS:") }.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        return ProcessStats(cpuSeconds: (utime + stime) / ticks, rssKiB: rss)
    }
}

func progress(_ line: String) {
    let bytes = Array("\r\u{1B}[K\(line)".utf8)
    guard isatty(2) != 0 else { return }
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

enum Stderr {
    static func line(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }
}

