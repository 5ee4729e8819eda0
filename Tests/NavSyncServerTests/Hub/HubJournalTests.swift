import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

/// The durable path as a value, in the style of swift-nio-http2's state machine tests:
/// a journaled hub, fake writer results, no files and no clock. Each step names the
/// event and checks every effect it makes.
@Suite("Hub: the journal's side")
struct HubJournalTests {
    struct Fixture {
        var hub: Hub
        var now: Int64 = 0

        init() {
            hub = Hub(configuration: HubConfiguration(), flows: [studioFlow], mode: .journaled,
                      ids: .counting())
        }

        mutating func on(_ event: Hub.Event) -> [Hub.Effect] { hub.handle(event, now: now) }

        mutating func connect(_ c: Int) { #expect(on(.connected(c, grant: nil)).isEmpty) }

        mutating func send(_ c: Int, _ m: JSON) -> [Hub.Effect] { on(.text(c, m.encoded())) }

        mutating func command(_ c: Int, _ id: Int, _ ops: JSON, session: String = "demo") -> [Hub.Effect] {
            send(c, ["type": "command", "session": .string(session), "id": .int(Int64(id)), "ops": ops])
        }

        /// The journal entries among effects: number, kind, session.
        static func entries(_ effects: [Hub.Effect]) -> [String] {
            effects.compactMap {
                guard case .journal(let e) = $0 else { return nil }
                switch e.op {
                case .create(let s, _, _): return "\(e.seq) create \(s)"
                case .append(let s, let r, _): return "\(e.seq) append \(s) rev \(r.rev)"
                case .reload(let s, _): return "\(e.seq) reload \(s)"
                case .delete(let s): return "\(e.seq) delete \(s)"
                }
            }
        }

        /// What goes out to connections, as short strings: `to:type[:rev|code]`.
        static func sent(_ effects: [Hub.Effect]) -> [String] {
            func describe(_ m: ServerMessage) -> String {
                switch m {
                case .ack(_, let a): return "ack:\(a.rev)"
                case .patch(_, let p): return "patch:\(p.rev)"
                case .error(let e): return "error:\(e.code.rawValue)"
                case .joined(let j): return "joined:\(j.rev)"
                case .snapshot(_, let rev, _): return "snapshot:\(rev)"
                case .deleted(let s, _): return "deleted:\(s)"
                default: return "\(m.json()["type"]?.stringValue ?? "?")"
                }
            }
            return effects.compactMap {
                switch $0 {
                case .send(let to, let m, _): return "\(to):\(describe(m))"
                case .broadcast(_, let m, let to): return "\(to.map(String.init).joined(separator: ","))*\(describe(m))"
                case .answer(let c, _, let m, _): return "http\(c):\(describe(m))"
                default: return nil
                }
            }
        }
    }

    static let push: JSON = [["op": "update", "entry": "e1", "data": ["n": 1]]]
    static func update(_ n: Int) -> JSON { [["op": "update", "entry": "e1", "data": ["n": .int(Int64(n))]]] }

    @Test func outputWaitsForItsEntryAndLeavesInOrder() {
        var f = Fixture()
        #expect(Fixture.entries(f.on(.started)) == ["1 create demo"])
        f.connect(1)
        f.connect(2)
        #expect(f.send(1, ["type": "join", "session": "demo"]).isEmpty)      // held: entry 1 is not written
        #expect(Fixture.sent(f.on(.journal(JournalResult(through: 1)))) == ["1:joined:0"])
        #expect(Fixture.sent(f.send(2, ["type": "join", "session": "demo"])) == ["2:joined:0"])   // nothing outstanding
        #expect(Fixture.sent(f.on(.tick)) == ["1,2*presence"])                                   // presence per interval
        let c1 = f.command(1, 1, Self.update(1))
        #expect(Fixture.entries(c1) == ["2 append demo rev 1"] && Fixture.sent(c1).isEmpty)
        let c2 = f.command(2, 2, Self.update(2))
        #expect(Fixture.entries(c2) == ["3 append demo rev 2"] && Fixture.sent(c2).isEmpty)
        #expect(f.hub.heldCount == 4)
        // A ping waits too: each connection gets its messages in the order they were made.
        #expect(f.send(1, ["type": "ping"]).isEmpty)
        #expect(Fixture.sent(f.on(.journal(JournalResult(through: 2)))) == ["1,2*patch:1", "1:ack:1"])
        #expect(Fixture.sent(f.on(.journal(JournalResult(through: 3)))) == ["1,2*patch:2", "2:ack:2", "1:pong"])
        #expect(f.hub.heldCount == 0)
        // A command that changes nothing makes no entry and waits for nothing.
        #expect(Fixture.sent(f.command(1, 3, Self.update(2))) == ["1:ack:2"])
    }

    @Test func aFailedWriteFreezesRevertsAndRewritesWhatWaits() {
        var f = Fixture()
        _ = f.on(.started)
        f.connect(1)
        f.connect(2)
        _ = f.send(1, ["type": "join", "session": "demo"])
        _ = f.on(.journal(JournalResult(through: 1)))
        _ = f.command(1, 1, Self.update(1))
        _ = f.on(.journal(JournalResult(through: 2)))
        let durable = f.hub.sessions["demo"]!.sequencer   // revision 1 is on disk
        _ = f.command(1, 2, Self.update(2))                // entries 3 and 4: will fail
        _ = f.command(1, 3, Self.update(3))
        #expect(Fixture.sent(f.send(2, ["type": "join", "session": "demo", "id": "j"])).isEmpty)   // joins at revision 3, held
        #expect(f.hub.sessions["demo"]!.sequencer.rev == 3)

        // The writer: entries through 4 are done, but demo's records failed.
        let failed = f.on(.journal(JournalResult(through: 4, failed: ["demo": .append("No space left on device")])))
        #expect(Fixture.entries(failed) == ["5 reload demo"])
        #expect(Fixture.sent(failed).isEmpty)                 // nothing leaves while it is read back
        #expect(failed.contains { if case .log(.error, let line) = $0 { line.contains("No space left") } else { false } })
        // Frozen: commands are refused (the refusal waits too), reads go on.
        #expect(Fixture.sent(f.command(1, 4, Self.update(4))).isEmpty)
        #expect(f.hub.commandOutcomes["internal"] == 1)

        // Read back at revision 1: what waited is rewritten as if 2 and 3 never happened.
        let back = f.on(.journal(JournalResult(through: 5, reloaded: ["demo": durable])))
        #expect(Fixture.sent(back) == ["1:error:internal", "1:error:internal", "2:joined:1", "1:error:internal"])
        #expect(f.hub.sessions["demo"]!.sequencer.rev == 1 && f.hub.frozen.isEmpty && f.hub.heldCount == 0)
        guard case .send(2, .joined(let j), "j")? = back.first(where: { if case .send(2, _, _) = $0 { true } else { false } }),
              case .state(let state) = j.catchUp else { Issue.record("no joined"); return }
        #expect(state == durable.state.json)
        // It takes commands again, from the durable revision.
        let again = f.command(1, 5, Self.update(5))
        #expect(Fixture.entries(again) == ["6 append demo rev 2"])
        #expect(Fixture.sent(f.on(.journal(JournalResult(through: 6)))) == ["1,2*patch:2", "1:ack:2"])
    }

    @Test func aSessionWhoseCreationFailedIsNotCreated() {
        var f = Fixture()
        _ = f.on(.started)
        _ = f.on(.journal(JournalResult(through: 1)))
        f.connect(1)
        f.connect(2)
        let create = f.send(1, ["type": "join", "session": "lab", "create": true, "flow": "studio", "id": 1])
        #expect(Fixture.entries(create) == ["2 create lab"] && Fixture.sent(create).isEmpty)
        #expect(Fixture.sent(f.send(2, ["type": "join", "session": "lab", "id": 2])).isEmpty)
        let failed = f.on(.journal(JournalResult(through: 2, failed: ["lab": .creation("Permission denied")])))
        #expect(Fixture.sent(failed) == ["1:error:internal", "2:error:internal"])
        #expect(f.hub.sessions["lab"] == nil && f.hub.members(of: "lab").isEmpty)
        // The name is free: a later creation is a new session.
        #expect(Fixture.entries(f.send(1, ["type": "join", "session": "lab", "create": true, "id": 3])) == ["3 create lab"])
    }

    @Test func aSessionThatCannotBeReadBackIsLostUntilRestart() {
        var f = Fixture()
        _ = f.on(.started)
        f.connect(1)
        _ = f.send(1, ["type": "join", "session": "demo"])
        _ = f.on(.journal(JournalResult(through: 1)))
        _ = f.command(1, 1, Self.update(1))
        #expect(Fixture.entries(f.on(.journal(JournalResult(through: 2, failed: ["demo": .append("EIO")])))) == ["3 reload demo"])
        let lost = f.on(.journal(JournalResult(through: 3, failed: ["demo": .reload("reading it back failed: EIO")])))
        #expect(Fixture.sent(lost) == ["1:error:internal"])
        #expect(f.hub.sessions["demo"] == nil)
        // Its name cannot be made again, so nothing on disk is overwritten.
        let again = f.send(1, ["type": "join", "session": "demo", "create": true])
        #expect(Fixture.entries(again).isEmpty && Fixture.sent(again) == ["1:error:internal"])
    }

    @Test func httpCommandsAreAnsweredOnceDurable() {
        var f = Fixture()
        _ = f.on(.started)
        _ = f.on(.journal(JournalResult(through: 1)))
        let request = HTTPRequest(method: "POST", target: "/api/sessions/demo/commands", minorVersion: 1, headers: [], body: [])
        let run = f.on(.httpCommand(.init(connection: 7, request: request, session: "demo",
                                           command: ["id": "h1", "ops": Self.update(1)], client: "http", role: .controller)))
        #expect(Fixture.entries(run) == ["2 append demo rev 1"] && Fixture.sent(run).isEmpty)
        #expect(Fixture.sent(f.on(.journal(JournalResult(through: 2)))) == ["http7:ack:1"])
        // A controller's reset is refused at once: no entry, nothing to wait for.
        let reset = f.on(.httpCommand(.init(connection: 7, request: request, session: "demo",
                                             command: ["id": "h2", "ops": [["op": "reset"]]], client: "http", role: .controller)))
        #expect(Fixture.sent(reset) == ["http7:error:forbidden"])
    }

    @Test func aDeletionIsJournaledAndAnsweredOnceWritten() {
        var f = Fixture()
        _ = f.on(.started)
        _ = f.on(.journal(JournalResult(through: 1)))
        f.connect(1)
        f.connect(2)
        _ = f.send(2, ["type": "join", "session": "demo"])
        let delete = f.send(1, ["type": "delete", "session": "demo"])
        #expect(Fixture.entries(delete) == ["2 delete demo"] && Fixture.sent(delete).isEmpty)
        #expect(Fixture.sent(f.on(.journal(JournalResult(through: 2)))) == ["2*deleted:demo", "1:deleted:demo"])
        let request = HTTPRequest(method: "DELETE", target: "/api/sessions/demo", minorVersion: 1, headers: [], body: [])
        #expect(Fixture.sent(f.on(.httpDelete(connection: 9, request: request, session: "demo"))) == ["http9:error:unknown_session"])
    }
}
