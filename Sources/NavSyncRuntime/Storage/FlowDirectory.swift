import NavSync
import NavSyncServer
import NavSyncLibuv
@preconcurrency import Glibc

/// Loading flows from a directory (`navsyncd --flows DIR`): every `*.json` file, in
/// name order, each parsed by jansson and checked by `Flow.load`; any refusal names the
/// file.
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
            guard let bytes = FileSystem.read(file) else {
                throw FlowError(file: file, path: "", message: "cannot read: \(String(cString: strerror(errno)))")
            }
            let json: JSON
            do { json = try Jansson.parse(bytes) } catch { throw FlowError(file: file, path: "", message: "not valid JSON: \(error)") }
            let flow = try Flow.load(json, file: file)
            if let other = seen[flow.name] {
                throw FlowError(file: file, path: "name", message: "flow name '\(flow.name)' is already used by \(other)")
            }
            seen[flow.name] = file
            flows.append(flow)
        }
        return flows
    }
}
