import NavSync
import NavSyncServer
import NavSyncLibuv
@preconcurrency import Glibc

/// The files of a data directory, as the journal writer sees them: one folder per
/// session, `NAME.session/`, holding `snapshot-REV.json` (the session at revision REV)
/// and `journal-REV.log` (the records of the revisions after REV).
///
/// Once the writer thread has started, only it touches this object (before, only the
/// loop thread restoring sessions did), hence `@unchecked Sendable`.
final class JournalFiles: @unchecked Sendable {
    enum Op {
        /// A new session: its folder, its snapshot at revision 0 and an empty journal.
        case create(session: String, snapshot: [UInt8])
        /// One record at the end of the session's journal.
        case append(session: String, record: [UInt8])
        /// A snapshot of the session after the records before it; the journal continues
        /// in a new segment and the older files go (compaction). Encoded on the writer
        /// thread. Skipped, like everything after it, if an earlier record of the batch
        /// failed, so it never covers a revision that was not written.
        case snapshot(session: String, Sequencer)
        /// Reads the session back as it is on disk (after a failed write): its snapshot
        /// and the journal up to the length known good.
        case reload(session: String, flow: Flow, configuration: HubConfiguration)
        /// The session was deleted: its folder and files go.
        case delete(session: String)

        var session: String {
            switch self {
            case .create(let s, _), .append(let s, _), .snapshot(let s, _), .reload(let s, _, _), .delete(let s): return s
            }
        }
    }

    struct SessionFile {
        var segment: Int
        var fd: Int32
        /// Bytes of records.
        var length: Int
        /// Bytes the file holds: records, then zeros written ahead (see `reserve`).
        var allocated: Int
        /// After a reserve failed (a full disk): the length before trying again.
        var reserveRetryAt = 0
    }

    /// Journals grow by this much of zeros at a time. Appending into blocks that are
    /// already written leaves the file's size and extents alone, so a sync flushes the
    /// data only, without a filesystem journal commit (what databases do with their
    /// write-ahead logs). A scan ends at the zeros.
    static let reserveChunk = 1 << 20

    struct Outcome {
        /// Sessions whose writes failed, and why; their part of the batch is undone.
        var failed: [String: String] = [:]
        /// Sessions whose creation failed (they never reached the disk).
        var creationFailed: Set<String> = []
        /// Sessions that could not be read back (`reload`).
        var reloadFailed: Set<String> = []
        /// Sessions read back from disk (`reload`).
        var reloaded: [String: Sequencer] = [:]
        /// Bytes of each snapshot written.
        var snapshotSizes: [String: Int] = [:]
        /// Lines for the log (snapshots written, compaction trouble).
        var notes: [String] = []
        var records = 0
        var bytes = 0
        var syncs = 0
    }

    struct IOFailure: Error, CustomStringConvertible {
        let description: String
        init(_ what: String, _ path: String, _ code: Int32 = errno) {
            description = "\(what) \(path): \(String(cString: strerror(code)))"
        }
        init(message: String) { description = message }
    }

    let root: String
    let mode: DataStore.Sync
    var files: [String: SessionFile] = [:]
    /// Sessions whose write failed: their ops are skipped until the `reload` (or, for a
    /// failed creation, a new `create`) the loop thread sends once it knows, since they
    /// were made on top of what failed.
    private var poisoned: Set<String> = []

    init(root: String, mode: DataStore.Sync) {
        self.root = root
        self.mode = mode
    }

    deinit { for f in files.values { close(f.fd) } }

    static func folder(of session: String) -> String { session + ".session" }
    func folder(_ session: String) -> String { root + "/" + Self.folder(of: session) }
    func journalPath(_ session: String, _ f: SessionFile) -> String { folder(session) + "/" + Self.journalName(f.segment) }
    static func snapshotName(_ rev: Int) -> String { "snapshot-\(rev).json" }
    static func journalName(_ rev: Int) -> String { "journal-\(rev).log" }

    /// Runs one batch (on the `JournalWriter` thread). With `always` each record is written
    /// and synced on its own; otherwise a session's records of the batch go out in one
    /// write (and, with `batch`, one sync). A session's first failure undoes its appends
    /// of this batch and skips the rest of its ops; other sessions go on.
    func run(_ ops: [Op]) -> Outcome {
        var out = Outcome()
        var startLength: [String: Int] = [:]
        var buffered: [String: [UInt8]] = [:]
        var order: [String] = []
        func fail(_ session: String, _ error: Error) {
            out.failed[session] = "\(error)"
            poisoned.insert(session)
            buffered[session] = nil
            if let f = files[session], let start = startLength[session] {
                _ = ftruncate(f.fd, off_t(start))
                files[session]!.length = start
                files[session]!.allocated = start
            }
        }
        /// Writes what is buffered for the session at the end of its journal.
        func flush(_ s: String) throws(IOFailure) {
            guard let bytes = buffered.removeValue(forKey: s), let f = files[s] else { return }
            reserve(s, bytes.count)
            try Self.writeAll(f.fd, bytes, at: f.length, path: journalPath(s, f))
            files[s]!.length += bytes.count
        }
        for op in ops {
            let s = op.session
            guard out.failed[s] == nil else { continue }
            if poisoned.contains(s) {
                switch op {
                case .reload, .create, .delete: poisoned.remove(s)
                default: continue
                }
            }
            do throws(IOFailure) {
                switch op {
                case .create(_, let snapshot):
                    do { try create(s, snapshot: snapshot, out: &out) } catch {
                        out.creationFailed.insert(s)
                        throw error
                    }
                case .append(_, let record):
                    guard let f = files[s] else { throw IOFailure("no journal open for", folder(s), EBADF) }
                    if startLength[s] == nil {
                        startLength[s] = f.length
                        order.append(s)
                    }
                    out.records += 1
                    out.bytes += record.count
                    if mode == .always {
                        reserve(s, record.count)
                        try Self.writeAll(f.fd, record, at: f.length, path: journalPath(s, f))
                        files[s]!.length += record.count
                        try sync(f.fd, journalPath(s, f), &out)
                    } else {
                        buffered[s, default: []].append(contentsOf: record)
                    }
                case .snapshot(_, let sequencer):
                    try flush(s)
                    do {
                        let bytes = DataStore.snapshot(of: sequencer, name: s)
                        try compact(s, rev: sequencer.rev, bytes: bytes, out: &out)
                        out.snapshotSizes[s] = bytes.count
                        startLength[s] = 0   // a later failure of this batch cuts the new segment
                    } catch {
                        // The journal stays as it was and keeps growing; the next
                        // snapshot tries again.
                        out.notes.append("session '\(s)': snapshot at revision \(sequencer.rev) not written: \(error)")
                    }
                case .delete:
                    // What this batch still holds for it is moot: the session is gone.
                    buffered[s] = nil
                    startLength[s] = nil
                    order.removeAll { $0 == s }
                    try delete(s)
                case .reload(_, let flow, let configuration):
                    guard let f = files[s] else { throw IOFailure("no journal open for", folder(s), EBADF) }
                    do {
                        out.reloaded[s] = try Self.load(folder(s), segment: f.segment, flow: { _ in flow }, configuration: configuration,
                                                        journalLimit: f.length).sequencer
                    } catch {
                        out.reloadFailed.insert(s)
                        throw IOFailure(message: "reading it back failed: \(error)")
                    }
                }
            } catch {
                fail(s, error)
            }
        }
        for s in order where out.failed[s] == nil {
            do throws(IOFailure) {
                try flush(s)
                if mode == .batch, let f = files[s] { try sync(f.fd, journalPath(s, f), &out) }
            } catch {
                fail(s, error)
            }
        }
        return out
    }

    /// Removes a deleted session's files and folder, then syncs the parent folder so the
    /// deletion survives a crash (a restart must not bring the session back).
    private func delete(_ s: String) throws(IOFailure) {
        if let f = files.removeValue(forKey: s) { close(f.fd) }
        let dir = folder(s)
        for entry in Self.listDirectory(dir) where unlink(dir + "/" + entry) != 0 && errno != ENOENT {
            throw IOFailure("cannot remove", dir + "/" + entry)
        }
        guard rmdir(dir) == 0 || errno == ENOENT else { throw IOFailure("cannot remove", dir) }
        let parent = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if parent >= 0 {
            defer { close(parent) }
            if mode != .off && fsync(parent) != 0 { throw IOFailure("fsync", root) }
        }
    }

    /// Makes room for `count` more bytes of records: zeros written ahead, synced once.
    /// Best effort: on a disk too full for a chunk the records are appended as they
    /// come (and fail only when they themselves do not fit); the next try waits a chunk.
    private func reserve(_ s: String, _ count: Int) {
        guard let f = files[s], f.length + count > f.allocated, f.length >= f.reserveRetryAt else { return }
        let from = max(f.allocated, f.length)
        let target = (f.length + count + Self.reserveChunk - 1) / Self.reserveChunk * Self.reserveChunk
        do {
            try Self.writeAll(f.fd, [UInt8](repeating: 0, count: target - from), at: from, path: journalPath(s, f))
            if mode != .off && fsync(f.fd) != 0 { throw IOFailure("fsync", journalPath(s, f)) }
            files[s]!.allocated = target
        } catch {
            _ = ftruncate(f.fd, off_t(f.length))
            files[s]!.allocated = f.length
            files[s]!.reserveRetryAt = f.length + Self.reserveChunk
        }
    }

    private func sync(_ fd: Int32, _ path: String, _ out: inout Outcome) throws(IOFailure) {
        guard mode != .off else { return }
        out.syncs += 1
        guard fdatasync(fd) == 0 else { throw IOFailure("fdatasync", path) }
    }

    private func create(_ s: String, snapshot: [UInt8], out: inout Outcome) throws(IOFailure) {
        let dir = folder(s)
        guard mkdir(dir, 0o755) == 0 || errno == EEXIST else { throw IOFailure("mkdir", dir) }
        try writeFileDurably(dir + "/" + Self.snapshotName(0), snapshot)
        let path = dir + "/" + Self.journalName(0)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw IOFailure("open", path) }
        if mode != .off {
            guard Self.syncDirectory(dir), Self.syncDirectory(root) else {
                close(fd)
                throw IOFailure("fsync", dir)
            }
        }
        if let old = files[s] { close(old.fd) }
        files[s] = SessionFile(segment: 0, fd: fd, length: 0, allocated: 0)
        out.bytes += snapshot.count
    }

    /// Snapshot at `rev`, a new journal segment after it, then the old files go.
    private func compact(_ s: String, rev: Int, bytes: [UInt8], out: inout Outcome) throws(IOFailure) {
        guard let old = files[s] else { throw IOFailure("no journal open for", folder(s), EBADF) }
        let dir = folder(s)
        try writeFileDurably(dir + "/" + Self.snapshotName(rev), bytes)
        out.bytes += bytes.count
        if rev != old.segment {
            let path = dir + "/" + Self.journalName(rev)
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw IOFailure("open", path) }
            if mode != .off && !Self.syncDirectory(dir) {
                close(fd)
                throw IOFailure("fsync", dir)
            }
            close(old.fd)
            files[s] = SessionFile(segment: rev, fd: fd, length: 0, allocated: 0)
        }
        var removed = 0
        for (name, r) in Self.revisionFiles(in: dir) where r < rev {
            if unlink(dir + "/" + name) == 0 { removed += 1 }
        }
        out.notes.append("session '\(s)': snapshot at revision \(rev); \(removed) older files removed")
    }

    /// Writes `path` whole or not at all: a temporary file, synced, renamed over it.
    func writeFileDurably(_ path: String, _ bytes: [UInt8]) throws(IOFailure) {
        let tmp = path + ".tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw IOFailure("open", tmp) }
        do throws(IOFailure) {
            try Self.writeAll(fd, bytes, at: 0, path: tmp)
            if mode != .off && fsync(fd) != 0 { throw IOFailure("fsync", tmp) }
        } catch {
            close(fd)
            unlink(tmp)
            throw error
        }
        close(fd)
        guard rename(tmp, path) == 0 else {
            let code = errno
            unlink(tmp)
            throw IOFailure("rename", path, code)
        }
        if mode != .off, let slash = path.lastIndex(of: "/") { _ = Self.syncDirectory(String(path[..<slash])) }
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8], at offset: Int, path: String) throws(IOFailure) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, $0.count - done, off_t(offset + done)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw IOFailure("write", path)
            }
            done += n
        }
    }

    static func syncDirectory(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return fsync(fd) == 0
    }

    /// `snapshot-REV.json` and `journal-REV.log` files of a session folder, with REV.
    static func revisionFiles(in dir: String) -> [(name: String, rev: Int)] {
        listDirectory(dir).compactMap { name in
            for (prefix, suffix) in [("snapshot-", ".json"), ("journal-", ".log")] where name.hasPrefix(prefix) && name.hasSuffix(suffix) {
                if let rev = Int(name.dropFirst(prefix.count).dropLast(suffix.count)), rev >= 0 { return (name, rev) }
            }
            return nil
        }
    }

    /// A session as its files hold it: the snapshot of `segment`, then the records of the
    /// journal after it (up to `journalLimit` bytes, if given), replayed one by one.
    /// The scan's verdict and the offset of a record that does not apply are returned
    /// for the caller to decide (start-up cuts, refuses or repairs).
    struct Loaded {
        var sequencer: Sequencer
        var scan: JournalScan
        /// The offset of the first record that did not apply, and why.
        var badRecord: (offset: Int, rev: Int, reason: String)?
        var replayed: Int
    }

    static func load(_ dir: String, segment: Int, flow: (String) -> Flow?, configuration: HubConfiguration,
                     journalLimit: Int? = nil) throws(DataStore.Failure) -> Loaded {
        let snapPath = dir + "/" + snapshotName(segment)
        guard let bytes = FileSystem.read(snapPath) else {
            throw DataStore.Failure("\(snapPath): cannot read: \(String(cString: strerror(errno)))")
        }
        let json: JSON
        do { json = try JSON.parse(bytes) } catch { throw DataStore.Failure("\(snapPath): not a snapshot: \(error)") }
        guard let flowName = json["flow"]?.stringValue, let f = flow(flowName) else {
            throw DataStore.Failure("\(snapPath): the session uses flow '\(json["flow"]?.stringValue ?? "?")', which is not loaded (pass --flows with it)")
        }
        var sequencer: Sequencer
        do {
            sequencer = try Sequencer(restoring: json, flow: f, limits: configuration.limits.model,
                                      idempotencyCapacity: configuration.idempotency, logCapacity: configuration.patchLog,
                                      historyCapacity: configuration.history)
        } catch {
            throw DataStore.Failure("\(snapPath): \(error)")
        }
        let journalPath = dir + "/" + journalName(segment)
        var journal = FileSystem.read(journalPath) ?? []
        if let journalLimit, journal.count > journalLimit { journal.removeLast(journal.count - journalLimit) }
        let scan = Journal.scan(journal, checksum: { crc32($0) })
        var loaded = Loaded(sequencer: sequencer, scan: scan, badRecord: nil, replayed: 0)
        for (record, offset) in zip(scan.records, scan.offsets) {
            do throws(SnapshotError) {
                try loaded.sequencer.replay([record])
                loaded.replayed += 1
            } catch {
                loaded.badRecord = (offset, record.rev, error.description)
                break
            }
        }
        if journalLimit != nil {
            if let p = scan.problem { throw DataStore.Failure("\(journalPath): \(p)") }
            if let bad = loaded.badRecord { throw DataStore.Failure("\(journalPath): the record at offset \(bad.offset) does not apply: \(bad.reason)") }
        }
        return loaded
    }

    static func listDirectory(_ path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }
}
