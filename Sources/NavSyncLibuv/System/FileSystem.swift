import NavSync
@preconcurrency import Glibc

/// Whole files, read at start (flows, auth files) or for a lock's holder.
public enum FileSystem {
    /// A whole file, or nil.
    public static func read(_ path: String) -> [UInt8]? {
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
