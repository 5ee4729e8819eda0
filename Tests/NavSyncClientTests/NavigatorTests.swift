import Testing
import NavSync
import NavSyncServer
@testable import NavSyncClient
import ShopModel
import TestSupport

/// The navigator against the core's hub (`HubTransport`): bindings turned into
/// commands, intent on concurrent back swipes, snap-back on refusal, typed round trips
/// and schema errors, with no socket and no clock.
@MainActor
@Suite("Navigator")
struct NavigatorTests {
    let server = HubTransport()

    func navigator(_ name: String = "app", session: String = "demo", role: String? = nil,
                   routes: [RouteCheck] = RouteCheck.shop) -> Navigator {
        Navigator(.init(session: session, name: name, role: role, store: nil), routes: routes, transport: server, sleep: noSleep)
    }

    /// A navigator joined to the demo session, on the Home tab.
    func joinedAtHome(_ name: String = "app") async throws -> Navigator {
        let nav = navigator(name)
        try await nav.connect()
        return nav
    }

    @Test func joinsMirrorsAndSendsTypedRoutes() async throws {
        let nav = try await joinedAtHome()
        #expect(nav.status == .joined && nav.rev == 0 && nav.flow?.name == "shop")
        #expect(nav.tree?.root.visible?.route(as: AppRoute.self) == .onboarding)
        let ack = try await nav.batch { b in
            try b.setRoot(AppRoute.main)
            b.select("home")
            try b.route(to: HomeRoute.detail(id: 42, note: "gift"))
        }
        #expect(ack.rev == 1 && nav.rev == 1, "one command, one revision")
        #expect(server.commands.last == [["op": "setRoot", "route": "main"], ["op": "select", "route": "home"],
                                         ["op": "route", "route": "detail", "params": ["id": 42, "note": "gift"]]])
        // What the mirror gives back is the same typed value.
        let home = nav.stack("Home", HomeRoute.self)
        #expect(home.path == [.detail(id: 42, note: "gift")])
        #expect(nav.tabs("Main", MainTab.self).selection == .home)
        try await nav.route(to: HomeRoute.reviews(id: 42, rating: 4.5))
        #expect(home.path == [.detail(id: 42, note: "gift"), .reviews(id: 42, rating: 4.5)])
        #expect(nav.tree?.activePath.map(\.route) == ["main", "home", "reviews"])
    }

    @Test func theServersRefusalIsThrownAsNavError() async throws {
        let nav = try await joinedAtHome()
        do {
            try await nav.route(to: HomeRoute.detail(id: 1))   // Home is not on the tree yet
            Issue.record("expected a refusal")
        } catch {
            #expect(error.code == .unknownRoute && error.op == 0)
        }
        await #expect(throws: NavError.self) { try await nav.pop() }
        #expect(nav.rev == 0)
    }

    @Test func aShorterPathPopsFromTheFirstRemovedEntry() async throws {
        let nav = try await joinedAtHome()
        try await nav.open("/product/7")
        try await nav.route(to: HomeRoute.reviews(id: 7))
        let home = nav.stack("Home", HomeRoute.self)
        let entries = home.coordinator!.entries
        #expect(home.path == [.detail(id: 7), .reviews(id: 7)])
        home.path = [.detail(id: 7)]   // the user swiped back once
        #expect(home.path == [.detail(id: 7)], "shown at once, before the server answers")
        #expect(await settle { nav.rev == 3 })
        #expect(server.commands.last == [["op": "pop", "from": .string(entries[2].id)]])
        #expect(home.path == [.detail(id: 7)])
        // Longer: pushes. Neither a prefix nor longer: setPath (the root entry kept).
        home.path = [.detail(id: 7), .category(name: "tea"), .detail(id: 8)]
        #expect(await settle { nav.rev == 4 })
        #expect(server.commands.last == [["op": "route", "at": "Home", "route": "category", "params": ["name": "tea"]],
                                         ["op": "route", "at": "Home", "route": "detail", "params": ["id": 8]]])
        home.path = [.detail(id: 9)]
        #expect(await settle { nav.rev == 5 })
        #expect(server.commands.last == [["op": "setPath", "at": "Home", "routes": [["route": "detail", "params": ["id": 9]]]]])
        #expect(home.path == [.detail(id: 9)] && home.routes.first == .list && home.coordinator?.entries[0].id == entries[0].id)
        // Popping to the root.
        home.path = []
        #expect(await settle { nav.rev == 6 })
        #expect(home.path.isEmpty && home.routes == [.list])
    }

    @Test func twoDevicesSwipingBackAtOncePopOnce() async throws {
        let a = try await joinedAtHome("phone")
        let b = try await joinedAtHome("tablet")
        try await a.open("/product/7")
        try await a.route(to: HomeRoute.reviews(id: 7))
        #expect(await settle { b.rev == 2 })
        // Both swipe back from the reviews screen before either hears of the other.
        a.stack("Home", HomeRoute.self).path = [.detail(id: 7)]
        b.stack("Home", HomeRoute.self).path = [.detail(id: 7)]
        #expect(await settle { a.rev == 3 && b.rev == 3 && !b.isWriting && !a.isWriting })
        #expect(a.stack("Home", HomeRoute.self).path == [.detail(id: 7)], "popped once, not twice")
        #expect(b.stack("Home", HomeRoute.self).path == [.detail(id: 7)])
        #expect(a.state == b.state && b.lastError == nil)
    }

    /// A hook-driven flow (docs/backend.md): the backend refuses checkout without a cart,
    /// with its message and details, and its set lands in the same revision as the
    /// command it allowed; the navigator shows what the server confirmed.
    @Test func theBackendsRefusalAndSetReachTheNavigator() async throws {
        server.hub.configureHooks(HooksConfiguration(url: "http://backend.test/hook", commands: ["*": ["open"]]))
        server.backend = { call in
            let url = call.body["command"]?["ops"]?.arrayValue?.first?["url"]?.stringValue ?? ""
            if url == "/checkout" { return .answered(["allow": false, "message": "the cart is empty", "details": ["items": 0]]) }
            return .answered(["allow": true, "set": ["lastOpen": .string(url)]])
        }
        let nav = try await joinedAtHome()
        do {
            try await nav.open("/checkout")
            Issue.record("expected the backend's refusal")
        } catch {
            #expect(error.code == .refused && error.message == "the cart is empty" && error.details == ["items": 0])
        }
        #expect(nav.rev == 0 && server.hub.sessions["demo"]!.sequencer.rev == 0)
        #expect(nav.pendingCommands == 0 && !nav.isWriting, "a refusal ends the command, though nothing shown changed")
        let ack = try await nav.open("/product/7")
        #expect(ack.rev == 1 && ack.results == [.applied], "the sender's op only")
        #expect(nav.sessionData == ["lastOpen": "/product/7"] && nav.state == nav.confirmedState)
    }

    @Test func aRefusedWriteSnapsBackAndSaysWhy() async throws {
        let admin = try await joinedAtHome()
        try await admin.open("/product/7")
        let viewer = navigator("wall", role: "viewer")
        try await viewer.connect()
        let home = viewer.stack("Home", HomeRoute.self)
        home.path = []
        #expect(home.path.isEmpty, "shown while the command is out")
        #expect(await settle { viewer.lastError != nil })
        #expect(viewer.lastError?.code == .forbidden)
        #expect(home.path == [.detail(id: 7)], "snapped back to the mirror")
        #expect(viewer.rev == 1)
    }

    @Test func sheetsCoversTabsAndAlertsBindTwoWays() async throws {
        let nav = try await joinedAtHome()
        // The demo's checkout is guarded: it needs a cart in the session's data.
        try await nav.updateSession(["cart": [7]])
        #expect(nav.sessionData == ["cart": [7]])
        try await nav.open("/product/7")
        let home = nav.stack("Home", HomeRoute.self)
        home.sheet = .settings
        #expect(await settle { nav.rev == 3 })
        #expect(home.sheet == .settings && home.cover == nil && home.path == [.detail(id: 7)])
        #expect(server.commands.last == [["op": "present", "at": "Home", "route": "settings", "style": "sheet"]])
        let sheetID = home.coordinator!.layers[1].root.id
        home.sheet = nil
        #expect(await settle { nav.rev == 4 })
        #expect(server.commands.last == [["op": "pop", "from": .string(sheetID)]] && home.sheet == nil)
        home.cover = .checkout
        #expect(await settle { nav.rev == 5 })
        #expect(home.cover == .checkout && home.sheet == nil)
        // The tab bar.
        let tabs = nav.tabs("Main", MainTab.self)
        tabs.selection = .cart
        #expect(tabs.selection == .cart)
        #expect(await settle { nav.rev == 6 })
        #expect(tabs.selection == .cart && nav.tree?.activePath.map(\.route) == ["main", "cart", "items"])
        // An alert, dismissed through its binding: answered with its cancel button.
        try await nav.alert("Leave?", buttons: [AlertButton(id: "stay", label: "Stay", role: "cancel"), AlertButton(id: "go", label: "Leave")])
        #expect(nav.presentedAlert?.title == "Leave?")
        nav.presentedAlert = nil
        #expect(nav.presentedAlert == nil)
        #expect(await settle { nav.rev == 8 })
        #expect(server.commands.last?.first?["button"] == "stay")
    }

    /// Writing the path while a sheet is up changes the stack under the sheet and the
    /// sheet stays, with its own entries and what was pushed in it (as SwiftUI's
    /// NavigationStack does). Regression: the write became a `setStack` that dismissed
    /// the sheet, silently.
    @Test func aPathWrittenUnderASheetKeepsTheSheet() async throws {
        let nav = try await joinedAtHome()
        try await nav.open("/product/7")
        let home = nav.stack("Home", HomeRoute.self)
        home.sheet = .settings
        try await nav.route(to: SettingsRoute.notifications(enabled: true))
        #expect(await settle { !nav.isWriting })
        let sheet = try #require(home.coordinator?.layers[1].root)
        let inside = nav.tree?.activePath.map(\.route)
        home.path += [.detail(id: 1)]
        #expect(home.path == [.detail(id: 7), .detail(id: 1)] && home.sheet == .settings, "shown at once, the sheet still up")
        #expect(await settle { !nav.isWriting })
        #expect(server.commands.last == [["op": "setPath", "at": "Home", "routes": [["route": "detail", "params": ["id": 7]], ["route": "detail", "params": ["id": 1]]]]])
        #expect(home.path == [.detail(id: 7), .detail(id: 1)] && home.sheet == .settings)
        #expect(home.coordinator?.layers[1].root.id == sheet.id && nav.tree?.activePath.map(\.route) == inside,
                "the same sheet entry, and the screen pushed in it")
        home.path = []
        #expect(await settle { !nav.isWriting })
        #expect(home.path.isEmpty && home.sheet == .settings && nav.state == (try? server.hub.sessionDocument("demo").get())?["state"])
    }

    /// The verbs navsync.js and the Python package have, on the navigator too
    /// (docs/clients.md): popBefore, setPath, restart, removeFirst/Last, reset.
    @Test func theVerbsOfTheOtherClients() async throws {
        let nav = try await joinedAtHome()
        try await nav.open("/product/7")
        try await nav.route(to: HomeRoute.reviews(id: 7))
        let home = nav.stack("Home", HomeRoute.self)
        try await nav.popBefore("reviews")
        #expect(home.path == [.detail(id: 7)])
        try await nav.setPath([HomeRoute.detail(id: 7), .detail(id: 8)], at: "Home")
        #expect(home.path == [.detail(id: 7), .detail(id: 8)])
        try await nav.restart(at: "Home")
        #expect(home.path.isEmpty)
        try await nav.appendTab(MainTab.cart, at: "Main")
        try await nav.removeLast("cart", at: "Main")
        try await nav.removeFirst("search", at: "Main")
        #expect(nav.tabs("Main", MainTab.self).tabs == [.home, .cart, .profile])
        try await nav.reset()
        #expect(nav.tree?.root.visible?.route == "onboarding")
    }

    /// history, stateAt, sessions and back, as navsync.js and the Python package have
    /// them; a request nobody answers throws `.timeout` naming the server, and one made
    /// while not joined `.offline` at once.
    @Test func requestsAndBackAsTheOtherClientsHaveThem() async throws {
        // No ticks; the request's deadline (50 ms) passes for real.
        let nav = Navigator(.init(session: "demo", name: "app", store: nil, requestTimeout: .milliseconds(50)),
                            routes: RouteCheck.shop, transport: server,
                            sleep: { ms in if ms == 1_000 { await noSleep(ms) } else { try? await Task.sleep(for: .milliseconds(ms)) } })
        try await nav.connect()
        try await nav.open("/product/7")
        try await nav.route(to: HomeRoute.reviews(id: 7))
        let page = try await nav.history(limit: 2)
        #expect(page.rev == 2 && page.entries.map(\.rev) == [2, 1] && page.earliest == 0)
        let first = try await nav.stateAt(1)
        #expect(first["root"]?["current"]?["route"] == "main")
        await #expect(throws: NavError.self) { try await nav.stateAt(99) }
        #expect(try await nav.sessions().map(\.session).contains("demo"))
        try await nav.back()
        #expect(nav.stack("Home", HomeRoute.self).path == [.detail(id: 7)])
        server.holding = true          // nothing gets through: the deadline passes
        do {
            _ = try await nav.sessions()
            Issue.record("expected timeout")
        } catch {
            #expect(error.code == .timeout && error.message.contains("ws://127.0.0.1:7420/ws"), "\(error)")
        }
        server.holding = false
        await nav.close()
        await #expect(throws: NavError.self) { try await nav.history() }
    }

    @Test func routesThatDoNotFitTheFlowAreAllNamedInOneError() async throws {
        enum WrongHome: NavRoute {
            case list
            case detail(id: String)                  // int in the flow
            case reviews(id: Int, rating: Double)    // optional in the flow
            case category(name: String, sort: Int)   // no 'sort' in the flow
            case settings
            // no 'checkout'
            case wishlist                            // not in the flow
            static var checkedCases: [WrongHome] { [.wishlist] }
        }
        let nav = navigator(routes: [.coordinator("Home", WrongHome.self), .coordinator("Nowhere", AppRoute.self)])
        do {
            try await nav.connect()
            Issue.record("expected the routes to be refused")
        } catch {
            #expect(error.code == .badParams)
            for expected in ["'id' is int in the flow, String in WrongHome", "'rating' is optional in the flow but not in WrongHome",
                             "WrongHome.category has 'sort', which the flow does not declare", "route 'checkout' is not a case of WrongHome",
                             "WrongHome.wishlist is not a route of the flow", "no coordinator type 'Nowhere'"] {
                #expect(error.message.contains(expected), "\(expected) in \(error.message)")
            }
        }
        if case .closed = nav.status {} else { Issue.record("a navigator whose routes do not fit closes: \(nav.status)") }
        // The shop's own enums fit.
        #expect(RouteCheck.shop.flatMap { $0.mismatches(Flow.demo) }.isEmpty)
    }

    @Test func theRenderedRevisionIsReported() async throws {
        let nav = try await joinedAtHome()
        try await nav.open("/product/7")
        nav.renderedRevision = 1
        #expect(server.sent.last == ["type": "status", "session": "demo", "rev": 1])
        nav.renderedRevision = 1
        #expect(server.sent.filter { $0["type"] == "status" }.count == 1, "reported once per revision")
    }

    @Test func aJoinRefusedIsThrownAndClosesTheNavigator() async {
        let nav = navigator(session: "nosuch")
        await #expect(throws: NavError.self) { try await nav.connect() }
        if case .closed(let reason) = nav.status { #expect(reason.contains("no session 'nosuch'")) } else { Issue.record("\(nav.status)") }
        await #expect(throws: NavError.self) { try await nav.pop() }
    }

    @Test func aDroppedConnectionMovesToTheNextServerAndResendsUnansweredCommands() async throws {
        let nav = Navigator(.init(session: "demo", urls: [WebSocketURL("127.0.0.1:1")!, WebSocketURL("127.0.0.1:2")!]),
                            transport: server, sleep: { ms in if ms >= 1_000 { await noSleep(ms) } })   // backoff at once, no ticks
        try await nav.connect()
        #expect(server.connects == ["ws://127.0.0.1:1/ws"])
        try await nav.open("/product/7")
        // The server applies a pop, then the link breaks before the ack gets out.
        server.deaf = true
        let pop = Task { try await nav.pop() }
        #expect(await settle { server.commands.count == 2 })
        server.deaf = false
        server.drop(server.open[0])
        let ack = try await pop.value
        #expect(server.connects.last == "ws://127.0.0.1:2/ws" && nav.status == .joined)
        #expect(ack.rev == 2 && ack.duplicate, "resent under its id and answered from the first run: applied once")
        #expect(server.commands.count == 3 && server.commands[1] == server.commands[2])
        #expect(nav.rev == 2 && nav.stack("Home", HomeRoute.self).path == [], "the mirror caught up")
        await nav.close()
        if case .closed = nav.status {} else { Issue.record("\(nav.status)") }
    }
}
