import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

/// Guards and redirects (docs/flows.md, "Guards and redirects"): conditions, deny, redirects kept or
/// undone, loops, load refusals, and the invariant that no guard fails on the active
/// path after any command.
@Suite("Guards")
struct GuardTests {
    /// A shop in miniature: orders need a user (redirect to login, which remembers where
    /// the user was headed), checkout a cart (deny), the bar an adult (deny), and the
    /// Vault type a user for every route, plus its `secret` an adult.
    static let source: JSON = [
        "name": "guarded", "root": "App",
        "guards": [
            "signedIn": ["when": ["path": "/user", "exists": true], "else": ["redirect": "/login?next={route}&from={entry}"]],
            "cartFull": ["when": ["path": "/cart/0", "exists": true], "else": "deny"],
            "adult": ["when": ["path": "/age", "gte": 18], "else": "deny"],
            "loopA": ["when": ["path": "/a", "equals": true], "else": ["redirect": "/b"]],
            "loopB": ["when": ["path": "/b", "equals": true], "else": ["redirect": "/a"]],
        ],
        "coordinators": [
            "App": ["kind": "root", "initial": "main", "routes": [
                "main": ["coordinator": "Home"],
                "login": ["params": ["next": "string?", "from": "string?"]],
            ]],
            "Home": ["kind": "stack", "initial": "list", "routes": [
                "list": [:],
                "checkout": ["guard": ["cartFull"]],
                "orders": ["guard": ["signedIn"]],
                "bar": ["guard": ["adult"]],
                "vip": ["guard": ["cartFull", "adult"]],
                "a": ["guard": ["loopA"]],
                "b": ["guard": ["loopB"]],
                "vault": ["coordinator": "Vault", "presentation": "sheet"],
            ]],
            "Vault": ["kind": "stack", "initial": "safe", "guard": ["signedIn"], "routes": [
                "safe": [:],
                "secret": ["guard": ["adult"]],
            ]],
        ],
        "links": [
            "/login": [["op": "setRoot", "at": "App", "route": "login", "params": ["next": ":next", "from": ":from"]]],
            "/orders": [["op": "setRoot", "at": "App", "route": "main"], ["op": "push", "at": "Home", "route": "orders"]],
            "/a": [["op": "push", "at": "Home", "route": "a"]],
            "/b": [["op": "push", "at": "Home", "route": "b"]],
        ],
    ]
    static let flow = try! Flow.load(source)

    func session(_ data: JSON) -> JSON { ["op": "update", "scope": "session", "data": data] }

    // MARK: Conditions

    @Test func eachTestOfACondition() throws {
        func holds(_ c: JSON, _ data: JSONObject?) throws -> Bool { try Condition(json: c).holds(in: data) }
        let data: JSONObject = ["user": ["name": "ann"], "age": 20, "cart": [3, 4], "plan": "pro", "ratio": 0.5, "off": false]
        #expect(try holds(["path": "/user", "exists": true], data) && !holds(["path": "/nobody", "exists": true], data))
        #expect(try holds(["path": "/nobody", "exists": false], data) && holds(["path": "/nobody", "exists": false], nil))
        #expect(try holds(["path": "/user/name", "equals": "ann"], data) && !holds(["path": "/user/name", "equals": "bob"], data))
        #expect(try holds(["path": "/plan", "notEquals": "free"], data) && !holds(["path": "/nobody", "notEquals": "free"], data))
        #expect(try holds(["path": "/plan", "in": ["pro", "team"]], data) && !holds(["path": "/plan", "in": ["free"]], data))
        #expect(try holds(["path": "/age", "gt": 18], data) && holds(["path": "/age", "gte": 20], data) && !holds(["path": "/age", "gt": 20], data))
        #expect(try holds(["path": "/ratio", "lt": 1], data) && holds(["path": "/ratio", "lte": 0.5], data) && !holds(["path": "/ratio", "lt": 0.5], data))
        #expect(try !holds(["path": "/plan", "gt": 1], data), "a non-number is false")
        #expect(try !holds(["path": "/nobody", "lt": 1], data), "a pointer that names nothing is false")
        #expect(try holds(["path": "/age", "equals": 20.0], data), "1 and 1.0 are the same number")
        #expect(try holds(["path": "/cart/1", "equals": 4], data) && !holds(["path": "/cart/2", "exists": true], data))
        #expect(try holds(["path": "/off", "equals": false], data))
        #expect(try holds(["all": [["path": "/user", "exists": true], ["path": "/age", "gte": 18]]], data))
        #expect(try !holds(["all": [["path": "/user", "exists": true], ["path": "/age", "gte": 21]]], data))
        #expect(try holds(["any": [["path": "/nobody", "exists": true], ["path": "/age", "gte": 18]]], data))
        #expect(try holds(["not": ["path": "/nobody", "exists": true]], data))
        // Malformed conditions say what is wrong, and where inside.
        #expect(throws: ConditionError.self) { try Condition(json: ["path": "/a"]) }
        #expect(throws: ConditionError.self) { try Condition(json: ["path": "/a", "gt": "x"]) }
        #expect(throws: ConditionError.self) { try Condition(json: ["path": "a", "exists": true]) }
        #expect(throws: ConditionError.self) { try Condition(json: ["path": "/a", "equals": 1, "exists": true]) }
        do { _ = try Condition(json: ["all": [["path": "/a", "exists": true], ["path": "/b", "near": 1]]]); Issue.record() } catch {
            #expect(error.path == ["all", "[1]", "near"])
        }
    }

    // MARK: Deny

    @Test func denyRefusesTheWholeCommandNamingGuardAndRoute() {
        var h = Harness(flow: Self.flow)
        let e = h.fails(.guarded, op: 1, ["op": "push", "route": "list"], ["op": "push", "route": "checkout"])
        #expect(e?.guarded == .init(guard: "cartFull", route: "checkout", entry: "e4"))
        #expect(e.map { ServerMessage.error($0).json()["guard"] } == "cartFull")
        #expect(e?.code.httpStatus == 409)
        #expect(h.rev == 0, "nothing of it applies")
        h.ok(session(["cart": [1]]))
        #expect(h.ok(["op": "push", "route": "checkout"]) == [.applied])
        // A data change that would leave a deny-guarded entry failing is refused too.
        let signOut = h.fails(.guarded, session(["cart": nil]))
        #expect(signOut?.guarded?.guard == "cartFull" && h.state.data == ["cart": [1]])
        h.ok(["op": "pop"], session(["cart": nil]))
        #expect(h.state.data == [:])
    }

    /// Entries off the active path are checked when they come onto it: a pop that
    /// reveals a guarded screen is refused or redirected like any op (the lone stack
    /// edit is put back exactly, then run on a copy).
    @Test func aPopThatRevealsAGuardedScreen() {
        var h = Harness(flow: Self.flow)
        h.ok(session(["age": 30]), ["op": "push", "route": "bar"], ["op": "push", "route": "list"])
        h.ok(session(["age": 10]))   // the bar is not shown: nothing fails yet
        let e = h.fails(.guarded, ["op": "pop"])
        #expect(e?.guarded?.route == "bar" && h.state.root.entries[0].coordinator?.entries.map(\.route) == ["list", "bar", "list"])
        // Ids are as they were: the next push gets the id it would have had.
        let next = h.seq.document.nextID
        h.ok(["op": "push", "route": "list"])
        #expect(h.state.root.entries[0].coordinator?.entries.last?.id.number == next)
        // A redirect instead: the pop is undone and the link opens.
        var r = Harness(flow: Self.flow)
        r.ok(session(["user": "ann"]), ["op": "push", "route": "orders"], ["op": "push", "route": "list"])
        r.ok(session(["user": nil]))
        guard case .applied(let ack, _) = r.send(["op": "pop"]) else { Issue.record(); return }
        #expect(ack.results == [.redirected] && r.state.root.entries[0].route == "login")
        // And a push of a guarded screen on the fast path, undone with its ids kept used.
        var p = Harness(flow: Self.flow)
        let id = p.seq.document.nextID
        #expect(p.fails(.guarded, ["op": "push", "route": "bar"]) != nil && p.seq.document.nextID == id)
    }

    @Test func theTypesGuardsComeBeforeTheRoutesInListOrder() {
        var h = Harness(flow: Self.flow)
        h.ok(["op": "present", "route": "vault"])   // safe is under signedIn: redirected
        #expect(h.state.root.entries[0].route == "login")
        h = Harness(flow: Self.flow)
        h.ok(session(["user": "ann"]), ["op": "present", "route": "vault"])
        // secret: Vault's signedIn holds, then its own adult does not.
        #expect(h.fails(.guarded, ["op": "push", "route": "secret"])?.guarded?.guard == "adult")
        h.ok(session(["user": nil]))   // signedIn fails on safe (already shown): redirect kept
        #expect(h.state.root.entries[0].route == "login")
        // A route's own list, in order: the first that fails acts.
        h = Harness(flow: Self.flow)
        #expect(h.fails(.guarded, ["op": "push", "route": "vip"])?.guarded?.guard == "cartFull")
        h.ok(session(["cart": [1]]))
        #expect(h.fails(.guarded, ["op": "push", "route": "vip"])?.guarded?.guard == "adult")
        h.ok(session(["age": 40]))
        #expect(h.ok(["op": "push", "route": "vip"]) == [.applied])
    }

    // MARK: Redirects

    @Test func aRedirectUndoesTheOpButNotTheIDCounter() {
        var h = Harness(flow: Self.flow)
        let next = h.seq.document.nextID
        guard case .applied(let ack, let patch) = h.send(["op": "push", "route": "orders"]) else { Issue.record(); return }
        #expect(ack.results == [.redirected])
        #expect(ack.redirects == [Redirect(op: 0, guard: "signedIn", link: "/login?next=orders&from=e\(next)")])
        let login = h.state.root.entries[0]
        #expect(login.route == "login" && login.params == ["next": "orders", "from": .string("e\(next)")])
        #expect(login.id.number == next + 1, "the undone push's id stays used")
        #expect(patch.ops.allSatisfy { !$0.path.hasPrefix("/root/current/coordinator/stack/1") }, "the undone push is in no patch")
        // The id it had is gone: naming it is superseded, never another entry.
        #expect(h.ok(["op": "pop", "from": .string("e\(next)")]) == [.superseded])
        // On the wire: the result and the redirects.
        let wire = ServerMessage.ack(session: "s", ack)
        #expect(wire.json()["redirects"] == [["op": 0, "guard": "signedIn", "link": .string("/login?next=orders&from=e\(next)")]])
        #expect(wire.bytes() == wire.json().encoded())
    }

    @Test func aRedirectAfterADataChangeKeepsTheChange() {
        var h = Harness(flow: Self.flow)
        h.ok(session(["user": "ann"]), ["op": "push", "route": "orders"])
        let orders = h.state.root.entries[0].coordinator!.entries[1].id
        // Signing out while orders shows: the change applies, then the redirect.
        guard case .applied(let ack, _) = h.send(session(["user": nil])) else { Issue.record(); return }
        #expect(ack.results == [.redirected])
        #expect(ack.redirects == [Redirect(op: 0, guard: "signedIn", link: "/login?next=orders&from=\(orders)")])
        #expect(h.state.data == [:] && h.state.root.entries[0].route == "login")
    }

    @Test func deepLinksAndChainsAreGuardedOpByOp() {
        var h = Harness(flow: Self.flow)
        guard case .applied(let ack, _) = h.send(["op": "open", "url": "/orders"]) else { Issue.record(); return }
        #expect(ack.results == [.redirected] && ack.redirects.first?.link.hasPrefix("/login?next=orders") == true)
        #expect(h.state.root.entries[0].route == "login")
        // A chain: sign in, then the link; the second op sees the first's data.
        #expect(h.ok(session(["user": "ann"]), ["op": "open", "url": "/orders"]) == [.applied, .applied])
        #expect(h.state.root.entries[0].coordinator?.entries.map(\.route) == ["list", "orders"])
    }

    @Test func loopsAndTooManyRedirectsFail() {
        var h = Harness(flow: Self.flow)
        let loop = h.fails(.redirectLoop, ["op": "push", "route": "a"])
        #expect(loop?.message.contains("loopA") == true && loop?.message.contains("loopB") == true && loop?.message.contains("/b") == true)
        // The chain as data, the guard that failed again last, on the wire too.
        #expect(loop?.guarded?.chain.map(\.guard) == ["loopA", "loopB", "loopA"])
        #expect(loop?.guarded?.chain.first?.link == "/b" && loop?.guarded?.guard == "loopA")
        if let loop {
            let wire = ServerMessage.error(loop).json()
            #expect(wire["chain"]?.arrayValue?.count == 3 && wire["chain"]?.arrayValue?.first?["link"] == "/b")
            #expect((try? ServerMessage.decode(wire))??.message == .error(loop))
        }
        #expect(h.rev == 0)
        // Six guards, each redirecting to the next route: more than 5 redirects.
        var guards: JSONObject = [:], routes: JSONObject = ["r0": [:]], links: JSONObject = [:]
        for i in 1...7 {
            guards["g\(i)"] = ["when": ["path": .string("/ok\(i)"), "exists": true], "else": ["redirect": .string("/r\(i + 1)")]]
            routes["r\(i)"] = ["guard": [.string("g\(i)")]]
            links["/r\(i)"] = [["op": "push", "route": .string("r\(i)")]]
        }
        routes["r8"] = [:]
        links["/r8"] = [["op": "push", "route": "r8"]]
        let chain = try! Flow.load(["name": "chain", "root": "S", "guards": .object(guards), "links": .object(links),
                                    "coordinators": ["S": ["kind": "stack", "initial": "r0", "routes": .object(routes)]]])
        var c = Harness(flow: chain)
        #expect(c.fails(.redirectLoop, ["op": "push", "route": "r1"])?.message.contains("more than 5") == true)
        c.ok(["op": "update", "scope": "session", "data": ["ok7": true]])
        // With g7 holding: r1 -> r2 -> … -> r6 -> r7 is 5 redirects, which is allowed.
        guard case .applied(let ack, _) = c.send(["op": "push", "route": "r2"]) else { Issue.record(); return }
        #expect(ack.redirects.map(\.guard) == ["g2", "g3", "g4", "g5", "g6"])
        #expect(c.state.root.entries.map(\.route) == ["r0", "r7"])
    }

    @Test func restoreAndLoadGoThroughGuards() {
        var h = Harness(flow: Self.flow)
        h.ok(session(["age": 30]), ["op": "push", "route": "bar"])
        let onBar = h.rev
        h.ok(["op": "pop"], session(["age": 10]))
        // Restore brings the data back with the state: consistent, it applies.
        #expect(h.ok(["op": "restore", "rev": .int(Int64(onBar))]) == [.applied])
        #expect(h.state.data == ["age": 30])
        // A loaded state that fails a deny guard is refused.
        let doc = try! h.json.applying([PatchOperation(.add, "/data", value: ["age": 5])])
        #expect(h.fails(.guarded, ["op": "load", "state": doc])?.guarded?.route == "bar")
        // Reset clears the data.
        h.ok(["op": "reset"])
        #expect(h.state.data == nil && h.json["data"] == nil)
    }

    @Test func sessionUpdatesConflictOnTheDataAndTheActivePath() {
        var h = Harness(flow: Self.flow)
        let base = h.rev
        h.ok(session(["plan": "pro"]))
        h.fails(.conflict, session(["plan": "team"]), base: base, reject: true)
        h.ok(session(["plan": "team"]), base: h.rev, reject: true)
        // An entry-scoped update does not touch the session's data.
        let b2 = h.rev
        h.ok(["op": "update", "data": ["x": 1]])
        #expect(h.state.data == ["plan": "team"])
        _ = b2
        // Its own fields first.
        h.fails(.badRequest, ["op": "update", "scope": "session", "entry": "e2", "data": ["x": 1]])
        h.fails(.badRequest, ["op": "update", "scope": "session", "at": "root", "data": ["x": 1]])
        h.fails(.badParams, ["op": "update", "scope": "everything", "data": ["x": 1]])
        #expect(h.ok(session(["plan": "team"])) == [.noop])
        // On the wire it is one more top-level key, absent until set.
        #expect(Harness(flow: Self.flow).json["data"] == nil)
        #expect(h.json["data"] == ["plan": "team"])
    }

    /// A link's write of the session's data is checked for conflicts as the same
    /// `update` sent directly is: through `open`, and through a guard's redirect.
    /// Regression: with `base` 1 and the data changed at revision 2, `open /signin`
    /// (whose link sets `user`) applied; the same `update` sent directly was a conflict.
    @Test func aLinksSessionWriteIsConflictCheckedLikeTheSendersOwn() throws {
        let edited = try Self.source.applying([
            PatchOperation(.add, "/links/~1signin", value: [["op": "update", "scope": "session", "data": ["user": "ann"]]]),
            PatchOperation(.add, "/links/~1mark", value: [["op": "update", "scope": "session", "data": ["marked": true]]]),
            PatchOperation(.add, "/guards/marked", value: ["when": ["path": "/marked", "exists": true], "else": ["redirect": "/mark"]]),
            PatchOperation(.add, "/coordinators/Home/routes/gated", value: ["guard": ["marked"]]),
        ])
        let flow = try Flow.load(edited, file: "g.json")
        var h = Harness(flow: flow)
        h.ok(session(["plan": "pro"]))          // the data changes after base 0
        h.fails(.conflict, session(["user": "bob"]), base: 0, reject: true)
        h.fails(.conflict, ["op": "open", "url": "/signin"], base: 0, reject: true)
        h.fails(.conflict, ["op": "push", "at": "Home", "route": "gated"], base: 0, reject: true)
        // Seen (base = now) or rebased: applied.
        h.ok(["op": "open", "url": "/signin"], base: h.rev, reject: true)
        #expect(h.state.data?["user"] == "ann")
        #expect(h.ok(["op": "push", "at": "Home", "route": "gated"]) == [.redirected] && h.state.data?["marked"] == true)
    }

    // MARK: Load refusals

    @Test func flowsWithBadGuardsAreRefusedNamingThePlace() {
        func refusal(_ pointer: String, _ value: JSON) -> String {
            let edited = try! Self.source.applying([PatchOperation(.add, pointer, value: value)])
            do { _ = try Flow.load(edited, file: "g.json"); return "loaded" } catch { return error.description }
        }
        #expect(refusal("/coordinators/Home/routes/bar/guard", ["grownUp"])
            .hasPrefix("g.json: coordinators.Home.routes.bar.guard[0]: unknown guard \"grownUp\""))
        #expect(refusal("/guards/adult/else", ["redirect": "/nowhere"])
            .hasPrefix("g.json: guards.adult.else.redirect: \"/nowhere\" matches no link"))
        // A {param.NAME} no route the guard protects declares: refused (it would always be
        // empty). Regression: `{param.ordr}` loaded and yielded "".
        #expect(refusal("/guards/signedIn/else", ["redirect": "/login?next={param.ordr}"])
            == "g.json: guards.signedIn.else.redirect: \"/login?next={param.ordr}\" has {param.ordr}, but no route guard \"signedIn\" protects declares a param \"ordr\" (they declare none)")
        #expect(refusal("/guards/adult/when", ["all": [["path": "/age", "gte": "x"]]])
            == "g.json: guards.adult.when.all[0].gte: 'gte' must be a number, got string")
        #expect(refusal("/guards/adult/else", "allow").contains("guards.adult.else: 'else' must be \"deny\""))
        #expect(refusal("/coordinators/App/guard", ["cartFull"])
            .contains("the initial state already fails guard \"cartFull\" on route \"main\""))
        // The redirect's own link opens the route the guard protects.
        #expect(refusal("/coordinators/App/routes/login/guard", ["signedIn"])
            .contains("guards.signedIn.else.redirect: its link /login (op 0) opens route \"login\", which guard \"signedIn\" itself protects"))
        #expect(refusal("/guards/x", ["when": ["path": "/a", "exists": true]]).contains("guards.x.else: missing 'else'"))
    }

    @Test func aFlowWithoutGuardsIsNotGuarded() {
        #expect(!studioFlow.isGuarded && Self.flow.isGuarded && Flow.demo.isGuarded)
        #expect(Self.flow.guards["adult"]?.json == ["when": ["path": "/age", "gte": 18.0], "else": "deny"])
    }

    /// docs/flows.md's Swift example: the builder writes guards and guard lists.
    @Test func flowBuilderDeclaresGuards() throws {
        let guarded = try Flow("store", root: "Home") {
            FlowGuard("signedIn", when: ["path": "/user", "exists": true], else: .redirect("/login?next={route}"))
            CoordinatorType("Home", .stack, initial: "list") {
                Route("list")
                Route("login", params: [("next", "string?")])
                Route("orders", guards: ["signedIn"])
            }
            DeepLink("/login", [["op": "push", "route": "login", "params": ["next": ":next"]]])
        }
        #expect(guarded.isGuarded && guarded.source["guards"]?["signedIn"]?["else"] == ["redirect": "/login?next={route}"])
        var h = Harness(flow: guarded)
        #expect(h.ok(["op": "push", "route": "orders"]) == [.redirected])
        #expect(h.state.root.entries.map(\.route) == ["list", "login"] && h.state.root.entries[1].params == ["next": "orders"])
    }

    /// Placeholders are filled in URL-escaped, so a route name never breaks the link.
    @Test func aRedirectLinkEscapesWhatItFillsIn() {
        let g = Guard(name: "g", condition: .not(.all([])), otherwise: .redirect("/login?next={route}&from={entry}"))
        #expect(g.link(route: "a b/c?d&é", entry: EntryID(7)) == "/login?next=a%20b%2Fc%3Fd%26%C3%A9&from=e7")
        let u = Guard(name: "u", condition: .not(.all([])), otherwise: .redirect("/login?next={url}&id={param.id}&x={param.none}"))
        #expect(u.link(route: "order", entry: EntryID(7), params: ["id": 7], url: "/orders/7") == "/login?next=%2Forders%2F7&id=7&x=")
        #expect(u.link(route: "order", entry: EntryID(7), params: ["id": 7, "note": "a b"]) == "/login?next=%2Forder%3Fid%3D7%26note%3Da%2520b&id=7&x=",
                "not an open: the route and its params as a path")
        #expect(Guard(name: "d", condition: .all([]), otherwise: .deny).link(route: "x", entry: EntryID(1)) == nil)
    }

    /// A `{…}` that is no placeholder is refused at load, naming its place.
    @Test func anUnknownPlaceholderIsRefusedAtLoad() {
        let flow: JSON = ["name": "typo", "root": "S",
                          "guards": ["g": ["when": ["path": "/u", "exists": true], "else": ["redirect": "/login?next={rout}"]]],
                          "links": ["/login": [["op": "push", "route": "login"]]],
                          "coordinators": ["S": ["kind": "stack", "initial": "home", "routes": ["home": [:], "login": [:], "p": ["guard": ["g"]]]]]]
        do {
            _ = try Flow.load(flow)
            Issue.record("a typo in a placeholder loaded")
        } catch {
            #expect(error.description.contains("guards.g.else.redirect") && error.description.contains("{rout}"), "\(error)")
        }
    }

    // MARK: The demo

    @Test func theDemosCheckoutNeedsACartAndItsOrdersAUser() {
        var h = Harness.onMain()
        #expect(h.fails(.guarded, ["op": "open", "url": "/checkout"])?.guarded?.guard == "cartFull")
        guard case .applied(let ack, _) = h.send(["op": "open", "url": "/orders/7"]) else { Issue.record(); return }
        #expect(ack.redirects.map(\.link) == ["/login?next=%2Forders%2F7"])
        #expect(h.state.root.entries[0].route == "login" && h.state.root.entries[0].params["next"] == "/orders/7",
                "the sign-in screen knows where the user was going")
        h.ok(["op": "update", "scope": "session", "data": ["user": "ann", "cart": [42]]])
        #expect(h.ok(["op": "open", "url": "/orders/7"]) == [.applied])
        #expect(h.ok(["op": "open", "url": "/checkout"]) == [.applied])
    }

    // MARK: Randomized

    /// Random commands on the guarded flow: after every one, no guard fails on the
    /// active path, and failed commands change nothing (the harness checks patches,
    /// shapes and atomicity).
    @Test(arguments: [1, 2, 3] as [UInt64]) func randomCommandsKeepEveryGuard(seed: UInt64) {
        var rng = SeededRandom(seed: seed)
        var h = Harness(flow: Self.flow)
        let routes = ["list", "checkout", "orders", "bar", "vault", "safe", "secret", "a", "b"]
        let datas: [JSON] = [["user": "u"], ["user": nil], ["age": 30], ["age": 3], ["cart": [1]], ["cart": nil], ["a": true], ["b": true], ["a": nil]]
        func randomOp() -> JSON {
            switch Int.random(in: 0..<7, using: &rng) {
            case 0, 1: return ["op": "push", "route": .string(routes.randomElement(using: &rng)!)]
            case 2: return ["op": "pop"]
            case 3: return ["op": "update", "scope": "session", "data": datas.randomElement(using: &rng)!]
            case 4: return ["op": "open", "url": .string(["/orders", "/a", "/login"].randomElement(using: &rng)!)]
            case 5: return ["op": "setRoot", "at": "App", "route": "main"]
            default: return ["op": "dismiss"]
            }
        }
        var redirected = 0, denied = 0
        for _ in 0..<1500 {
            let ops = (0..<Int.random(in: 1...3, using: &rng)).map { _ in randomOp() }
            let before = h.seq.state
            switch h.seq.submit(Command(id: .int(h.nextCommand), ops: ops), client: "r") {
            case .applied(let ack, let patch):
                redirected += ack.redirects.count
                // Every client mirrors the server: the patch takes the old state to the new.
                #expect((try? before.json.applying(patch.ops)) == h.seq.state.json)
            case .failed(let e):
                if e.code == .guarded { denied += 1 }
                #expect(h.seq.state == before, "a failed command changes nothing")
            case .unchanged, .duplicate:
                #expect(h.seq.state == before)
            }
            h.nextCommand += 1
            checkShape(h.seq.state, Self.flow)
            #expect(h.seq.document.firstGuardFailure() == nil)
        }
        #expect(redirected > 0 && denied > 0, "the run exercised both")
    }
}
