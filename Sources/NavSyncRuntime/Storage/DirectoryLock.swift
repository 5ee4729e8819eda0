import NavSync
import NavSyncServer
import NavSyncLibuv
@preconcurrency import Glibc

/// `DIR/LOCK`: an flock held while the server runs, so a second navsyncd on the same
/// data directory is refused and told the first one's pid (written into the file).
/// Released when the process ends, however it ends, or when this is freed.
final class DirectoryLock {
    private let fd: Int32

    /// `owner` names the directory in the refusal.
    init(_ path: String, owner: String) throws(DataStore.Failure) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw DataStore.Failure("cannot open \(path): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = FileSystem.read(path).map { String(decoding: $0, as: UTF8.self).filter { !$0.isWhitespace } } ?? ""
            close(fd)
            throw DataStore.Failure("the data directory \(owner) is in use by another navsyncd\(holder.isEmpty ? "" : " (pid \(holder))")")
        }
        _ = ftruncate(fd, 0)
        try? JournalFiles.writeAll(fd, Array("\(getpid())\n".utf8), at: 0, path: path)
        self.fd = fd
    }

    deinit { close(fd) }
}
