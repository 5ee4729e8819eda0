import Foundation
import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

@Suite("Flows")
struct FlowTests {
    /// The docs/flows.md, "The format" example, as a base for broken variants.
    static let shopText = #"""
    {
      "name": "shop",
      "root": "App",
      "coordinators": {
        "App":  { "kind": "root", "initial": "login",
                  "routes": { "login": {}, "main": { "coordinator": "Main" } } },
        "Main": { "kind": "tabs", "initial": ["home", "profile"],
                  "routes": { "home":    { "coordinator": "Home", "tab": { "title": "Home" } },
                              "profile": { "tab": { "title": "Profile" } } } },
        "Home": { "kind": "stack", "initial": "list",
                  "routes": { "list":     { "title": "Products" },
                              "detail":   { "params": { "id": "int", "note": "string?" }, "title": "Product {id}" },
                              "settings": { "coordinator": "Settings", "presentation": "sheet" } } },
        "Settings": { "kind": "stack", "initial": "main", "routes": { "main": {}, "about": {} } }
      },
      "links": {
        "/product/:id": [
          { "op": "setRoot", "at": "App", "route": "main" },
          { "op": "select", "route": "home" },
          { "op": "setStack", "at": "Home", "routes": [ { "route": "list" }, { "route": "detail", "params": { "id": ":id" } } ] }
        ]
      }
    }
    """#

    static func shop() throws -> Flow { try Flow.load(bytes: Array(shopText.utf8), file: "shop.json") }

    /// Link ops are decoded once, at load, with the types of their capture params; opening
    /// a link gives the same operations as decoding every op with its captures filled in.
    @Test func linksDecodeTheirOpsOnce() throws {
        let link = Flow.demo.links.first { $0.pattern == "/product/:id" }!
        #expect(link.compiled.count == 3)
        #expect(link.slots.map { "\($0.op).\($0.item ?? -1).\($0.key):\($0.type)" } == ["2.1.id:int", "2.1.note:string?"])
        #expect(!FlowLink.isCapture(":") && FlowLink.isCapture(":id") && !FlowLink.isCapture("id"))
        // An absent capture leaves its param out; one that does not convert names itself.
        let (_, bare) = try Flow.demo.expand(url: "/product/7")
        #expect(bare[2] == (try NavOperation(json: ["op": "setStack", "at": "Home", "routes": ["list", ["route": "detail", "params": ["id": 7]]]])))
        #expect(link.compiled[2].action != bare[2].action, "opening fills a copy, not the link")
        #expect(throws: NavError(.badParams, "link '/product/:id' op 2: capture ':id' = 'x' is not a valid int for param 'id'")) {
            try Flow.demo.expand(url: "/product/x")
        }
        let (_, ops) = try Flow.demo.expand(url: "/product/7?note=hi")
        let filled: [JSON] = [
            ["op": "setRoot", "at": "App", "route": "main"],
            ["op": "select", "route": "home"],
            ["op": "setStack", "at": "Home", "routes": ["list", ["route": "detail", "params": ["id": 7, "note": "hi"]]]],
        ]
        #expect(ops == (try filled.map { j throws(NavError) in try NavOperation(json: j) }))
    }

    @Test func designExampleLoads() throws {
        let flow = try Self.shop()
        #expect(flow.name == "shop")
        #expect(flow.coordinatorOrder == ["App", "Main", "Home", "Settings"])
        #expect(flow.spec("Home").routeOrder == ["list", "detail", "settings"])
        #expect(flow.spec("Home").routes["detail"]!.params["note"] == ParamType(base: .string, optional: true))
        #expect(flow.spec("Home").routes["settings"]!.presentation == .sheet)
        #expect(flow.links.map(\.pattern) == ["/product/:id"])
        #expect(flow.links[0].segments == [.literal("product"), .capture("id")])
    }

    @Test func demoFlowShowsTheWholeModel() {
        let flow = Flow.demo
        let kinds = Set(flow.coordinators.values.map(\.kind))
        #expect(kinds == [.root, .stack, .tabs])
        #expect(flow.spec("Main").initial.count >= 3)
        let routes = flow.coordinators.values.flatMap { $0.routes.values }
        #expect(routes.contains { $0.presentation == .sheet && $0.coordinator != nil })
        #expect(routes.contains { $0.presentation == .cover && $0.coordinator != nil })
        #expect(routes.contains { $0.params.values.contains { !$0.optional } })
        #expect(routes.contains { $0.params.values.contains { $0.optional } })
        #expect(flow.links.filter { $0.segments.contains { if case .capture = $0 { true } else { false } } }.count >= 3)
    }

    @Test func swiftBuilderMakesTheSameFlowAsJSON() throws {
        let built = try Flow("shop", root: "App") {
            CoordinatorType("App", .root, initial: "login") {
                Route("login")
                Route("main", opens: "Main")
            }
            CoordinatorType("Main", .tabs, initial: ["home", "profile"]) {
                Route("home", opens: "Home", tab: ["title": "Home"])
                Route("profile", tab: ["title": "Profile"])
            }
            CoordinatorType("Home", .stack, initial: "list") {
                Route("list", title: "Products")
                Route("detail", params: [("id", "int"), ("note", "string?")], title: "Product {id}")
                Route("settings", opens: "Settings", presentation: .sheet)
            }
            CoordinatorType("Settings", .stack, initial: "main") {
                Route("main")
                Route("about")
            }
        }
        let loaded = try Self.shop()
        #expect(NavDocument(flow: built).state == NavDocument(flow: loaded).state)
        #expect(built.spec("Home").routeOrder == loaded.spec("Home").routeOrder)
    }

    /// Replaces `old` with `new` in the example, loads it, and returns the error text.
    func refusal(_ old: String, _ new: String) -> String {
        precondition(Self.shopText.contains(old), "test setup: \(old)")
        let text = Self.shopText.replacingFirst(old, with: new)
        do {
            _ = try Flow.load(bytes: Array(text.utf8), file: "shop.json")
            return "(loaded)"
        } catch {
            return error.description
        }
    }

    @Test func brokenFlowsAreRefusedWithThePlace() {
        let cases: [(String, String, String)] = [
            // 1. unknown root coordinator
            (#""root": "App""#, #""root": "Ap""#,
             #"shop.json: root: names coordinator "Ap", which 'coordinators' does not declare"#),
            // Unknown keys, at every level (a typo must not load as if it were absent).
            (#""root": "App""#, #""root": "App", "link": {}"#,
             #"shop.json: link: unknown key "link" in a flow (expected name, root, coordinators, links, guards)"#),
            (#""kind": "tabs""#, #""kind": "tabs", "intial": "x""#,
             #"shop.json: coordinators.Main.intial: unknown key "intial" in a coordinator (expected kind, initial, routes, guard)"#),
            (#""params": { "id": "int", "note": "string?" }"#, #""param": { "id": "int", "note": "string?" }"#,
             #"shop.json: coordinators.Home.routes.detail.param: unknown key "param" in a route (expected params, coordinator, presentation, tab, title, guard)"#),
            // 2. a route opens an unknown coordinator
            (#""coordinator": "Settings""#, #""coordinator": "Setings""#,
             #"shop.json: coordinators.Home.routes.settings.coordinator: unknown coordinator "Setings""#),
            // 3. unknown initial route
            (#""initial": "list""#, #""initial": "lst""#,
             #"shop.json: coordinators.Home.initial: initial route "lst" is not declared in 'routes'"#),
            // 4. empty tabs
            (#""initial": ["home", "profile"]"#, #""initial": []"#,
             "shop.json: coordinators.Main.initial: a tabs coordinator needs at least one initial tab"),
            // 5. initial routes that nest forever
            (#""list":     { "title": "Products" }"#, #""list": { "title": "Products", "coordinator": "Main" }"#,
             "shop.json: coordinators.Home.initial: initial routes nest forever: Home -> Main -> Home"),
            (#""routes": { "main": {}"#, #""routes": { "main": { "coordinator": "Settings" }"#,
             "shop.json: coordinators.Settings.initial: initial routes nest forever: Settings -> Settings"),
            // 6. a link op names an unknown route
            (#"{ "route": "detail", "params": { "id": ":id" } }"#, #"{ "route": "detial", "params": { "id": ":id" } }"#,
             #"shop.json: links["/product/:id"][2].routes[1]: route "detial" is not declared on Home"#),
            // 7. unknown param type
            (#""id": "int""#, #""id": "integer""#,
             #"shop.json: coordinators.Home.routes.detail.params.id: unknown param type "integer" (expected string, int, number or bool, with '?' for optional)"#),
            // 8. unknown kind
            (#""kind": "tabs""#, #""kind": "tabbar""#,
             #"shop.json: coordinators.Main.kind: unknown kind "tabbar" (expected root, stack or tabs)"#),
            // 9. initial route with a required param and no value
            (#""initial": "list""#, #""initial": "detail""#,
             "shop.json: coordinators.Home.initial: initial route \"detail\": route 'detail' needs param 'id' (int)"),
            // 10. unknown link op, and `open` inside a link
            (#"{ "op": "select", "route": "home" }"#, #"{ "op": "choose", "route": "home" }"#,
             #"shop.json: links["/product/:id"][1]: unknown operation 'choose'"#),
            (#"{ "op": "select", "route": "home" }"#, #"{ "op": "open", "url": "/x" }"#,
             #"shop.json: links["/product/:id"][1]: a link cannot 'open' another link"#),
            // 11. link `at` of an unknown type, and of a kind the op does not work on
            (#"{ "op": "setRoot", "at": "App", "route": "main" }"#, #"{ "op": "setRoot", "at": "Ap", "route": "main" }"#,
             #"shop.json: links["/product/:id"][0].at: unknown coordinator type "Ap""#),
            (#"{ "op": "setRoot", "at": "App", "route": "main" }"#, #"{ "op": "setRoot", "at": "Main", "route": "main" }"#,
             #"shop.json: links["/product/:id"][0].at: 'setRoot' does not work on Main, a tabs coordinator"#),
            // 12. a stack with a list as initial; bad presentation
            (#""initial": "main", "routes""#, #""initial": ["main"], "routes""#,
             "shop.json: coordinators.Settings.initial: a stack coordinator's 'initial' is one route, not a list"),
            (#""presentation": "sheet""#, #""presentation": "modal""#,
             #"shop.json: coordinators.Home.routes.settings.presentation: unknown presentation "modal" (expected push, sheet or cover)"#),
            // 13. not JSON at all
            (#""name": "shop","#, #""name": "shop""#,
             "shop.json: not valid JSON: line 3, column 8: '}' expected near '\"root\"'"),
        ]
        for (old, new, expected) in cases {
            #expect(refusal(old, new) == expected)
        }
    }

    /// Link params are checked at load (they used to fail only once the link opened):
    /// an undeclared param, a literal of the wrong type, a misspelt capture; and `tab`
    /// belongs to routes of tab bars.
    @Test func linkParamsAreCheckedAtLoad() {
        let detail = #"{ "route": "detail", "params": { "id": ":id" } }"#
        #expect(refusal(detail, #"{ "route": "detail", "params": { "id": ":id", "colour": "red" } }"#)
            == #"shop.json: links["/product/:id"][2].routes[1].params.colour: route "detail" has no param "colour" (it has id, note)"#)
        #expect(refusal(detail, #"{ "route": "detail", "params": { "id": "seven" } }"#)
            == #"shop.json: links["/product/:id"][2].routes[1].params.id: "seven" is not a valid int for param "id" of route "detail""#)
        #expect(refusal(detail, #"{ "route": "detail", "params": { "id": ":pid" } }"#)
            == #"shop.json: links["/product/:id"][2].routes[1].params.id: ":pid" is not captured by the pattern's path, and its :id is used by no op: misspelt? (only a query item named pid would fill it)"#)
        #expect(refusal(#""list":     { "title": "Products" }"#, #""list":     { "title": "Products", "tab": { "title": "x" } }"#)
            == "shop.json: coordinators.Home.routes.list.tab: 'tab' is tab-item data, for routes of a tabs coordinator; Home is a stack coordinator")
        // What stays allowed: a literal of the right type, a capture from a query item
        // (`/product/:id?note=…`), and a null for an optional param.
        #expect(refusal(detail, #"{ "route": "detail", "params": { "id": ":id", "note": ":note" } }"#) == "(loaded)")
        #expect(refusal(detail, #"{ "route": "detail", "params": { "id": 7, "note": null } }"#) == "(loaded)")
    }

    @Test func recursionThroughNonInitialRoutesIsAllowed() throws {
        let text = Self.shopText.replacingFirst(#""about": {}"#, with: #""about": { "coordinator": "Settings" }"#)
        let flow = try Flow.load(bytes: Array(text.utf8), file: "shop.json")
        #expect(flow.spec("Settings").routes["about"]?.coordinator == "Settings")
        #expect(flow.spec("Settings").initial == [RouteRef(route: "main", params: [:])])
        // The recursion is there to use: each `about` opens a Settings of its own, in its
        // initial state, one level deeper, and nothing nests by itself.
        var h = Harness(flow: flow)
        h.ok(["op": "setRoot", "route": "main"], ["op": "present", "route": "settings"], ["op": "route", "route": "about"],
             ["op": "route", "route": "about"])
        #expect(h.stack("Settings") == ["(3 Settings)"], "three Settings stacks now")
        #expect(h.at("/root/current/coordinator/tabs/0/coordinator/stack/1/coordinator/stack/1/coordinator/stack/1/coordinator/stack/0/route") == "main")
        #expect(h.state.activePath.count == 6, "App, Main, Home and three Settings")
    }

    @Test func initialItemsMayCarryParams() throws {
        let text = Self.shopText.replacingFirst(#""initial": "list""#, with: #""initial": { "route": "detail", "params": { "id": 7 } }"#)
        let flow = try Flow.load(bytes: Array(text.utf8))
        #expect(flow.spec("Home").initial == [RouteRef(route: "detail", params: ["id": 7])])
    }

    /// Params already as the declaration has them are kept as sent; any other valid
    /// form comes out in declaration order without nulls; invalid ones name the fault.
    @Test func paramsComeOutInDeclarationOrder() throws {
        let flow = try Flow("p", root: "S") {
            CoordinatorType("S", .stack, initial: ["route": "r", "params": ["a": 0, "d": 0]]) {
                Route("r", params: [("a", "int"), ("b", "string?"), ("c", "bool?"), ("d", "number")])
            }
        }
        let b = try #require(flow.spec("S").route("r"))
        let asSent: JSONObject = ["a": 1, "c": true, "d": 2.5]
        #expect(try b.validate(params: asSent) == asSent)
        #expect(try b.validate(params: ["d": 2, "a": 1]).keys == ["a", "d"])
        #expect(try b.validate(params: ["a": 1, "b": .null, "d": 2]).keys == ["a", "d"])
        for (bad, message) in [(["a": 1] as JSONObject, "needs param 'd'"), (["a": 1, "d": 2, "e": 3], "has no param 'e'"),
                               (["a": "1", "d": 2], "param 'a' of route 'r' must be int"), (["a": .null, "d": 2], "is required, got null"),
                               (["d": 2], "needs param 'a'")] {
            #expect(throws: NavError.self, "\(bad)") { try b.validate(params: bad) }
            do { _ = try b.validate(params: bad) } catch { #expect(error.message.contains(message), "\(bad): \(error.message)") }
        }
    }

    /// Route and type names are found by a scan in a small table and by hashing in a
    /// large one: every name either way, and nothing else.
    @Test func nameTablesFindEveryName() {
        for size in [1, 5, NameTable<Int>.scanLimit, NameTable<Int>.scanLimit + 1, 200] {
            var names: [String: Int] = [:]
            for i in 0..<size { names[i % 3 == 0 ? "route\(i)" : "a-rather-long-route-name-\(i)"] = i }
            let table = NameTable(names)
            for (name, value) in names { #expect(table[name] == value) }
            #expect(table["missing"] == nil && table["route"] == nil && table[""] == nil)
        }
    }

    /// `at` by type walks only into coordinators that can hold that type: what each
    /// type holds follows the routes that open coordinators, all the way down.
    @Test func typesHoldWhatTheirRoutesOpen() throws {
        let flow = Flow.demo
        func canHold(_ flow: Flow, _ inner: String, atOrBelow outer: String) -> Bool { flow.holders(of: inner).contains(outer) }
        for type in flow.coordinatorOrder { #expect(canHold(flow, type, atOrBelow: "App") && canHold(flow, type, atOrBelow: type)) }
        #expect(canHold(flow, "Checkout", atOrBelow: "Home") && canHold(flow, "Settings", atOrBelow: "Profile"))
        #expect(!canHold(flow, "Search", atOrBelow: "Home") && !canHold(flow, "Home", atOrBelow: "Settings"))
        #expect(!canHold(flow, "Checkout", atOrBelow: "Search") && flow.holders(of: "Nope").isEmpty)
        // Through a route that is not initial, and round a cycle.
        let text = Self.shopText.replacingFirst(#""about": {}"#, with: #""about": { "coordinator": "Settings" }"#)
        let cyclic = try Flow.load(bytes: Array(text.utf8))
        #expect(canHold(cyclic, "Settings", atOrBelow: "Settings") && canHold(cyclic, "Settings", atOrBelow: "Home"))
        // `at` by type still finds the one coordinator wherever it is, and counts them.
        var h = Harness.onMain()
        h.ok(["op": "select", "route": "profile"], ["op": "present", "route": "settings"])
        h.ok(["op": "push", "at": "Settings", "route": "about"])
        #expect(h.stack("Settings") == ["main", "about"])
        h.ok(["op": "select", "route": "home"], ["op": "present", "route": "settings"])
        h.fails(.invalidOp, ["op": "push", "at": "Settings", "route": "about"])
        // The walk `at` uses (the first path, built on the way back up, and the count),
        // pruned by what each type can hold, agrees with listing every path unpruned.
        h.ok(["op": "update", "scope": "session", "data": ["cart": [1]]], ["op": "select", "route": "cart"], ["op": "route", "route": "checkout"])
        for type in flow.coordinatorOrder + ["Nope"] {
            let all = h.state.paths(ofType: type)
            let holders = flow.holders(of: type)
            let (first, count) = h.state.firstPath(ofType: type) { holders.contains($0) }
            #expect(first == all.first && count == all.count, "\(type): \(String(describing: first)) of \(count), listed \(all)")
        }
        #expect(h.state.paths(ofType: "Settings").count == 2 && h.state.firstPath(ofType: "Checkout") { _ in true }.path?.count == 3)
    }

    @Test func paramTypes() {
        let int = ParamType("int")!
        #expect(int.accepts(3) && !int.accepts(3.0) && !int.accepts(true) && !int.accepts("3"))
        let number = ParamType("number?")!
        #expect(number.optional && number.accepts(3) && number.accepts(2.5) && !number.accepts(false))
        #expect(ParamType("integer") == nil)
        #expect(int.convert(capture: "-42") == -42 && int.convert(capture: "+7") == 7)
        #expect(int.convert(capture: "4.5") == nil && int.convert(capture: "") == nil && int.convert(capture: "1e3") == nil)
        #expect(int.convert(capture: "-") == nil && int.convert(capture: "٣") == nil && number.convert(capture: "٣") == nil, "ASCII digits only")
        #expect(int.convert(capture: "9223372036854775807") == .int(.max) && int.convert(capture: "-9223372036854775808") == .int(.min))
        #expect(int.convert(capture: "9223372036854775808") == nil && int.convert(capture: "-9223372036854775809") == nil, "out of range")
        #expect(int.convert(capture: "+-1") == nil && int.convert(capture: "1-") == nil && int.convert(capture: "007") == 7)
        #expect(number.convert(capture: "42") == 42 && number.convert(capture: "4.5") == 4.5)
        #expect(number.convert(capture: "inf") == nil && number.convert(capture: "nan") == nil)
        let bool = ParamType("bool")!
        #expect(bool.convert(capture: "1") == true && bool.convert(capture: "false") == false && bool.convert(capture: "yes") == nil)
    }
}

extension FlowTests {
    /// docs/flows.md's example is a flow that loads and does what the page says.
    @Test func theFlowDocsExampleLoadsAndRuns() throws {
        let root = #filePath.split(separator: "/").dropLast(4).joined(separator: "/")
        let page = String(decoding: try #require(FileManager.default.contents(atPath: "/" + root + "/docs/flows.md")), as: UTF8.self)
        let start = try #require(page.firstRange(of: "```json\n"))
        let end = try #require(page[start.upperBound...].firstRange(of: "\n```"))
        let flow = try Flow.load(bytes: Array(page[start.upperBound..<end.lowerBound].utf8), file: "docs/flows.md")
        #expect(flow.name == "studio" && flow.root == "App" && flow.coordinatorOrder == ["App", "Main", "Projects", "Share"])
        var seq = Sequencer(flow: flow, epoch: "e")
        guard case .applied = seq.submit(["id": 1, "ops": [["op": "open", "url": "/p/42?zoom=1.5"]]], client: "c") else { Issue.record(); return }
        let stack = seq.state.json["root"]?["current"]?["coordinator"]?["tabs"]?.arrayValue?.first?["coordinator"]?["stack"]?.arrayValue ?? []
        #expect(stack.map { $0["route"] } == ["list", "project"] && stack.last?["params"] == ["id": 42, "zoom": 1.5])
        guard case .applied = seq.submit(["id": 2, "ops": [["op": "open", "url": "studio://p/7/share"]]], client: "c") else { Issue.record(); return }
        let after = seq.state.json["root"]?["current"]?["coordinator"]?["tabs"]?.arrayValue?.first?["coordinator"]?["stack"]?.arrayValue ?? []
        #expect(after.map { $0["route"] } == ["list", "project", "share"] && after[1]["params"] == ["id": 7] && after[2]["presentation"] == "sheet")
        // An optional param whose capture is missing is left out.
        guard case .applied = seq.submit(["id": 4, "ops": [["op": "open", "url": "/p/9"]]], client: "c") else { Issue.record(); return }
        let nine = seq.state.json["root"]?["current"]?["coordinator"]?["tabs"]?.arrayValue?.first?["coordinator"]?["stack"]?.arrayValue ?? []
        #expect(nine.last?["params"] == ["id": 9])
        guard case .failed(let e) = seq.submit(["id": 3, "ops": [["op": "open", "url": "/p/seven"]]], client: "c") else { Issue.record(); return }
        #expect(e.code == .badParams)
    }
}
