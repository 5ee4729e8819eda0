// The demo shop as a SwiftUI app on the navigator: tabs, stacks, a sheet, a cover and
// an alert, all mirrored from one navsync session, so every device that joins it shows
// the same screens. Built by Xcode for iOS 17 / macOS 14 (see ../README.md), not on
// Linux; its routes (../Model) and the same flow run headless on Linux
// (../Headless, tests/integration/swift_client.sh).
import SwiftUI
import NavSyncClient
import ShopModel

@main
struct ShopApp: App {
    @State private var nav = Navigator(.init(session: "demo", urls: [WebSocketURL(host: "127.0.0.1", port: 7420, target: "/ws")], name: "iPhone"),
                                       routes: RouteCheck.shop, transport: URLSessionTransport())

    var body: some Scene {
        WindowGroup { RootView(nav: nav).navsync(nav) }
    }
}

struct RootView: View {
    let nav: Navigator

    var body: some View {
        switch nav.tree?.root.visible?.route(as: AppRoute.self) {
        case .main?: MainTabs(nav: nav)
        case .login?, .onboarding?:
            Button("Sign in") { Task { try? await nav.setRoot(AppRoute.main) } }
        case nil:
            ProgressView(nav.status == .joined ? "…" : "Connecting")
        }
    }
}

struct MainTabs: View {
    let nav: Navigator

    var body: some View {
        let tabs = nav.tabs("Main", MainTab.self)
        TabView(selection: tabs.selectionBinding) {
            HomeStack(nav: nav).tabItem { Label("Home", systemImage: "house") }.tag(MainTab?.some(.home))
            Text("Search").tabItem { Label("Search", systemImage: "magnifyingglass") }.tag(MainTab?.some(.search))
            Text("Cart").tabItem { Label("Cart", systemImage: "cart") }.tag(MainTab?.some(.cart))
            Text("Profile").tabItem { Label("Profile", systemImage: "person") }.tag(MainTab?.some(.profile))
        }
        .alert(nav.presentedAlert?.title ?? "", isPresented: nav.isAlertPresented, presenting: nav.presentedAlert) { alert in
            ForEach(alert.buttons) { button in
                Button(button.label, role: button.role == "cancel" ? .cancel : nil) {
                    Task { try? await nav.respond(alert: alert.id, button: button.id) }
                }
            }
        }
    }
}

struct HomeStack: View {
    let nav: Navigator

    var body: some View {
        let home = nav.stack("Home", HomeRoute.self)
        NavigationStack(path: home.pathBinding) {
            List(1...20, id: \.self) { id in
                NavigationLink("Product \(id)", value: HomeRoute.detail(id: id))
            }
            .navigationTitle("Products")
            .toolbar { Button("Settings") { home.sheet = .settings } }
            .navigationDestination(for: HomeRoute.self) { route in
                switch route {
                case .detail(let id, _):
                    VStack {
                        Text("Product \(id)")
                        NavigationLink("Reviews", value: HomeRoute.reviews(id: id))
                        Button("Buy") {
                            // The demo's checkout is guarded: it needs a cart in the session's data.
                            Task { try? await nav.updateSession(["cart": [.int(Int64(id))]]); home.cover = .checkout }
                        }
                    }
                case .reviews(let id, _): Text("Reviews of \(id)")
                default: Text("\(String(describing: route))")
                }
            }
        }
        .sheet(isPresented: home.isSheetPresented) {
            let settings = nav.stack("Settings", SettingsRoute.self)
            NavigationStack(path: settings.pathBinding) {
                Button("Notifications") { settings.path = [.notifications(enabled: true)] }
                    .navigationDestination(for: SettingsRoute.self) { Text(String(describing: $0)) }
            }
        }
        .fullScreenCover(isPresented: home.isCoverPresented) {
            let checkout = nav.stack("Checkout", CheckoutRoute.self)
            NavigationStack(path: checkout.pathBinding) {
                VStack {
                    Button("Pay") { checkout.path = [.payment(total: 19.5)] }
                    Button("Cancel") { home.cover = nil }
                }
                .navigationDestination(for: CheckoutRoute.self) { Text(String(describing: $0)) }
            }
        }
        .overlay(alignment: .bottom) {
            if let error = nav.lastError { Text(error.message).padding().onTapGesture { nav.lastError = nil } }
        }
    }
}
