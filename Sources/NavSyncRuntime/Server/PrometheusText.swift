import NavSync
import NavSyncServer
/// Builds the Prometheus text exposition format (version 0.0.4): `# HELP`, `# TYPE`,
/// then samples.
public struct PrometheusText: Sendable {
    public private(set) var text = ""

    public init() {}

    public mutating func gauge(_ name: String, _ help: String, _ value: Int, labels: String = "") {
        header(name, help, "gauge")
        text += "\(name)\(labels) \(value)\n"
    }

    /// A gauge of a fractional value (seconds, ratios).
    public mutating func gauge(_ name: String, _ help: String, _ value: Double) {
        header(name, help, "gauge")
        text += "\(name) \(value)\n"
    }

    /// A gauge with one sample per label set: `[("session=\"demo\"", 5), ...]`.
    public mutating func gauge(_ name: String, _ help: String, labelled samples: [(String, Int)]) {
        header(name, help, "gauge")
        for (labels, value) in samples { text += "\(name){\(labels)} \(value)\n" }
    }

    public mutating func counter(_ name: String, _ help: String, _ value: Int) {
        header(name, help, "counter")
        text += "\(name) \(value)\n"
    }

    /// A counter with one sample per label set: `[("result=\"applied\"", 5), ...]`.
    public mutating func counter(_ name: String, _ help: String, labelled samples: [(String, Int)]) {
        header(name, help, "counter")
        for (labels, value) in samples { text += "\(name){\(labels)} \(value)\n" }
    }

    /// A histogram from cumulative bucket counts; `bounds` in the unit of `sum`.
    public mutating func histogram(_ name: String, _ help: String, bounds: [Double], cumulative: [Int], sum: Double, count: Int) {
        header(name, help, "histogram")
        for (bound, c) in zip(bounds, cumulative) { text += "\(name)_bucket{le=\"\(bound)\"} \(c)\n" }
        text += "\(name)_bucket{le=\"+Inf\"} \(count)\n\(name)_sum \(sum)\n\(name)_count \(count)\n"
    }

    private mutating func header(_ name: String, _ help: String, _ type: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }
}
