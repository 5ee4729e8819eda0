import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

@Suite("Protocol v1 messages")
struct ProtocolTests {
    func decode(_ text: String) -> ClientRequest { ClientRequest(bytes: Array(text.utf8)) }

    func error(_ text: String) -> NavError? {
        if case .failure(let e) = decode(text).message { return e }
        return nil
    }

    @Test func decodesEveryClientMessage() throws {
        let cases: [(String, ClientMessage)] = [
            (#"{"type":"hello","name":"tv","role":"viewer","client":"c7"}"#, .hello(.init(name: "tv", role: "viewer", token: nil, client: "c7"))),
            (#"{"type":"join","session":"demo","since":4,"epoch":"x","create":true,"flow":"shop"}"#,
             .join(.init(session: "demo", since: 4, epoch: "x", create: true, flow: "shop"))),
            (#"{"type":"join","session":"demo"}"#, .join(.init(session: "demo", since: nil, epoch: nil, create: false, flow: nil))),
            (#"{"type":"leave","session":"demo"}"#, .leave(session: "demo")),
            (#"{"type":"command","session":"demo","id":1,"ops":[]}"#,
             .command(session: "demo", command: ["type": "command", "session": "demo", "id": 1, "ops": []])),
            (#"{"type":"sync","session":"demo","since":3,"epoch":"x"}"#, .sync(session: "demo", since: 3, epoch: "x")),
            (#"{"type":"status","session":"demo","rev":3,"focus":"e4"}"#, .status(session: "demo", rev: 3, focus: "e4")),
            (#"{"type":"get","session":"demo"}"#, .get(session: "demo")),
            (#"{"type":"sessions"}"#, .sessions),
            (#"{"type":"ping","id":"p1"}"#, .ping),
        ]
        for (text, expected) in cases {
            #expect(try decode(text).message.get() == expected, "\(text)")
        }
        #expect(decode(#"{"type":"ping","id":"p1"}"#).id == "p1")
        #expect(decode(#"{"type":"ping","id":7}"#).id == 7)
    }

    @Test func malformedMessagesSayWhatIsWrong() {
        let cases: [(String, ErrorCode, String)] = [
            ("{", .badJSON, "not valid JSON: line 1, column 1"),
            ("nonsense", .badJSON, "not valid JSON"),
            ("[1,2]", .badRequest, "a message must be a JSON object, got array"),
            (#"{"id":1}"#, .badRequest, "missing field 'type'"),
            (#"{"type":5}"#, .badRequest, "'type' must be a string, got integer"),
            (#"{"type":"teleport"}"#, .badRequest, "unknown message type 'teleport'"),
            (#"{"type":"join"}"#, .badRequest, "missing field 'session'"),
            (#"{"type":"join","session":""}"#, .badRequest, "'session' must be 1-128"),
            (#"{"type":"join","session":"a b"}"#, .badRequest, "'session' must be 1-128"),
            (#"{"type":"join","session":"x","since":"3"}"#, .badRequest, "'since' must be an integer, got string"),
            (#"{"type":"join","session":"x","since":-1}"#, .badRequest, "'since' must be a revision"),
            (#"{"type":"join","session":"x","create":"yes"}"#, .badRequest, "'create' must be a bool"),
            (#"{"type":"sync","session":"x","since":3}"#, .badRequest, "missing field 'epoch'"),
            (#"{"type":"status","session":"x"}"#, .badRequest, "missing field 'rev'"),
            (#"{"type":"command","session":"x","ops":[]}"#, .badRequest, "missing field 'id'"),
            (#"{"type":"ping","id":[1]}"#, .badRequest, "'id' must be a string or a number, got array"),
        ]
        for (text, code, message) in cases {
            let e = error(text)
            #expect(e?.code == code, "\(text) -> \(String(describing: e))")
            #expect(e?.message.hasPrefix(message) == true, "\(text) -> \(String(describing: e))")
        }
        // The request id survives a bad message so the error can carry it.
        #expect(decode(#"{"type":"join","id":"r9"}"#).id == "r9")
    }

    @Test func hostileBytesNeverCrash() {
        var rng = SeededRandom(seed: 42)
        let seeds = [#"{"type":"command","session":"s","id":1,"ops":[{"op":"push","route":"detail","params":{"id":1}}]}"#,
                     #"{"type":"join","session":"demo","since":0,"epoch":"x"}"#]
        for _ in 0..<3000 {
            var bytes = Array(seeds[Int(rng.next() % 2)].utf8)
            for _ in 0..<Int(rng.next() % 4 + 1) {
                let i = Int(rng.next() % UInt64(bytes.count))
                switch rng.next() % 3 {
                case 0: bytes[i] = UInt8(truncatingIfNeeded: rng.next())
                case 1: bytes.remove(at: i)
                default: bytes.insert(UInt8(truncatingIfNeeded: rng.next()), at: i)
                }
                if bytes.isEmpty { bytes = [0x7B] }
            }
            // Invariants: a broken message is a bad_json/bad_request error whose answer is
            // valid JSON; a command changes the state exactly by its patch, or not at all.
            let request = ClientRequest(bytes: bytes)
            switch request.message {
            case .failure(let e):
                #expect(e.code == .badJSON || e.code == .badRequest, "\(e)")
                #expect((try? JSON.parse(ServerMessage.error(e).json(id: request.id).encoded())) != nil)
            case .success(.command(_, let object)):
                var seq = Sequencer(flow: .demo, epoch: "x")
                let before = seq.state
                switch seq.submit(object, client: "c") {
                case .applied(let ack, let patch):
                    #expect(ack.rev == 1 && (try? before.json.applying(patch.ops)) == seq.state.json)
                    checkShape(seq.state, seq.document.flow)
                case .failed, .unchanged, .duplicate:
                    #expect(seq.state == before && seq.rev == 0)
                }
            case .success:
                break
            }
        }
    }

    @Test func serverMessagesEncodeAsSpecified() throws {
        let patch = Patch(rev: 5, by: "c1", cmd: .string("k"), ops: [PatchOperation(.remove, "/root/current/coordinator/tabs/0/coordinator/stack/1")])
        #expect(ServerMessage.patch(session: "demo", patch).json().encodedString()
                == #"{"type":"patch","session":"demo","rev":5,"base":4,"by":"c1","cmd":"k","ops":[{"op":"remove","path":"/root/current/coordinator/tabs/0/coordinator/stack/1"}]}"#)
        #expect(ServerMessage.ack(session: "demo", Ack(id: .int(3), rev: 5, results: [.applied, .superseded])).json().encodedString()
                == #"{"type":"ack","id":3,"session":"demo","rev":5,"results":["applied","superseded"]}"#)
        #expect(ServerMessage.error(NavError(.conflict, "Home changed", op: 1, rev: 9)).json(id: "x").encodedString()
                == #"{"type":"error","id":"x","code":"conflict","message":"Home changed","op":1,"rev":9}"#)
        let welcome = ServerMessage.welcome(.init(client: "c1", server: "navsyncd/0.1", heartbeat: 30, limits: ProtocolLimits()))
        #expect(welcome.json(id: 1).encodedString()
                == #"{"type":"welcome","id":1,"client":"c1","server":"navsyncd/0.1","protocol":1,"heartbeat":30,"limits":{"maxMessage":1048576,"maxOps":64,"maxStackDepth":256,"maxTabs":64}}"#)
        let joined = ServerMessage.joined(.init(session: "demo", epoch: "ep", rev: 5, flow: ["name": "shop"],
                                                members: [Member(client: "c1", name: "tv", role: "admin")], catchUp: .patches([patch])))
        let j = joined.json()
        #expect(j["patches"]?.arrayValue?.first?["type"] == "patch")
        #expect(j["members"] == [["client": "c1", "name": "tv", "role": "admin"]])
        #expect(ServerMessage.presence(session: "demo", .init(status: [.init(client: "c2", rev: 4, focus: "e9")])).json().encodedString()
                == #"{"type":"presence","session":"demo","status":[{"client":"c2","rev":4,"focus":"e9"}]}"#)
        #expect(ServerMessage.presence(session: "demo", .init(joined: [Member(client: "c1", name: "tv", role: "viewer")], left: ["c2", "c3"], others: 700)).json().encodedString()
                == #"{"type":"presence","session":"demo","joined":[{"client":"c1","name":"tv","role":"viewer"}],"left":["c2","c3"],"others":700}"#)
        #expect(ServerMessage.sessions([SessionSummary(session: "demo", flow: "shop", rev: 2, members: 3)]).json().encodedString()
                == #"{"type":"sessions","sessions":[{"session":"demo","flow":"shop","rev":2,"members":3}]}"#)
    }

    /// Patches and acks are written straight from their fields (`bytes()`); the bytes
    /// must be those of the object form, whatever they hold.
    @Test func patchBytesEqualTheEncodedObject() {
        let entry: JSON = ["id": "e9", "route": "detail", "params": ["id": 4, "note": "a \"quoted\" \\ note\n"], "presentation": "push"]
        let patches = [
            Patch(rev: 1, by: "c1", cmd: .int(7), ops: []),
            Patch(rev: 12345, by: "tv \"living\"", cmd: .string("k/é"), ops: [
                PatchOperation(.remove, "/root/stack/1"),
                PatchOperation(.add, "/root/stack/1", value: entry),
                PatchOperation(.replace, "/root/stack", value: [entry, entry]),
                PatchOperation(.move, "/root/tabs/0", from: "/root/tabs/3"),
                PatchOperation(.replace, "/alert", value: .null),
                PatchOperation(.add, "/root/current/data/a~1b", value: ["x": 1.5, "y": [true, false, .null]]),
            ]),
        ]
        for patch in patches {
            let message = ServerMessage.patch(session: "s \"1\"", patch)
            #expect(message.bytes() == message.json().encoded(), "\(message.json())")
        }
        var duplicate = Ack(id: .string("k\"é"), rev: 12, results: [.applied, .noop, .superseded])
        duplicate.duplicate = true
        for ack in [Ack(id: .int(3), rev: 0, results: [.applied]), duplicate] {
            let message = ServerMessage.ack(session: "demo", ack)
            #expect(message.bytes() == message.json().encoded() && message.bytes(id: 9) == message.json(id: 9).encoded())
        }
    }

    /// Messages are written into a buffer on the stack and moved to the heap when they
    /// outgrow it: at every length around that size, mid-string and mid-escape, the bytes
    /// are the object's and read back to it.
    @Test func messagesLongerThanTheStackBufferComeOutWhole() throws {
        for length in stride(from: 380, through: 620, by: 1) {
            let note = String(repeating: "ab\"\\c\né", count: length / 8) + String(repeating: "x", count: length % 8)
            let entry: JSON = ["id": "e9", "route": "detail", "params": ["id": 4, "note": .string(note)], "presentation": "push"]
            let message = ServerMessage.patch(session: "s", Patch(rev: 7, by: "c1", cmd: .int(7), ops: [PatchOperation(.add, "/root/stack/1", value: entry)]))
            let bytes = message.bytes()
            #expect(bytes == message.json().encoded())
            #expect(try JSON.parse(bytes) == message.json(), "length \(length)")
            #expect(try JSON.parse(JSON.string(note).encoded()) == .string(note))
        }
        let ack = ServerMessage.ack(session: "demo", Ack(id: .string("k"), rev: 3, results: Array(repeating: .superseded, count: 200)))
        #expect(ack.bytes().count > 1024 && ack.bytes() == ack.json().encoded())
        #expect(try JSON.parse(ack.bytes()) == ack.json())
    }

    @Test func clientMessagesRoundTrip() throws {
        let messages: [ClientMessage] = [
            .hello(.init(name: "tv", role: nil, token: "t", client: nil)),
            .join(.init(session: "demo", since: 3, epoch: "e", create: true, flow: "shop")),
            .command(session: "demo", command: ["id": 1, "ops": [["op": "pop"]], "base": 2]),
            .sync(session: "demo", since: 1, epoch: "e"),
            .status(session: "demo", rev: 1, focus: nil),
            .sessions, .ping,
        ]
        for m in messages {
            let bytes = ClientRequest.encode(m, id: "r").encoded()
            let back = ClientRequest(bytes: bytes)
            if case .command(_, let c) = m { #expect(back.id == c["id"]) } else { #expect(back.id == "r") }
            switch (m, try back.message.get()) {
            case (.command(let s1, let c1), .command(let s2, let c2)):
                #expect(s1 == s2 && c2["ops"] == c1["ops"] && c2["base"] == c1["base"])
            case (let a, let b): #expect(a == b)
            }
        }
    }

    @Test func operationsRoundTripThroughTheirWireForm() throws {
        let ops: [NavOperation] = [
            NavOperation(.route(.init("detail", params: ["id": 1], hints: ["transition": "slide"]))),
            NavOperation(.present(.init("settings"), style: .cover), at: "Home"),
            NavOperation(.pop(count: 2, from: nil)), NavOperation(.pop(count: 1, from: "e4")),
            NavOperation(.popToRoot), NavOperation(.popToFirst(route: "a")), NavOperation(.popToLast(route: "a")),
            NavOperation(.popTo(entry: "e3")), NavOperation(.popBefore(route: "a")), NavOperation(.dismiss(all: true)),
            NavOperation(.setRoot(.init("main"))), NavOperation(.setStack([.init("list"), .init("detail", params: ["id": 1], presentation: .sheet)])),
            NavOperation(.restart, at: "root"), NavOperation(.select(.index(1))), NavOperation(.select(.route("home"))), NavOperation(.select(.entry("e3"))),
            NavOperation(.setTabs([.init("home"), .init("cart", hints: ["badge": 2])])), NavOperation(.appendTab(.init("home"))),
            NavOperation(.insertTab(.init("home"), index: 0)), NavOperation(.removeFirst(route: "a")), NavOperation(.removeLast(route: "a")),
            NavOperation(.removeTab(entry: "e3")), NavOperation(.update(entry: "e3", data: ["a": nil])), NavOperation(.update(entry: nil, data: ["a": 1])),
            NavOperation(.open(url: "/product/4")), NavOperation(.alert(.init(title: "t", message: "m", buttons: [AlertButton(id: "x", label: "X", role: "cancel")]))),
            NavOperation(.respond(alert: "e5", button: "x")), NavOperation(.reset),
        ]
        for op in ops {
            #expect(try NavOperation(json: JSON.parse(op.json.encoded())) == op, "\(op.json)")
        }
    }
}
