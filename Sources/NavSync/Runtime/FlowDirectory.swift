@preconcurrency import Glibc

/// Loading flows from a directory (`navsyncd --flows DIR`): every `*.json` file, in
/// name order, each checked by `Flow.load`; any refusal names the file.
public enum FlowDirectory {
    public static func load(_ path: String) throws(FlowError) -> [Flow] {
        guard let dir = opendir(path) else {
            throw FlowError(file: path, path: "", message: "cannot open the directory: \(String(cString: strerror(errno)))")
        }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasSuffix(".json") && !name.hasPrefix(".") { names.append(name) }
        }
        closedir(dir)
        var flows: [Flow] = []
        var seen: [String: String] = [Flow.demo.name: "the built-in demo flow"]
        for name in names.sorted() {
            let file = path.hasSuffix("/") ? path + name : path + "/" + name
            guard let bytes = readFile(file) else {
                throw FlowError(file: file, path: "", message: "cannot read: \(String(cString: strerror(errno)))")
            }
            let flow = try Flow.load(bytes: bytes, file: file)
            if let other = seen[flow.name] {
                throw FlowError(file: file, path: "name", message: "flow name '\(flow.name)' is already used by \(other)")
            }
            seen[flow.name] = file
            flows.append(flow)
        }
        return flows
    }

    /// A whole file, or nil.
    public static func readFile(_ path: String) -> [UInt8]? {
        guard let f = fopen(path, "rb") else { return nil }
        defer { fclose(f) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&chunk, 1, chunk.count, f)
            if n > 0 { out.append(contentsOf: chunk[0..<n]) }
            if n < chunk.count { return ferror(f) == 0 ? out : nil }
        }
    }
}

/// Random identities for a running server: client ids and session epochs.
public enum RandomIDs {
    public static func hex(_ bytes: Int) -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in
            let b = UInt8.random(in: 0...255, using: &g)
            return String(b >> 4, radix: 16) + String(b & 15, radix: 16)
        }.joined()
    }
}

/// Monotonic nanoseconds.
public func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

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

extension AccessPolicy {
    /// Reads and checks an auth file (`navsyncd --auth FILE`).
    public static func load(file: String) throws(FlowError) -> AccessPolicy {
        guard let bytes = FlowDirectory.readFile(file) else {
            throw FlowError(file: file, path: "", message: "cannot read: \(String(cString: strerror(errno)))")
        }
        return try load(bytes: bytes, file: file)
    }
}
