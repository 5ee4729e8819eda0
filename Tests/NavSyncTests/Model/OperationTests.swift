import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

/// Every operation of docs/protocol.md, "Operations" on the demo flow. After `Harness.onMain()`:
/// App(root) e2 main -> Main(tabs) [e3 home -> Home(stack) e4 list,
/// e5 search -> Search e6 query, e7 cart -> Cart e8 items, e9 profile -> Profile e10 overview]
@Suite("Operations")
struct OperationTests {
    /// The kinds each operation works on (docs/protocol.md, "Operations"), as targeting sees them.
    @Test func operationNamesAndAliasesOnTheWire() {
        for op in OpName.allCases { #expect(OpName(wire: op.rawValue) == op) }
        #expect(OpName(wire: "push") == .route && OpName(wire: "jumpTo") == .setStack)
        for bad in ["", "Push", "pushh", "po", "popToRootX", "setStack ", "a-name-longer-than-any-operation-name"] {
            #expect(OpName(wire: bad) == nil, "\(bad)")
        }
    }

    /// An operation without its route names the field that is missing, whatever name
    /// the op was sent under. Regression: `{"op":"push"}` said "missing field 'push'".
    @Test func aMissingRouteIsNamed() {
        for name in ["push", "route", "present", "setRoot", "appendTab", "insertTab"] {
            do { _ = try NavOperation(json: ["op": .string(name), "index": 0]); Issue.record("\(name) accepted") } catch {
                #expect(error.code == .badParams && error.message == "missing field 'route'", "\(name): \(error.message)")
            }
        }
        // Through the sequencer, which names the verb as sent (`push`, not `route`) but not the field.
        var h = Harness.onMain()
        #expect(h.fails(.badParams, ["op": "push"])?.message == "missing field 'route'")
        #expect(h.fails(.invalidOp, ["op": "push", "route": "home", "at": "Main"])?.message.contains("'push' works on") == true)
    }

    @Test func operationsWorkOnTheirKinds() {
        #expect(OpName.pop.kinds == [.stack] && !OpName.pop.works(on: .tabs))
        #expect(OpName.setRoot.kinds == [.root, .stack])
        #expect(OpName.restart.kinds == Set(CoordinatorKind.allCases))
        #expect(OpName.select.kinds == [.tabs] && OpName.select.works(on: .tabs))
        #expect(OpName.update.kinds == nil && OpName.open.kinds == nil && !OpName.reset.works(on: .root))
    }

    @Test func initialStateAndIdsArePreOrder() {
        var h = Harness()
        #expect(h.json == ["root": ["type": "App", "kind": "root", "current": ["id": "e1", "route": "onboarding", "params": [:]]], "alert": nil])
        h.ok(["op": "setRoot", "route": "main"])
        let tabs = h.entries("Main")
        #expect(tabs.map(\.id.description) == ["e3", "e5", "e7", "e9"])
        #expect(tabs.map { $0.coordinator!.entries[0].id.description } == ["e4", "e6", "e8", "e10"])
        #expect(h.state.root.entries[0].id.description == "e2")
        #expect(h.at("/root/current/coordinator/selected") == "e3")
        #expect(h.at("/root/current/coordinator/tabs/0/tab") == ["title": "Home", "icon": "house"])
        #expect(h.at("/root/current/coordinator/tabs/0/coordinator/stack/0/presentation") == "root")
    }

    @Test func sameCommandsGiveSameIds() {
        var a = Harness.onMain(), b = Harness.onMain()
        for h in [0, 1] {
            _ = h
            a.ok(["op": "push", "route": "detail", "params": ["id": 1]])
            b.ok(["op": "push", "route": "detail", "params": ["id": 1]])
        }
        #expect(a.json == b.json)
    }

    @Test func pushBubblesToTheDeepestCoordinatorThatDeclaresTheRoute() {
        var h = Harness.onMain()
        h.ok(["op": "push", "route": "detail", "params": ["id": 42]])
        #expect(h.stack("Home") == ["list", "detail"])
        h.ok(["op": "select", "route": "search"])
        h.ok(["op": "route", "route": "detail", "params": ["id": 7]])
        #expect(h.stack("Search") == ["query", "detail"])
        #expect(h.stack("Home") == ["list", "detail"])
        // `order` is declared on Profile only, which is not on the active path.
        h.fails(.unknownRoute, ["op": "push", "route": "order", "params": ["id": 1]])
        // `home` is declared on Main, a tabs coordinator: push does not work there.
        h.fails(.invalidOp, ["op": "push", "route": "home"])
        // `main` is declared on App only, a root coordinator.
        h.fails(.invalidOp, ["op": "push", "route": "main"])
    }

    @Test func chainingIntoACoordinatorTheSameCommandOpened() {
        var h = Harness.onMain()
        let r = h.ok(["op": "route", "route": "settings"], ["op": "route", "route": "about"])
        #expect(r == [.applied, .applied])
        #expect(h.stack("Home") == ["list", "settings"])
        #expect(h.entries("Home")[1].presentation == .sheet)
        #expect(h.stack("Settings") == ["main", "about"])
        #expect(h.activeRoute == "about")
    }

    @Test func paramsAreCheckedAgainstTheRoute() throws {
        var h = Harness.onMain()
        h.fails(.badParams, ["op": "push", "route": "detail"])
        h.fails(.badParams, ["op": "push", "route": "detail", "params": ["id": "42"]])
        h.fails(.badParams, ["op": "push", "route": "detail", "params": ["id": 3.0]])
        h.fails(.badParams, ["op": "push", "route": "detail", "params": ["id": true]])
        h.fails(.badParams, ["op": "push", "route": "detail", "params": ["id": nil]])
        h.fails(.badParams, ["op": "push", "route": "detail", "params": ["id": 1, "colour": "red"]])
        h.fails(.badParams, ["op": "push", "route": "detail", "params": ["id": 1, "note": 5]])
        h.fails(.badParams, ["op": "push", "route": "detail", "params": [1, 2]])
        h.fails(.badParams, ["op": "push", "route": 5])
        h.fails(.badParams, ["op": "push"])
        h.ok(["op": "push", "route": "detail", "params": ["note": nil, "id": 1]])
        #expect(h.entries("Home")[1].params == ["id": 1])
        h.ok(["op": "push", "route": "reviews", "params": ["id": 1, "rating": 4]])
        h.ok(["op": "push", "route": "reviews", "params": ["id": 1, "rating": 4.5]])
        #expect(h.stack("Home") == ["list", "detail", "reviews", "reviews"])
    }

    @Test func popCountAndFrom() {
        var h = Harness.onMain()
        h.fails(.invalidOp, ["op": "pop"])
        h.ok(["op": "push", "route": "detail", "params": ["id": 1]], ["op": "push", "route": "detail", "params": ["id": 2]],
             ["op": "push", "route": "detail", "params": ["id": 3]])
        h.fails(.badParams, ["op": "pop", "count": 0])
        h.fails(.badParams, ["op": "pop", "count": 1.5])
        h.fails(.invalidOp, ["op": "pop", "count": 4])
        #expect(h.ok(["op": "pop", "count": 2]) == [.applied])
        #expect(h.stack("Home") == ["list", "detail"])
        let id = h.entries("Home")[1].id.description
        h.fails(.invalidOp, ["op": "pop", "from": .string(h.entries("Home")[0].id.description)])
        #expect(h.ok(["op": "pop", "from": .string(id)]) == [.applied])
        #expect(h.ok(["op": "pop", "from": .string(id)]) == [.superseded])
        h.fails(.notFound, ["op": "pop", "from": "e999"])
        h.fails(.notFound, ["op": "pop", "from": "detail"])
    }

    @Test func popGoesToTheDeepestStackThatCanPop() {
        var h = Harness.onMain()
        h.ok(["op": "push", "route": "detail", "params": ["id": 1]], ["op": "present", "route": "settings"])
        // Settings (inside the sheet) holds only its root: the pop goes to Home below it.
        h.ok(["op": "pop"])
        #expect(h.stack("Home") == ["list", "detail"])
    }

    @Test func popToRootFirstLastToBefore() {
        var h = Harness.onMain()
        func fill(_ h: inout Harness) {
            h.ok(["op": "setStack", "routes": ["list", ["route": "detail", "params": ["id": 1]], ["route": "category", "params": ["name": "a"]],
                                                ["route": "detail", "params": ["id": 2]], ["route": "category", "params": ["name": "b"]]]])
        }
        fill(&h)
        #expect(h.ok(["op": "popToFirst", "route": "detail"]) == [.applied])
        #expect(h.stack("Home") == ["list", "detail"])
        #expect(h.ok(["op": "popToFirst", "route": "reviews"]) == [.noop])
        fill(&h)
        #expect(h.ok(["op": "popToLast", "route": "detail"]) == [.applied])
        #expect(h.stack("Home") == ["list", "detail", "category", "detail"])
        #expect(h.ok(["op": "popToLast", "route": "detail"]) == [.noop])
        #expect(h.ok(["op": "popBefore", "route": "category"]) == [.applied])
        #expect(h.stack("Home") == ["list", "detail"])
        #expect(h.ok(["op": "popBefore", "route": "reviews"]) == [.noop])
        h.fails(.invalidOp, ["op": "popBefore", "route": "list"])
        let first = h.entries("Home")[0].id.description
        fill(&h)
        #expect(h.ok(["op": "popTo", "entry": .string(h.entries("Home")[2].id.description)]) == [.applied])
        #expect(h.stack("Home") == ["list", "detail", "category"])
        #expect(h.ok(["op": "popTo", "entry": .string(first)]) == [.superseded])   // setStack replaced it
        #expect(h.ok(["op": "popToRoot"]) == [.applied])
        #expect(h.ok(["op": "popToRoot"]) == [.noop])
        #expect(h.stack("Home") == ["list"])
    }

    @Test func presentAndDismiss() {
        var h = Harness.onMain()
        h.ok(["op": "update", "scope": "session", "data": ["cart": [1]]])   // the demo's checkout needs a cart
        #expect(h.ok(["op": "dismiss"]) == [.noop])
        h.fails(.badParams, ["op": "present", "route": "detail", "params": ["id": 1], "style": "push"])
        h.fails(.badParams, ["op": "present", "route": "detail", "params": ["id": 1], "style": "modal"])
        h.ok(["op": "present", "route": "detail", "params": ["id": 1]])
        #expect(h.entries("Home")[1].presentation == .sheet)
        h.ok(["op": "push", "route": "detail", "params": ["id": 2]])
        h.ok(["op": "present", "route": "checkout"])                // declared as cover
        #expect(h.entries("Home").map { $0.presentation! } == [.root, .sheet, .push, .cover])
        h.ok(["op": "present", "route": "payment", "style": "sheet"])   // inside Checkout
        #expect(h.stack("Checkout") == ["address", "payment"])
        // Checkout is the deepest stack with a modal entry.
        #expect(h.ok(["op": "dismiss"]) == [.applied])
        #expect(h.stack("Checkout") == ["address"])
        #expect(h.ok(["op": "dismiss"]) == [.applied])
        #expect(h.stack("Home") == ["list", "detail", "detail"])
        h.ok(["op": "present", "route": "settings"])
        #expect(h.ok(["op": "dismiss", "all": true]) == [.applied])
        #expect(h.stack("Home") == ["list"])
        h.fails(.badParams, ["op": "dismiss", "all": "yes"])
    }

    @Test func setRootAlwaysMakesANewEntry() {
        var h = Harness.onMain()
        let before = h.state.root.entries[0].id
        #expect(h.ok(["op": "setRoot", "route": "main"]) == [.applied])
        #expect(h.state.root.entries[0].id != before)
        h.ok(["op": "setRoot", "route": "login", "params": ["email": "a@b.c"]])
        #expect(h.json["root"]?["current"] == ["id": "e20", "route": "login", "params": ["email": "a@b.c"]])
        h.fails(.unknownRoute, ["op": "setRoot", "route": "nowhere"])
        h.ok(["op": "setRoot", "route": "main"])
        h.ok(["op": "push", "route": "detail", "params": ["id": 1]])
        h.ok(["op": "setRoot", "route": "category", "params": ["name": "shoes"]])   // Home is a stack
        #expect(h.stack("Home") == ["category"])
        #expect(h.entries("Home")[0].presentation == .root)
    }

    @Test func setStackReplacesTheWholeStack() {
        var h = Harness.onMain()
        h.ok(["op": "jumpTo", "routes": ["list", ["route": "detail", "params": ["id": 1], "presentation": "sheet"], "settings",
                                          ["route": "detail", "params": ["id": 2], "hints": ["transition": "fade"]]]])
        #expect(h.stack("Home") == ["list", "detail", "settings", "detail"])
        h.fails(.badParams, ["op": "setStack", "routes": []])
        h.fails(.badParams, ["op": "setStack", "routes": ["list", ["route": "detail"]]])
        h.fails(.badParams, ["op": "setStack", "routes": ["list", ["route": "detail", "params": ["id": 1], "presentation": "root"]]])
        h.fails(.unknownRoute, ["op": "setStack", "routes": ["list", "nowhere"]])
        h.fails(.badParams, ["op": "setStack", "routes": [5]])
        let e = h.entries("Home")
        #expect(e.map { $0.presentation! } == [.root, .sheet, .sheet, .push])
        #expect(e[3].hints == ["transition": "fade"])
    }

    /// `setPath`: one layer's pushes set, the entries that still match kept (ids and
    /// all), every layer above as it was; a NavigationStack's path written under a sheet.
    @Test func setPathSetsOneLayerAndKeepsTheLayersAbove() {
        var h = Harness.onMain()
        h.ok(["op": "route", "route": "detail", "params": ["id": 1]], ["op": "route", "route": "reviews", "params": ["id": 1]],
             ["op": "present", "route": "settings"], ["op": "route", "route": "notifications"])
        #expect(h.stack("Home") == ["list", "detail", "reviews", "settings"])
        let kept = h.entries("Home")
        h.ok(["op": "setPath", "at": "Home", "routes": [["route": "detail", "params": ["id": 1]], ["route": "detail", "params": ["id": 2]]]])
        let e = h.entries("Home")
        let sheet = kept[3]
        #expect(e.map(\.route) == ["list", "detail", "detail", "settings"])
        #expect(e[0].id == kept[0].id && e[1].id == kept[1].id && e[3].id == kept[3].id, "the root, the matching push and the sheet kept")
        #expect(e[2].presentation == .push && e[3].presentation == .sheet)
        #expect(h.stack("Settings") == ["main", "notifications"], "what was pushed in the sheet stays")
        // The same again: nothing to do. Empty: the layer's root alone.
        #expect(h.ok(["op": "setPath", "at": "Home", "routes": [["route": "detail", "params": ["id": 1]], ["route": "detail", "params": ["id": 2]]]]) == [.noop])
        h.ok(["op": "setPath", "at": "Home", "routes": []])
        #expect(h.stack("Home") == ["list", "settings"] && h.entries("Home")[1].id == sheet.id)
        // Layer 1 (the sheet's own pushes; the sheet's root route is Home's 'settings', which opens its own coordinator).
        h.ok(["op": "setPath", "at": "Home", "layer": 1, "routes": [["route": "detail", "params": ["id": 3]]]])
        #expect(h.stack("Home") == ["list", "settings", "detail"])
        h.fails(.invalidOp, ["op": "setPath", "at": "Home", "layer": 2, "routes": []])
        h.fails(.badParams, ["op": "setPath", "at": "Home", "layer": -1, "routes": []])
        h.fails(.badParams, ["op": "setPath", "at": "Home", "routes": [["route": "settings", "presentation": "sheet"]]])
        h.fails(.unknownRoute, ["op": "setPath", "at": "Home", "routes": ["nowhere"]])
        #expect(NavOperation(.setPath([.init("detail", params: ["id": 1])], layer: 1), at: "Home").json
                == ["op": "setPath", "at": "Home", "layer": 1, "routes": [["route": "detail", "params": ["id": 1]]]])
    }

    @Test func restartPutsTheDeepestCoordinatorBackWithNewIds() {
        var h = Harness.onMain()
        h.ok(["op": "push", "route": "detail", "params": ["id": 1]])
        let old = h.entries("Home")[0].id
        #expect(h.ok(["op": "restart"]) == [.applied])
        #expect(h.stack("Home") == ["list"])
        #expect(h.entries("Home")[0].id > old)
        h.ok(["op": "select", "index": 2])
        h.ok(["op": "restart", "at": "Main"])
        #expect(h.at("/root/current/coordinator/selected") == .string(h.entries("Main")[0].id.description))
    }

    @Test func selectByRouteIndexEntry() {
        var h = Harness.onMain()
        #expect(h.ok(["op": "select", "route": "home"]) == [.noop])
        #expect(h.ok(["op": "select", "route": "cart"]) == [.applied])
        #expect(h.activeRoute == "items")
        #expect(h.ok(["op": "select", "index": 3]) == [.applied])
        #expect(h.activeRoute == "overview")
        h.fails(.invalidOp, ["op": "select", "index": 4])
        h.fails(.invalidOp, ["op": "select", "index": -1])
        #expect(h.ok(["op": "select", "entry": "e5"]) == [.applied])
        #expect(h.activeRoute == "query")
        h.fails(.invalidOp, ["op": "select", "entry": "e6"])   // a stack entry
        h.fails(.badParams, ["op": "select"])
        h.fails(.badParams, ["op": "select", "route": "home", "index": 0])
        h.ok(["op": "removeFirst", "route": "cart"])
        h.fails(.notFound, ["op": "select", "route": "cart"])
        h.fails(.unknownRoute, ["op": "select", "route": "nowhere"])
    }

    @Test func setTabsKeepsExistingTabsWithTheirState() {
        var h = Harness.onMain()
        h.ok(["op": "push", "route": "detail", "params": ["id": 1]])
        h.ok(["op": "select", "route": "profile"])
        #expect(h.ok(["op": "setTabs", "routes": ["profile", "home", ["route": "cart", "hints": ["badge": 3]]]]) == [.applied])
        let tabs = h.entries("Main")
        #expect(tabs.map(\.route) == ["profile", "home", "cart"])
        #expect(tabs.map(\.id.description) == ["e9", "e3", "e7"])
        #expect(h.stack("Home") == ["list", "detail"])   // kept with its state
        #expect(tabs[2].hints == nil)                      // kept: keeps its old hints
        #expect(h.at("/root/current/coordinator/selected") == "e9")
        #expect(h.ok(["op": "setTabs", "routes": ["profile", "home", "cart"]]) == [.noop])
        h.ok(["op": "setTabs", "routes": ["home", "home", "search"]])
        let after = h.entries("Main")
        #expect(after.map(\.route) == ["home", "home", "search"])
        #expect(after[0].id.description == "e3" && after[1].id > EntryID(11) && after[2].id > EntryID(11))
        #expect(h.at("/root/current/coordinator/selected") == "e3")   // profile is gone: first tab
        h.fails(.badParams, ["op": "setTabs", "routes": []])
        h.fails(.unknownRoute, ["op": "setTabs", "routes": ["home", "nowhere"]])
    }

    /// Errors name the fix a person needs, and the verb as they typed it.
    @Test func errorsNameTheFixAndTheVerbTyped() {
        var h = Harness()   // the demo on its first screen, onboarding
        #expect(h.fails(.unknownRoute, ["op": "select", "route": "cart"])?.message
                == "'cart' is declared on Main, which is not on screen: `setRoot main` first (on App)")
        #expect(h.fails(.unknownRoute, ["op": "push", "route": "nowhere"])?.message == "flow shop declares no route 'nowhere'")
        // Two steps away (Home opens from Main, Main from App): the first step is named.
        #expect(h.fails(.unknownRoute, ["op": "push", "route": "reviews", "params": ["id": 1]])?.message
                == "'reviews' is declared on Home, which is not on screen: `setRoot main` first (on App)")
        let push = h.fails(.invalidOp, ["op": "push", "route": "main"])?.message ?? ""
        #expect(push.contains("'push' works on stack coordinators") && push.hasSuffix("use `setRoot main`"), "\(push)")
        #expect(h.fails(.invalidOp, ["op": "route", "route": "main"])?.message.contains("'route' works on") == true)
        h.ok(["op": "setRoot", "route": "main"])
        #expect(h.fails(.unknownRoute, ["op": "push", "route": "order", "params": ["id": 1]])?.message
                == "'order' is declared on Profile, which is not on screen: `select profile` first (on Main)")
    }

    /// Regression: a kept tab's params were not checked, so undeclared params passed.
    @Test func setTabsChecksParamsOfKeptTabs() {
        var h = Harness.onMain()
        h.ok(["op": "select", "route": "search"])
        h.ok(["op": "open", "url": "/product/1"])
        let before = h.json
        h.fails(.badParams, ["op": "setTabs", "routes": [["route": "search", "params": ["bogus": 1]], "home", "profile"]])
        h.fails(.badParams, ["op": "setTabs", "routes": ["home", ["route": "cart", "params": ["id": "x"]]]])
        #expect(h.json == before)
        #expect(h.ok(["op": "setTabs", "routes": ["search", "home", "profile"]]) == [.applied])
    }

    @Test func appendInsertRemoveTabs() {
        var h = Harness.onMain()
        h.ok(["op": "appendTab", "route": "search", "hints": ["transition": "none"]])
        h.ok(["op": "insertTab", "route": "cart", "index": 0])
        #expect(h.entries("Main").map(\.route) == ["cart", "home", "search", "cart", "profile", "search"])
        h.fails(.invalidOp, ["op": "insertTab", "route": "cart", "index": 7])
        h.fails(.badParams, ["op": "insertTab", "route": "cart"])
        // The op's own fields are checked before the state: unknown params with an index
        // out of range are bad_params, not invalid_op (docs/protocol.md, "Operations: fine points"'s order).
        h.fails(.badParams, ["op": "insertTab", "route": "cart", "index": 7, "params": ["nope": 1]])
        #expect(h.ok(["op": "removeLast", "route": "search"]) == [.applied])
        #expect(h.ok(["op": "removeFirst", "route": "cart"]) == [.applied])
        #expect(h.entries("Main").map(\.route) == ["home", "search", "cart", "profile"])
        // Removing the selected tab selects the first remaining one.
        h.ok(["op": "select", "route": "cart"])
        h.ok(["op": "removeTab", "entry": "e7"])
        #expect(h.at("/root/current/coordinator/selected") == "e3")
        #expect(h.ok(["op": "removeTab", "entry": "e7"]) == [.superseded])
        #expect(h.ok(["op": "removeFirst", "route": "cart"]) == [.noop])
        h.ok(["op": "removeFirst", "route": "home"], ["op": "removeFirst", "route": "search"])
        h.fails(.invalidOp, ["op": "removeFirst", "route": "profile"])   // the last tab stays
    }

    @Test func tabAndStackLimits() {
        var h = Harness.onMain()
        var ops: [JSON] = []
        for _ in 0..<60 { ops.append(["op": "appendTab", "route": "profile"]) }
        h.fails(.tooLarge, op: nil, list: ops + ops)   // 120 ops in one command
        h.ok(list: Array(ops[0..<60]))                  // 64 tabs
        #expect(h.entries("Main").count == 64)
        h.fails(.invalidOp, ["op": "appendTab", "route": "profile"])
        var stack: [JSON] = ["list"]
        for i in 0..<255 { stack.append(["route": "detail", "params": ["id": .int(Int64(i))]]) }
        h.ok(["op": "setStack", "at": "Home", "routes": .array(stack)])
        h.fails(.invalidOp, ["op": "push", "route": "detail", "params": ["id": 1]])
        h.fails(.invalidOp, ["op": "setStack", "at": "Home", "routes": .array(stack + ["list"])])
    }

    @Test func updateMergesDataIntoTheEntry() {
        var h = Harness.onMain()
        #expect(h.ok(["op": "update", "data": ["query": "shoes", "page": 1]]) == [.applied])
        #expect(h.entries("Home")[0].data == ["query": "shoes", "page": 1])
        #expect(h.ok(["op": "update", "data": ["page": 1]]) == [.noop])
        #expect(h.ok(["op": "update", "entry": "e4", "data": ["page": nil, "filter": ["size": 42]]]) == [.applied])
        #expect(h.entries("Home")[0].data == ["query": "shoes", "filter": ["size": 42]])
        #expect(h.ok(["op": "update", "at": "Main", "data": ["seen": true]]) == [.applied])   // the selected tab
        #expect(h.entries("Main")[0].data == ["seen": true])
        #expect(h.ok(["op": "update", "entry": "e6", "data": ["x": nil]]) == [.noop])   // absent counts as {}
        #expect(h.entries("Search")[0].data == nil)
        h.fails(.badParams, ["op": "update", "data": [1]])
        h.fails(.badParams, ["op": "update"])
        h.fails(.tooLarge, ["op": "update", "data": ["blob": .string(String(repeating: "x", count: 17_000))]])
        h.ok(["op": "update", "data": ["blob": .string(String(repeating: "x", count: 10_000))]])
        h.ok(["op": "update", "data": ["blob": nil, "query": nil, "filter": nil]])
        #expect(h.entries("Home")[0].data == [:])   // stays, possibly empty
        h.ok(["op": "setRoot", "route": "main"])
        #expect(h.ok(["op": "update", "entry": "e4", "data": ["a": 1]]) == [.superseded])
    }

    @Test func hintsAreCheckedAndStoredOnTheOpenedEntryOnly() {
        var h = Harness.onMain()
        h.ok(["op": "push", "route": "settings", "hints": ["transition": "zoom", "animated": false, "duration": 0.3]])
        #expect(h.entries("Home")[1].hints == ["transition": "zoom", "animated": false, "duration": 0.3])
        #expect(h.entries("Settings")[0].hints == nil)
        h.ok(["op": "push", "route": "about", "hints": [:]])
        #expect(h.entries("Settings")[1].hints == nil)
        h.fails(.badParams, ["op": "push", "route": "about", "hints": ["nested": ["a": 1]]])
        h.fails(.badParams, ["op": "push", "route": "about", "hints": "fade"])
        var many = JSONObject()
        for i in 0..<17 { many["k\(i)"] = 1 }
        h.fails(.badParams, ["op": "push", "route": "about", "hints": .object(many)])
    }

    @Test func atAddressing() {
        var h = Harness.onMain()
        h.ok(["op": "push", "at": "e7", "route": "detail", "params": ["id": 1]])   // Cart, off the active path
        #expect(h.stack("Cart") == ["items", "detail"])
        h.ok(["op": "push", "at": "Search", "route": "detail", "params": ["id": 2]])
        #expect(h.stack("Search") == ["query", "detail"])
        h.ok(["op": "setRoot", "at": "root", "route": "main"])
        #expect(h.ok(["op": "push", "at": "e7", "route": "detail", "params": ["id": 1]]) == [.superseded])
        h.fails(.notFound, ["op": "push", "at": "e999", "route": "detail", "params": ["id": 1]])
        h.fails(.notFound, ["op": "push", "at": "Nowhere", "route": "detail", "params": ["id": 1]])
        h.fails(.notFound, ["op": "push", "at": "Settings", "route": "about"])      // no Settings on the tree
        h.fails(.invalidOp, ["op": "push", "at": "e15", "route": "list"])          // e15 (Home's list) opens no coordinator
        h.fails(.invalidOp, ["op": "push", "at": "Main", "route": "home"])
        h.fails(.unknownRoute, ["op": "push", "at": "Cart", "route": "list"])
        h.ok(["op": "appendTab", "route": "home"])
        h.fails(.invalidOp, ["op": "push", "at": "Home", "route": "detail", "params": ["id": 1]])   // two Homes
        h.fails(.invalidOp, ["op": "pop", "at": "Cart", "from": "e14"])   // e14 is not in Cart
        h.fails(.badParams, ["op": "pop", "at": 7])
    }

    @Test func malformedOperations() {
        var h = Harness.onMain()
        h.fails(.badRequest, op: 0, "push")
        h.fails(.badRequest, op: 1, ["op": "popToRoot"], ["route": "x"])
        h.fails(.badRequest, op: 0, ["op": 5])
        h.fails(.invalidOp, op: 0, ["op": "teleport"])
        h.fails(.badRequest, op: nil, list: [])
    }

    @Test func commandsAreAtomic() {
        var h = Harness.onMain()
        let e = h.fails(.unknownRoute, op: 2, ["op": "push", "route": "detail", "params": ["id": 1]],
                        ["op": "present", "route": "settings"], ["op": "push", "route": "nowhere"])
        #expect(e?.message.contains("nowhere") == true)
        #expect(h.stack("Home") == ["list"])
        #expect(h.rev == 1)
        // The ids the failed command allocated are not used: ids never rewind, but the
        // failed command left no trace, so the next push gets the same id it would have.
        h.ok(["op": "push", "route": "detail", "params": ["id": 1]])
        #expect(h.entries("Home")[1].id == EntryID(11))
    }

    @Test func resetGoesBackToTheInitialStateWithNewIds() {
        var h = Harness.onMain()
        h.ok(["op": "alert", "title": "Hi"])
        #expect(h.ok(["op": "reset"]) == [.applied])
        #expect(h.json == ["root": ["type": "App", "kind": "root", "current": ["id": "e12", "route": "onboarding", "params": [:]]], "alert": nil])
    }
}

@Suite("Deep links and alerts")
struct LinkAndAlertTests {
    @Test func deepLinksWithTypedCapturesAndQueryItems() {
        var h = Harness()
        // The demo's orders need a user and its checkout a cart (its guards).
        h.ok(["op": "update", "scope": "session", "data": ["user": "ann", "cart": [3]]])
        #expect(h.ok(["op": "open", "url": "/product/42?note=gift%20wrap&note=second&id=9"]) == [.applied])
        #expect(h.stack("Home") == ["list", "detail"])
        #expect(h.entries("Home")[1].params == ["id": 42, "note": "gift wrap"])   // path wins over ?id, first ?note wins
        h.ok(["op": "open", "url": "https://shop.example/search/red+shoes?inStock=1#top"])
        #expect(h.activeRoute == "results")
        #expect(h.entries("Search")[1].params == ["q": "red+shoes", "inStock": true])
        h.ok(["op": "open", "url": "app://orders/7"])
        #expect(h.stack("Profile") == ["overview", "orders", "order"])
        #expect(h.entries("Profile")[2].params == ["id": 7])
        h.ok(["op": "open", "url": "/checkout?total=19.5"])
        #expect(h.stack("Checkout") == ["address", "payment"])
        #expect(h.entries("Checkout")[1].params == ["total": 19.5])
        h.ok(["op": "open", "url": "/checkout"])
        #expect(h.entries("Checkout")[1].params == [:])   // absent capture: param left out
        h.ok(["op": "open", "url": "//login///"])
        #expect(h.json["root"]?["current"]?["route"] == "login")
        // One result per op of the command, a link's one for all its ops.
        var m = Harness.onMain()
        #expect(m.ok(["op": "select", "route": "home"], ["op": "open", "url": "/product/1"]) == [.noop, .applied])
        #expect(m.ok(["op": "open", "url": "/product/2"], ["op": "pop"], ["op": "select", "route": "home"]) == [.applied, .applied, .noop])
    }

    @Test func deepLinkErrors() {
        var h = Harness()
        h.fails(.notFound, ["op": "open", "url": "/nowhere/1"])
        h.fails(.notFound, ["op": "open", "url": "/product"])
        h.fails(.badParams, ["op": "open", "url": "/product/abc"])
        h.fails(.badParams, ["op": "open", "url": "/product/4.5"])
        h.fails(.badParams, ["op": "open", "url": "/product/%zz"])
        h.fails(.badParams, ["op": "open", "url": "/search/x?inStock=maybe"])
        h.fails(.badParams, ["op": "open"])
        // A link op that fails on the current state names the open op and the link op.
        let e = h.fails(.unknownRoute, ["op": "open", "url": "/settings/notifications"])
        #expect(e?.message.contains("link op 0") == true)
    }

    @Test func urlParsing() {
        #expect(ParsedURL("/a/b%2Fc/?x=1&y&x=2#frag")?.segments == ["a", "b/c"])
        #expect(ParsedURL("/a?x=1&y&x=2")!.query.map { "\($0.0)=\($0.1)" } == ["x=1", "y=", "x=2"])
        #expect(ParsedURL("myapp://product/42")?.segments == ["product", "42"])
        #expect(ParsedURL("HTTP://host:80/product/42")?.segments == ["product", "42"])
        #expect(ParsedURL("https://host")?.segments == [])
        #expect(ParsedURL("/%E2%9C%93")?.segments == ["✓"])
        #expect(ParsedURL("/%FF") == nil)
        #expect(ParsedURL("/%4") == nil)
        // Delimiters are found by bytes, next to multi-byte characters and in odd places.
        #expect(ParsedURL("/café/é?q=ü#x")?.segments == ["café", "é"])
        #expect(ParsedURL("/café/é?q=ü#x")!.query.map { "\($0.0)=\($0.1)" } == ["q=ü"])
        #expect(ParsedURL("/a:b/c")?.segments == ["a:b", "c"], "a colon without // is no scheme")
        #expect(ParsedURL("x:/y://z/w") == nil, "what comes before the first :// is the scheme, and it has a slash")
        #expect(ParsedURL("://x") == nil, "an empty scheme")
        #expect(ParsedURL("/p?a=1=2")!.query.map { "\($0.0)=\($0.1)" } == ["a=1=2"])
        #expect(ParsedURL("/p?#frag")?.query.isEmpty == true)
        // Empty parts between separators are dropped, at either end and in a row.
        #expect(ParsedURL("//a//b/")?.segments == ["a", "b"])
        #expect(ParsedURL("/")?.segments == [] && ParsedURL("")?.segments == [])
        #expect(ParsedURL("a")?.segments == ["a"], "a last part without a separator after it")
        #expect(ParsedURL("/a?&&x=1&&y=2&")!.query.map { "\($0.0)=\($0.1)" } == ["x=1", "y=2"])
        #expect(ParsedURL("/a?x=1&y=%zz") == nil, "a bad escape in a later query item")
        #expect(ParsedURL("/a/%zz/b") == nil, "a bad escape in a middle segment")
    }

    /// Path captures win over query items of the same name; of repeated query items
    /// the first wins; a capture named nowhere leaves its param out.
    @Test func linkCapturesAreLookedUpInOrder() {
        var h = Harness()
        h.ok(["op": "open", "url": "/search/shoes?q=boots&inStock=true&inStock=false"])
        let top = h.entries("Search").last
        #expect(top?.params == ["q": "shoes", "inStock": true])
        h.ok(["op": "open", "url": "/product/3?id=4&note=a&note=b"])
        #expect(h.entries("Home").last?.params == ["id": 3, "note": "a"])
        h.ok(["op": "open", "url": "/product/5"])
        #expect(h.entries("Home").last?.params == ["id": 5])
    }

    /// A new coordinator's first entries share their fields with every other made from
    /// the same route until one changes: a change to one is seen nowhere else.
    @Test func initialEntriesChangeAlone() {
        var h = Harness.onMain()
        let home = h.entries("Home")[0].id
        h.ok(["op": "update", "entry": .string(home.description), "data": ["seen": true]])
        h.ok(["op": "setRoot", "at": "App", "route": "main"])
        #expect(h.entries("Home").count == 1 && h.entries("Home")[0].data == nil && h.entries("Home")[0].id != home)
        let again = h.entries("Home")[0].id
        h.ok(["op": "setRoot", "at": "App", "route": "main"])
        h.ok(["op": "update", "entry": .string(h.entries("Home")[0].id.description), "data": ["n": 1]])
        #expect(h.entries("Home")[0].data == ["n": 1] && h.entries("Home")[0].id != again)
        #expect(h.entries("Search")[0].data == nil && h.entries("Search")[0].route == "query")
    }

    @Test func alertAnsweredTwiceFirstWins() {
        var h = Harness()
        h.ok(["op": "alert", "title": "Delete?", "message": "This cannot be undone",
              "buttons": [["id": "cancel", "label": "Cancel", "role": "cancel"], ["id": "delete", "label": "Delete", "role": "destructive"]]])
        #expect(h.json["alert"] == ["id": "e2", "title": "Delete?", "message": "This cannot be undone",
                                    "buttons": [["id": "cancel", "label": "Cancel", "role": "cancel"], ["id": "delete", "label": "Delete", "role": "destructive"]]])
        h.fails(.busy, ["op": "alert", "title": "Another"])
        h.fails(.badParams, ["op": "respond", "alert": "e2", "button": "maybe"])
        #expect(h.ok(["op": "respond", "alert": "e2", "button": "delete"], base: 1) == [.applied])
        #expect(h.ok(["op": "respond", "alert": "e2", "button": "cancel"], base: 1) == [.superseded])
        #expect(h.json["alert"] == .null)
        h.fails(.notFound, ["op": "respond", "alert": "e99", "button": "ok"])
        h.fails(.notFound, ["op": "respond", "alert": "e1", "button": "ok"])   // a screen
        h.fails(.badParams, ["op": "respond", "alert": "e2"])
    }

    @Test func alertDefaultsAndBadButtons() {
        var h = Harness()
        h.ok(["op": "alert", "title": "Saved"])
        #expect(h.json["alert"] == ["id": "e2", "title": "Saved", "buttons": [["id": "ok", "label": "OK"]]])
        h.ok(["op": "respond", "alert": "e2", "button": "ok"])
        h.fails(.badParams, ["op": "alert"])
        h.fails(.badParams, ["op": "alert", "title": "x", "buttons": []])
        h.fails(.badParams, ["op": "alert", "title": "x", "buttons": [["id": "a", "label": "A"], ["id": "a", "label": "B"]]])
        h.fails(.badParams, ["op": "alert", "title": "x", "buttons": [["id": "a", "label": "A", "role": "scary"]]])
        h.fails(.badParams, ["op": "alert", "title": "x", "buttons": [["id": "a"]]])
    }

    @Test func alertAndRespondInOneCommandMakeAnEmptyPatch() {
        var h = Harness()
        guard case .applied(let ack, let patch) = h.send(["op": "alert", "title": "x"], ["op": "respond", "alert": "e2", "button": "ok"]) else {
            Issue.record("expected a revision"); return
        }
        #expect(ack.results == [.applied, .applied])
        #expect(patch.ops.isEmpty && ack.rev == 1)
    }
}
