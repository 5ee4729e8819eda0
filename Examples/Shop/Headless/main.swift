import Foundation
import NavSync
import NavSyncClient
import NavSyncLibuvTransport
import ShopModel

// The demo shop's flow without a screen: the same typed routes and navigator calls the
// SwiftUI app (Examples/Shop/App) makes, driven against a real server on Linux through
// the libuv transport. It prints the active path after each step and exits non-zero at
// the first error.
//
//   shop-headless [ws://127.0.0.1:7420/ws] [--session demo]
//   shop-headless URL --gestures N [--every-ms 20] [--navigators 1] [--seed 1] [--check URL]
//       random gestures through the bindings, measured (Gestures.swift)
//   shop-headless URL --orders     the README's orders example: redirected to sign-in,
//                                   signed in, back on /orders/7
//       [--watch-network CONTROL [--reconnect-now] [--backoff-max MS]]: the fault
//       proxy's control address watched as a path monitor would; prints the time from
//       the network's return to every command made before it confirmed
//   shop-headless URL --gestures N --store DIR [--offline [--expect-reset]]
//       the first navigator keeps its session in DIR; --offline: launched with the
//       server down, it opens on what DIR kept and navigates until the server is up

let usage = """
    usage: shop-headless [URL...] [--session NAME]
           shop-headless URL... --gestures N [--every-ms MS] [--navigators K] [--seed S] [--check URL] [--session NAME]
                         [--store DIR [--offline [--expect-reset]]]
                         [--watch-network CONTROL [--reconnect-now] [--backoff-max MS]]

    """
var urls: [WebSocketURL] = []
var session = "demo"
var gestures: GestureRun?
var ordersOnly = false
var arguments = CommandLine.arguments.dropFirst()
@MainActor func number(_ flag: String) -> Int {
    guard let text = arguments.popFirst(), let n = Int(text), n >= 0 else {
        FileHandle.standardError.write(Data("shop-headless: \(flag) needs a number\n\(usage)".utf8)); exit(2)
    }
    return n
}
while let a = arguments.popFirst() {
    switch a {
    case "--session": session = arguments.popFirst() ?? session
    case "--gestures": gestures = GestureRun(urls: [], check: nil, session: "", count: number(a), everyMs: 20, navigators: 1, seed: 1)
    case "--every-ms": gestures?.everyMs = number(a)
    case "--navigators": gestures?.navigators = max(1, number(a))
    case "--seed": gestures?.seed = UInt64(number(a))
    case "--store": gestures?.store = arguments.popFirst()
    case "--offline": gestures?.offline = true
    case "--expect-reset": gestures?.expectReset = true
    case "--watch-network": gestures?.networkWatch = arguments.popFirst()
    case "--reconnect-now": gestures?.reconnectNow = true
    case "--backoff-max": gestures?.backoffMax = number(a)
    case "--check":
        guard let u = arguments.popFirst().flatMap(WebSocketURL.init) else { FileHandle.standardError.write(Data(usage.utf8)); exit(2) }
        gestures?.check = u
    case "--orders": ordersOnly = true
    case "-h", "--help": print(usage, terminator: ""); exit(0)
    default:
        guard let u = WebSocketURL(a) else { FileHandle.standardError.write(Data(usage.utf8)); exit(2) }
        urls.append(u)
    }
}
/// The README's orders example through the navigator: /orders/7 signed out lands on the
/// sign-in screen, whose `next` says where the user was going; signed in, the app opens it.
@MainActor
func orders() async throws {
    let transport = LibuvTransport()
    defer { transport.shutdown(waitingUpTo: 2) }
    let nav = Navigator(.init(session: session, urls: urls.isEmpty ? [.default] : urls, name: "shop-headless", create: true, store: nil),
                        routes: RouteCheck.shop, transport: transport)
    try await nav.connect()
    let ack = try await nav.open("/orders/7")
    guard let login = nav.tree?.root.visible, login.route(as: AppRoute.self) != nil, case .login(_, let next?) = login.route(as: AppRoute.self)! else {
        throw NavError(.internal, "expected the sign-in screen with next, got \(nav.tree?.activePath.map(\.route) ?? [])")
    }
    print("open /orders/7: \(ack.results.map(\.rawValue)) to \(ack.redirects.map(\.link)); sign-in's next: \(next)")
    try await nav.updateSession(["user": "ann"])
    try await nav.open(next)
    let path = nav.tree?.activePath.map { $0.params.isEmpty ? $0.route : "\($0.route)\(JSON.object($0.params).encodedString())" } ?? []
    print("signed in: \(path.joined(separator: " > "))")
    await nav.close()
}

if ordersOnly {
    do { try await orders() } catch {
        FileHandle.standardError.write(Data("shop-headless: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}

if var g = gestures {
    g.urls = urls.isEmpty ? [.default] : urls
    g.session = session
    let transport = LibuvTransport()
    let ok: Bool
    do { ok = try await runGestures(g, transport: transport) } catch {
        FileHandle.standardError.write(Data("shop-headless: \(error)\n".utf8))
        transport.shutdown(waitingUpTo: 2)
        exit(1)
    }
    transport.shutdown(waitingUpTo: 2)
    exit(ok ? 0 : 1)
}

@MainActor
func run() async throws {
    let transport = LibuvTransport()
    // Its thread ended before the program exits (else exiting races its last frees).
    defer { transport.shutdown(waitingUpTo: 2) }
    let nav = Navigator(.init(session: session, urls: urls.isEmpty ? [.default] : urls, name: "shop-headless", create: true,
                              store: nil),
                        routes: RouteCheck.shop, transport: transport)
    try await nav.connect()
    func show(_ step: String) {
        let path = nav.tree?.activePath.map { $0.params.isEmpty ? $0.route : "\($0.route)\(JSON.object($0.params).encodedString())" } ?? []
        print("rev \(nav.rev)  \(step): \(path.joined(separator: " > "))")
    }
    show("joined")
    // Sign in, land on the shop's front (one command: all or nothing).
    try await nav.batch { b in
        try b.setRoot(AppRoute.main)
        try b.select(MainTab.home)
    }
    show("signed in")
    let home = nav.stack("Home", HomeRoute.self)
    // What a NavigationStack does when the user taps a product, then swipes back.
    home.path = [.detail(id: 42)]
    try await until { home.path == [.detail(id: 42)] && !nav.isWriting }
    show("tapped a product")
    try await nav.route(to: HomeRoute.reviews(id: 42, rating: 4.5))
    show("opened its reviews")
    home.path = [.detail(id: 42)]
    try await until { !nav.isWriting }
    show("swiped back")
    // The settings sheet, and a step inside it, then dismissed by the binding.
    home.sheet = .settings
    try await until { !nav.isWriting }
    try await nav.route(to: SettingsRoute.notifications(enabled: true))
    show("settings sheet")
    home.sheet = nil
    try await until { !nav.isWriting }
    show("dismissed")
    // A product in the cart (the session's data: the demo's checkout is guarded by it),
    // then the cart tab and a checkout cover, by a deep link.
    try await nav.updateSession(["cart": [42]])
    nav.tabs("Main", MainTab.self).selection = .cart
    try await until { !nav.isWriting }
    try await nav.open("/checkout?total=19.5")
    show("checkout")
    try await nav.alert("Pay 19.50?", buttons: [AlertButton(id: "cancel", label: "Cancel", role: "cancel"), AlertButton(id: "pay", label: "Pay")])
    try await nav.respond(alert: nav.presentedAlert!.id, button: "pay")
    try await nav.route(to: CheckoutRoute.done)
    show("paid")
    if let error = nav.lastError { throw error }
    await nav.close()
}

/// Waits for a binding's write to be answered.
@MainActor
func until(_ condition: () -> Bool) async throws {
    for _ in 0..<500 {
        if condition() { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    throw NavError(.internal, "timed out")
}

do {
    try await run()
} catch {
    FileHandle.standardError.write(Data("shop-headless: \(error)\n".utf8))
    exit(1)
}
