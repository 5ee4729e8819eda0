import NavSync
import NavSyncServer
import NavSyncLibuv
import CUV
@preconcurrency import Glibc

/// `navsyncd --data DIR`: every session kept on disk (docs/protocol.md, "Durable sessions (--data DIR)"). The
/// runtime's side of the hub's `journal` effects.
///
/// The hub numbers its journal entries; the store turns each into a file op and
/// collects the ops of the loop iteration into a batch. Before the loop sleeps the batch
/// goes to the writer thread (`JournalWriter`), which writes it — and, with `--fsync
/// always` or `batch`, syncs it — while the loop goes on; batches that queue while it
/// syncs are written together (group commit). When batches are done, `onResult` gets a
/// `JournalResult` for the hub: the newest entry written and the sessions that failed.
///
/// Layout: `DIR/LOCK` (flock: one server per directory), `DIR/sessions/NAME.session/`
/// with `snapshot-REV.json` and `journal-REV.log` (see `JournalFiles`).
public final class DataStore {
    public enum Sync: String, Sendable, CaseIterable {
        /// Each record is synced on its own before its command is acknowledged.
        case always
        /// All records of a batch are written, then synced once per session (group commit).
        case batch
        /// Written before acknowledging, synced when the OS decides.
        case off
    }

    /// Why the data directory cannot be used; names the file and, for a bad record, the offset.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    public let path: String
    public let sync: Sync
    /// Records after which a session's journal is compacted into a new snapshot.
    public let snapshotEvery: Int
    let files: JournalFiles
    private let lock: DirectoryLock
    let logger: Logger

    /// The ops of this loop iteration, and the newest hub entry among them (the batch's
    /// number: the writer reports results by it).
    private var gathering: [JournalFiles.Op] = []
    private var gatheringThrough = 0
    /// The newest entry handed to the writer.
    private var submittedThrough = 0
    private var writer: JournalWriter?
    private let configuration: HubConfiguration
    /// Records and bytes journaled since each session's snapshot, and its size: a new
    /// snapshot is taken after `snapshotEvery` records once the journal has grown as
    /// large as the snapshot (so snapshots cost at most what the journal does, like
    /// Redis's AOF rewrite at 100% growth).
    private var sinceSnapshot: [String: (records: Int, bytes: Int)] = [:]
    private var snapshotSize: [String: Int] = [:]

    public private(set) var batchesWritten = 0
    public private(set) var recordsWritten = 0
    public private(set) var bytesWritten = 0
    public private(set) var syncs = 0
    public private(set) var failedWrites = 0

    /// Batches are done: what they mean, for the hub (`Hub.Event.journal`).
    public var onResult: ((JournalResult) -> Void)?

    private init(path: String, sync: Sync, snapshotEvery: Int, lock: DirectoryLock, configuration: HubConfiguration, logger: Logger) {
        self.path = path
        self.sync = sync
        self.snapshotEvery = snapshotEvery
        self.lock = lock
        self.configuration = configuration
        self.logger = logger
        files = JournalFiles(root: path + "/sessions", mode: sync)
    }

    // MARK: Writing

    /// Turns a hub entry into file ops. No sequencer is kept unless a snapshot is due:
    /// holding one would make the session's next command copy its tables.
    public func write(_ entry: JournalEntry) {
        gatheringThrough = entry.seq
        switch entry.op {
        case .create(let name, _, let sequencer):
            gathering.append(.create(session: name, snapshot: Self.snapshot(of: sequencer, name: name)))
            sinceSnapshot[name] = (0, 0)
        case .append(let name, let record, let sequencer):
            let bytes = record.encoded(checksum: { crc32($0) })
            gathering.append(.append(session: name, record: bytes))
            var since = sinceSnapshot[name] ?? (0, 0)
            since.records += 1
            since.bytes += bytes.count
            sinceSnapshot[name] = since
            if since.records >= snapshotEvery && since.bytes >= snapshotSize[name, default: 0] {
                // Encoded on the writer thread; this copy costs the next command one
                // copy-on-write of the session's tables, once per snapshot.
                gathering.append(.snapshot(session: name, sequencer))
                sinceSnapshot[name] = (0, 0)
            }
        case .reload(let name, let flow):
            gathering.append(.reload(session: name, flow: flow, configuration: configuration))
            sinceSnapshot[name] = (0, 0)
        case .delete(let name):
            gathering.append(.delete(session: name))
            sinceSnapshot[name] = nil
            snapshotSize[name] = nil
        }
    }

    static func snapshot(of sequencer: Sequencer, name: String) -> [UInt8] {
        sequencer.encodedSnapshot(session: name)
    }

    /// Hands the gathered batch to the writer thread. Called once per loop iteration,
    /// before the loop sleeps: one batch per iteration, merged by the writer with the
    /// others that queued while it synced (group commit).
    public func submit(on loop: UnsafeMutablePointer<uv_loop_t>) {
        writer?.deliver()
        // An empty batch still goes when entries were gathered and then dropped (they
        // built on a failed write): the hub waits for their number to pass.
        guard gatheringThrough > submittedThrough else { return }
        if writer == nil {
            writer = JournalWriter(files: files, loop: loop) { [unowned self] results in
                for r in results { completed(r.through, r.outcome) }
            }
        }
        writer!.enqueue(gatheringThrough, gathering)
        submittedThrough = gatheringThrough
        gathering = []
    }

    /// The server is stopping: the writer finishes what is queued, then lets the loop end.
    public func stop() { writer?.close() }

    private func completed(_ through: Int, _ outcome: JournalFiles.Outcome) {
        batchesWritten += 1
        recordsWritten += outcome.records
        bytesWritten += outcome.bytes
        syncs += outcome.syncs
        for note in outcome.notes { logger.info("data: \(note)") }
        var result = JournalResult(through: through, reloaded: outcome.reloaded)
        for (name, reason) in outcome.failed {
            failedWrites += 1
            // What was gathered since builds on what failed: it goes too (the writer
            // skips what is already queued, until the hub's reload).
            gathering.removeAll { $0.session == name }
            if outcome.creationFailed.contains(name) {
                sinceSnapshot[name] = nil
                snapshotSize[name] = nil
                result.failed[name] = .creation(reason)
            } else if outcome.reloadFailed.contains(name) {
                result.failed[name] = .reload(reason)
            } else {
                result.failed[name] = .append(reason)
            }
        }
        for (name, size) in outcome.snapshotSizes { snapshotSize[name] = size }
        onResult?(result)
    }

    // MARK: Opening and restoring

    /// Locks the directory (creating it if needed) and restores every session in it.
    /// A torn last record is cut off with a log line; a corrupt record in the middle, a
    /// record that does not apply or a snapshot that does not load refuses to start,
    /// naming the file and offset, unless `repair` (then the journal is cut there).
    public static func open(path: String, sync: Sync, repair: Bool, snapshotEvery: Int = 50_000, flows: [Flow],
                            configuration: HubConfiguration, logger: Logger) throws(Failure) -> (DataStore, [Session]) {
        signal(SIGXFSZ, SIG_IGN)  // a file-size limit is an I/O error (EFBIG), not death
        let sessionsDir = path + "/sessions"
        // Like mkdir -p: the directory and any missing parents.
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in (path + "/sessions").split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw Failure("cannot create the data directory \(prefix): \(String(cString: strerror(errno)))")
            }
        }
        let lock = try DirectoryLock(path + "/LOCK", owner: path)
        let store = DataStore(path: path, sync: sync, snapshotEvery: snapshotEvery, lock: lock, configuration: configuration, logger: logger)
        var byName: [String: Flow] = [Flow.demo.name: Flow.demo]
        for f in flows { byName[f.name] = f }
        var sessions: [Session] = []
        for entry in JournalFiles.listDirectory(sessionsDir) where entry.hasSuffix(".session") {
            let name = String(entry.dropLast(".session".count))
            guard ClientRequest.isValidSessionName(name) else {
                logger.warn("data: \(sessionsDir)/\(entry) is not a session folder; ignored")
                continue
            }
            if let session = try store.restore(name, flows: byName, repair: repair) {
                sessions.append(session)
            }
        }
        return (store, sessions)
    }

    private func restore(_ name: String, flows: [String: Flow], repair: Bool) throws(Failure) -> Session? {
        let dir = files.folder(name)
        for entry in JournalFiles.listDirectory(dir) where entry.hasSuffix(".tmp") { unlink(dir + "/" + entry) }
        let revisionFiles = JournalFiles.revisionFiles(in: dir)
        guard let snapRev = revisionFiles.filter({ $0.name.hasPrefix("snapshot-") }).map(\.rev).max() else {
            logger.warn("data: \(dir) has no snapshot (its creation never finished); ignored")
            return nil
        }
        let loaded = try JournalFiles.load(dir, segment: snapRev, flow: { flows[$0] }, configuration: configuration)
        let journalPath = dir + "/" + JournalFiles.journalName(snapRev)
        var keep = loaded.scan.validLength
        switch loaded.scan.problem {
        case nil: break
        case .tornTail(let offset):
            logger.warn("data: \(journalPath): torn last record at offset \(offset) (a crash mid-write); cut off")
        case .corrupt(let offset):
            guard repair else {
                throw Failure("\(journalPath): corrupt record at offset \(offset), with good records after it; refusing to start. navsyncd --repair cuts the journal at that offset (the records after it are lost)")
            }
            logger.warn("data: --repair: \(journalPath) cut at offset \(offset); the records after it are dropped")
        }
        if let bad = loaded.badRecord {
            guard repair else {
                throw Failure("\(journalPath): the record at offset \(bad.offset) (revision \(bad.rev)) does not apply: \(bad.reason); refusing to start. navsyncd --repair cuts the journal there")
            }
            logger.warn("data: --repair: \(journalPath) cut at offset \(bad.offset) (revision \(bad.rev) does not apply: \(bad.reason))")
            keep = bad.offset
        }
        let fd = Glibc.open(journalPath, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Failure("\(journalPath): cannot open: \(String(cString: strerror(errno)))") }
        guard ftruncate(fd, off_t(keep)) == 0, fsync(fd) == 0 else {
            close(fd)
            throw Failure("\(journalPath): cannot cut to \(keep) bytes: \(String(cString: strerror(errno)))")
        }
        // Files an interrupted compaction left behind.
        for (entry, rev) in revisionFiles where rev < snapRev { unlink(dir + "/" + entry) }
        files.files[name] = JournalFiles.SessionFile(segment: snapRev, fd: fd, length: keep, allocated: keep)
        let sequencer = loaded.sequencer
        sinceSnapshot[name] = (loaded.replayed, keep)
        var info = stat()
        snapshotSize[name] = stat(dir + "/" + JournalFiles.snapshotName(snapRev), &info) == 0 ? Int(info.st_size) : 0
        logger.info("data: session '\(name)' restored at revision \(sequencer.rev) (snapshot \(snapRev), \(loaded.replayed) records replayed)")
        return Session(name: name, flow: sequencer.document.flow, sequencer: sequencer)
    }
}
