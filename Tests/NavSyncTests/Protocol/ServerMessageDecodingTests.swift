import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

/// Every server message survives encode → bytes → decode, and a broken one is refused
/// naming the field.
@Suite("Protocol: server messages decoded")
struct ServerMessageDecodingTests {
    static let patch = Patch(rev: 4, by: "c1", cmd: .string("k"), ops: [PatchOperation(.replace, "/alert", value: .null)])
    static let member = Member(client: "c2", name: "tv", role: "viewer", rev: 3, focus: "e7", user: "ann")

    static let messages: [ServerMessage] = [
        .welcome(.init(client: "c1", server: "navsyncd/0.1.0", heartbeat: 30, limits: ProtocolLimits())),
        .joined(.init(session: "demo", epoch: "ep", rev: 4, flow: ["name": "shop"], members: [member], catchUp: .state(["root": 1]))),
        .joined(.init(session: "demo", epoch: "ep", rev: 4, flow: ["name": "shop"], members: [], catchUp: .patches([patch]))),
        .left(session: "demo"),
        .patch(session: "demo", patch),
        .ack(session: "demo", Ack(id: .int(9), rev: 4, results: [.applied, .noop, .superseded])),
        .error(NavError(.conflict, "e3 changed", op: 1, rev: 4)),
        .error(NavError(.refused, "the cart is empty", details: ["items": 0, "signIn": "/login"])),
        .error(NavError(.unavailable, "the app's backend did not answer", retryAfter: 1)),
        .synced(session: "demo", rev: 4),
        .snapshot(session: "demo", rev: 4, state: ["root": ["type": "App"]]),
        .historic(session: "demo", rev: 2, state: ["root": ["type": "App"]]),
        .history(session: "demo", rev: 9, earliest: 3, entries: [
            HistoryEntry(rev: 9, ts: 1_796_000_000_000, client: "c1", name: "tablet", cmd: .string("x"),
                         ops: [["op": "pop"]], results: [.applied], label: "back out"),
            HistoryEntry(rev: 8, ts: 1_796_000_000_000, client: "c2", name: "c2", cmd: .int(7), ops: [["op": "dismiss"]], results: [.applied]),
        ]),
        .sessions([SessionSummary(session: "demo", flow: "shop", rev: 4, members: 2)]),
        .pong,
        .presence(session: "demo", .init(joined: [member])),
        .presence(session: "demo", .init(left: ["c2", "c4"])),
        .presence(session: "demo", .init(joined: [member], status: [.init(client: "c2", rev: 4, focus: nil)], others: 3)),
        .joined(.init(session: "big", epoch: "ep", rev: 1, flow: .null, members: [member], others: 9_999, catchUp: .state([:]))),
    ]

    /// Byte vectors of the backend's errors (docs/backend.md): as a server sends them.
    @Test func theBackendsErrorsAsBytes() throws {
        let refused = try ServerMessage.decode(Array(#"{"type":"error","id":3,"code":"refused","message":"no","details":{"why":"cart"}}"#.utf8))
        guard case .error(let e)? = refused?.message else { Issue.record("\(String(describing: refused))"); return }
        #expect(e.code == .refused && e.message == "no" && e.details == ["why": "cart"] && e.retryAfter == nil)
        #expect(ServerMessage.error(NavError(.unavailable, "x", retryAfter: 2)).json(id: 1).encoded()
                == Array(#"{"type":"error","id":1,"code":"unavailable","message":"x","retryAfter":2}"#.utf8))
        #expect(ErrorCode.refused.httpStatus == 409)
    }

    @Test(arguments: messages)
    func roundTrips(_ message: ServerMessage) throws {
        let id: JSON? = { if case .ack = message { return .int(9) } else { return "r1" } }()
        let decoded = try ServerMessage.decode(message.json(id: id).encoded())
        #expect(decoded == ServerMessage.Received(message: message, id: id))
    }

    @Test func brokenMessagesNameTheField() {
        let cases: [(String, String)] = [
            ("{", "not valid JSON"),
            ("[1]", "must be a JSON object"),
            (#"{"type": "patch", "session": "s", "rev": "4", "by": "c", "cmd": 1, "ops": []}"#, "'rev' must be an integer"),
            (#"{"type": "ack", "session": "s", "rev": 1, "results": ["applied"]}"#, "missing field 'id'"),
            (#"{"type": "ack", "id": 1, "session": "s", "rev": 1, "results": ["maybe"]}"#, "unknown result"),
            (#"{"type": "snapshot", "session": "s", "rev": 1}"#, "missing field 'state'"),
            (#"{"type": "patch", "session": "s", "rev": 1, "by": "c", "cmd": 1, "ops": [{"op": "jump"}]}"#, "bad JSON Patch"),
        ]
        for (text, expected) in cases {
            do {
                _ = try ServerMessage.decode(Array(text.utf8))
                Issue.record("decoded: \(text)")
            } catch {
                #expect(error.message.contains(expected), "\(text): \(error.message)")
            }
        }
        #expect((try? ServerMessage.decode(Array(#"{"type": "future-thing"}"#.utf8))) == .some(nil))
    }
}
