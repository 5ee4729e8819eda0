import Testing
import NavSync
import NavSyncServer
@testable import NavSyncClient
import ShopModel
import TestSupport
@testable import NavSyncRuntime
import NavSyncLibuv
import NavSyncLibuvTransport

/// The app client against a real navsyncd on loopback, through the libuv transport:
/// what the hub-backed value tests show, over real sockets.
@MainActor
@Suite("Navigator on loopback", .serialized)
struct NavigatorLoopbackTests {
    /// Waits (on real sockets) until `condition` holds, at most `seconds`.
    func until(_ seconds: Double = 5, _ condition: () -> Bool) async -> Bool {
        for _ in 0..<Int(seconds * 100) {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    func url(_ server: TestServer) -> WebSocketURL { WebSocketURL(host: "127.0.0.1", port: server.port, target: "/ws") }

    @Test func twoNavigatorsAndASessionClientMirrorOneSessionAndBackSwipesPopOnce() async throws {
        let server = try TestServer.sessions()
        defer { server.stop() }
        let transport = LibuvTransport()
        defer { transport.shutdown() }
        let phone = Navigator(.init(session: "demo", urls: [url(server)], name: "phone", store: nil), routes: RouteCheck.shop, transport: transport)
        let tablet = Navigator(.init(session: "demo", urls: [url(server)], name: "tablet", store: nil), routes: RouteCheck.shop, transport: transport)
        try await phone.connect()
        try await tablet.connect()
        var options = SessionClient.Options()
        options.url = url(server)
        let mirror = SessionClient.running(options)

        try await phone.open("/product/7")
        try await phone.route(to: HomeRoute.reviews(id: 7, rating: 4.5))
        #expect(await until { tablet.rev == 2 })
        #expect(tablet.stack("Home", HomeRoute.self).path == [.detail(id: 7), .reviews(id: 7, rating: 4.5)])

        // Both devices swipe back from the reviews screen at once.
        phone.stack("Home", HomeRoute.self).path = [.detail(id: 7)]
        tablet.stack("Home", HomeRoute.self).path = [.detail(id: 7)]
        #expect(await until { phone.rev == 3 && tablet.rev == 3 && !phone.isWriting && !tablet.isWriting })
        try? await Task.sleep(for: .milliseconds(100))   // a second pop, were there one, would show by now
        #expect(phone.rev == 3 && tablet.rev == 3, "popped once")
        #expect(phone.stack("Home", HomeRoute.self).path == [.detail(id: 7)] && tablet.lastError == nil)
        var mirrored: JSON?
        for await state in mirror.states() {
            if state == phone.state { mirrored = state; break }
        }
        #expect(mirrored == tablet.state && mirrored != nil, "the terminal client's mirror is the same document")

        await mirror.close()
        await phone.close()
        await tablet.close()
    }

    @Test func aNavigatorMovesToTheNextServerWhenItsServerStops() async throws {
        let first = try TestServer.sessions()
        let second = try TestServer.sessions()
        defer { second.stop() }
        let transport = LibuvTransport()
        defer { transport.shutdown() }
        let nav = Navigator(.init(session: "demo", urls: [url(first), url(second)], store: nil), routes: RouteCheck.shop, transport: transport)
        try await nav.connect()
        try await nav.open("/product/7")
        #expect(nav.rev == 1)
        first.stop()
        // The second server's demo session is another history: a snapshot of it. (The
        // move can be quicker than a poll, so only where it ends is awaited.)
        #expect(await until(10) { nav.status == .joined && nav.rev == 0 })
        #expect(nav.tree?.root.visible?.route(as: AppRoute.self) == .onboarding)
        try await nav.setRoot(AppRoute.main)
        #expect(nav.rev == 1 && nav.tabs("Main", MainTab.self).selection == .home)
        await nav.close()
    }

    /// A first connection that fails says why: a refused port, a server that does not
    /// speak TLS to a wss:// URL, and on Linux the URLSession transport (whose libcurl
    /// has no WebSocket support). The navigator keeps trying meanwhile.
    /// Why a first connection failed, in words and as a code an app branches on
    /// (`offline`, `tls`, `rejected`), on `connect()`'s error and `connectionError`.
    /// Regression: every one was `.internal`.
    @Test func aFailedFirstConnectSaysWhy() async throws {
        let transport = LibuvTransport()
        defer { transport.shutdown() }
        func failure(_ url: WebSocketURL, _ transport: any WebSocketTransport) async -> NavError? {
            let nav = Navigator(.init(session: "demo", urls: [url], store: nil), transport: transport)
            defer { Task { await nav.close() } }
            do {
                try await nav.connect()
                return nil
            } catch {
                if case .offline = nav.status {} else { return NavError(.internal, "status \(nav.status)") }
                #expect(nav.connectionError?.code == error.code, "\(String(describing: nav.connectionError)) \(error)")
                return error
            }
        }
        // A port nobody listens on.
        let gone = try TestServer.sessions()
        let closed = gone.port
        gone.stop()
        let refused = await failure(WebSocketURL(host: "127.0.0.1", port: closed, target: "/ws"), transport)
        #expect(refused?.code == .offline, "\(String(describing: refused))")
        #expect(refused?.message.contains("could not join 'demo' at ws://127.0.0.1:\(closed)/ws") == true
                && refused?.message.lowercased().contains("refused") == true, "\(String(describing: refused))")
        // wss:// to a plain server.
        let server = try TestServer.sessions()
        defer { server.stop() }
        let tls = await failure(WebSocketURL(host: "127.0.0.1", port: server.port, target: "/ws", secure: true), transport)
        #expect(tls?.code == .tls && (tls!.message.contains("TLS") || tls!.message.contains("SSL")), "\(String(describing: tls))")
        // A path the server does not serve: its 404 to the upgrade.
        let wrongPath = await failure(WebSocketURL(host: "127.0.0.1", port: server.port, target: "/nowhere"), transport)
        #expect(wrongPath?.code == .rejected && wrongPath?.message.contains("404") == true, "\(String(describing: wrongPath))")
        // URLSession on Linux.
        let curl = await failure(url(server), URLSessionTransport())
        #expect(curl?.message.contains("could not join 'demo'") == true && curl?.message.hasSuffix(": closed (still trying)") == false, "\(String(describing: curl))")
        print("first-connect failures: \([refused, tls, wrongPath, curl].map { $0.map { "\($0.code.rawValue): \($0.message)" } ?? "joined" })")
    }
}
