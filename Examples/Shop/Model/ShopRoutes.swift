import NavSyncClient

// The demo shop's routes (navsyncd's built-in flow `shop`), typed: one enum per
// coordinator type, each case a route, each labelled value a param. The SwiftUI app
// (Examples/Shop/App) and the headless run (Examples/Shop/Headless) share them.

/// `App` (root): what the whole app shows.
public enum AppRoute: NavRoute {
    case onboarding
    case login(email: String? = nil, next: String? = nil)
    case main
}

/// `Main` (tabs).
public enum MainTab: NavRoute {
    case home, search, cart, profile
}

/// `Home` (stack): the shop's front.
public enum HomeRoute: NavRoute {
    case list
    case category(name: String)
    case detail(id: Int, note: String? = nil)
    case reviews(id: Int, rating: Double? = nil)
    case settings
    case checkout

    public static var checkedCases: [HomeRoute] { [.list, .category(name: ""), .detail(id: 0), .reviews(id: 0), .settings, .checkout] }
}

/// `Search` (stack).
public enum SearchRoute: NavRoute {
    case query(q: String? = nil)
    case results(q: String, inStock: Bool? = nil)
    case detail(id: Int, note: String? = nil)
}

/// `Cart` (stack).
public enum CartRoute: NavRoute {
    case items
    case detail(id: Int, note: String? = nil)
    case checkout
}

/// `Profile` (stack).
public enum ProfileRoute: NavRoute {
    case overview, orders
    case order(id: Int)
    case settings
}

/// `Settings` (stack, shown as a sheet).
public enum SettingsRoute: NavRoute {
    case main
    case notifications(enabled: Bool? = nil)
    case about
}

/// `Checkout` (stack, shown as a full-screen cover).
public enum CheckoutRoute: NavRoute {
    case address
    case payment(total: Double? = nil)
    case done
}

extension RouteCheck {
    /// Every route enum of the shop, checked against the session's flow at join.
    public static let shop: [RouteCheck] = [
        .coordinator("App", AppRoute.self), .coordinator("Main", MainTab.self), .coordinator("Home", HomeRoute.self),
        .coordinator("Search", SearchRoute.self), .coordinator("Cart", CartRoute.self), .coordinator("Profile", ProfileRoute.self),
        .coordinator("Settings", SettingsRoute.self), .coordinator("Checkout", CheckoutRoute.self),
    ]
}
