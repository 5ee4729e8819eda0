import Foundation
import NavSync

/// A coordinator's routes, typed, without macros: a `Codable` enum whose cases are the
/// routes and whose labelled associated values are the params. Swift's synthesized
/// coding maps one onto the other: `case detail(id: Int, note: String?)` is the route
/// `detail` with params `{"id": 42}` (a nil optional is left out), and reading the
/// mirror gives the same case back.
///
/// ```swift
/// enum HomeRoute: NavRoute {
///     case list
///     case detail(id: Int, note: String? = nil)
///     case settings
/// }
/// ```
///
/// When a navigator joins, it checks each route type it was given against the session's
/// flow (`RouteSchema`): every route of the coordinator must be a case, with the same
/// param names and types. Cases the flow lacks are found only through `checkedCases`.
public protocol NavRoute: Codable, Hashable, Sendable {
    /// Values of cases that the schema check should find in the flow too (Swift cannot
    /// list an enum's cases that carry values). Default: none.
    static var checkedCases: [Self] { get }
}

extension NavRoute {
    public static var checkedCases: [Self] { [] }
}

/// Typed routes to and from what the wire carries (`route` + `params`).
public enum RouteCoding {
    /// The route name and params of a typed route.
    public static func item(_ route: some Encodable) throws(NavError) -> NavSync.NavOperation.OpenItem {
        let json: JSON
        do { json = try JSON.parse(Array(JSONEncoder().encode(route))) } catch {
            throw NavError(.badParams, "cannot encode \(route) as a route: \(error)")
        }
        // A case without values encodes as {"name":{}}; with values, {"name":{"id":42}}.
        guard case .object(let o) = json, o.count == 1, let (name, value) = o.first(where: { _ in true }),
              case .object(let params) = value else {
            throw NavError(.badParams, "\(type(of: route)) is not an enum of routes: it encodes as \(json.encodedString())")
        }
        return NavSync.NavOperation.OpenItem(name, params: params)
    }

    /// The typed route of an entry, or nil when the type has no such case or the params
    /// do not fit it.
    public static func route<R: Decodable>(_ type: R.Type, name: String, params: JSONObject) -> R? {
        let bytes = JSON.object([name: .object(params)]).encoded()
        return try? JSONDecoder().decode(R.self, from: Data(bytes))
    }
}
