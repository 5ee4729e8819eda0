import NavSync

/// The built-in demo flow: a small shop that shows the whole model — a root that
/// switches onboarding / login / main, four tabs, stacks with required and optional
/// typed params, a sheet (Settings) and a full-screen cover (Checkout) with stacks of
/// their own, deep links with path and query captures, and two guards over the session's
/// data: checkout is denied while the cart is empty, and orders redirect to sign-in,
/// which remembers where the user was headed (`next`).
extension Flow {
    public static let demo: Flow = {
        do {
            return try Flow("shop", root: "App", file: "(built-in demo)") {
                FlowGuard("signedIn", when: ["path": "/user", "exists": true], else: .redirect("/login?next={url}"))
                FlowGuard("cartFull", when: ["path": "/cart/0", "exists": true], else: .deny)
                CoordinatorType("App", .root, initial: "onboarding") {
                    Route("onboarding", title: "Welcome")
                    Route("login", params: [("email", "string?"), ("next", "string?")], title: "Sign in")
                    Route("main", opens: "Main")
                }
                CoordinatorType("Main", .tabs, initial: ["home", "search", "cart", "profile"]) {
                    Route("home", opens: "Home", tab: ["title": "Home", "icon": "house"])
                    Route("search", opens: "Search", tab: ["title": "Search", "icon": "magnifyingglass"])
                    Route("cart", opens: "Cart", tab: ["title": "Cart", "icon": "cart"])
                    Route("profile", opens: "Profile", tab: ["title": "Profile", "icon": "person"])
                }
                CoordinatorType("Home", .stack, initial: "list") {
                    Route("list", title: "Products")
                    Route("category", params: [("name", "string")], title: "{name}")
                    Route("detail", params: [("id", "int"), ("note", "string?")], title: "Product {id}")
                    Route("reviews", params: [("id", "int"), ("rating", "number?")], title: "Reviews")
                    Route("settings", opens: "Settings", presentation: .sheet)
                    Route("checkout", opens: "Checkout", presentation: .cover, guards: ["cartFull"])
                }
                CoordinatorType("Search", .stack, initial: "query") {
                    Route("query", params: [("q", "string?")], title: "Search")
                    Route("results", params: [("q", "string"), ("inStock", "bool?")], title: "Results for {q}")
                    Route("detail", params: [("id", "int"), ("note", "string?")], title: "Product {id}")
                }
                CoordinatorType("Cart", .stack, initial: "items") {
                    Route("items", title: "Cart")
                    Route("detail", params: [("id", "int"), ("note", "string?")], title: "Product {id}")
                    Route("checkout", opens: "Checkout", presentation: .cover, guards: ["cartFull"])
                }
                CoordinatorType("Profile", .stack, initial: "overview") {
                    Route("overview", title: "Profile")
                    Route("orders", title: "Orders", guards: ["signedIn"])
                    Route("order", params: [("id", "int")], title: "Order {id}", guards: ["signedIn"])
                    Route("settings", opens: "Settings", presentation: .sheet)
                }
                CoordinatorType("Settings", .stack, initial: "main") {
                    Route("main", title: "Settings")
                    Route("notifications", params: [("enabled", "bool?")], title: "Notifications")
                    Route("about", title: "About")
                }
                CoordinatorType("Checkout", .stack, initial: "address") {
                    Route("address", title: "Address")
                    Route("payment", params: [("total", "number?")], title: "Payment")
                    Route("done", title: "Thank you")
                }
                DeepLink("/product/:id", [
                    ["op": "setRoot", "at": "App", "route": "main"],
                    ["op": "select", "route": "home"],
                    ["op": "setStack", "at": "Home", "routes": [
                        "list", ["route": "detail", "params": ["id": ":id", "note": ":note"]],
                    ]],
                ])
                DeepLink("/search/:q", [
                    ["op": "setRoot", "at": "App", "route": "main"],
                    ["op": "select", "route": "search"],
                    ["op": "setStack", "at": "Search", "routes": [
                        "query", ["route": "results", "params": ["q": ":q", "inStock": ":inStock"]],
                    ]],
                ])
                DeepLink("/orders/:id", [
                    ["op": "setRoot", "at": "App", "route": "main"],
                    ["op": "select", "route": "profile"],
                    ["op": "setStack", "at": "Profile", "routes": ["overview", "orders", ["route": "order", "params": ["id": ":id"]]]],
                ])
                DeepLink("/checkout", [
                    ["op": "setRoot", "at": "App", "route": "main"],
                    ["op": "select", "route": "cart"],
                    ["op": "route", "at": "Cart", "route": "checkout"],
                    ["op": "route", "route": "payment", "params": ["total": ":total"]],
                ])
                DeepLink("/settings/notifications", [
                    ["op": "present", "route": "settings"],
                    ["op": "route", "route": "notifications", "params": ["enabled": ":on"]],
                ])
                DeepLink("/orders", [
                    ["op": "setRoot", "at": "App", "route": "main"],
                    ["op": "select", "route": "profile"],
                    ["op": "setStack", "at": "Profile", "routes": ["overview", "orders"]],
                ])
                DeepLink("/login", [
                    ["op": "setRoot", "at": "App", "route": "login", "params": ["email": ":email", "next": ":next"]],
                ])
            }
        } catch {
            preconditionFailure("the built-in demo flow is invalid: \(error)")
        }
    }()
}
