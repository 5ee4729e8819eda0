import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

/// The hooks of docs/backend.md as values: the hub asks (`.hook` effects), the test
/// answers as a backend would (`.hook` events), and what every client gets is checked.
@Suite("Hooks")
struct HubHookTests {
    typealias Fixture = HubFixture

    static func fixture(_ c: HooksConfiguration) -> Fixture {
        let f = Fixture()
        f.hub.configureHooks(c)
        return f
    }

    static let opens = HooksConfiguration(url: "http://backend.test/hook", commands: ["*": ["open"]])

    static func calls(_ effects: [Hub.Effect]) -> [HookCall] {
        effects.compactMap { if case .hook(let call) = $0 { call } else { nil } }
    }

    static func events(_ effects: [Hub.Effect]) -> [WebhookEvent] {
        effects.compactMap { if case .webhook(let e) = $0 { e } else { nil } }
    }

    func answer(_ f: Fixture, _ call: HookCall, _ json: JSON) -> [Hub.Effect] { f.hub.handle(.hook(call.id, .answered(json)), now: f.now) }

    @Test func theHooksSetIsTheFirstOpOfTheSameRevision() throws {
        let f = Self.fixture(Self.opens)
        let a = f.connect(), b = f.connect()
        _ = f.send(b, ["type": "join", "session": "demo"])
        let sent = f.send(a, ["type": "command", "session": "demo", "id": 7, "ops": [["op": "open", "url": "/product/42"]]])
        #expect(f.inbox(a, sent).isEmpty && f.inbox(b, sent).isEmpty)                 // held, not sequenced
        let call = try #require(Self.calls(sent).first)
        #expect(call.body["type"] == "command" && call.body["session"] == "demo" && call.body["flow"] == "shop" && call.body["rev"] == 0)
        #expect(call.body["command"] == ["id": 7, "ops": [["op": "open", "url": "/product/42"]]])
        let done = answer(f, call, ["allow": true, "set": ["cart": ["items": 2]]])
        let ack = try #require(f.inbox(a, done).first)
        #expect(ack["type"] == "ack" && ack["rev"] == 1 && ack["results"] == ["applied"])   // the sender's ops only
        let patch = try #require(f.inbox(b, done).first)
        #expect(patch["type"] == "patch" && patch["rev"] == 1)
        let seq = f.hub.sessions["demo"]!.sequencer
        #expect(seq.state.data == ["cart": ["items": 2]])
        let entry = try #require(seq.history.entries(after: 0).first)
        #expect(entry.ops.first == ["op": "update", "scope": "session", "data": ["cart": ["items": 2]], "by": "hook"])
        #expect(entry.results == [.applied, .applied])
        // A resend is the same command (the hook's op is the server's): a duplicate, asked nothing.
        let again = f.send(a, ["type": "command", "session": "demo", "id": 7, "ops": [["op": "open", "url": "/product/42"]]])
        #expect(Self.calls(again).isEmpty && f.inbox(a, again).first?["duplicate"] == true)
    }

    @Test func aRefusalAndAFailureSequenceNothingAndAreNotRemembered() throws {
        let f = Self.fixture(Self.opens)
        let a = f.connect()
        let command: JSON = ["type": "command", "session": "demo", "id": "x", "ops": [["op": "open", "url": "/checkout"]]]
        let first = try #require(Self.calls(f.send(a, command)).first)
        let refused = f.inbox(a, answer(f, first, ["allow": false, "message": "the cart is empty", "details": ["items": 0]]))
        #expect(refused == [["type": "error", "id": "x", "code": "refused", "message": "the cart is empty", "details": ["items": 0]]])
        #expect(f.hub.sessions["demo"]!.sequencer.rev == 0)
        // Asked again (a refusal is not remembered), and this time the backend fails.
        // Junk, a status, a timeout: `unavailable` with `retryAfter`, and asked again on the resend.
        for junk: HookReply in [.answered(["allowed": true]), .answered("yes"), .answered(["allow": true, "set": 3]), .failed("HTTP 500")] {
            let call = try #require(Self.calls(f.send(a, command)).first)
            let got = f.inbox(a, f.hub.handle(.hook(call.id, junk), now: 0))
            #expect(got.first?["code"] == "unavailable" && got.first?["retryAfter"] == 1)
        }
        #expect(f.hub.sessions["demo"]!.sequencer.rev == 0)
        #expect(f.hub.hooks.outcomes["refused"] == 1 && f.hub.hooks.outcomes["failed"] == 4)
    }

    @Test func oneCallPerCommandIDAndTheClientsOrderKept() throws {
        let f = Self.fixture(Self.opens)
        let a = f.connect(), other = f.connect()
        let hooked: JSON = ["type": "command", "session": "demo", "id": 1, "ops": [["op": "open", "url": "/product/1"]]]
        let call = try #require(Self.calls(f.send(a, hooked)).first)
        #expect(Self.calls(f.send(a, hooked)).isEmpty)                          // a resend waits for the same answer
        let behind = f.send(a, ["type": "command", "session": "demo", "id": 2, "ops": [["op": "update", "scope": "session", "data": ["n": 2]]]])
        #expect(f.inbox(a, behind).isEmpty)                                     // waits behind its client's first
        let others = f.send(other, ["type": "command", "session": "demo", "id": 1, "ops": [["op": "update", "scope": "session", "data": ["o": 1]]]])
        #expect(f.inbox(other, others).first?["rev"] == 1)                      // nobody else waits
        let done = f.inbox(a, answer(f, call, ["allow": true]))
        #expect(done.map { $0["id"] } == [1, 1, 2])
        #expect(done.map { $0["rev"] } == [2, 2, 3] && done[1]["duplicate"] == true)
    }

    @Test(arguments: [true, false])
    func aClientMayNotSendBy(hooks: Bool) {
        let f = hooks ? Self.fixture(Self.opens) : Fixture()
        let a = f.connect()
        let got = f.inbox(a, f.send(a, ["type": "command", "session": "demo", "id": 1,
                                        "ops": [["op": "update", "scope": "session", "data": ["paid": true], "by": "hook"]]]))
        #expect(got.first?["code"] == "bad_params" && got.first?["op"] == 0)
        #expect(f.hub.sessions["demo"]!.sequencer.rev == 0)
    }

    @Test func theJoinHookAdmitsLowersAndNamesTheUser() throws {
        var c = HooksConfiguration(url: "http://backend.test/hook", join: true, commands: ["*": ["*"]], headers: ["cookie"])
        c.webhooks = []
        let f = Self.fixture(c)
        f.n += 1
        _ = f.hub.handle(.connected(f.n, grant: nil, upgrade: Hub.Upgrade(addr: "10.0.0.7", headers: ["cookie": "sid=abc"])), now: 0)
        let a = f.n
        let asked = f.send(a, ["type": "join", "session": "demo", "id": 1])
        #expect(f.inbox(a, asked).isEmpty)
        let call = try #require(Self.calls(asked).first)
        #expect(call.body["type"] == "join" && call.body["addr"] == "10.0.0.7" && call.body["headers"] == ["cookie": "sid=abc"] && call.body["role"] == "admin")
        let joined = f.inbox(a, answer(f, call, ["allow": true, "role": "controller", "user": "ann", "data": ["plan": "gold"]]))
        #expect(joined.first?["type"] == "joined" && joined.first?["members"]?.arrayValue?.first?["user"] == "ann")
        // Asked once per connection and session; its commands carry user and data.
        #expect(Self.calls(f.send(a, ["type": "join", "session": "demo"])).isEmpty)
        let command = try #require(Self.calls(f.send(a, ["type": "command", "session": "demo", "id": 1, "ops": [["op": "reset"]]])).first)
        #expect(command.body["user"] == "ann" && command.body["data"] == ["plan": "gold"])
        let reset = f.inbox(a, answer(f, command, ["allow": true]))
        #expect(reset.first?["code"] == "forbidden")                            // lowered to controller: no reset
        // A role is never raised.
        let v = f.connect()
        _ = f.send(v, ["type": "hello", "role": "viewer"])
        let vc = try #require(Self.calls(f.send(v, ["type": "join", "session": "demo"])).first)
        _ = answer(f, vc, ["allow": true, "role": "admin"])
        #expect(f.inbox(v, f.send(v, ["type": "command", "session": "demo", "id": 1, "ops": [["op": "pop"]]])).first?["code"] == "forbidden")
        // Denied, and failing.
        let d = f.connect()
        let dc = try #require(Self.calls(f.send(d, ["type": "join", "session": "demo", "id": 5])).first)
        #expect(f.inbox(d, answer(f, dc, ["allow": false, "message": "sign in first"])) ==
                [["type": "error", "id": 5, "code": "forbidden", "message": "sign in first"]])
        let dc2 = try #require(Self.calls(f.send(d, ["type": "join", "session": "demo", "id": 6])).first)
        #expect(f.inbox(d, f.hub.handle(.hook(dc2.id, .failed("connection refused")), now: 0)).first?["code"] == "unavailable")
    }

    @Test func webhookEventsForRevisionsAndMembers() throws {
        var c = HooksConfiguration(vacatedDelayMS: 100)
        c.webhooks = [.init(url: "http://backend.test/events")]
        let f = Self.fixture(c)
        let a = f.connect()
        let joined = Self.events(f.send(a, ["type": "join", "session": "studio", "create": true, "flow": "studio"]))
        #expect(joined.map(\.type) == ["session.created", "session.occupied"])
        let cmd = Self.events(f.send(a, ["type": "command", "session": "studio", "id": 1, "ops": [["op": "update", "scope": "session", "data": ["k": 1]]]]))
        let revision = try #require(cmd.first)
        #expect(revision.type == "revision" && revision.id == "studio:ep2:1" && revision.json["command"]?["results"] == ["applied"])
        #expect(revision.json["client"] == "c1")
        _ = f.disconnect(a)
        f.now = 50
        #expect(Self.events(f.tick()).isEmpty)
        f.now = 120
        #expect(Self.events(f.tick()).map(\.type) == ["session.vacated"])
        let b = f.connect()
        #expect(Self.events(f.send(b, ["type": "join", "session": "studio"])).map(\.type) == ["session.occupied"])
        #expect(Self.events(f.send(b, ["type": "delete", "session": "studio"])).map(\.type) == ["session.deleted"])
    }
}
