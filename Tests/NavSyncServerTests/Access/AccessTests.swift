import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

@Suite("Access: tokens, roles, sessions")
struct AccessTests {
    static let file = #"""
    { "tokens": [
        { "token": "admin-token-1", "role": "admin", "label": "ops laptop" },
        { "token": "controller-2", "role": "controller", "sessions": ["demo", "lab-*"], "label": "tablet" },
        { "token": "viewer-token-3", "role": "viewer" } ] }
    """#

    static func policy() throws -> AccessPolicy { try AccessPolicy.load(bytes: Array(file.utf8), file: "auth.json") }

    @Test func loadsAndLooksUpTokens() throws {
        let p = try Self.policy()
        #expect(p.grant(for: "admin-token-1")?.role == .admin && p.grant(for: "admin-token-1")?.name == "ops laptop")
        #expect(p.grant(for: "controller-2")?.allows(session: "lab-7") == true && p.grant(for: "controller-2")?.allows(session: "prod") == false)
        #expect(p.grant(for: "viewer-token-3")?.name == "a viewer token")
        #expect(p.grant(for: "admin-token-") == nil && p.grant(for: "admin-token-12") == nil && p.grant(for: "") == nil)
    }

    @Test func badFilesAreRefusedWithThePlace() {
        let cases: [(String, String)] = [
            ("{", "auth.json: not valid JSON"),
            (#"{"tokens": 5}"#, "auth.json: tokens: must be a list of tokens"),
            (#"{"tokens": [{"token": "short", "role": "admin"}]}"#, "auth.json: tokens[0].token: must be a string of at least 8 characters"),
            (#"{"tokens": [{"token": "long-enough", "role": "root"}]}"#, "auth.json: tokens[0].role: must be viewer, controller or admin"),
            (#"{"tokens": [{"token": "long-enough", "role": "admin"}, {"token": "long-enough", "role": "viewer"}]}"#, "auth.json: tokens[1].token: is listed twice"),
            (#"{"tokens": [{"token": "long-enough", "role": "admin", "sessions": []}]}"#, "auth.json: tokens[0].sessions: must be a non-empty list"),
            // Regression: a typo ("session") loaded, and the token got every session.
            (#"{"tokens": [{"token": "long-enough", "role": "controller", "session": ["demo"]}]}"#,
             #"auth.json: tokens[0].session: unknown key "session" in a token (expected token, role, sessions, label)"#),
            (#"{"tokens": [], "token": "x"}"#, #"auth.json: token: unknown key "token" in the auth file (expected tokens)"#),
            (#"{"tokens": ["just-a-token"]}"#, "auth.json: tokens[0]: must be an object"),
        ]
        for (text, message) in cases {
            do {
                _ = try AccessPolicy.load(bytes: Array(text.utf8), file: "auth.json")
                Issue.record("loaded: \(text)")
            } catch {
                #expect(error.description.hasPrefix(message), "\(error)")
            }
        }
    }

    @Test func weakTokensAreNamed() throws {
        let file = #"{"tokens": [{"token": "change-me-1", "role": "admin"}, {"token": "short-token", "role": "viewer"}, {"token": "0123456789abcdef", "role": "viewer"}]}"#
        let p = try AccessPolicy.load(bytes: Array(file.utf8), file: "auth.json")
        #expect(p.weakTokens.map(\.index) == [0, 1])
        #expect(p.weakTokens[0].reason.contains("example") && p.weakTokens[1].reason.contains("16"))
    }

    @Test func globsAndTokenSources() {
        #expect(AccessPolicy.glob("lab-*", matches: "lab-1") && AccessPolicy.glob("*", matches: "x") && AccessPolicy.glob("a*b*c", matches: "axxbyyc"))
        #expect(!AccessPolicy.glob("lab-*", matches: "labs") && !AccessPolicy.glob("demo", matches: "demo2"))
        let header = HTTPRequest(method: "GET", target: "/ws?token=q", minorVersion: 1, headers: [("Authorization", "Bearer h-token")], body: [])
        #expect(AccessPolicy.token(of: header) == "h-token")
        let query = HTTPRequest(method: "GET", target: "/ws?token=q%20t", minorVersion: 1, headers: [], body: [])
        #expect(AccessPolicy.token(of: query) == "q t")
        #expect(AccessPolicy.constantTimeEqual([1, 2, 3], [1, 2, 3]) && !AccessPolicy.constantTimeEqual([1, 2, 3], [1, 2]) && !AccessPolicy.constantTimeEqual([1], [2]))
    }

    func hub() throws -> Hub {
        var h = Hub(configuration: HubConfiguration(), flows: [], policy: try Self.policy(), ids: .counting())
        _ = h.handle(.started, now: 0)
        _ = try? h.createSession("lab-1", flow: "shop")
        _ = try? h.createSession("prod", flow: "shop")
        return h
    }

    func bytes(_ m: JSON) -> [UInt8] { m.encoded() }

    func codes(_ h: inout Hub, _ c: Int, _ m: JSON) -> String? {
        for d in h.handle(.text(c, m.encoded()), now: 0) {
            if case .send(let to, let msg, _) = d, to == c {
                let j = msg.json()
                return j["type"] == "error" ? "error:" + (j["code"]?.stringValue ?? "") : j["type"]?.stringValue
            }
        }
        return nil
    }

    @Test func everyRoleAgainstEveryMessage() throws {
        let messages: [(String, JSON)] = [
            ("ping", ["type": "ping"]),
            ("join", ["type": "join", "session": "demo"]),
            ("create", ["type": "join", "session": "new-1", "create": true]),
            ("get", ["type": "get", "session": "demo"]),
            ("sync", ["type": "sync", "session": "demo", "since": 0, "epoch": "ep1"]),
            ("sessions", ["type": "sessions"]),
            ("command", ["type": "command", "session": "demo", "id": 1, "ops": [["op": "dismiss"]]]),
            ("reset", ["type": "command", "session": "demo", "id": 2, "ops": [["op": "reset"]]]),
        ]
        let expected: [String: [String: String]] = [
            "none": ["ping": "pong", "join": "error:forbidden", "create": "error:forbidden", "get": "error:forbidden", "sync": "error:forbidden",
                     "sessions": "error:forbidden", "command": "error:forbidden", "reset": "error:forbidden"],
            "viewer-token-3": ["ping": "pong", "join": "joined", "create": "error:forbidden", "get": "snapshot", "sync": "synced",
                               "sessions": "sessions", "command": "error:forbidden", "reset": "error:forbidden"],
            "controller-2": ["ping": "pong", "join": "joined", "create": "error:forbidden", "get": "snapshot", "sync": "synced",
                             "sessions": "sessions", "command": "ack", "reset": "error:forbidden"],
            "admin-token-1": ["ping": "pong", "join": "joined", "create": "joined", "get": "snapshot", "sync": "synced",
                              "sessions": "sessions", "command": "ack", "reset": "ack"],
        ]
        for (token, table) in expected {
            var h = try hub()
            _ = h.handle(.connected(1, grant: nil), now: 0)
            if token != "none" { #expect(codes(&h, 1, ["type": "hello", "token": .string(token)]) == "welcome") }
            for (name, message) in messages {
                #expect(codes(&h, 1, message) == table[name], "\(token) \(name)")
            }
        }
    }

    /// Regression: a controller's `reset` was refused, but a link that expands to one ran.
    @Test func adminOperationsAreCheckedAfterLinksExpand() throws {
        let wiper = try Flow.load(bytes: Array(#"""
            {"name": "wiper", "root": "Main",
             "coordinators": {"Main": {"kind": "stack", "initial": "home", "routes": {"home": {}, "page": {}}}},
             "links": {"/wipe": [{"op": "push", "route": "page"}, {"op": "reset"}], "/page": [{"op": "push", "route": "page"}]}}
            """#.utf8), file: "wiper.json")
        var seq = Sequencer(flow: wiper, epoch: "e")
        let refused = Hub.Role.controller.refusedOperations
        guard case .applied = seq.submit(["id": 1, "ops": [["op": "push", "route": "page"]]], client: "c", refused: refused) else {
            Issue.record("push refused"); return
        }
        let before = seq.state
        guard case .failed(let e) = seq.submit(["id": 2, "ops": [["op": "open", "url": "/wipe"]]], client: "c", refused: refused) else {
            Issue.record("a controller's link ran reset"); return
        }
        #expect(e.code == .forbidden && e.op == 0 && e.message.contains("reset") && e.message.contains("/wipe"))
        #expect(seq.state == before && seq.rev == 1)
        guard case .applied = seq.submit(["id": 3, "ops": [["op": "open", "url": "/page"]]], client: "c", refused: refused) else {
            Issue.record("a harmless link was refused"); return
        }
        guard case .applied = seq.submit(["id": 4, "ops": [["op": "open", "url": "/wipe"]]], client: "admin",
                                          refused: Hub.Role.admin.refusedOperations) else {
            Issue.record("admin's link was refused"); return
        }
    }

    @Test func refusalsSayWhatIsMissing() throws {
        var h = try hub()
        _ = h.handle(.connected(1, grant: nil), now: 0)
        let none = h.handle(.text(1, bytes(["type": "get", "session": "demo"])), now: 0)
        #expect(none.first.map { if case .send(_, .error(let e), _) = $0 { e.message } else { "" } }?.contains("no token") == true)
        _ = h.handle(.connected(9, grant: nil), now: 0)
        #expect(codes(&h, 9, ["type": "hello", "token": "wrong-token-x"]) == "error:forbidden")
        #expect(codes(&h, 9, ["type": "get", "session": "demo"]) == "error:forbidden")   // still no token
        _ = h.handle(.connected(2, grant: try Self.policy().grant(for: "viewer-token-3")), now: 0)
        let viewer = h.handle(.text(2, bytes(["type": "command", "session": "demo", "id": 1, "ops": [["op": "pop"]]])), now: 0)
        #expect(viewer.first.map { if case .send(_, .error(let e), _) = $0 { e.message } else { "" } } == "role viewer may not send commands: that needs controller or admin")
    }

    @Test func sessionPatternsLimitATokenAndTheList() throws {
        var h = try hub()
        _ = h.handle(.connected(1, grant: try Self.policy().grant(for: "controller-2")), now: 0)
        #expect(codes(&h, 1, ["type": "join", "session": "lab-1"]) == "joined")
        #expect(codes(&h, 1, ["type": "join", "session": "prod"]) == "error:forbidden")
        #expect(codes(&h, 1, ["type": "command", "session": "prod", "id": 1, "ops": [["op": "dismiss"]]]) == "error:forbidden")
        let list = h.handle(.text(1, bytes(["type": "sessions"])), now: 0)
        guard case .send(_, .sessions(let summaries), _)? = list.first else { Issue.record(); return }
        #expect(summaries.map(\.session) == ["demo", "lab-1"])
    }

    @Test func reloadMovesGrantsAndReportsLostTokens() throws {
        var h = try hub()
        let p = try Self.policy()
        _ = h.handle(.connected(1, grant: p.grant(for: "controller-2")), now: 0)
        _ = h.handle(.connected(2, grant: p.grant(for: "viewer-token-3")), now: 0)
        _ = h.handle(.connected(3, grant: nil), now: 0)
        let newFile = #"{"tokens": [{"token": "viewer-token-3", "role": "controller"}]}"#
        let effects = h.handle(.policy(try AccessPolicy.load(bytes: Array(newFile.utf8), file: "auth.json")), now: 0)
        #expect(effects.filter { if case .close = $0 { true } else { false } } == [.close(1, code: CloseCode.policyViolation, reason: "token no longer valid")])
        #expect(codes(&h, 2, ["type": "command", "session": "demo", "id": 1, "ops": [["op": "dismiss"]]]) == "ack")   // promoted
    }
}
