import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

/// `"~CMD.N"` and `ack.created` (docs/protocol.md, "References to one's own entries").
@Suite("References to one's own entries")
struct ReferenceTests {
    private func submit(_ seq: inout Sequencer, _ id: CommandID, _ ops: JSON..., client: String = "c1") -> Sequencer.Outcome {
        seq.submit(Command(id: id, ops: ops), client: client)
    }

    private func ack(_ outcome: Sequencer.Outcome, sourceLocation: SourceLocation = #_sourceLocation) -> Ack? {
        switch outcome {
        case .applied(let a, _), .unchanged(let a), .duplicate(let a): return a
        case .failed(let e):
            Issue.record("expected an ack, got \(e)", sourceLocation: sourceLocation)
            return nil
        }
    }

    private func error(_ outcome: Sequencer.Outcome) -> NavError? {
        if case .failed(let e) = outcome { return e }
        return nil
    }

    /// A reference is resolved when its op is applied: an op before it that fails is
    /// the command's error, not the dangling reference after it. Regression: every
    /// reference was resolved first, so `[…, popToFirst at Checkout (absent), pop from
    /// "~d70.2"]` named op 4 where op 3 fails first.
    @Test func aDanglingReferenceFailsItsOpOnlyWhenItsTurnComes() throws {
        var seq = Sequencer(flow: .demo, epoch: "e")
        _ = try #require(ack(submit(&seq, .int(1), ["op": "setRoot", "route": "main"])))
        let e = try #require(error(submit(&seq, .int(2), ["op": "select", "route": "home"], ["op": "update", "data": ["x": 1]],
                                          ["op": "popToFirst", "at": "Checkout", "route": "address"], ["op": "pop", "from": "~d70.2"])))
        #expect(e.op == 2 && e.code == .notFound, "\(e)")
        // With the ops before it applying, the reference is the error, at its own index.
        let dangling = try #require(error(submit(&seq, .int(3), ["op": "select", "route": "home"], ["op": "pop", "from": "~d70.2"])))
        #expect(dangling.op == 1, "\(dangling)")
    }

    /// `setRoot main` on the demo flow makes the tab bar's four tabs and their stacks'
    /// roots: `created` lists them in allocation order; a duplicate repeats it.
    @Test func createdListsAllocatedIdsInOrder() throws {
        var seq = Sequencer(flow: .demo, epoch: "e")
        let first = try #require(ack(submit(&seq, .int(1), ["op": "setRoot", "route": "main"])))
        #expect(first.created == (2...10).map(EntryID.init))
        // A push and a pop of it in one command: the entry is listed, though gone.
        let made = try #require(ack(submit(&seq, .int(2), ["op": "push", "route": "detail", "params": ["id": 1]], ["op": "pop"])))
        #expect(made.created == [EntryID(11)])
        // No id allocated: none listed (and the key is left out on the wire).
        let none = try #require(ack(submit(&seq, .int(3), ["op": "select", "route": "cart"])))
        #expect(none.created.isEmpty)
        #expect(ServerMessage.ack(session: "s", none).json()["created"] == nil)
        // The wire form: in the written bytes, the object form and decoded back.
        let message = ServerMessage.ack(session: "s", first)
        #expect(message.bytes() == message.json().encoded())
        #expect(message.json()["created"] == .array((2...10).map { .string("e\($0)") }))
        #expect(try ServerMessage.decode(message.json())?.message == message)
        // A resend gets the same list.
        let again = try #require(ack(submit(&seq, .int(1), ["op": "setRoot", "route": "main"])))
        #expect(again.duplicate && again.created == first.created)
    }

    /// A reference behaves exactly as the id it names.
    @Test func referenceActsAsTheId() throws {
        var seq = Sequencer(flow: .demo, epoch: "e")
        _ = submit(&seq, .int(1), ["op": "setRoot", "route": "main"])
        let pushed = try #require(ack(submit(&seq, .int(2), ["op": "push", "route": "detail", "params": ["id": 1]])))
        let id = try #require(pushed.created.first)
        _ = submit(&seq, .int(3), ["op": "push", "route": "reviews", "params": ["id": 1]])
        // Back from the detail screen, named by reference: both screens go.
        let back = try #require(ack(submit(&seq, .int(4), ["op": "pop", "from": "~2.0"])))
        #expect(back.results == [.applied])
        #expect(!seq.state.json.encodedString().contains("\"\(id)\""))
        // Again: it is gone, as its id would be.
        #expect(ack(submit(&seq, .int(5), ["op": "pop", "from": "~2.0"]))?.results == [.superseded])
        // `at`, `entry` of select, update's entry, respond's alert.
        _ = submit(&seq, .int(6), ["op": "alert", "title": "Hi"])
        #expect(ack(submit(&seq, .int(7), ["op": "respond", "alert": "~6.0", "button": "ok"]))?.results == [.applied])
        let tab = try #require(ack(submit(&seq, .int(8), ["op": "appendTab", "route": "cart"])))
        #expect(tab.created.count == 2)   // the tab and its stack's root
        #expect(ack(submit(&seq, .int(9), ["op": "select", "entry": "~8.0"]))?.results == [.applied])
        #expect(ack(submit(&seq, .int(10), ["op": "push", "at": "~8.0", "route": "detail", "params": ["id": 2]]))?.results == [.applied])
        #expect(ack(submit(&seq, .int(11), ["op": "update", "entry": "~10.0", "data": ["qty": 2]]))?.results == [.applied])
        #expect(ack(submit(&seq, .int(12), ["op": "popTo", "entry": "~8.1"]))?.results == [.applied])
        #expect(ack(submit(&seq, .int(13), ["op": "removeTab", "entry": "~8.0"]))?.results == [.applied])
        // The command as sent is what is remembered: a resend is a duplicate.
        #expect(ack(submit(&seq, .int(13), ["op": "removeTab", "entry": "~8.0"]))?.duplicate == true)
    }

    /// A reference that names nothing is `not_found`, naming the reference; a malformed
    /// one is `bad_params`. Nothing changes.
    @Test func referencesThatNameNothing() throws {
        var seq = Sequencer(flow: .demo, epoch: "e")
        _ = submit(&seq, .int(1), ["op": "setRoot", "route": "main"])
        _ = submit(&seq, .int(2), ["op": "push", "route": "detail", "params": ["id": 1]])
        // Refused: not remembered, so nothing to name.
        #expect(error(submit(&seq, .int(3), ["op": "push", "route": "nowhere"]))?.code == .unknownRoute)
        let before = seq.state
        let cases: [(String, ErrorCode)] = [
            ("~3.0", .notFound),     // refused
            ("~99.0", .notFound),    // never sent
            ("~2.1", .notFound),     // out of range
            ("~", .badParams), ("~7", .badParams), ("~7.x", .badParams), ("~7.-1", .badParams), ("~.0", .badParams),
        ]
        for (i, (ref, code)) in cases.enumerated() {
            let e = error(submit(&seq, .int(Int64(100 + i)), ["op": "select", "route": "home"], ["op": "pop", "from": .string(ref)]))
            #expect(e?.code == code, "\(ref): \(String(describing: e))")
            #expect(e?.op == 1, "\(ref)")
            #expect(e?.message.contains(ref) == true, "\(ref): \(String(describing: e?.message))")
        }
        #expect(seq.state == before)
        // Another client's reference to the same command id names its own commands.
        #expect(error(submit(&seq, .int(5), ["op": "pop", "from": "~2.0"], client: "c2"))?.code == .notFound)
        // A command forgotten by the idempotency table (capacity 4 here).
        var small = Sequencer(flow: .demo, epoch: "e", idempotencyCapacity: 4)
        _ = submit(&small, .int(1), ["op": "setRoot", "route": "main"])
        _ = submit(&small, .int(2), ["op": "push", "route": "detail", "params": ["id": 1]])
        for n in 3...12 { _ = submit(&small, .int(Int64(n)), ["op": "update", "data": ["n": .int(Int64(n))]]) }
        #expect(error(submit(&small, .int(13), ["op": "pop", "from": "~2.0"]))?.code == .notFound)
    }

    /// String ids split at the last dot; of 7 and "7", the later counts.
    @Test func stringIdsAndTheLaterOfTwo() throws {
        var seq = Sequencer(flow: .demo, epoch: "e")
        _ = submit(&seq, .string("a.b"), ["op": "setRoot", "route": "main"])
        #expect(ack(submit(&seq, .string("x"), ["op": "select", "entry": "~a.b.5"]))?.results == [.applied])   // the cart tab (main e2, home e3, its list e4, search e5, its query e6, cart e7)
        let int7 = try #require(ack(submit(&seq, .int(7), ["op": "push", "route": "detail", "params": ["id": 1]])))
        let str7 = try #require(ack(submit(&seq, .string("7"), ["op": "push", "route": "detail", "params": ["id": 2]])))
        let r = try #require(ack(submit(&seq, .string("y"), ["op": "update", "entry": "~7.0", "data": ["seen": true]])))
        #expect(r.results == [.applied])
        let cart = seq.state.json.encodedString()
        #expect(cart.contains("\"id\":\"\(str7.created[0])\""))
        #expect(int7.created != str7.created)
        guard let path = seq.state.paths(ofType: "Cart").first else { Issue.record("no cart"); return }
        #expect(seq.state[path].entries.last?.data == ["seen": true])
    }

    /// A redirect that undid an op: the ids that op allocated are not listed.
    @Test func redirectedOpsAllocateNothingListed() throws {
        var seq = Sequencer(flow: .demo, epoch: "e")
        _ = submit(&seq, .int(1), ["op": "setRoot", "route": "main"])
        _ = submit(&seq, .int(2), ["op": "select", "route": "profile"])
        let a = try #require(ack(submit(&seq, .int(3), ["op": "push", "route": "orders"])))
        #expect(a.results == [.redirected])
        // The login entry the redirect's link made, not the orders entry it undid.
        let login = try #require(seq.state.root.entries.first)
        #expect(login.route == "login")
        #expect(a.created == [login.id])
    }

    /// After a snapshot is written and read back (a restart with a data directory), and
    /// on a second sequencer fed the same commands (another node), references resolve
    /// alike.
    @Test func snapshotsKeepWhatReferencesName() throws {
        var seq = Sequencer(flow: .demo, epoch: "e")
        _ = submit(&seq, .int(1), ["op": "setRoot", "route": "main"])
        _ = submit(&seq, .int(2), ["op": "push", "route": "detail", "params": ["id": 1]])
        var restored = try Sequencer(restoring: seq.snapshot(), flow: .demo)
        #expect(restored.idempotency.ack(client: "c1", id: .int(2))?.created == seq.idempotency.ack(client: "c1", id: .int(2))?.created)
        let x = submit(&seq, .int(3), ["op": "pop", "from": "~2.0"])
        let y = submit(&restored, .int(3), ["op": "pop", "from": "~2.0"])
        #expect(ack(x)?.results == [.applied])
        #expect(x == y)
        #expect(seq.state == restored.state)
    }
}
