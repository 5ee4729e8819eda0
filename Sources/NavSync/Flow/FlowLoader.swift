/// Why a flow was refused: the file, the place inside it, and the reason.
public struct FlowError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file the flow came from, if any.
    public var file: String?
    /// Where in the flow, as `coordinators.Home.routes.detail.params.id`, or
    /// `links["/product/:id"][2].route`; empty for the whole document.
    public var path: String
    public var message: String

    public init(file: String?, path: String, message: String) {
        self.file = file; self.path = path; self.message = message
    }

    public var description: String {
        [file, path.isEmpty ? nil : path].compactMap { $0 }.joined(separator: ": ") + ": " + message
    }
}

extension Flow {
    /// Loads and checks a flow (docs/flows.md, "The format" and docs/protocol.md, "Operations: fine points", "Flows").
    /// `file` only labels errors.
    public static func load(_ json: JSON, file: String? = nil) throws(FlowError) -> Flow {
        var loader = FlowLoader(file: file)
        return try loader.load(json)
    }

    /// Parses JSON text, then loads it; a parse error names line and column.
    public static func load(bytes: [UInt8], file: String? = nil) throws(FlowError) -> Flow {
        let json: JSON
        do { json = try JSON.parse(bytes) } catch {
            throw FlowError(file: file, path: "", message: "not valid JSON: \(error)")
        }
        return try load(json, file: file)
    }
}

/// A place in a JSON document, for messages.
struct JSONPath {
    var parts: [String] = []

    func key(_ k: String) -> JSONPath {
        var copy = self
        let plain = !k.isEmpty && k.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }
        if plain && !parts.isEmpty { copy.parts.append("." + k) } else if plain { copy.parts.append(k) } else {
            copy.parts.append("[" + JSON.string(k).encodedString() + "]")
        }
        return copy
    }

    func index(_ i: Int) -> JSONPath {
        var copy = self
        copy.parts.append("[\(i)]")
        return copy
    }

    var text: String { parts.joined() }
}

private struct FlowLoader {
    let file: String?

    func fail(_ path: JSONPath, _ message: String) -> FlowError {
        FlowError(file: file, path: path.text, message: message)
    }

    func object(_ v: JSON?, _ path: JSONPath, _ what: String) throws(FlowError) -> JSONObject {
        guard let v else { throw fail(path, "missing \(what)") }
        guard let o = v.objectValue else { throw fail(path, "\(what) must be an object, got \(v.typeName)") }
        return o
    }

    /// Refuses keys the format does not have: a typo (`"param"` for `"params"`) would
    /// otherwise be ignored and the flow would load without what was meant.
    func onlyKeys(_ o: JSONObject, _ allowed: [String], _ path: JSONPath, _ what: String) throws(FlowError) {
        for key in o.keys where !allowed.contains(key) {
            throw fail(path.key(key), "unknown key \"\(key)\" in \(what) (expected \(allowed.joined(separator: ", ")))")
        }
    }

    package func string(_ v: JSON?, _ path: JSONPath, _ what: String) throws(FlowError) -> String {
        guard let v else { throw fail(path, "missing \(what)") }
        guard let s = v.stringValue, !s.isEmpty else { throw fail(path, "\(what) must be a non-empty string, got \(v.typeName == "string" ? "\"\"" : v.typeName)") }
        return s
    }

    mutating func load(_ json: JSON) throws(FlowError) -> Flow {
        let top = JSONPath()
        let doc = try object(json, top, "flow")
        try onlyKeys(doc, ["name", "root", "coordinators", "links", "guards"], top, "a flow")
        let name = try string(doc["name"], top.key("name"), "'name'")
        let rootName = try string(doc["root"], top.key("root"), "'root'")
        let coordinatorsPath = top.key("coordinators")
        let coordinatorsJSON = try object(doc["coordinators"], coordinatorsPath, "'coordinators'")
        guard !coordinatorsJSON.isEmpty else { throw fail(coordinatorsPath, "declares no coordinator") }

        // Pass 1: kinds, so routes can check the coordinators they open.
        var kinds: [String: CoordinatorKind] = [:]
        for (typeName, value) in coordinatorsJSON {
            let p = coordinatorsPath.key(typeName)
            let c = try object(value, p, "coordinator")
            try onlyKeys(c, ["kind", "initial", "routes", "guard"], p, "a coordinator")
            let kindText = try string(c["kind"], p.key("kind"), "'kind'")
            guard let kind = CoordinatorKind(rawValue: kindText) else {
                throw fail(p.key("kind"), "unknown kind \"\(kindText)\" (expected root, stack or tabs)")
            }
            kinds[typeName] = kind
        }
        guard kinds[rootName] != nil else {
            throw fail(top.key("root"), "names coordinator \"\(rootName)\", which 'coordinators' does not declare")
        }

        // The guards, by name, for the lists below to name.
        var guards: [String: Guard] = [:]
        if let guardsJSON = doc["guards"], !guardsJSON.isNull {
            let gp = top.key("guards")
            for (guardName, value) in try object(guardsJSON, gp, "'guards'") {
                guards[guardName] = try guardSpec(guardName, value, gp.key(guardName))
            }
        }

        // Pass 2: routes and initial items.
        var specs: [String: CoordinatorSpec] = [:]
        for (typeName, value) in coordinatorsJSON {
            specs[typeName] = try coordinator(typeName, value.objectValue!, coordinatorsPath.key(typeName), kinds, guards)
        }
        try checkInitialCycles(specs, coordinatorsPath)

        let flowSoFar = Flow(name: name, root: rootName, coordinators: specs,
                             coordinatorOrder: coordinatorsJSON.keys, links: [], source: json)
        var links: [FlowLink] = []
        if let linksJSON = doc["links"], !linksJSON.isNull {
            let lp = top.key("links")
            for (pattern, opsJSON) in try object(linksJSON, lp, "'links'") {
                links.append(try link(pattern, opsJSON, lp.key(pattern), flowSoFar))
            }
        }
        let flow = Flow(name: name, root: rootName, coordinators: specs,
                        coordinatorOrder: coordinatorsJSON.keys, links: links, source: json, guards: guards)
        try checkGuards(flow, top)
        return flow
    }

    func coordinator(_ typeName: String, _ c: JSONObject, _ p: JSONPath,
                     _ kinds: [String: CoordinatorKind], _ guards: [String: Guard]) throws(FlowError) -> CoordinatorSpec {
        let kind = kinds[typeName]!
        let routesPath = p.key("routes")
        let routesJSON = try object(c["routes"], routesPath, "'routes'")
        guard !routesJSON.isEmpty else { throw fail(routesPath, "declares no route") }
        var routes: [String: RouteSpec] = [:]
        for (routeName, value) in routesJSON {
            if kind != .tabs, value["tab"] != nil {
                throw fail(routesPath.key(routeName).key("tab"), "'tab' is tab-item data, for routes of a tabs coordinator; \(typeName) is a \(kind.rawValue) coordinator")
            }
            routes[routeName] = try route(routeName, value, routesPath.key(routeName), kinds, guards)
        }

        let initialPath = p.key("initial")
        var initial: [RouteRef] = []
        switch (kind, c["initial"]) {
        case (_, nil): throw fail(initialPath, "missing 'initial'")
        case (.tabs, .array(let items)?):
            guard !items.isEmpty else { throw fail(initialPath, "a tabs coordinator needs at least one initial tab") }
            for (i, item) in items.enumerated() {
                initial.append(try routeRef(item, initialPath.index(i), routes))
            }
        case (.tabs, let other?):
            throw fail(initialPath, "a tabs coordinator's 'initial' must be a list of routes, got \(other.typeName)")
        case (_, .array?):
            throw fail(initialPath, "a \(kind.rawValue) coordinator's 'initial' is one route, not a list")
        case (_, let item?):
            initial.append(try routeRef(item, initialPath, routes))
        }
        return CoordinatorSpec(name: typeName, kind: kind, initial: initial, routes: routes, routeOrder: routesJSON.keys,
                               guards: try guardList(c["guard"], p.key("guard"), guards))
    }

    func route(_ name: String, _ value: JSON, _ p: JSONPath,
               _ kinds: [String: CoordinatorKind], _ guards: [String: Guard]) throws(FlowError) -> RouteSpec {
        let r = try object(value, p, "route")
        try onlyKeys(r, ["params", "coordinator", "presentation", "tab", "title", "guard"], p, "a route")
        var params: [String: ParamType] = [:]
        var order: [String] = []
        if let paramsJSON = r["params"], !paramsJSON.isNull {
            for (paramName, typeJSON) in try object(paramsJSON, p.key("params"), "'params'") {
                let pp = p.key("params").key(paramName)
                guard let text = typeJSON.stringValue, let type = ParamType(text) else {
                    throw fail(pp, "unknown param type \(typeJSON) (expected string, int, number or bool, with '?' for optional)")
                }
                params[paramName] = type
                order.append(paramName)
            }
        }
        var child: String?
        if let c = r["coordinator"] {
            let typeName = try string(c, p.key("coordinator"), "'coordinator'")
            guard kinds[typeName] != nil else {
                throw fail(p.key("coordinator"), "unknown coordinator \"\(typeName)\"")
            }
            child = typeName
        }
        var presentation: Presentation?
        if let v = r["presentation"] {
            let text = try string(v, p.key("presentation"), "'presentation'")
            guard let pr = Presentation(rawValue: text), pr != .root else {
                throw fail(p.key("presentation"), "unknown presentation \"\(text)\" (expected push, sheet or cover)")
            }
            presentation = pr
        }
        var title: String?
        if let t = r["title"] {
            guard let s = t.stringValue else { throw fail(p.key("title"), "'title' must be a string, got \(t.typeName)") }
            title = s
        }
        return RouteSpec(name: name, params: params, paramOrder: order, coordinator: child,
                         presentation: presentation, tab: r["tab"], title: title,
                         guards: try guardList(r["guard"], p.key("guard"), guards))
    }

    /// A guard declared at the top of the flow: `when` (a condition) and `else`
    /// (`"deny"` or `{"redirect": LINK}`).
    func guardSpec(_ name: String, _ value: JSON, _ p: JSONPath) throws(FlowError) -> Guard {
        let g = try object(value, p, "guard")
        try onlyKeys(g, ["when", "else"], p, "a guard")
        guard let when = g["when"] else { throw fail(p.key("when"), "missing 'when' (the condition that must hold)") }
        let condition: Condition
        do { condition = try Condition(json: when) } catch {
            var place = p.key("when")
            for part in error.path { place = part.hasPrefix("[") ? place.index(Int(part.dropFirst().dropLast())!) : place.key(part) }
            throw fail(place, error.message)
        }
        let otherwise: Guard.Otherwise
        switch g["else"] {
        case .string("deny")?: otherwise = .deny
        case .object(let o)? where o.count == 1 && o["redirect"] != nil:
            otherwise = .redirect(try string(o["redirect"], p.key("else").key("redirect"), "'redirect'"))
        case nil: throw fail(p.key("else"), "missing 'else' (\"deny\" or {\"redirect\": LINK})")
        case let other?: throw fail(p.key("else"), "'else' must be \"deny\" or {\"redirect\": LINK}, got \(other.encodedString())")
        }
        return Guard(name: name, condition: condition, otherwise: otherwise)
    }

    /// A `guard` list of a coordinator type or route: names of declared guards.
    func guardList(_ value: JSON?, _ p: JSONPath, _ guards: [String: Guard]) throws(FlowError) -> [Guard] {
        guard let value, !value.isNull else { return [] }
        guard let names = value.arrayValue else { throw fail(p, "'guard' must be a list of guard names, got \(value.typeName)") }
        var list: [Guard] = []
        for (i, n) in names.enumerated() {
            guard let name = n.stringValue else { throw fail(p.index(i), "a guard name must be a string, got \(n.typeName)") }
            guard let g = guards[name] else {
                let known = guards.keys.sorted()
                throw fail(p.index(i), "unknown guard \"\(name)\" (\(known.isEmpty ? "the flow declares no 'guards'" : "declared: " + known.joined(separator: ", ")))")
            }
            list.append(g)
        }
        return list
    }

    /// The checks that need the whole flow (docs/flows.md, "Guards and redirects"): every redirect matches a link
    /// whose ops do not open a route its own guard protects, and the initial state
    /// passes every guard.
    func checkGuards(_ flow: Flow, _ top: JSONPath) throws(FlowError) {
        for name in flow.guards.keys.sorted() {
            let g = flow.guards[name]!
            guard case .redirect(let template) = g.otherwise else { continue }
            let p = top.key("guards").key(name).key("else").key("redirect")
            let placeholders: [Guard.Placeholder]
            switch Guard.placeholders(in: template) {
            case .failure(let bad):
                throw fail(p, "\"\(template)\" has \(bad.text), which is no placeholder: use {route}, {entry}, {url} or {param.NAME}")
            case .success(let found): placeholders = found
            }
            // A {param.NAME} must be a param of a route the guard protects (a misspelt
            // one would always be empty).
            let protected = flow.coordinators.values.flatMap { c in
                c.guards.contains(g) ? Array(c.routes.values) : c.routes.values.filter { $0.guards.contains(g) }
            }
            for case .param(let param) in placeholders where !protected.contains(where: { $0.params[param] != nil }) {
                let declared = Set(protected.flatMap(\.paramOrder)).sorted()
                throw fail(p, "\"\(template)\" has {param.\(param)}, but no route guard \"\(name)\" protects declares a param \"\(param)\" (\(declared.isEmpty ? "they declare none" : "they declare: " + declared.joined(separator: ", ")))")
            }
            let sample = g.link(route: "route", entry: EntryID(1), params: [:], url: "/sample") ?? template
            guard let address = ParsedURL(sample), let link = flow.links.first(where: { $0.matches(address) }) else {
                throw fail(p, "\"\(template)\" matches no link of the flow (links: \(flow.links.isEmpty ? "none" : flow.links.map(\.pattern).joined(separator: ", ")))")
            }
            for (i, op) in link.compiled.enumerated() {
                for (route, _) in linkRoutes(op.action, JSONPath()) {
                    let owners = op.at.flatMap { flow.coordinators[$0] }.map { [$0] } ?? flow.types(declaring: route)
                    if owners.contains(where: { $0.guards.contains(g) || ($0.routes[route]?.guards.contains(g) ?? false) }) {
                        throw fail(p, "its link \(link.pattern) (op \(i)) opens route \"\(route)\", which guard \"\(name)\" itself protects: the redirect would loop")
                    }
                }
            }
        }
        guard flow.isGuarded else { return }
        let initial = NavDocument(flow: flow)
        if let failure = initial.firstGuardFailure() {
            throw fail(top, "the initial state already fails guard \"\(failure.guard.name)\" on route \"\(failure.route)\" (\(failure.entry)); with no session data yet, its condition must hold or the route must not be initial")
        }
    }

    /// An initial item: a route name or `{"route", "params"}`, with params that fit.
    func routeRef(_ item: JSON, _ p: JSONPath, _ routes: [String: RouteSpec]) throws(FlowError) -> RouteRef {
        var name: String
        var params = JSONObject()
        var routePath = p
        if let s = item.stringValue {
            name = s
        } else if let o = item.objectValue {
            routePath = p.key("route")
            try onlyKeys(o, ["route", "params"], p, "an initial route")
            name = try string(o["route"], routePath, "'route'")
            if let pj = o["params"], !pj.isNull { params = try object(pj, p.key("params"), "'params'") }
        } else {
            throw fail(p, "an initial route must be a name or {\"route\", \"params\"}, got \(item.typeName)")
        }
        guard let spec = routes[name] else {
            throw fail(routePath, "initial route \"\(name)\" is not declared in 'routes'")
        }
        do throws(NavError) {
            params = try spec.validate(params: params)
        } catch {
            throw fail(p, "initial route \"\(name)\": \(error.message)")
        }
        return RouteRef(route: name, params: params)
    }

    /// Refuses initial routes that would open coordinators forever (A -> B -> A).
    func checkInitialCycles(_ specs: [String: CoordinatorSpec], _ p: JSONPath) throws(FlowError) {
        enum Mark { case visiting, done }
        var marks: [String: Mark] = [:]
        func visit(_ type: String, _ trail: [String]) throws(FlowError) {
            if marks[type] == .done { return }
            if marks[type] == .visiting {
                let cycle = trail.drop { $0 != type } + [type]
                throw fail(p.key(type).key("initial"),
                           "initial routes nest forever: \(cycle.joined(separator: " -> "))")
            }
            marks[type] = .visiting
            let spec = specs[type]!
            for ref in spec.initial {
                if let child = spec.routes[ref.route]?.coordinator { try visit(child, trail + [type]) }
            }
            marks[type] = .done
        }
        for type in specs.keys.sorted() { try visit(type, []) }
    }

    /// A link: its pattern parsed, each op checked against the flow (docs/protocol.md, "Operations: fine points", "Flows").
    func link(_ pattern: String, _ value: JSON, _ p: JSONPath, _ flow: Flow) throws(FlowError) -> FlowLink {
        guard pattern.hasPrefix("/") else { throw fail(p, "a link pattern must start with '/'") }
        let segments: [FlowLink.Segment] = pattern.split(separator: "/").map { part in
            part.hasPrefix(":") && part.count > 1 ? .capture(String(part.dropFirst())) : .literal(String(part))
        }
        guard let ops = value.arrayValue, !ops.isEmpty else {
            throw fail(p, "a link must be a non-empty list of operations")
        }
        // Path captures no op uses, for spotting a misspelt capture below.
        func captures(_ v: JSON) -> [String] {
            switch v {
            case .string(let s) where FlowLink.isCapture(v): return [String(s.dropFirst())]
            case .array(let a): return a.flatMap(captures)
            case .object(let o): return o.keys.flatMap { captures(o[$0]!) }
            default: return []
            }
        }
        let used = Set(ops.flatMap(captures))
        let pathCaptures = segments.compactMap { if case .capture(let c) = $0 { c } else { nil } }
        let captured = LinkCaptures(path: Set(pathCaptures), unused: pathCaptures.filter { !used.contains($0) })
        var decoded: [NavOperation] = []
        for (i, opJSON) in ops.enumerated() {
            let op: NavOperation
            do throws(NavError) { op = try NavOperation(json: opJSON) } catch {
                throw fail(p.index(i), error.message)
            }
            try checkLinkOp(op, p.index(i), flow, captured)
            decoded.append(op)
        }
        return FlowLink(pattern: pattern, segments: segments, ops: ops, decoded: decoded, flow: flow)
    }

    /// The captures of a link's pattern path, and those no op of the link uses.
    struct LinkCaptures {
        var path: Set<String>
        var unused: [String]
    }

    func checkLinkOp(_ op: NavOperation, _ p: JSONPath, _ flow: Flow, _ captures: LinkCaptures) throws(FlowError) {
        let name = op.action.name
        if name == .open { throw fail(p, "a link cannot 'open' another link") }
        var candidates = flow.coordinatorOrder.map { flow.spec($0) }
        if let kinds = name.kinds { candidates = candidates.filter { kinds.contains($0.kind) } }
        if let at = op.at, at != "root", EntryID(at) == nil, !name.isSessionWide {
            guard let spec = flow.coordinators[at] else {
                throw fail(p.key("at"), "unknown coordinator type \"\(at)\"")
            }
            if let kinds = name.kinds, !kinds.contains(spec.kind) {
                throw fail(p.key("at"), "'\(name.rawValue)' does not work on \(at), a \(spec.kind.rawValue) coordinator")
            }
            candidates = [spec]
        }
        for (route, place) in linkRoutes(op.action, p) where !candidates.contains(where: { $0.routes[route] != nil }) {
            throw fail(place, "route \"\(route)\" is not declared on " +
                       (op.at.flatMap { flow.coordinators[$0] != nil ? $0 : nil } ?? "any coordinator '\(name.rawValue)' works on"))
        }
        try checkLinkParams(op, p, candidates, captures)
    }

    /// The params a link op opens its routes with (docs/protocol.md, "Operations: fine points", "Links"): each declared
    /// on the route, each literal of its declared type, and no capture misspelt (one
    /// the path does not capture while a path capture goes unused: `/product/:id` with
    /// `":pid"`). Captures may come from query items too (`/search?q=…`).
    /// `candidates`: the types the op may go to (`at`'s, or those of a kind it works on).
    func checkLinkParams(_ op: NavOperation, _ p: JSONPath, _ candidates: [CoordinatorSpec],
                         _ captures: LinkCaptures) throws(FlowError) {
        let items: [(NavOperation.OpenItem, JSONPath)]
        switch op.action {
        case .route(let i), .present(let i, _), .setRoot(let i), .appendTab(let i), .insertTab(let i, _): items = [(i, p)]
        case .setStack(let list), .setTabs(let list), .setPath(let list, _): items = list.enumerated().map { ($1, p.key("routes").index($0)) }
        default: return
        }
        for (item, place) in items {
            let routes = candidates.compactMap { $0.routes[item.route] }
            guard !routes.isEmpty else { continue }
            for (key, value) in item.params {
                let pp = place.key("params").key(key)
                let types = routes.compactMap { $0.params[key] }
                guard !types.isEmpty else {
                    throw fail(pp, "route \"\(item.route)\" has no param \"\(key)\" (it has \(routes[0].paramOrder.isEmpty ? "none" : routes[0].paramOrder.joined(separator: ", ")))")
                }
                if FlowLink.isCapture(value), let text = value.stringValue {
                    let capture = String(text.dropFirst())
                    if !captures.path.contains(capture), !captures.unused.isEmpty {
                        throw fail(pp, "\"\(text)\" is not captured by the pattern's path, and its \(captures.unused.map { ":" + $0 }.joined(separator: ", ")) is used by no op: misspelt? (only a query item named \(capture) would fill it)")
                    }
                } else if !value.isNull, !types.contains(where: { $0.accepts(value) }) {
                    throw fail(pp, "\(value.encodedString()) is not a valid \(types[0]) for param \"\(key)\" of route \"\(item.route)\"")
                }
            }
        }
    }

    /// The routes an operation names, with where each is written.
    func linkRoutes(_ action: NavOperation.Action, _ p: JSONPath) -> [(String, JSONPath)] {
        switch action {
        case .route(let i), .present(let i, _), .setRoot(let i), .appendTab(let i), .insertTab(let i, _):
            return [(i.route, p.key("route"))]
        case .popToFirst(let r), .popToLast(let r), .popBefore(let r), .removeFirst(let r), .removeLast(let r),
             .select(.route(let r)):
            return [(r, p.key("route"))]
        case .setStack(let items), .setTabs(let items), .setPath(let items, _):
            return items.enumerated().map { ($1.route, p.key("routes").index($0)) }
        default: return []
        }
    }
}
