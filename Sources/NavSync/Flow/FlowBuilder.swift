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
        for part in parts() {
            switch part {
            case .coordinator(let name, let json): coordinators[name] = json
            case .link(let pattern, let ops): links[pattern] = .array(ops)
            }
        }
        var doc: JSONObject = ["name": .string(name), "root": .string(root), "coordinators": .object(coordinators)]
        if !links.isEmpty { doc["links"] = .object(links) }
        self = try Flow.load(.object(doc), file: file)
    }
}

/// A piece of a flow declared in Swift.
public enum FlowPart: Sendable {
    case coordinator(String, JSON)
    case link(String, [JSON])
}

@resultBuilder
public enum FlowBuilder {
    public static func buildExpression(_ c: CoordinatorType) -> [FlowPart] { [.coordinator(c.name, c.json)] }
    public static func buildExpression(_ l: DeepLink) -> [FlowPart] { [.link(l.pattern, l.ops)] }
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

    public init(_ name: String, _ kind: CoordinatorKind, initial: JSON, @RouteBuilder routes: () -> [Route]) {
        var routesJSON = JSONObject()
        for r in routes() { routesJSON[r.name] = r.json }
        self.name = name
        json = ["kind": .string(kind.rawValue), "initial": initial, "routes": .object(routesJSON)]
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
    public init(_ name: String, params: [(String, String)] = [], opens: String? = nil,
                presentation: Presentation? = nil, tab: JSON? = nil, title: String? = nil) {
        var o = JSONObject()
        if !params.isEmpty { o["params"] = .object(JSONObject(params.map { ($0.0, JSON.string($0.1)) })) }
        if let opens { o["coordinator"] = .string(opens) }
        if let presentation { o["presentation"] = .string(presentation.rawValue) }
        if let tab { o["tab"] = tab }
        if let title { o["title"] = .string(title) }
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
