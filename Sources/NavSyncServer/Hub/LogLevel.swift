import NavSync
/// How much a log line matters: the hub says it with `Effect.log`, and the runtime's
/// logger prints lines at or above its configured level (`--log-level`).
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case debug, info, warn, error, off

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }

    /// The level a `--log-level` name stands for.
    public init?(name: String) {
        switch name.lowercased() {
        case "debug": self = .debug
        case "info": self = .info
        case "warn", "warning": self = .warn
        case "error": self = .error
        case "off", "none", "quiet": self = .off
        default: return nil
        }
    }
}
