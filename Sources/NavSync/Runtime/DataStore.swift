import CUV
@preconcurrency import Glibc

/// `navsyncd --data DIR`: every session kept on disk (DESIGN.md section 9).
///
/// The hub reports each change (`Hub.Change`); the store turns it into a journal op and
/// collects the ops of the loop iteration into a batch. Before the loop sleeps the batch
/// goes to the writer thread (`JournalWriter`), which writes it — and, with `--fsync
/// always` or `batch`, syncs it — while the loop goes on; batches that queue while it
/// syncs are written together (group commit). When batches are done the loop thread is
/// told through `onDurable`, and the session server releases what it held for them
/// (`DurabilityGate`).
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
    private let lockFD: Int32
    let logger: Logger

    private var gathering: [JournalFiles.Op] = []
    private var writer: JournalWriter?
    /// Batches are numbered from 1 as they are handed to the writer: the number the
    /// batch being gathered will get, and the newest known written.
    private var nextNumber = 1
    public private(set) var durableThrough = 0
    /// Each session on disk or on its way there, with its flow (to read it back with).
    private var sessionFlows: [String: Flow] = [:]
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

    /// What a finished batch means for sessions whose writes failed.
    public enum Event {
        /// Its creation was never recorded: it must go.
        case gone(session: String, reason: String)
        /// A write failed: its revisions since the last durable one never happened. It is
        /// being read back from disk; until then its commands must be refused.
        case reloading(session: String, reason: String)
        /// Read back: the session as it is on disk.
        case reloaded(session: String, Sequencer)
        /// It could not be read back either: it must go until a restart.
        case lost(session: String, reason: String)
    }

    /// A batch is on disk (or failed): its number, and what it means for sessions.
    public var onDurable: ((_ batch: Int, _ events: [Event]) -> Void)?

    /// The batch new output must wait for, or nil when everything is on disk.
    public var outstanding: Int? { !gathering.isEmpty ? nextNumber : nextNumber - 1 > durableThrough ? nextNumber - 1 : nil }

    private init(path: String, sync: Sync, snapshotEvery: Int, lockFD: Int32, configuration: HubConfiguration, logger: Logger) {
        self.path = path
        self.sync = sync
        self.snapshotEvery = snapshotEvery
        self.lockFD = lockFD
        self.configuration = configuration
        self.logger = logger
        files = JournalFiles(root: path + "/sessions", mode: sync)
    }

    deinit { close(lockFD) }

    /// Whether the store holds this session (restored or created through it).
    public func knows(_ session: String) -> Bool { sessionFlows[session] != nil }

    // MARK: Recording

    /// Turns a change into journal ops. No sequencer is kept: holding one would make the
    /// session's next command copy its tables (copy-on-write), at every command.
    public func record(_ change: Hub.Change) {
        switch change {
        case .created(let session):
            gathering.append(.create(session: session.name, snapshot: Self.snapshot(of: session.sequencer, name: session.name)))
            sessionFlows[session.name] = session.flow
            sinceSnapshot[session.name] = (0, 0)
        case .applied(let name, let record, let sequencer):
            let bytes = record.encoded()
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
        }
    }

    static func snapshot(of sequencer: Sequencer, name: String) -> [UInt8] {
        guard case .object(var o) = sequencer.snapshot() else { preconditionFailure("a snapshot is an object") }
        o["session"] = .string(name)
        return JSON.object(o).encoded()
    }

    /// Hands the gathered batch to the writer thread. Called once per loop iteration,
    /// before the loop sleeps: one batch per iteration, merged by the writer with the
    /// others that queued while it synced (group commit).
    public func submit(on loop: UnsafeMutablePointer<uv_loop_t>) {
        writer?.deliver()
        guard !gathering.isEmpty else { return }
        if writer == nil {
            writer = JournalWriter(files: files, loop: loop) { [unowned self] results in
                for r in results { completed(r.through, r.outcome) }
            }
        }
        let number = nextNumber
        nextNumber += 1
        writer!.enqueue(number, gathering)
        gathering = []
    }

    /// The server is stopping: the writer finishes what is queued, then lets the loop end.
    public func stop() { writer?.close() }

    private func completed(_ through: Int, _ outcome: JournalFiles.Outcome) {
        durableThrough = through
        batchesWritten += 1
        recordsWritten += outcome.records
        bytesWritten += outcome.bytes
        syncs += outcome.syncs
        for note in outcome.notes { logger.info("data: \(note)") }

        var events: [Event] = []
        for (name, reason) in outcome.failed.sorted(by: { $0.key < $1.key }) {
            failedWrites += 1
            // What was gathered since builds on what failed: it goes too.
            gathering.removeAll { $0.session == name }
            if outcome.creationFailed.contains(name) {
                sessionFlows[name] = nil
                sinceSnapshot[name] = nil
                snapshotSize[name] = nil
                events.append(.gone(session: name, reason: reason))
            } else if outcome.reloadFailed.contains(name) {
                events.append(.lost(session: name, reason: reason))
            } else {
                gathering.insert(.reload(session: name, flow: sessionFlows[name]!, configuration: configuration), at: 0)
                sinceSnapshot[name] = (0, 0)
                events.append(.reloading(session: name, reason: reason))
            }
        }
        for (name, size) in outcome.snapshotSizes { snapshotSize[name] = size }
        for (name, sequencer) in outcome.reloaded.sorted(by: { $0.key < $1.key }) {
            events.append(.reloaded(session: name, sequencer))
        }
        onDurable?(through, events)
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
        let lockPath = path + "/LOCK"
        let fd = Glibc.open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Failure("cannot open \(lockPath): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = FlowDirectory.readFile(lockPath).map { String(decoding: $0, as: UTF8.self).trimmingSpaces } ?? ""
            close(fd)
            throw Failure("the data directory \(path) is in use by another navsyncd\(holder.isEmpty ? "" : " (pid \(holder))")")
        }
        _ = ftruncate(fd, 0)
        try? JournalFiles.writeAll(fd, Array("\(getpid())\n".utf8), at: 0, path: lockPath)

        let store = DataStore(path: path, sync: sync, snapshotEvery: snapshotEvery, lockFD: fd, configuration: configuration, logger: logger)
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
        sessionFlows[name] = sequencer.document.flow
        sinceSnapshot[name] = (loaded.replayed, keep)
        var info = stat()
        snapshotSize[name] = stat(dir + "/" + JournalFiles.snapshotName(snapRev), &info) == 0 ? Int(info.st_size) : 0
        logger.info("data: session '\(name)' restored at revision \(sequencer.rev) (snapshot \(snapRev), \(loaded.replayed) records replayed)")
        return Session(name: name, flow: sequencer.document.flow, sequencer: sequencer)
    }
}

private extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let c = s.last, c.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
