import Testing
import NavSync
import NavSyncServer
@testable import NavSyncClient
import ShopModel
import TestSupport

/// The navigator that never waits (docs/swift.md, "Three states: confirmed, pending, shown"): gestures made within
/// one round trip, against the core's hub behind a transport that holds messages in
/// both directions until a test lets them through (`HubTransport.holding`). No socket,
/// no clock.
@MainActor
@Suite("Navigator: confirmed, pending, shown")
struct NavigatorSpeculationTests {
    let server = HubTransport()

    func navigator(_ name: String = "app", store: (any NavigatorStore)? = nil,
                   sleep: @escaping @Sendable (Int64) async -> Void = noSleep) -> Navigator {
        Navigator(.init(session: "demo", name: name, store: store), routes: RouteCheck.shop, transport: server, sleep: sleep)
    }

    /// Joined, on the Home tab, then the network slowed: nothing gets through until
    /// `server.deliver()`.
    func onHomeBehindARoundTrip(_ name: String = "app") async throws -> Navigator {
        let nav = navigator(name)
        try await nav.connect()
        if nav.confirmedRev == 0 { try await nav.setRoot(AppRoute.main) }
        server.holding = true
        return nav
    }

    var serverState: JSON { (try? server.hub.sessionDocument("demo").get())?["state"] ?? .null }

    var serverRev: Int { Int((try? server.hub.sessionDocument("demo").get())?["rev"]?.intValue ?? -1) }

    /// Everything in flight delivered, and the navigators' event tasks run until each
    /// has nothing pending and has taken in the server's last revision.
    func drain(_ navs: Navigator...) async {
        func done() -> Bool { navs.allSatisfy { !$0.isWriting && $0.confirmedRev == serverRev } }
        for _ in 0..<20 {
            server.drain()
            _ = await settle(done)
            if server.inFlight == 0 && done() { return }
        }
    }

    func routes(_ nav: Navigator) -> [String] { nav.tree?.activePath.map(\.route) ?? [] }

    @Test func twoQuickPushesPushEachOnce() async throws {
        let nav = try await onHomeBehindARoundTrip()
        let home = nav.stack("Home", HomeRoute.self)
        home.path = [.detail(id: 1)]
        #expect(home.path == [.detail(id: 1)], "shown in the same turn")
        home.path = [.detail(id: 1), .reviews(id: 1)]
        #expect(home.path == [.detail(id: 1), .reviews(id: 1)])
        #expect(nav.pendingCommands == 2 && nav.confirmedRev == 1)
        // The second gesture was computed against the first: one push each.
        #expect(server.inFlight == 2)
        await drain(nav)
        #expect(home.path == [.detail(id: 1), .reviews(id: 1)])
        #expect(nav.state == serverState && nav.confirmedState == serverState && nav.confirmedRev == 3)
    }

    @Test func aPushThenABackSwipeWithinOneRoundTrip() async throws {
        let nav = try await onHomeBehindARoundTrip()
        let home = nav.stack("Home", HomeRoute.self)
        home.path = [.detail(id: 1)]
        let pushed = try #require(home.coordinator?.entries.last?.id)
        #expect(pushed == "~1.0" || pushed.hasPrefix("~"), "a pending entry is named by reference: \(pushed)")
        home.path = []
        #expect(home.path.isEmpty)
        await drain(nav)
        #expect(server.commands.last == [["op": "pop", "from": .string(pushed)]], "sent as a reference, resolved by the server")
        #expect(home.path.isEmpty && nav.state == serverState && nav.confirmedRev == 3, "the back swipe was not lost")
    }

    @Test func aSheetShownThenDismissedWithinOneRoundTrip() async throws {
        let nav = try await onHomeBehindARoundTrip()
        let home = nav.stack("Home", HomeRoute.self)
        home.sheet = .settings
        #expect(home.sheet == .settings)
        home.sheet = nil
        #expect(home.sheet == nil)
        await drain(nav)
        #expect(home.sheet == nil && nav.state == serverState)
    }

    @Test func twoTabsWithinOneRoundTripEndOnTheSecond() async throws {
        let nav = try await onHomeBehindARoundTrip()
        let tabs = nav.tabs("Main", MainTab.self)
        tabs.selection = .cart
        #expect(tabs.selection == .cart)
        tabs.selection = .home
        #expect(tabs.selection == .home)
        await drain(nav)
        #expect(tabs.selection == .home && nav.state == serverState)
    }

    /// A command the server refuses leaves the shown state; a later one that does not
    /// depend on it stays; one that names an entry it made fails with it.
    /// A binding's write the navigator's own replay refuses (a guard of the flow) is in
    /// `lastError` in the same turn, not a round trip later; the server, asked all the
    /// same, says the same. Regression: reported only after the round trip.
    @Test func aWriteTheReplayRefusesIsReportedAtOnce() async throws {
        let nav = try await onHomeBehindARoundTrip()
        let home = nav.stack("Home", HomeRoute.self)
        home.cover = .checkout          // guarded by cartFull; the cart is empty
        #expect(nav.lastError?.code == .guarded, "\(String(describing: nav.lastError))")
        #expect(home.cover == nil && nav.pendingCommands == 1, "not shown, and sent")
        nav.lastError = nil
        await drain(nav)
        #expect(nav.lastError?.code == .guarded && !nav.isWriting, "the server's answer: the same")
    }

    @Test func aRefusalTakesOnlyItsOwnEffectBack() async throws {
        let nav = try await onHomeBehindARoundTrip()
        let home = nav.stack("Home", HomeRoute.self)
        // The server refuses this one ('base' ahead of its revision); the replay shows it.
        let refused = Task { try await nav.send([NavOperation(.route(.init("detail", params: ["id": 1])), at: "Home")], base: 99) }
        _ = await settle { nav.pendingCommands == 1 }
        #expect(home.path == [.detail(id: 1)], "shown before the answer")
        home.path = [.detail(id: 1), .reviews(id: 1)]    // names nothing of the refused one by id: a push
        let tabs = nav.tabs("Main", MainTab.self)
        tabs.selection = .cart
        await drain(nav)
        await #expect(throws: NavError.self) { try await refused.value }
        #expect(nav.lastError == nil, "a call's refusal is thrown to its caller, not put in lastError")
        #expect(home.path == [.reviews(id: 1)] && tabs.selection == .cart, "the later gestures stand")
        #expect(nav.state == serverState)
        // A back swipe from an entry of a refused command fails with it (not_found), and
        // lands nowhere else.
        let refusedAgain = Task { try await nav.send([NavOperation(.route(.init("detail", params: ["id": 2])), at: "Home")], base: 99) }
        _ = await settle { home.path.count == 2 }
        let id = try #require(home.coordinator?.entries.last?.id)
        home.path = [.reviews(id: 1)]
        await drain(nav)
        await #expect(throws: NavError.self) { try await refusedAgain.value }
        #expect(nav.lastError?.code == .notFound && nav.lastError?.message.contains(id) == true, "\(String(describing: nav.lastError))")
        #expect(home.path == [.reviews(id: 1)] && nav.state == serverState)
    }

    /// Random gestures over a path, a sheet and the tab bar, with the network letting
    /// through a random part of what is in flight between them: every gesture reads
    /// back as written at once, and in the end the server, the confirmed state and the
    /// shown state are the same document, the one the gestures made.
    @Test(arguments: 0..<200)
    func randomGesturesEndWhereTheyMeant(seed: Int) async throws {
        var rng = SeededRandom(seed: UInt64(seed) &+ 0x5EED)
        let nav = try await onHomeBehindARoundTrip()
        let home = nav.stack("Home", HomeRoute.self)
        let tabs = nav.tabs("Main", MainTab.self)
        let pushes: [HomeRoute] = [.detail(id: 1), .detail(id: 2), .reviews(id: 1), .category(name: "tea")]
        for step in 0..<Int.random(in: 4...12, using: &rng) {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0...3:
                var path = home.path
                if path.isEmpty || Bool.random(using: &rng) { path.append(pushes.randomElement(using: &rng)!) } else { path.removeLast() }
                home.path = path
                #expect(home.path == path, "seed \(seed) step \(step): path")
            case 4:
                let path = Array(home.path.prefix(Int.random(in: 0...home.path.count, using: &rng)))
                home.path = path
                #expect(home.path == path, "seed \(seed) step \(step): cut")
            case 5...6:
                let sheet: HomeRoute? = home.sheet == nil ? .settings : nil
                home.sheet = sheet
                #expect(home.sheet == sheet, "seed \(seed) step \(step): sheet")
            default:
                let tab = [MainTab.home, .search, .cart, .profile].randomElement(using: &rng)!
                tabs.selection = tab
                #expect(tabs.selection == tab, "seed \(seed) step \(step): tab")
            }
            #expect(nav.lastError == nil, "seed \(seed) step \(step): \(String(describing: nav.lastError))")
            server.deliver(up: Int.random(in: 0...2, using: &rng), down: Int.random(in: 0...4, using: &rng))
            for _ in 0..<Int.random(in: 0...3, using: &rng) { await Task.yield() }
        }
        let meant = nav.state
        await drain(nav)
        #expect(nav.lastError == nil, "seed \(seed): \(String(describing: nav.lastError))")
        #expect(nav.pendingCommands == 0)
        #expect(nav.state == serverState && nav.confirmedState == serverState, "seed \(seed)")
        // What was meant, with the server's ids for the entries pending commands made.
        #expect(Self.withoutIDs(meant) == Self.withoutIDs(nav.state), "seed \(seed): \(String(describing: meant))")
    }

    /// A document with every entry id blanked: the shape and routes, not the names.
    static func withoutIDs(_ json: JSON?) -> JSON? {
        guard let json else { return nil }
        switch json {
        case .object(let o):
            var out = JSONObject()
            for (k, v) in o { out[k] = (k == "id" || k == "selected") ? .string("?") : withoutIDs(v)! }
            return .object(out)
        case .array(let a): return .array(a.map { withoutIDs($0)! })
        default: return json
        }
    }

    /// Two devices on one session, both behind the round trip, gesturing at once: both
    /// end on the server's state; the same back swipe on both pops once.
    @Test func twoNavigatorsConverge() async throws {
        let a = try await onHomeBehindARoundTrip("a")
        server.holding = false
        let b = navigator("b")
        try await b.connect()
        let ha = a.stack("Home", HomeRoute.self), hb = b.stack("Home", HomeRoute.self)
        ha.path = [.detail(id: 1), .reviews(id: 1)]
        await drain(a, b)
        #expect(hb.path == [.detail(id: 1), .reviews(id: 1)])
        server.holding = true
        ha.path = [.detail(id: 1)]     // both swipe back from the reviews
        hb.path = [.detail(id: 1)]
        b.tabs("Main", MainTab.self).selection = .search
        a.stack("Home", HomeRoute.self).sheet = .settings
        await drain(a, b)
        #expect(a.state == serverState && b.state == serverState)
        #expect(ha.path == [.detail(id: 1)], "popped once, not twice")
        #expect(ha.sheet == .settings && b.tabs("Main", MainTab.self).selection == .search)
    }

    /// Offline: the server is down at launch; the navigator opens on what its store
    /// kept, navigates, and its commands land once the server is back.
    @Test func launchedOfflineOpensFromTheStoreAndCatchesUp() async throws {
        let store = MemoryStore()
        let first = navigator("first", store: store)
        try await first.connect()
        try await first.setRoot(AppRoute.main)
        try await first.route(to: HomeRoute.detail(id: 3))
        _ = await settle { store.load(session: "demo", server: .default)?.rev == 2 }
        await first.close()
        server.dead = ["127.0.0.1:7420"]
        // A backoff passes at once; the one-second tick never comes.
        let nav = navigator("again", store: store, sleep: { ms in if ms == 1_000 { await noSleep(ms) } else { await Task.yield() } })
        #expect(nav.stack("Home", HomeRoute.self).path == [.detail(id: 3)], "opened on the stored state before connecting")
        try await nav.connect()
        if case .offline = nav.status {} else { Issue.record("\(nav.status)") }
        let home = nav.stack("Home", HomeRoute.self)
        home.path = [.detail(id: 3), .reviews(id: 3)]
        nav.tabs("Main", MainTab.self).selection = .cart
        #expect(home.path == [.detail(id: 3), .reviews(id: 3)] && nav.pendingCommands == 2)
        server.dead = []
        #expect(await settle { nav.status == .joined && !nav.isWriting })
        #expect(nav.state == serverState && home.path == [.detail(id: 3), .reviews(id: 3)])
        #expect(nav.tabs("Main", MainTab.self).selection == .cart)
    }

    /// The store an app left behind: it joined, made one command (revision 1) and closed.
    func storeOfAnAppThatLeftAtRevisionOne() async throws -> MemoryStore {
        let store = MemoryStore()
        let first = navigator("first", store: store)
        try await first.connect()
        try await first.setRoot(AppRoute.main)
        _ = await settle { store.load(session: "demo", server: .default)?.rev == 1 }
        await first.close()
        return store
    }

    /// The session was made anew while the app was away (another epoch): reported as
    /// a reset, and the pending commands are dropped with `reset`, not replayed onto it.
    @Test func aSessionMadeAnewIsAResetAndPendingCommandsAreGone() async throws {
        let store = try await storeOfAnAppThatLeftAtRevisionOne()
        let fresh = HubTransport(epoch: "restarted")
        fresh.dead = ["127.0.0.1:7420"]
        let nav = Navigator(.init(session: "demo", name: "again", store: store), routes: RouteCheck.shop, transport: fresh,
                            sleep: { ms in if ms == 1_000 { await noSleep(ms) } else { await Task.yield() } })
        try await nav.connect()
        let queued = Task { try await nav.route(to: HomeRoute.detail(id: 5)) }
        _ = await settle { nav.pendingCommands == 1 }
        fresh.dead = []
        do {
            _ = try await queued.value
            Issue.record("expected reset")
        } catch let e as NavError {
            #expect(e.code == .reset)
        }
        #expect(nav.lastReset != nil && nav.status == .joined)
        #expect(nav.state == (try? fresh.hub.sessionDocument("demo").get())?["state"])
        #expect(nav.tree?.root.visible?.route == "onboarding", "nothing was replayed onto the new session")
    }

    /// A stored session the server no longer has (it restarted without its data), joined
    /// without `create`: the reason stays in `lastError` (not overwritten by the close),
    /// the commands made offline are dropped with it and said to be, nothing stays
    /// pending, and the store forgets the session. Regression: `pendingCommands` stayed
    /// at 6 (`isWriting` true for ever) and `lastError` became `internal`.
    @Test func aStoredSessionThatIsGoneKeepsItsReasonAndDropsWhatWaited() async throws {
        let store = MemoryStore()
        let first = Navigator(.init(session: "kept", name: "first", create: true, flow: "shop", store: store),
                              routes: RouteCheck.shop, transport: server, sleep: noSleep)
        try await first.connect()
        try await first.setRoot(AppRoute.main)
        _ = await settle { store.load(session: "kept", server: .default)?.rev == 1 }
        await first.close()
        let fresh = HubTransport(epoch: "restarted")
        fresh.dead = ["127.0.0.1:7420"]
        let nav = Navigator(.init(session: "kept", name: "again", store: store), routes: RouteCheck.shop, transport: fresh,
                            sleep: { ms in if ms == 1_000 { await noSleep(ms) } else { await Task.yield() } })
        try await nav.connect()
        #expect(nav.connectionError?.code == .offline, "\(String(describing: nav.connectionError))")
        let home = nav.stack("Home", HomeRoute.self)
        for id in 1...6 { home.path = home.path + [.detail(id: id)] }
        let awaited = Task { try await nav.route(to: HomeRoute.reviews(id: 6)) }
        _ = await settle { nav.pendingCommands == 7 }
        fresh.dead = []
        do {
            _ = try await awaited.value
            Issue.record("expected unknown_session")
        } catch let e as NavError {
            #expect(e.code == .unknownSession, "\(e)")
        }
        #expect(await settle { if case .closed = nav.status { true } else { false } })
        #expect(nav.lastError?.code == .unknownSession, "\(String(describing: nav.lastError)) \(nav.status)")
        #expect(nav.lastError?.message.contains("the 7 commands waiting for it were dropped") == true, "\(String(describing: nav.lastError))")
        #expect(nav.pendingCommands == 0 && !nav.isWriting && nav.state == nav.confirmedState)
        #expect(store.load(session: "kept", server: .default) == nil, "the store forgot the session")
    }

    /// Another generation of the same lineage (a cluster's Redis changed primary while
    /// the app was away, `LINEAGE/GENERATION`): the same session, so no reset, and the
    /// pending command is replayed and lands.
    @Test func aNewGenerationOfTheSameSessionIsNoResetAndPendingCommandsLand() async throws {
        let store = try await storeOfAnAppThatLeftAtRevisionOne()
        #expect(store.load(session: "demo", server: .default)?.epoch == "ep1")
        // The new primary: epochs `ep1/g1`…, holding the session as it was (its helper
        // another client than the app's, as real client ids are random).
        let failedOver = HubTransport(epoch: "ep1/g", client: "h")
        let helper = Navigator(.init(session: "demo", name: "helper"), routes: RouteCheck.shop, transport: failedOver, sleep: noSleep)
        try await helper.connect()
        try await helper.setRoot(AppRoute.main)
        await helper.close()
        failedOver.dead = ["127.0.0.1:7420"]
        let nav = Navigator(.init(session: "demo", name: "again", store: store), routes: RouteCheck.shop, transport: failedOver,
                            sleep: { ms in if ms == 1_000 { await noSleep(ms) } else { await Task.yield() } })
        try await nav.connect()
        let queued = Task { try await nav.route(to: HomeRoute.detail(id: 5)) }
        _ = await settle { nav.pendingCommands == 1 }
        failedOver.dead = []
        let ack = try await queued.value
        #expect(ack.rev == 2 && nav.lastReset == nil && nav.status == .joined)
        #expect(nav.state == (try? failedOver.hub.sessionDocument("demo").get())?["state"])
        #expect(nav.stack("Home", HomeRoute.self).path == [.detail(id: 5)])
    }

    /// Past `maxPending`, a gesture is refused at once with `full`.
    @Test func theQueueIsBounded() async throws {
        server.dead = ["127.0.0.1:7420"]
        let nav = Navigator(.init(session: "demo", store: nil, maxPending: 2), transport: server,
                            sleep: { ms in if ms == 1_000 { await noSleep(ms) } else { await noSleep(ms) } })
        await #expect(throws: NavError.self) { try await nav.connect() }
        let a = Task { try await nav.send([NavOperation(.dismiss(all: false))]) }
        let b = Task { try await nav.send([NavOperation(.dismiss(all: false))]) }
        _ = await settle { nav.pendingCommands == 2 }
        do {
            try await nav.send([NavOperation(.dismiss(all: false))])
            Issue.record("expected full")
        } catch { #expect(error.code == .full) }
        // The refusal comes on a later turn, never from inside the gesture's call.
        var answers: [String] = []
        var inside = true
        nav.gesture([NavOperation(.dismiss(all: false))]) { result in
            answers.append(inside ? "inside the call" : "later: \((try? result.get()).map { "\($0)" } ?? "refused")")
        }
        inside = false
        #expect(answers.isEmpty)
        _ = await settle { !answers.isEmpty }
        #expect(answers == ["later: refused"])
        a.cancel(); b.cancel()
    }

    /// A gesture on a closed navigator is refused on a later turn, not inside the call.
    @Test func aGestureOnAClosedNavigatorIsAnsweredLater() async throws {
        let nav = try await onHomeBehindARoundTrip()
        await nav.close()
        var answers: [ErrorCode?] = []
        var inside = true
        nav.gesture([NavOperation(.dismiss(all: false))]) { result in
            if inside { answers.append(nil) } else if case .failure(let e) = result { answers.append(e.code) }
        }
        inside = false
        #expect(answers.isEmpty, "not from within the call")
        _ = await settle { !answers.isEmpty }
        #expect(answers == [.closed])
    }

    /// Writes that name nothing say so in `lastError` rather than vanishing.
    @Test func writesToNoCoordinatorSetLastError() async throws {
        let nav = try await onHomeBehindARoundTrip()
        nav.stack("Nowhere", HomeRoute.self).path = [.detail(id: 1)]
        #expect(nav.lastError?.code == .notFound && nav.lastError?.message.contains("Nowhere") == true)
        nav.lastError = nil
        server.holding = false
        try await nav.open("/product/1")
        // Two stacks of type Settings would be ambiguous; Home and Search are one each,
        // a tabs binding to a stack is the wrong kind.
        nav.tabs("Home", MainTab.self).selection = .cart
        #expect(nav.lastError?.code == .invalidOp)
        #expect(throws: NavError.self) { try Navigator.Options(session: "demo", url: "not a server") }
    }
}
