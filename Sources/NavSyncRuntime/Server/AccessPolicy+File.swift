import NavSync
import NavSyncServer
import NavSyncLibuv
@preconcurrency import Glibc

extension AccessPolicy {
    /// Reads and checks an auth file (`navsyncd --auth FILE`).
    public static func load(file: String) throws(FlowError) -> AccessPolicy {
        guard let bytes = FileSystem.read(file) else {
            throw FlowError(file: file, path: "", message: "cannot read: \(String(cString: strerror(errno)))")
        }
        return try load(bytes: bytes, file: file)
    }
}
