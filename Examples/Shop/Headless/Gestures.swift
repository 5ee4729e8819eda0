import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NavSync
import NavSyncClient
import NavSyncLibuvTransport
import ShopModel

/// `shop-headless --gestures N`: what a person's thumbs do to a navigator on a real
/// network, measured. Random gestures through the bindings an app's views write (the
/// Home path, its settings sheet, the tab bar), `--every-ms` apart, spread over
/// `--navigators` navigators on one session. Each gesture must read back as written
/// in the same main-actor turn; at the end every navigator's shown and confirmed
/// states must equal the server's (read by another navigator on `--check`, straight
/// to the server), and with one navigator the state must be the one the gestures made.
/// Prints gesture -> shown and gesture -> confirmed times; exits 1 on any mismatch.
struct GestureRun {
    var urls: [WebSocketURL]
    var check: WebSocketURL?
    var session: String
    var count: Int
    var everyMs: Int
    var navigators: Int
    var seed: UInt64
    /// The first navigator keeps its session in a `FileStore` in this folder.
    var store: String?
    /// `--offline`: the server is down at launch (the script starts it later).
    var offline = false
    /// `--expect-reset`: the session was made anew meanwhile.
    var expectReset = false
    /// `--watch-network URL`: the fault proxy's control address, polled every 50 ms as an
    /// app's path monitor would watch the network; the time from the network's return to
    /// every command made before it confirmed is printed.
    var networkWatch: String?
    /// `--reconnect-now`: when the watched network comes back, each navigator is told
    /// (`reconnectNow()`, what an app's `NWPathMonitor` handler calls).
    var reconnectNow = false
    /// `--backoff-max MS`: the navigators' backoff cap.
    var backoffMax: Int?
}

@MainActor
func runGestures(_ run: GestureRun, transport: LibuvTransport) async throws -> Bool {
    var navs: [Navigator] = []
    if run.offline { return try await runOffline(run, transport: transport) }
    for i in 0..<run.navigators {
        let store = i == 0 ? run.store.map { FileStore(directory: URL(fileURLWithPath: $0)) } : nil
        var options = Navigator.Options(session: run.session, urls: run.urls, name: "thumb-\(i + 1)", create: true, store: store)
        if let max = run.backoffMax { options.backoff.max = .milliseconds(max) }
        let nav = Navigator(options, routes: RouteCheck.shop, transport: transport)
        try await nav.connect()
        navs.append(nav)
    }
    try await navs[0].batch { b in
        try b.setRoot(AppRoute.main)
        try b.select(MainTab.home)
    }
    for nav in navs { try await until(seconds: 10) { nav.tree?.coordinator("Main") != nil } }

    var rng = SplitMix(seed: run.seed)
    let pushes: [HomeRoute] = [.detail(id: 1), .detail(id: 2), .reviews(id: 1), .category(name: "tea")]
    let tabs: [MainTab] = [.home, .search, .cart, .profile]
    var shownMs: [Double] = []
    var confirmedMs: [Double] = []
    var problems: [String] = []
    // Per navigator: commands made, and those not yet confirmed with when they were made.
    var made = Array(repeating: 0, count: navs.count)
    var waiting: [[(index: Int, at: UInt64)]] = Array(repeating: [], count: navs.count)
    // The network's returns (watched as a path monitor would) and, for each, how long
    // until every command made before it was confirmed.
    var back: (at: UInt64, made: [Int])?
    var afterBack: [Double] = []
    var joinedAfterBack: [Double] = []
    func collect() {
        let now = DispatchTime.now().uptimeNanoseconds
        for (n, nav) in navs.enumerated() {
            let confirmed = made[n] - nav.pendingCommands
            while let first = waiting[n].first, first.index <= confirmed {
                confirmedMs.append(Double(now - first.at) / 1e6)
                waiting[n].removeFirst()
            }
        }
        if let (at, _) = back, joinedAfterBack.count < afterBack.count + 1, navs.allSatisfy({ $0.status == .joined }) {
            joinedAfterBack.append(Double(now - at) / 1e6)
        }
        if let (at, before) = back, navs.indices.allSatisfy({ made[$0] - navs[$0].pendingCommands >= before[$0] }) {
            afterBack.append(Double(now - at) / 1e6)
            back = nil
        }
    }
    let monitor = run.networkWatch.map { control in
        Task { @MainActor in
            var wasDark = false
            while !Task.isCancelled {
                let dark = await networkIsDark(control)
                if wasDark && !dark {
                    back = (DispatchTime.now().uptimeNanoseconds, made)
                    if run.reconnectNow { for nav in navs { nav.reconnectNow() } }
                }
                wasDark = dark
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
    }
    // Watches for confirmations every millisecond while the gestures run.
    let watcher = Task { @MainActor in
        while !Task.isCancelled {
            collect()
            try? await Task.sleep(for: .milliseconds(1))
        }
    }
    for step in 0..<run.count {
        let n = step % navs.count
        let nav = navs[n]
        let home = nav.stack("Home", HomeRoute.self)
        let bar = nav.tabs("Main", MainTab.self)
        let before = nav.pendingCommands
        let start = DispatchTime.now().uptimeNanoseconds
        var readsBack = true
        switch rng.below(10) {
        case 0...3:
            var path = home.path
            if path.isEmpty || rng.below(2) == 0 { path.append(pushes[rng.below(pushes.count)]) } else { path.removeLast() }
            home.path = path
            readsBack = home.path == path
        case 4:
            let path = Array(home.path.prefix(rng.below(home.path.count + 1)))
            home.path = path
            readsBack = home.path == path
        case 5...6:
            let sheet: HomeRoute? = home.sheet == nil ? .settings : nil
            home.sheet = sheet
            readsBack = home.sheet == sheet
        default:
            let tab = tabs[rng.below(tabs.count)]
            bar.selection = tab
            readsBack = bar.selection == tab
        }
        let end = DispatchTime.now().uptimeNanoseconds
        if !readsBack { problems.append("gesture \(step) did not read back as written") }
        if let e = nav.lastError { problems.append("gesture \(step): \(e)"); nav.lastError = nil }
        if nav.pendingCommands > before {
            made[n] += 1
            shownMs.append(Double(end - start) / 1e6)
            waiting[n].append((made[n], start))
        }
        try await Task.sleep(for: .milliseconds(run.everyMs))
    }
    let meant = navs[0].state
    try await until(seconds: 60) {
        collect()
        return navs.allSatisfy { $0.pendingCommands == 0 } && Set(navs.map(\.confirmedRev)).count == 1
    }
    watcher.cancel()
    monitor?.cancel()
    collect()
    for (n, nav) in navs.enumerated() {
        if let e = nav.lastError { problems.append("navigator \(n + 1): \(e)") }
        if nav.state != nav.confirmedState { problems.append("navigator \(n + 1): shown != confirmed") }
    }
    // The server's own word, from a connection that bypasses the delay.
    var serverMatches = "not checked"
    if let check = run.check {
        let reader = Navigator(.init(session: run.session, urls: [check], name: "checker", store: nil), transport: transport)
        try await reader.connect()
        try await until(seconds: 10) { reader.confirmedRev >= navs[0].confirmedRev }
        let same = navs.allSatisfy { $0.state == reader.state && $0.confirmedState == reader.state } && reader.confirmedRev == navs[0].confirmedRev
        serverMatches = same ? "yes" : "NO"
        if !same { problems.append("the server's state (rev \(reader.confirmedRev)) differs from a navigator's") }
        await reader.close()
    }
    var meantMatches = "n/a (several navigators)"
    if navs.count == 1 {
        let same = blankIDs(meant) == blankIDs(navs[0].state)
        meantMatches = same ? "yes" : "NO"
        if !same { problems.append("the state the gestures made changed once confirmed") }
    }
    for nav in navs { await nav.close() }
    let commands = made.reduce(0, +)
    print("gestures \(run.count) on \(navs.count) navigator(s), \(commands) commands, every \(run.everyMs) ms; rev \(navs[0].confirmedRev)")
    print("gesture -> shown:     \(summary(shownMs))")
    print("gesture -> confirmed: \(summary(confirmedMs))")
    print("server == shown == confirmed: \(serverMatches); shown == what the gestures made: \(meantMatches)")
    if run.networkWatch != nil {
        let how = run.reconnectNow ? "reconnectNow() when it is back" : "backoff up to \(run.backoffMax.map { "\($0) ms" } ?? "the default")"
        func ms(_ values: [Double]) -> String { values.map { String(format: "%.0f ms", $0) }.joined(separator: ", ") }
        print("network back -> joined: \(ms(joinedAfterBack)); -> all made before it confirmed (\(how)): " + (afterBack.isEmpty ? "no outage seen" : ms(afterBack)))
    }
    for p in problems.prefix(20) { print("problem: \(p)") }
    print(problems.isEmpty ? "ok" : "\(problems.count) problem(s)")
    return problems.isEmpty
}

/// `--offline`: launched while the server is down, the navigator opens on what its
/// store kept, makes `count` gestures, and once the server is up (the calling script
/// starts it) its commands land: the server ends on what the gestures made. With
/// `--expect-reset` the session was made anew meanwhile: the reset must be reported
/// and nothing replayed onto the new session.
@MainActor
func runOffline(_ run: GestureRun, transport: LibuvTransport) async throws -> Bool {
    guard let dir = run.store else { throw NavError(.badParams, "--offline needs --store DIR") }
    let store = FileStore(directory: URL(fileURLWithPath: dir))
    let nav = Navigator(.init(session: run.session, urls: run.urls, name: "offline", store: store),
                        routes: RouteCheck.shop, transport: transport)
    var problems: [String] = []
    guard nav.state != nil else { throw NavError(.notFound, "nothing stored in \(dir) for session '\(run.session)'") }
    try await nav.connect()
    guard case .offline(let reason) = nav.status else { throw NavError(.internal, "expected the server down, got \(nav.status)") }
    print("launched offline (\(reason)); opened on stored rev \(nav.confirmedRev): \(path(nav))")
    let home = nav.stack("Home", HomeRoute.self)
    let tabs = nav.tabs("Main", MainTab.self)
    var rng = SplitMix(seed: run.seed)
    let pushes: [HomeRoute] = [.detail(id: 1), .reviews(id: 1), .category(name: "tea")]
    for step in 0..<run.count {
        switch rng.below(3) {
        case 0:
            var p = home.path
            if p.isEmpty || rng.below(2) == 0 { p.append(pushes[rng.below(pushes.count)]) } else { p.removeLast() }
            home.path = p
            if home.path != p { problems.append("offline gesture \(step) did not read back") }
        case 1:
            let sheet: HomeRoute? = home.sheet == nil ? .settings : nil
            home.sheet = sheet
            if home.sheet != sheet { problems.append("offline gesture \(step) did not read back") }
        default:
            let tab: MainTab = tabs.selection == .home ? .cart : .home
            tabs.selection = tab
            if tabs.selection != tab { problems.append("offline gesture \(step) did not read back") }
        }
        try await Task.sleep(for: .milliseconds(run.everyMs))
    }
    let meant = nav.state
    print("made \(run.count) gestures offline, \(nav.pendingCommands) commands pending: \(path(nav))")
    try await until(seconds: 60) { nav.status == .joined && nav.pendingCommands == 0 }
    print("joined; now at rev \(nav.confirmedRev): \(path(nav))")
    if run.expectReset {
        if nav.lastReset == nil { problems.append("no reset was reported") } else { print("reset reported: \(nav.lastReset!)") }
        if nav.confirmedRev != 0 { problems.append("commands were replayed onto the new session (rev \(nav.confirmedRev))") }
    } else {
        if nav.lastReset != nil { problems.append("a reset was reported: \(nav.lastReset!)") }
        if blankIDs(meant) != blankIDs(nav.state) { problems.append("the state the gestures made changed once confirmed") }
        if let e = nav.lastError { problems.append("\(e)") }
    }
    if let check = run.check {
        let reader = Navigator(.init(session: run.session, urls: [check], name: "checker", store: nil), transport: transport)
        try await reader.connect()
        try await until(seconds: 10) { reader.confirmedRev >= nav.confirmedRev }
        if reader.state != nav.state || nav.state != nav.confirmedState { problems.append("the server's state differs from the navigator's") }
        await reader.close()
    }
    await nav.close()
    for p in problems { print("problem: \(p)") }
    print(problems.isEmpty ? "ok" : "\(problems.count) problem(s)")
    return problems.isEmpty
}

/// Whether the fault proxy at `control` has the network cut now (its `/stats`).
func networkIsDark(_ control: String) async -> Bool {
    guard let url = URL(string: control + "/stats"),
          let (data, _) = try? await URLSession.shared.data(from: url),
          let stats = try? JSON.parse(Array(data)) else { return false }
    return stats["dark"] == .bool(true)
}

@MainActor
func path(_ nav: Navigator) -> String { nav.tree?.activePath.map(\.route).joined(separator: " > ") ?? "(nothing)" }

/// p50, p99 and max of a list of milliseconds.
func summary(_ values: [Double]) -> String {
    guard !values.isEmpty else { return "none" }
    let sorted = values.sorted()
    func at(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * q + 0.5))] }
    return String(format: "p50 %.3f ms  p99 %.3f ms  max %.3f ms  (%d)", at(0.5), at(0.99), sorted.last!, sorted.count)
}

/// A document with every entry id blanked (the server names what a pending command
/// made only once it has it).
func blankIDs(_ json: JSON?) -> JSON? {
    guard let json else { return nil }
    switch json {
    case .object(let o):
        var out = JSONObject()
        for (k, v) in o { out[k] = (k == "id" || k == "selected") ? .string("?") : blankIDs(v)! }
        return .object(out)
    case .array(let a): return .array(a.map { blankIDs($0)! })
    default: return json
    }
}

/// Waits for a condition, checking every 10 ms.
@MainActor
func until(seconds: Double, _ condition: () -> Bool) async throws {
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
    while !condition() {
        if DispatchTime.now().uptimeNanoseconds > deadline { throw NavError(.internal, "timed out after \(seconds) s") }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// A small seeded generator: the same seed, the same gestures.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(max(n, 1))) }
}
