import Testing
import NavSync
@testable import NavSyncServer
import TestSupport

/// The HTTP API and the upgrade's admission as values (`HTTPAPI`): a request, the hub,
/// what the server is and the instant in; the answer out, with no socket.
@Suite("HTTP API")
struct HTTPAPITests {
    static let site = HTTPAPI.Site(webSocketURL: "ws://127.0.0.1:7420/ws", host: "127.0.0.1", port: 7420)
    static let now: Int64 = 1_796_299_200_000

    func hub(_ auth: String? = nil, jwt: Bool = false) throws -> Hub {
        var policy = try auth.map { try AccessPolicy.load(bytes: Array($0.utf8), file: "auth.json") }
        if jwt { policy = policy ?? AccessPolicy(grants: []); policy!.jwt = JWTSettings() }
        var h = Hub(configuration: HubConfiguration(), flows: [], policy: policy, ids: .counting())
        _ = h.handle(.started, at: .init(ms: 0, wallMS: Self.now))
        return h
    }

    func ask(_ method: String, _ target: String, _ headers: [(String, String)] = [], body: String = "",
             verified: JWTVerification? = nil, site: HTTPAPI.Site = site) -> HTTPAPI.Asked {
        HTTPAPI.Asked(HTTPRequest(method: method, target: target, minorVersion: 1, headers: headers.map { (name: $0.0, value: $0.1) },
                                  body: Array(body.utf8)), connection: 5, verified: verified, wallMS: Self.now)
    }

    func response(_ a: HTTPAPI.Answer) -> HTTPResponse? { if case .response(let r) = a { r } else { nil } }
    func header(_ r: HTTPResponse?, _ name: String) -> String? { r?.headers.first { $0.0 == name }?.1 }
    func json(_ r: HTTPResponse?) -> JSON? { r.flatMap { try? JSON.parse($0.body) } }

    @Test func routesAndMethods() throws {
        let api = HTTPAPI(site: Self.site), h = try hub()
        let missing = response(api.answer(ask("GET", "/nowhere"), hub: h))
        #expect(missing?.status == 404 && json(missing)?["code"] == "not_found")
        let wrong = response(api.answer(ask("POST", "/api/sessions"), hub: h))
        #expect(wrong?.status == 405 && header(wrong, "Allow") == "GET, HEAD")
        let deleteOnly = response(api.answer(ask("PUT", "/api/sessions/demo"), hub: h))
        #expect(header(deleteOnly, "Allow") == "GET, HEAD, DELETE")
        #expect(json(response(api.answer(ask("GET", "/api/sessions/demo"), hub: h)))?["rev"] == 0)
        #expect(response(api.answer(ask("GET", "/api/sessions/nope"), hub: h))?.status == 404)
        #expect(response(api.answer(ask("GET", "/api/sessions/demo?rev=x"), hub: h))?.status == 400)
        #expect(response(api.answer(ask("GET", "/api/sessions/demo/history?limit=0"), hub: h))?.status == 400)
        if case .page(.module) = api.answer(ask("HEAD", "/navsync.js"), hub: h) {} else { Issue.record("the module is the runtime's to serve") }
        let index = String(decoding: response(api.answer(ask("GET", "/api"), hub: h))?.body ?? [], as: UTF8.self)
        #expect(index.contains("ws://127.0.0.1:7420/ws"))
        if case .delete(session: "demo") = api.answer(ask("DELETE", "/api/sessions/demo"), hub: h) {} else { Issue.record("a delete for the hub") }
        // Without a cluster or hooks, their resources say so; with them, the runtime answers.
        #expect(response(api.answer(ask("GET", "/api/cluster"), hub: h))?.status == 404)
        #expect(response(api.answer(ask("GET", "/api/webhooks"), hub: h))?.status == 404)
        var clustered = Self.site
        clustered.clusterNode = "n1"; clustered.hasBackend = true
        if case .clusterListing = HTTPAPI(site: clustered).answer(ask("GET", "/api/cluster"), hub: h) {} else { Issue.record() }
        if case .webhookStatus = HTTPAPI(site: clustered).answer(ask("GET", "/api/webhooks"), hub: h) {} else { Issue.record() }
    }

    @Test func healthAndReadiness() throws {
        let h = try hub()
        var site = Self.site
        site.clusterNode = "n1"
        site.notReady = "Redis at 127.0.0.1:6379: connection refused"
        let api = HTTPAPI(site: site)
        let health = response(api.answer(ask("GET", "/healthz", [("Origin", "https://evil.example")]), hub: h))
        #expect(health?.status == 200 && header(health, "X-Navsync-Origin") == "refused" && header(health, "X-Navsync-Cluster") == "n1")
        let own = response(api.answer(ask("GET", "/healthz", [("Origin", "http://127.0.0.1:7420")]), hub: h))
        #expect(header(own, "X-Navsync-Origin") == "allowed")
        let ready = response(api.answer(ask("GET", "/readyz"), hub: h))
        #expect(ready?.status == 503 && json(ready)?["reason"] == .string(site.notReady!))
    }

    @Test func tokensAndRoles() throws {
        let h = try hub(#"{"tokens": [{"token": "viewer-token-0123", "role": "viewer"}, {"token": "lab-controller-01", "role": "controller", "sessions": ["lab-*"]}]}"#)
        let api = HTTPAPI(site: Self.site)
        let none = response(api.answer(ask("GET", "/api/sessions"), hub: h))
        #expect(none?.status == 401 && header(none, "WWW-Authenticate") == "Bearer")
        #expect(response(api.answer(ask("GET", "/api/sessions", [("Authorization", "Bearer viewer-token-0123")]), hub: h))?.status == 200)
        let viewerCommand = response(api.answer(ask("POST", "/api/sessions/demo/commands", [("Authorization", "Bearer viewer-token-0123")], body: "{}"), hub: h))
        #expect(viewerCommand?.status == 403 && json(viewerCommand)?["message"]?.stringValue?.contains("needs controller") == true)
        let outside = response(api.answer(ask("GET", "/api/sessions/demo", [("Authorization", "Bearer lab-controller-01")]), hub: h))
        #expect(outside?.status == 403 && json(outside)?["message"]?.stringValue?.contains("may not use session 'demo'") == true)
        #expect(response(api.answer(ask("GET", "/metrics"), hub: h))?.status == 401)
        if case .metrics = api.answer(ask("GET", "/metrics", [("Authorization", "Bearer viewer-token-0123")]), hub: h) {} else { Issue.record() }
    }

    @Test func commandsFromTheBody() throws {
        let api = HTTPAPI(site: Self.site), h = try hub()
        #expect(json(response(api.answer(ask("POST", "/api/sessions/demo/commands", body: "{nope"), hub: h)))?["code"] == "bad_json")
        #expect(json(response(api.answer(ask("POST", "/api/sessions/demo/commands", body: "[1]"), hub: h)))?["code"] == "bad_request")
        let evil = response(api.answer(ask("POST", "/api/sessions/demo/commands", [("Origin", "https://evil.example")], body: "{}"), hub: h))
        #expect(evil?.status == 403)
        guard case .command(let keyed) = api.answer(ask("POST", "/api/sessions/demo/commands", [("Idempotency-Key", "k-1")],
                                                         body: #"{"id": 7, "ops": [{"op": "dismiss"}]}"#), hub: h) else { Issue.record(); return }
        #expect(keyed.command["id"] == "k-1" && keyed.echoID == 7 && keyed.client == "http" && keyed.connection == 5 && keyed.role == .admin)
        guard case .command(let named) = api.answer(ask("POST", "/api/sessions/demo/commands", [("X-Navsync-Client", "tv-1")],
                                                         body: #"{"id": 1, "ops": []}"#), hub: h) else { Issue.record(); return }
        #expect(named.client == "tv-1" && named.echoID == nil)
        #expect(response(api.answer(ask("POST", "/api/sessions/demo/commands", [("X-Navsync-Client", "no spaces")], body: "{}"), hub: h))?.status == 400)
    }

    /// The upgrade: the origin first, then a token when one is shown; a JWT counts only
    /// as the runtime verified it, its claims judged at the instant given.
    @Test func admission() throws {
        let api = HTTPAPI(site: Self.site)
        let h = try hub(#"{"tokens": [{"token": "viewer-token-0123", "role": "viewer"}]}"#, jwt: true)
        if case .refused(let r) = api.admit(ask("GET", "/ws", [("Origin", "https://evil.example")]), hub: h) {
            #expect(r.status == 403)
        } else { Issue.record("a foreign origin is refused") }
        if case .admitted(nil) = api.admit(ask("GET", "/ws"), hub: h) {} else { Issue.record("no token: admitted, with nothing granted") }
        if case .admitted(let g?) = api.admit(ask("GET", "/ws?token=viewer-token-0123"), hub: h) { #expect(g.role == .viewer) } else { Issue.record() }
        if case .refused(let r) = api.admit(ask("GET", "/ws?token=wrong-token-0000"), hub: h) { #expect(r.status == 401) } else { Issue.record() }
        let claims: JSON = ["role": "controller", "exp": .int(Self.now / 1000 + 60)]
        let jwt = ["{\"alg\":\"HS256\"}", claims.encoded().map { String(UnicodeScalar($0)) }.joined(), "sig"]
            .map { Base64URL.encode(Array($0.utf8)) }.joined(separator: ".")
        if case .refused(let r) = api.admit(ask("GET", "/ws", [("Authorization", "Bearer \(jwt)")]), hub: h) {
            #expect(String(decoding: r.body, as: UTF8.self).contains("signature does not verify"), "nothing verified it")
        } else { Issue.record() }
        let verified = JWTVerification.success(JWT.Verified(token: jwt, claims: claims))
        if case .admitted(let g?) = api.admit(ask("GET", "/ws", [("Authorization", "Bearer \(jwt)")], verified: verified), hub: h) {
            #expect(g.role == .controller)
        } else { Issue.record() }
        var later = ask("GET", "/ws", [("Authorization", "Bearer \(jwt)")], verified: verified)
        later.wallMS = Self.now + 120_000
        if case .refused(let r) = api.admit(later, hub: h) { #expect(String(decoding: r.body, as: UTF8.self).contains("expired")) } else { Issue.record() }
    }
}
