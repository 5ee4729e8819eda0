/// Declaring a flow in Swift, the way `@Coordinatable` classes with `@Route`s read:
///
/// ```swift
/// let flow = try Flow("shop", root: "App") {
///     CoordinatorType("App", .root, initial: "login") {
///         Route("login")
///         Route("main", opens: "Main")
///     }
///     CoordinatorType("Main", .tabs, initial: ["home"]) {
///         Route("home", tab: ["title": "Home"])
///     }
/// }
/// ```
/// The builder writes the flow's JSON and loads it through `Flow.load`, so a flow
/// declared in Swift is checked exactly like one read from a file.
extension Flow {
    public init(_ name: String, root: String, file: String = "(swift)",
                @FlowBuilder _ parts: () -> [FlowPart]) throws(FlowError) {
        var coordinators = JSONObject()
        var links = JSONObject()
        var guards = JSONObject()
        for part in parts() {
            switch part {
            case .coordinator(let name, let json): coordinators[name] = json
            case .link(let pattern, let ops): links[pattern] = .array(ops)
            case .guard(let name, let json): guards[name] = json
            }
        }
        var doc: JSONObject = ["name": .string(name), "root": .string(root)]
        if !guards.isEmpty { doc["guards"] = .object(guards) }
        doc["coordinators"] = .object(coordinators)
        if !links.isEmpty { doc["links"] = .object(links) }
        self = try Flow.load(.object(doc), file: file)
    }
}

/// A piece of a flow declared in Swift.
public enum FlowPart: Sendable {
    case coordinator(String, JSON)
    case link(String, [JSON])
    case `guard`(String, JSON)
}

@resultBuilder
public enum FlowBuilder {
    public static func buildExpression(_ c: CoordinatorType) -> [FlowPart] { [.coordinator(c.name, c.json)] }
    public static func buildExpression(_ l: DeepLink) -> [FlowPart] { [.link(l.pattern, l.ops)] }
    public static func buildExpression(_ g: FlowGuard) -> [FlowPart] { [.guard(g.name, g.json)] }
    public static func buildBlock(_ parts: [FlowPart]...) -> [FlowPart] { parts.flatMap { $0 } }
}

@resultBuilder
public enum RouteBuilder {
    public static func buildBlock(_ routes: Route...) -> [Route] { routes }
}

/// A coordinator type declared in Swift: `CoordinatorType("Home", .stack, initial: "list") { Route(...) }`.
/// `initial` is a route name, `{"route", "params"}`, or (tabs) a list of them.
public struct CoordinatorType: Sendable {
    let name: String
    let json: JSON

    /// `guards`: names of the flow's guards every route of this type is under.
    public init(_ name: String, _ kind: CoordinatorKind, initial: JSON, guards: [String] = [], @RouteBuilder routes: () -> [Route]) {
        var routesJSON = JSONObject()
        for r in routes() { routesJSON[r.name] = r.json }
        self.name = name
        var o: JSONObject = ["kind": .string(kind.rawValue), "initial": initial, "routes": .object(routesJSON)]
        if !guards.isEmpty { o["guard"] = .array(guards.map { .string($0) }) }
        json = .object(o)
    }
}

/// One route of a coordinator declared in Swift.
public struct Route: Sendable {
    let name: String
    let json: JSON

    /// - Parameters:
    ///   - params: name to type, in order: `("id", "int")`, `("note", "string?")`.
    ///   - opens: the coordinator type this route opens.
    ///   - presentation: `.sheet` or `.cover` to present modally by default.
    ///   - tab: tab-item metadata for tab routes.
    ///   - title: display text with `{param}` placeholders.
    ///   - guards: names of the flow's guards this route is under (after its type's).
    public init(_ name: String, params: [(String, String)] = [], opens: String? = nil,
                presentation: Presentation? = nil, tab: JSON? = nil, title: String? = nil, guards: [String] = []) {
        var o = JSONObject()
        if !params.isEmpty { o["params"] = .object(JSONObject(params.map { ($0.0, JSON.string($0.1)) })) }
        if let opens { o["coordinator"] = .string(opens) }
        if let presentation { o["presentation"] = .string(presentation.rawValue) }
        if let tab { o["tab"] = tab }
        if let title { o["title"] = .string(title) }
        if !guards.isEmpty { o["guard"] = .array(guards.map { .string($0) }) }
        self.name = name
        self.json = .object(o)
    }
}

/// A deep link declared in Swift: `DeepLink("/product/:id", [["op": "select", "route": "home"], ...])`.
public struct DeepLink: Sendable {
    let pattern: String
    let ops: [JSON]

    public init(_ pattern: String, _ ops: [JSON]) {
        self.pattern = pattern
        self.ops = ops
    }
}

/// A guard declared in Swift (docs/flows.md, "Guards and redirects"): a condition over the session's data, and
/// what happens when it is false.
///
/// ```swift
/// FlowGuard("signedIn", when: ["path": "/user", "exists": true], else: .redirect("/login?next={route}"))
/// FlowGuard("cartFull", when: ["path": "/cart/0", "exists": true], else: .deny)
/// ```
public struct FlowGuard: Sendable {
    let name: String
    let json: JSON

    public init(_ name: String, when condition: JSON, else otherwise: Guard.Otherwise) {
        self.name = name
        json = Guard.json(when: condition, otherwise)
    }
}
