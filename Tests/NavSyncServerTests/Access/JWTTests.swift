import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

/// JWTs in the server's middle: the compact form, the claims against the clock, and the
/// hub's `auth` refresh and expiry. Signatures are the runtime's (OpenSSL, `JWTKeysTests`),
/// which passes the hub what verified: here a stand-in for its keys takes the signature
/// "ok" for HS256 and has no key of another kind.
@Suite("JWT: claims, refresh, expiry")
struct JWTTests {
    /// What the runtime's keys would make of `token`.
    static func verify(_ token: String) -> JWTVerification {
        JWT.Signed.parse(token).flatMap { s in s.checked(s.algorithm == "HS256" ? s.signature == Array("ok".utf8) : nil) }
    }

    /// 2026-12-03T12:00:00Z, in ms.
    static let now: Int64 = 1_796_299_200_000

    static func token(_ claims: JSON, header: JSON = ["alg": "HS256", "typ": "JWT"], signature: String = "ok") -> String {
        [header.encoded(), claims.encoded(), Array(signature.utf8)].map(Base64URL.encode).joined(separator: ".")
    }

    static func claims(role: String = "controller", exp: Int64 = now / 1000 + 60, _ more: JSONObject = [:]) -> JSON {
        var o: JSONObject = ["sub": "ana", "role": .string(role), "exp": .int(exp)]
        for (k, v) in more { o[k] = v }
        return .object(o)
    }

    static let settings = JWTSettings()

    func check(_ token: String, audience: String? = nil, at wall: Int64 = now) -> Result<AccessPolicy.Grant, JWT.Refusal> {
        Self.verify(token).flatMap { JWT.grant($0, settings: JWTSettings(audience: audience), wallMS: wall) }
    }

    @Test func aGoodTokenCarriesItsGrant() throws {
        let t = Self.token(Self.claims(["sessions": ["lab-*"]]))
        #expect(JWT.looksLike(t) && !JWT.looksLike("admin-token-1") && !JWT.looksLike("a.b"))
        let g = try check(t).get()
        #expect(g.role == .controller && g.label == "ana" && g.name == "ana" && g.sessions == ["lab-*"])
        #expect(g.expires == (Self.now / 1000 + 60) * 1000 && g.allows(session: "lab-2") && !g.allows(session: "prod"))
        // No sessions claim: every session (the role still limits what it may do).
        #expect(try check(Self.token(Self.claims())).get().sessions == nil)
    }

    @Test func theClockDecides() {
        let expired = Self.token(Self.claims(exp: Self.now / 1000 - 2))
        #expect(check(expired) == .failure(.expired) && JWT.Refusal.expired.description.contains("expired"))
        // One second of leeway, no more.
        #expect((try? check(Self.token(Self.claims(exp: Self.now / 1000))).get()) != nil)
        #expect(check(Self.token(Self.claims(exp: Self.now / 1000)), at: Self.now + 1_000) == .failure(.expired))
        #expect(check(Self.token(Self.claims(["nbf": .int(Self.now / 1000 + 5)]))) == .failure(.notYetValid))
        #expect((try? check(Self.token(Self.claims(["nbf": .int(Self.now / 1000)]))).get()) != nil)
    }

    @Test func badTokensAreRefusedWithWhy() {
        func why(_ token: String, audience: String? = nil) -> String {
            if case .failure(let r) = check(token, audience: audience) { return r.description }
            return "taken"
        }
        #expect(why(Self.token(Self.claims(), header: ["alg": "none"], signature: "")).contains("alg none is not accepted"))
        #expect(why(Self.token(Self.claims(), header: ["alg": "HS512"])).contains("HS512 is not accepted"))
        #expect(why(Self.token(Self.claims(), header: ["alg": "RS256"])) == "no --jwt-key takes alg RS256")
        #expect(why(Self.token(Self.claims(), signature: "forged")) == "the token's signature does not verify")
        #expect(why(Self.token(["sub": "ana", "role": "admin"])) == "token refused: exp is required")
        #expect(why(Self.token(Self.claims(role: "root"))) == "token refused: role must be viewer, controller or admin")
        #expect(why(Self.token(Self.claims(["sessions": []]))).contains("sessions must be a non-empty list"))
        #expect(why(Self.token(Self.claims(["exp": "soon"]))) == "token refused: exp must be a number of seconds")
        #expect(why("only.two") .contains("three parts"))
        #expect(why("%%%.e30.b2s").contains("malformed token"))
        #expect(why(Self.token(Self.claims(), header: ["alg": "HS256", "crit": ["exp"]])).contains("crit"))
        // The audience, when one is set: a string or a list naming it.
        #expect(why(Self.token(Self.claims()), audience: "shop") == "the token has no aud claim; this server takes tokens for audience 'shop'",
                "a token without aud is not 'for another audience'")
        #expect(why(Self.token(Self.claims(["aud": "other"])), audience: "shop") == "the token is for another audience (aud)")
        #expect(why(Self.token(Self.claims(["aud": ["other", "shop"]])), audience: "shop") == "taken")
        #expect(why(Self.token(Self.claims(["aud": "shop"])), audience: "shop") == "taken")
    }

    @Test func thePolicyTakesEitherKind() throws {
        var p = try AccessPolicy.load(bytes: Array(#"{"tokens": [{"token": "admin-token-1", "role": "admin"}]}"#.utf8), file: "auth.json")
        p.jwt = Self.settings
        func check(_ t: String) -> Result<AccessPolicy.Grant, AccessPolicy.Refusal> { p.check(t, verification: Self.verify(t), wallMS: Self.now) }
        #expect(try p.check("admin-token-1", verification: nil, wallMS: Self.now).get().role == .admin)
        #expect(try check(Self.token(Self.claims(role: "viewer"))).get().role == .viewer)
        #expect(p.check("nope-nope-nope", verification: nil, wallMS: Self.now) == .failure(.unknown))
        #expect(check(Self.token(Self.claims(exp: 1))) == .failure(.jwt(.expired)))
        // The policy takes a JWT's claims only as the runtime verified them, for that token.
        let viewer = Self.token(Self.claims(role: "viewer")), admin = Self.token(Self.claims(role: "admin"))
        #expect(p.check(viewer, verification: nil, wallMS: Self.now) == .failure(.jwt(.signature)), "nothing verified it")
        #expect(p.check(admin, verification: Self.verify(viewer), wallMS: Self.now) == .failure(.jwt(.signature)), "another token's claims")
        p.jwt = nil
        #expect(check(Self.token(Self.claims())) == .failure(.unknown), "without --jwt-key a JWT is just an unknown token")
    }

    // MARK: The hub

    func hub() -> Hub {
        var h = Hub(configuration: HubConfiguration(), flows: [], policy: AccessPolicy(grants: [], jwt: Self.settings), ids: .counting())
        _ = h.handle(.started, at: .init(ms: 0, wallMS: Self.now))
        return h
    }

    /// A message as the runtime passes it: a token in it comes verified by the keys.
    func send(_ h: inout Hub, _ c: Int, _ m: JSON, wall: Int64 = now) -> [Hub.Effect] {
        guard case .request(let c, let request, _) = Hub.Event.text(c, m.encoded()) else { return [] }
        return h.handle(.request(c, request, verified: m["token"]?.stringValue.map(Self.verify)), at: .init(ms: 0, wallMS: wall))
    }

    func reply(_ effects: [Hub.Effect]) -> JSON? {
        for e in effects { if case .send(_, let m, let id) = e { return m.json(id: id) } }
        return nil
    }

    @Test func helloWithAJWTThenARefreshThatMayNotRaiseTheRole() {
        var h = hub()
        _ = h.handle(.connected(1, grant: nil), at: .init(ms: 0, wallMS: Self.now))
        #expect(reply(send(&h, 1, ["type": "hello", "token": .string(Self.token(Self.claims()))]))?["type"] == "welcome")
        #expect(reply(send(&h, 1, ["type": "join", "session": "demo"]))?["type"] == "joined")
        let raise = reply(send(&h, 1, ["type": "auth", "token": .string(Self.token(Self.claims(role: "admin")))]))
        #expect(raise?["code"] == "forbidden" && raise?["message"]?.stringValue?.contains("may not raise the role") == true)
        let expired = reply(send(&h, 1, ["type": "auth", "token": .string(Self.token(Self.claims(exp: 5)))]))
        #expect(expired?["message"]?.stringValue == "token expired; the token before stays in force")
        let outside = reply(send(&h, 1, ["type": "auth", "token": .string(Self.token(Self.claims(["sessions": ["lab-*"]])))]))
        #expect(outside?["message"]?.stringValue?.contains("does not allow session 'demo'") == true)
        let later = Self.now / 1000 + 3_600
        let fresh = reply(send(&h, 1, ["type": "auth", "id": "r1", "token": .string(Self.token(Self.claims(role: "viewer", exp: later)))]))
        #expect(fresh == ["type": "auth", "id": "r1", "role": "viewer", "expires": .int(later)])
        let command = reply(send(&h, 1, ["type": "command", "session": "demo", "id": 1, "ops": [["op": "dismiss"]]]))
        #expect(command?["code"] == "forbidden", "the refreshed token's role is in force")
    }

    @Test func anExpiredConnectionIsClosedUnlessItRefreshed() {
        var h = hub()
        let exp = Self.now / 1000 + 10
        for c in [1, 2] {
            _ = h.handle(.connected(c, grant: nil), at: .init(ms: 0, wallMS: Self.now))
            _ = send(&h, c, ["type": "hello", "token": .string(Self.token(Self.claims(exp: exp)))])
        }
        _ = send(&h, 2, ["type": "auth", "token": .string(Self.token(Self.claims(exp: exp + 3_600)))])
        func closes(at wall: Int64) -> [Hub.Effect] {
            h.handle(.tick, at: .init(ms: 0, wallMS: wall)).filter { if case .close = $0 { true } else { false } }
        }
        #expect(closes(at: exp * 1000).isEmpty, "the leeway second")
        #expect(closes(at: exp * 1000 + 1_000) == [.close(1, code: CloseCode.policyViolation, reason: "token expired")])
        #expect(closes(at: exp * 1000 + 2_000).isEmpty)
        #expect(closes(at: (exp + 3_601) * 1000) == [.close(2, code: CloseCode.policyViolation, reason: "token expired")])
    }

    /// SIGHUP: the runtime checks the JWTs connections hold with the keys as they are now;
    /// a token no key verifies any more loses its connection, the others keep theirs.
    @Test func aTokenWhoseKeyIsGoneAtSIGHUPLosesItsConnection() {
        var h = hub()
        let kept = Self.token(Self.claims()), dropped = Self.token(Self.claims(role: "viewer"))
        for (c, t) in [(1, kept), (2, dropped)] {
            _ = h.handle(.connected(c, grant: nil), at: .init(ms: 0, wallMS: Self.now))
            _ = send(&h, c, ["type": "hello", "token": .string(t)])
        }
        #expect(h.heldJWTs == [kept, dropped])
        let effects = h.handle(.policy(AccessPolicy(grants: [], jwt: Self.settings), verified: [kept: Self.verify(kept), dropped: .failure(.signature)]),
                               at: .init(ms: 0, wallMS: Self.now))
        let closed = effects.compactMap { if case .close(let c, _, let reason) = $0 { "\(c): \(reason)" } else { nil } }
        #expect(closed == ["2: token no longer valid"])
    }

    @Test func anUpgradesJWTGrantIsWatchedToo() {
        var h = hub()
        let grant = try? check(Self.token(Self.claims(exp: Self.now / 1000 + 1))).get()
        _ = h.handle(.connected(7, grant: grant), at: .init(ms: 0, wallMS: Self.now))
        let effects = h.handle(.tick, at: .init(ms: 0, wallMS: Self.now + 2_000))
        #expect(effects.contains(.close(7, code: CloseCode.policyViolation, reason: "token expired")))
    }
}
