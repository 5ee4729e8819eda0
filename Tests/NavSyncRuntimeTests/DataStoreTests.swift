import NavSyncLibuv
@preconcurrency import Glibc
import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport
@testable import NavSyncRuntime

/// `--data DIR` for real: files on disk, a server on port 0, restarts on the same
/// directory, a journal that hits a full device.
@Suite("Loopback: durable sessions", .serialized)
struct DataStoreTests {
    /// A fresh directory under /tmp (removed by `remove`).
    static func directory() -> String {
        var template = Array("/tmp/navsync-data-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    static func remove(_ path: String) {
        guard unlink(path) != 0 else { return }
        for entry in JournalFiles.listDirectory(path) { remove(path + "/" + entry) }
        rmdir(path)
    }

    static func server(_ dir: String, sync: DataStore.Sync = .batch, snapshotEvery: Int = 10_000) throws -> TestServer {
        try TestServer { $0.shutdownGrace = 100 } application: {
            let (store, restored) = try! DataStore.open(path: dir, sync: sync, repair: false, snapshotEvery: snapshotEvery, flows: [],
                                                        configuration: HubConfiguration(), logger: Logger(level: .off))
            let hub = Hub(configuration: HubConfiguration(), flows: [], restored: restored, mode: .journaled,
                          ids: .counting(epoch: RandomIDs.hex(4) + "-"))
            return SessionServer(hub: hub, store: store)
        }
    }

    static func command(_ c: RawClient, _ id: String, _ ops: JSON, base: Int? = nil, session: String = "demo") -> JSON? {
        var m: JSONObject = ["type": "command", "session": .string(session), "id": .string(id), "ops": ops]
        if let base { m["base"] = .int(Int64(base)) }
        c.sendJSON(.object(m))
        while let r = c.nextJSON() {
            if (r["type"] == "ack" || r["type"] == "error") && r["id"] == .string(id) { return r }
        }
        return nil
    }

    /// The ops sent under each id in the restart test (a resend must be the same).
    static func sent(_ id: String) -> JSON {
        guard id != "root", let i = Int(id.dropFirst()) else { return [["op": "setRoot", "route": "main"]] }
        let push: JSON = ["op": "push", "route": "detail", "params": ["id": .int(Int64(i))]]
        // Every fifth goes through the demo's guard: redirected to sign-in, then back.
        if i % 5 == 4 { return [["op": "open", "url": .string("/orders/\(i)")], ["op": "setRoot", "route": "main"], push] }
        return [i % 3 == 2 ? ["op": "pop"] : push]
    }

    static func get(_ c: RawClient) -> JSON? {
        c.sendJSON(["type": "get", "session": "demo", "id": "get"])
        return c.next(type: "snapshot")
    }

    @Test(arguments: [DataStore.Sync.always, .batch, .off])
    func aRestartRestoresRevisionIdsEpochAndAcks(_ sync: DataStore.Sync) throws {
        let dir = Self.directory()
        defer { Self.remove(dir) }
        var acks: [String: JSON] = [:]
        let before: JSON, epoch: JSON
        do {
            let server = try Self.server(dir, sync: sync, snapshotEvery: 7)
            let (a, joined) = try RawClient.member(server)
            epoch = joined["epoch"]!
            acks["root"] = Self.command(a, "root", Self.sent("root"))
            for i in 0..<20 { acks["k\(i)"] = Self.command(a, "k\(i)", Self.sent("k\(i)")) }
            #expect(acks["k19"]?["results"] == ["redirected", "applied", "applied"], "k19 went through a guard")
            before = try #require(Self.get(a))
            #expect(before["rev"]!.intValue! > 10)
            #expect(server.running.stop())
        }
        // Compaction left one snapshot and the journal after it.
        let files = JournalFiles.listDirectory(dir + "/sessions/demo.session")
        #expect(files.filter { $0.hasPrefix("snapshot-") }.count == 1 && files.filter { $0.hasPrefix("journal-") }.count == 1, "\(files)")

        let server = try Self.server(dir, sync: sync, snapshotEvery: 7)
        defer { server.stop() }
        let rev = before["rev"]!.intValue!
        let c = try RawClient(port: server.port)
        c.upgrade(extra: "Sec-WebSocket-Protocol: navsync.v1\r\n")
        c.sendJSON(["type": "hello", "client": "c1"])
        _ = c.next(type: "welcome")
        c.sendJSON(["type": "join", "session": "demo", "since": .int(rev - 3), "epoch": epoch])
        let joined = try #require(c.next(type: "joined"))
        // Same epoch and revision; the patch log came back too, so the catch-up is patches.
        #expect(joined["epoch"] == epoch && joined["rev"] == .int(rev))
        #expect(joined["patches"]?.arrayValue?.count == 3 && joined["state"] == nil)
        #expect(Self.get(c)?["state"]?.normalized == before["state"]?.normalized)
        // A command resent after the restart gets its original ack, marked duplicate,
        // nothing applied; its id reused for another command is refused.
        for id in ["root", "k0", "k19"] {
            let again = try #require(Self.command(c, id, Self.sent(id)))
            let original = try #require(acks[id])
            #expect(again["type"] == "ack" && again["rev"] == original["rev"] && again["results"] == original["results"], "\(id)")
            #expect(again["redirects"] == original["redirects"], "\(id): a redirect's ack comes back whole")
            #expect(again["duplicate"] == true && original["duplicate"] == nil, "\(id)")
            #expect(Self.command(c, id, [["op": "reset"]])?["code"] == "id_reused", "\(id)")
        }
        // History survives the restart and the compactions before it: every acknowledged
        // command once, in revision order, and the states of past revisions.
        c.sendJSON(["type": "history", "session": "demo", "limit": 1000, "id": "h"])
        let history = try #require(c.next(type: "history"))
        #expect(history["earliest"] == 0 && history["rev"] == .int(rev))
        let listed = (history["entries"]?.arrayValue ?? []).reversed().compactMap { $0["cmd"]?.stringValue }
        #expect(listed == ["root"] + (0..<20).map { "k\($0)" }, "\(listed)")
        #expect(history["entries"]?.arrayValue?.allSatisfy { ($0["ts"]?.intValue ?? 0) > 0 } == true, "who and when came back too")
        c.sendJSON(["type": "get", "session": "demo", "rev": .int(rev - 1), "id": "old"])
        #expect(c.next(type: "snapshot")?["historic"] == true)
        // Ids never rewind: the next entry gets a new id.
        let next = try #require(Self.command(c, "after", [["op": "push", "route": "detail", "params": ["id": 99]]]))
        #expect(next["rev"] == .int(rev + 1))
        c.sendJSON(["type": "get", "session": "demo", "rev": .int(rev), "id": "past"])
        let past = try #require(c.next(type: "snapshot"))
        #expect(past["historic"] == true && past["state"]?.normalized == before["state"]?.normalized)
        let ids = Self.ids(in: Self.get(c)!["state"]!)
        #expect(Set(ids).count == ids.count)
        #expect(ids.compactMap { Int($0.dropFirst()) }.max()! > Self.ids(in: before["state"]!).compactMap { Int($0.dropFirst()) }.max()!)
        #expect(Self.command(c, "undo", [["op": "restore", "rev": 1]])?["type"] == "ack", "a revision from before the restart restores")
    }

    static func ids(in state: JSON) -> [String] {
        var out: [String] = []
        func walk(_ j: JSON) {
            switch j {
            case .object(let o):
                if let id = o["id"]?.stringValue, id.hasPrefix("e") { out.append(id) }
                for (_, v) in o { walk(v) }
            case .array(let a): a.forEach(walk)
            default: break
            }
        }
        walk(state)
        return out
    }

    /// A `restore` is journaled with the state it restored: after a restart (when
    /// history no longer holds that revision) the session is the same; with a small
    /// --snapshot-every, compaction ran in between too.
    @Test(arguments: [10_000, 3])
    func aRestoreSurvivesARestart(snapshotEvery: Int) throws {
        let dir = Self.directory()
        defer { Self.remove(dir) }
        let restored: JSON, undo: JSON
        do {
            let server = try Self.server(dir, snapshotEvery: snapshotEvery)
            let (a, _) = try RawClient.member(server)
            _ = Self.command(a, "1", [["op": "setRoot", "route": "main"]])
            _ = Self.command(a, "2", [["op": "push", "route": "detail", "params": ["id": 7]]])
            _ = Self.command(a, "3", [["op": "setRoot", "route": "login"]])
            undo = try #require(Self.command(a, "undo", [["op": "restore", "rev": 2]], base: 3))
            #expect(undo["type"] == "ack" && undo["rev"] == 4 && undo["results"] == ["applied"], "\(undo)")
            _ = Self.command(a, "5", [["op": "update", "data": ["after": true]]])
            restored = try #require(Self.get(a))
            #expect(server.running.stop())
        }
        let server = try Self.server(dir, snapshotEvery: snapshotEvery)
        defer { server.stop() }
        let (c, _) = try RawClient.member(server)
        #expect(Self.get(c)?["state"]?.normalized == restored["state"]?.normalized && Self.get(c)?["rev"] == 5)
    }

    @Test func aSecondServerCannotUseTheSameDirectory() throws {
        let dir = Self.directory()
        defer { Self.remove(dir) }
        let first = try DataStore.open(path: dir, sync: .batch, repair: false, flows: [], configuration: HubConfiguration(), logger: Logger(level: .off))
        #expect(throws: DataStore.Failure.self) {
            _ = try DataStore.open(path: dir, sync: .batch, repair: false, flows: [], configuration: HubConfiguration(), logger: Logger(level: .off))
        }
        do {
            _ = try DataStore.open(path: dir, sync: .batch, repair: false, flows: [], configuration: HubConfiguration(), logger: Logger(level: .off))
        } catch {
            #expect(error.description.contains("in use by another navsyncd (pid \(getpid()))"))
        }
        _ = first
    }

    /// The fd the server writes the demo session's journal through (from /proc).
    static func journalFD(_ dir: String) -> Int32? {
        for name in JournalFiles.listDirectory("/proc/self/fd") {
            var buffer = [CChar](repeating: 0, count: 4096)
            let n = readlink("/proc/self/fd/\(name)", &buffer, buffer.count - 1)
            guard n > 0 else { continue }
            let target = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if target.hasPrefix(dir) && target.contains("/demo.session/journal-") { return Int32(name) }
        }
        return nil
    }

    @Test func aFullDiskRejectsCommandsWithInternalKeepsReadsAndRecovers() throws {
        let dir = Self.directory()
        defer { Self.remove(dir) }
        let server = try Self.server(dir, sync: .always)
        let (a, _) = try RawClient.member(server)
        let (watcher, _) = try RawClient.member(server)
        #expect(Self.command(a, "one", [["op": "setRoot", "route": "main"]])?["rev"] == 1)
        #expect(watcher.next(type: "patch")?["rev"] == 1)

        // The journal now writes to /dev/full: every write fails with ENOSPC.
        let fd = try #require(Self.journalFD(dir))
        let saved = dup(fd)
        let full = open("/dev/full", O_WRONLY)
        dup2(full, fd)
        let refused = try #require(Self.command(a, "two", [["op": "select", "index": 1]]))
        #expect(refused["type"] == "error" && refused["code"] == "internal")
        #expect(refused["message"]?.stringValue?.contains("No space left on device") == true)
        // Nothing changed, nobody saw a patch, reads work.
        #expect(Self.get(a)?["rev"] == 1)
        #expect(Self.get(watcher)?["rev"] == 1)
        #expect(watcher.availableJSON().filter { $0["type"] == "patch" }.isEmpty)
        #expect(server.http("GET /api/sessions/demo HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").contains("\"rev\":1"))
        #expect(server.metric("navsync_journal_write_failures_total") == 1)

        // A burst while the disk is full: every command of it is refused, none applies.
        for i in 0..<10 {
            a.sendJSON(["type": "command", "session": "demo", "id": .string("burst\(i)"), "ops": [["op": "select", "index": .int(Int64(i % 2 + 1))]]])
        }
        var answers: [JSON] = []
        while answers.count < 10, let m = a.nextJSON() {
            if m["type"] == "error" || m["type"] == "ack" { answers.append(m) }
        }
        #expect(answers.count == 10 && answers.allSatisfy { $0["type"] == "error" && $0["code"] == "internal" }, "\(answers.map { "\($0["type"]!) \($0["code"] ?? .null) \($0["rev"] ?? .null)" })")
        #expect(Self.get(a)?["rev"] == 1)
        #expect(watcher.availableJSON().filter { $0["type"] == "patch" }.isEmpty)

        // Space returns: the same command (same id) now applies.
        dup2(saved, fd)
        close(saved); close(full)
        #expect(Self.command(a, "two", [["op": "select", "index": 1]])?["rev"] == 2)
        #expect(watcher.next(type: "patch")?["rev"] == 2)
        #expect(server.running.stop())

        let again = try Self.server(dir)
        defer { again.stop() }
        let (b, joined) = try RawClient.member(again)
        #expect(joined["rev"] == 2)
        #expect(Self.command(b, "three", [["op": "select", "index": 0]])?["rev"] == 3)
    }

    @Test func httpCommandsAreAnsweredOnceDurable() throws {
        let dir = Self.directory()
        defer { Self.remove(dir) }
        let server = try Self.server(dir, sync: .always)
        let post = { (body: String) in
            server.http("POST /api/sessions/demo/commands HTTP/1.1\r\nHost: t\r\nX-Navsync-Client: curl-1\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
        }
        #expect(post(#"{"id":"h1","ops":[{"op":"setRoot","route":"main"}]}"#).contains(#""rev":1"#))
        #expect(server.running.stop())
        let again = try Self.server(dir)
        defer { again.stop() }
        let body = #"{"id":"h1","ops":[{"op":"setRoot","route":"main"}]}"#
        let reply = again.http("POST /api/sessions/demo/commands HTTP/1.1\r\nHost: t\r\nX-Navsync-Client: curl-1\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
        #expect(reply.hasPrefix("HTTP/1.1 200") && reply.contains(#""rev":1"#) && reply.contains("Idempotent-Replayed: true"))
    }

    /// A journal written by hand: restore cuts a torn tail, refuses a corrupt middle
    /// (naming file and offset) and cuts there with repair.
    @Test func restoreCutsTornTailsAndRefusesCorruptMiddles() throws {
        func layout(_ journal: [UInt8]) -> String {
            let dir = Self.directory()
            let s = dir + "/sessions/demo.session"
            mkdir(dir + "/sessions", 0o755); mkdir(s, 0o755)
            let files = JournalFiles(root: dir + "/sessions", mode: .off)
            try! files.writeFileDurably(s + "/snapshot-0.json", DataStore.snapshot(of: Sequencer(flow: .demo, epoch: "e0"), name: "demo"))
            try! files.writeFileDurably(s + "/journal-0.log", journal)
            return dir
        }
        func open(_ dir: String, repair: Bool = false) throws(DataStore.Failure) -> [Session] {
            try DataStore.open(path: dir, sync: .off, repair: repair, flows: [], configuration: HubConfiguration(), logger: Logger(level: .off)).1
        }
        let records = [JournalRecord(rev: 1, client: "a", command: Command(id: .int(1), ops: [["op": "setRoot", "route": "main"]])),
                       JournalRecord(rev: 2, client: "a", command: Command(id: .int(2), ops: [["op": "select", "index": 1]])),
                       JournalRecord(rev: 3, client: "a", command: Command(id: .int(3), ops: [["op": "select", "index": 2]]))].map { $0.encoded() }
        let whole = records.flatMap { $0 }

        let torn = layout(Array(whole.dropLast(5)))
        defer { Self.remove(torn) }
        #expect(try open(torn).first?.sequencer.rev == 2)
        #expect(FileSystem.read(torn + "/sessions/demo.session/journal-0.log")?.count == records[0].count + records[1].count)

        var corrupt = whole
        corrupt[records[0].count + 10] ^= 0xFF
        let bad = layout(corrupt)
        defer { Self.remove(bad) }
        do {
            _ = try open(bad)
            Issue.record("a corrupt middle record must refuse to start")
        } catch {
            #expect(error.description.contains("journal-0.log: corrupt record at offset \(records[0].count)"), "\(error)")
        }
        #expect(try open(bad, repair: true).first?.sequencer.rev == 1)
        #expect(try open(bad).first?.sequencer.rev == 1)   // repaired for good
    }

    @Test func aSessionWhoseCreationCannotBeWrittenIsNotCreated() throws {
        let dir = Self.directory()
        defer { Self.remove(dir) }
        let server = try Self.server(dir)
        defer { server.stop() }
        // A file where the session's folder would go: its snapshot cannot be written.
        let blocker = dir + "/sessions/blocked.session"
        #expect(FileSystem.read(blocker) == nil)
        let fd = open(blocker, O_WRONLY | O_CREAT, 0o644)
        close(fd)
        let c = try RawClient(port: server.port)
        c.upgrade(extra: "Sec-WebSocket-Protocol: navsync.v1\r\n")
        c.sendJSON(["type": "join", "session": "blocked", "create": true, "id": "j1"])
        let refused = try #require(c.nextJSON())
        #expect(refused["type"] == "error" && refused["code"] == "internal" && refused["id"] == "j1", "\(refused)")
        c.sendJSON(["type": "sessions", "id": "s"])
        #expect(c.next(type: "sessions")?["sessions"]?.arrayValue?.contains { $0["session"] == "blocked" } == false)
        // Once the way is clear, the same name can be created.
        unlink(blocker)
        c.sendJSON(["type": "join", "session": "blocked", "create": true, "id": "j2"])
        #expect(c.next(type: "joined")?["rev"] == 0)
        #expect(Self.command(c, "b1", [["op": "setRoot", "route": "main"]], session: "blocked")?["rev"] == 1)
    }

    /// A deleted session's folder goes, and a restart does not bring it back.
    @Test func aDeletedSessionsFilesGo() throws {
        let dir = Self.directory()
        defer { Self.remove(dir) }
        do {
            let server = try Self.server(dir)
            let (c, _) = try RawClient.member(server, session: "demo")
            c.sendJSON(["type": "join", "session": "temp", "create": true])
            #expect(c.next(type: "joined") != nil)
            #expect(Self.command(c, "t1", [["op": "setRoot", "route": "main"]], session: "temp")?["rev"] == 1)
            #expect(JournalFiles.listDirectory(dir + "/sessions").contains("temp.session"))
            c.sendJSON(["type": "delete", "session": "temp", "id": "del"])
            #expect(c.next(type: "deleted")?["session"] == "temp")
            #expect(!JournalFiles.listDirectory(dir + "/sessions").contains("temp.session"))
            #expect(server.running.stop())
        }
        let again = try Self.server(dir)
        defer { again.stop() }
        let c = try RawClient(port: again.port)
        c.upgrade()
        c.sendJSON(["type": "sessions", "id": 1])
        #expect(c.next(type: "sessions")?["sessions"]?.arrayValue?.map { $0["session"] } == ["demo"])
    }

    /// The writer's side of a failed write: what was built on it is skipped until the
    /// reload, which reads the session back as on disk; a session that cannot be read
    /// back is reported as such.
    @Test func aFailedWriteIsCutSkippedUntilReloadAndReadBack() throws {
        let dir = Self.directory()
        defer { Self.remove(dir) }
        let files = JournalFiles(root: dir, mode: .batch)
        let session = "s"
        let record = { (rev: Int) in
            JournalRecord(rev: rev, client: "a", command: Command(id: .int(Int64(rev)), ops: [["op": "update", "entry": "e1", "data": ["n": .int(Int64(rev))]]])).encoded()
        }
        let reload = JournalFiles.Op.reload(session: session, flow: .demo, configuration: HubConfiguration())
        #expect(files.run([.create(session: session, snapshot: DataStore.snapshot(of: Sequencer(flow: .demo, epoch: "e"), name: session)),
                           .append(session: session, record: record(1))]).failed.isEmpty)

        // The journal now writes to /dev/full: the batch fails and is cut back.
        let fd = files.files[session]!.fd
        let saved = dup(fd), full = open("/dev/full", O_WRONLY)
        dup2(full, fd)
        let failed = files.run([.append(session: session, record: record(2)), .append(session: session, record: record(3))])
        #expect(failed.failed[session]?.contains("No space left on device") == true)
        dup2(saved, fd)
        close(saved); close(full)
        #expect(files.files[session]!.length == record(1).count)
        // Records made on top of what failed are skipped, not written, until the reload.
        let skipped = files.run([.append(session: session, record: record(2))])
        #expect(skipped.failed.isEmpty && skipped.records == 0 && files.files[session]!.length == record(1).count)
        let back = files.run([reload, .append(session: session, record: record(2))])
        #expect(back.reloaded[session]?.rev == 1 && back.failed.isEmpty && back.records == 1)

        // A session whose files are gone cannot be read back: reported, not reloaded.
        unlink(dir + "/s.session/snapshot-0.json")
        let lost = files.run([reload])
        #expect(lost.reloadFailed == [session] && lost.reloaded.isEmpty && lost.failed[session]?.contains("reading it back failed") == true)
    }
}

