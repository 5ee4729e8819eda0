import NavSync

/// Checks a typed route enum against a coordinator type of a flow: each route of the
/// coordinator must be a case of the enum, with the same param names, the same types
/// (`int` Int, `number` Double or Float, `bool` Bool, `string` String) and an optional
/// value wherever the flow's param is optional; each of `checkedCases` must be a route.
///
/// Swift cannot list an enum's cases, so the check asks the enum to decode each route
/// of the flow through a decoder that writes down what the enum's synthesized
/// `init(from:)` asks for: which route names it takes, and which params with which
/// types. It never decodes real data.
public enum RouteSchema {
    /// Every mismatch, one line each; empty when the enum fits.
    public static func mismatches<R: NavRoute>(_ type: R.Type, coordinator spec: CoordinatorSpec) -> [String] {
        let enumName = String(describing: type)
        var problems: [String] = []
        for name in spec.routeOrder {
            let route = spec.routes[name]!
            let probe = Probe(route: name, params: route.params)
            do {
                _ = try R(from: ProbeDecoder(probe: probe, path: []))
            } catch {
                if !probe.routeTaken { problems.append("\(spec.name): route '\(name)' is not a case of \(enumName)"); continue }
            }
            for (param, asked) in probe.asked.sorted(by: { $0.key < $1.key }) {
                guard let declared = route.params[param] else {
                    problems.append("\(spec.name).\(name): \(enumName).\(name) has '\(param)', which the flow does not declare")
                    continue
                }
                if let base = asked.base, base != declared.base {
                    problems.append("\(spec.name).\(name): '\(param)' is \(declared.base.rawValue) in the flow, \(asked.typeName) in \(enumName)")
                } else if asked.base == nil {
                    problems.append("\(spec.name).\(name): '\(param)' is \(declared.base.rawValue) in the flow, \(asked.typeName) in \(enumName)")
                }
                if declared.optional && !asked.optional {
                    problems.append("\(spec.name).\(name): '\(param)' is optional in the flow but not in \(enumName)")
                }
            }
            for param in route.paramOrder where probe.asked[param] == nil && probe.routeTaken {
                problems.append("\(spec.name).\(name): \(enumName).\(name) has no '\(param)', which the flow declares")
            }
        }
        for value in R.checkedCases {
            guard let item = try? RouteCoding.item(value) else { continue }
            if spec.routes[item.route] == nil {
                problems.append("\(spec.name): \(enumName).\(item.route) is not a route of the flow")
            }
        }
        return problems
    }

    /// What the enum asked for while decoding one route.
    final class Probe {
        let route: String
        let params: [String: ParamType]
        var routeTaken = false
        var asked: [String: Asked] = [:]
        init(route: String, params: [String: ParamType]) { self.route = route; self.params = params }
    }

    struct Asked {
        var base: ParamType.Base?
        var typeName: String
        var optional: Bool
    }
}

/// The recording decoder: at the top, a keyed container holding only the probed route's
/// name; under it, one holding every param the flow declares, each giving a sample of
/// the asked type, and writing down the ask.
struct ProbeDecoder: Decoder {
    let probe: RouteSchema.Probe
    let path: [any CodingKey]
    var codingPath: [any CodingKey] { path }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(ProbeContainer<Key>(probe: probe, path: path, level: path.isEmpty ? .routes : .params))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, .init(codingPath: path, debugDescription: "routes are keyed"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw DecodingError.typeMismatch(Any.self, .init(codingPath: path, debugDescription: "routes are keyed"))
    }
}

struct ProbeContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    enum Level { case routes, params }
    let probe: RouteSchema.Probe
    let path: [any CodingKey]
    let level: Level
    var codingPath: [any CodingKey] { path }

    var allKeys: [Key] {
        switch level {
        case .routes: return Key(stringValue: probe.route).map { [$0] } ?? []
        case .params: return probe.params.keys.compactMap(Key.init(stringValue:))
        }
    }

    func contains(_ key: Key) -> Bool { level == .routes ? key.stringValue == probe.route : probe.params[key.stringValue] != nil }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        guard level == .routes, key.stringValue == probe.route else { throw mismatch(key, "params are plain values") }
        probe.routeTaken = true
        return KeyedDecodingContainer(ProbeContainer<NestedKey>(probe: probe, path: path + [key], level: .params))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { throw mismatch(key, "params are plain values") }
    func superDecoder() throws -> any Decoder { ProbeDecoder(probe: probe, path: path) }
    func superDecoder(forKey key: Key) throws -> any Decoder { ProbeDecoder(probe: probe, path: path + [key]) }

    func decodeNil(forKey key: Key) throws -> Bool { false }

    /// Writes the ask down and answers with a sample of the type.
    private func ask<T>(_ key: Key, _ type: T.Type, optional: Bool) throws -> T {
        let base: ParamType.Base?
        let sample: Any?
        switch type {
        case is Int.Type: base = .int; sample = 1
        case is Int64.Type: base = .int; sample = Int64(1)
        case is Double.Type: base = .number; sample = 1.5
        case is Float.Type: base = .number; sample = Float(1.5)
        case is Bool.Type: base = .bool; sample = true
        case is String.Type: base = .string; sample = "s"
        default: base = nil; sample = nil
        }
        if level == .params { probe.asked[key.stringValue] = .init(base: base, typeName: String(describing: type), optional: optional) }
        guard let value = sample as? T else { throw mismatch(key, "not a param type") }
        return value
    }

    private func mismatch(_ key: Key, _ why: String) -> DecodingError {
        .typeMismatch(Any.self, .init(codingPath: path + [key], debugDescription: why))
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try ask(key, type, optional: false) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try ask(key, type, optional: false) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try ask(key, type, optional: false) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try ask(key, type, optional: false) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try ask(key, type, optional: false) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try ask(key, type, optional: false) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try ask(key, type, optional: false) }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try ask(key, type, optional: true) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try ask(key, type, optional: true) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try ask(key, type, optional: true) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try ask(key, type, optional: true) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try ask(key, type, optional: true) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try ask(key, type, optional: true) }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try ask(key, type, optional: true) }
}
