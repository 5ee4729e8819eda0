/// Guards (docs/flows.md, "Guards and redirects"): a rule of the flow that a guarded route must not be
/// on the active path while a condition over the session's data is false.
///
/// A guard is declared once by name at the top of a flow and listed by coordinator
/// types and routes (`guard`). Conditions read only the session's data, so replaying
/// the same commands gives the same answers on every node.
public struct Guard: Sendable, Equatable {
    public let name: String
    public let condition: Condition
    public let otherwise: Otherwise

    /// Redirects one op may take before it fails with `redirect_loop`.
    public static let redirectLimit = 5

    /// What happens to an op that leaves a guarded entry failing on the active path.
    public enum Otherwise: Sendable, Equatable {
        /// The command fails with `guarded`.
        case deny
        /// The flow's link at this URL is opened instead, its placeholders filled in
        /// (`Placeholder`): where the user was going, for the sign-in screen to return to.
        case redirect(String)
    }

    /// What a redirect's link may name, each percent-escaped into it (docs/flows.md,
    /// "Guards and redirects").
    public enum Placeholder: Sendable, Equatable {
        /// `{route}`: the guarded route's name.
        case route
        /// `{entry}`: the guarded entry's id.
        case entry
        /// `{url}`: the deep link the refused op was opening (`/orders/7`), or the
        /// guarded route and its params as one (`/order?id=7`) when it was not an `open`.
        case url
        /// `{param.NAME}`: one param of the guarded entry (empty when it has none).
        case param(String)

        init?(_ name: Substring) {
            switch name {
            case "route": self = .route
            case "entry": self = .entry
            case "url": self = .url
            default:
                guard name.hasPrefix("param."), name.count > 6 else { return nil }
                self = .param(String(name.dropFirst(6)))
            }
        }
    }

    /// The placeholders of a redirect template, or the first `{…}` that is none (for
    /// the error at load).
    public static func placeholders(in template: String) -> Result<[Placeholder], GuardTemplateError> {
        var found: [Placeholder] = []
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{") {
            guard let close = rest[open...].firstIndex(of: "}") else {
                return .failure(GuardTemplateError(text: String(rest[open...])))
            }
            let name = rest[rest.index(after: open)..<close]
            guard let p = Placeholder(name) else { return .failure(GuardTemplateError(text: "{\(name)}")) }
            found.append(p)
            rest = rest[rest.index(after: close)...]
        }
        return .success(found)
    }

    /// The URL a redirect opens for a guarded entry; `url`: the deep link the op was
    /// opening, if it was an `open`.
    public func link(route: String, entry: EntryID, params: JSONObject = [:], url: String? = nil) -> String? {
        guard case .redirect(let template) = otherwise else { return nil }
        var out = ""
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}"),
              let p = Placeholder(rest[rest.index(after: open)..<close]) {
            out += rest[..<open]
            switch p {
            case .route: out += Self.escape(route)
            case .entry: out += Self.escape(entry.description)
            case .url: out += Self.escape(url ?? Self.address(route: route, params: params))
            case .param(let name): out += params[name].map { Self.escape($0.stringValue ?? $0.encodedString()) } ?? ""
            }
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }

    /// A route and its params written as a path (`/order?id=7`), for `{url}` when the
    /// guarded op was not a deep link.
    static func address(route: String, params: JSONObject) -> String {
        let query = params.sorted { $0.key < $1.key }.map { "\(escape($0.key))=\(escape($0.value.stringValue ?? $0.value.encodedString()))" }
        return "/" + escape(route) + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
    }

    /// Percent-escapes all but RFC 3986's unreserved characters.
    static func escape(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".unicodeScalars)
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(hex[Int(byte >> 4)])
                out.unicodeScalars.append(hex[Int(byte & 15)])
            }
        }
        return out
    }
}

/// A `{…}` in a redirect template that names no placeholder.
public struct GuardTemplateError: Error, Sendable, Equatable {
    public var text: String
}

/// A condition over the session's data: a test of the value a JSON Pointer names, or
/// `all` / `any` / `not` of conditions.
public indirect enum Condition: Sendable, Equatable {
    case test(pointer: String, tokens: [String], Test)
    case all([Condition])
    case any([Condition])
    case not(Condition)

    public enum Test: Sendable, Equatable {
        case equals(JSON)
        case notEquals(JSON)
        case isIn([JSON])
        case exists(Bool)
        case greater(Double, orEqual: Bool)
        case less(Double, orEqual: Bool)
    }

    /// Whether the condition holds for this session data (nil: never set).
    public func holds(in data: JSONObject?) -> Bool {
        switch self {
        case .all(let list): return list.allSatisfy { $0.holds(in: data) }
        case .any(let list): return list.contains { $0.holds(in: data) }
        case .not(let c): return !c.holds(in: data)
        case .test(_, let tokens, let test):
            let value = Self.value(at: tokens, in: data)
            switch test {
            case .exists(let wanted): return (value != nil) == wanted
            case .equals(let v): return value.map { Self.same($0, v) } ?? false
            case .notEquals(let v): return value.map { !Self.same($0, v) } ?? false
            case .isIn(let list): return value.map { x in list.contains { Self.same(x, $0) } } ?? false
            case .greater(let bound, let orEqual):
                guard let n = value.flatMap(Self.number) else { return false }
                return orEqual ? n >= bound : n > bound
            case .less(let bound, let orEqual):
                guard let n = value.flatMap(Self.number) else { return false }
                return orEqual ? n <= bound : n < bound
            }
        }
    }

    /// What the pointer's tokens name in the data, or nil.
    static func value(at tokens: [String], in data: JSONObject?) -> JSON? {
        guard let data else { return nil }
        var current = JSON.object(data)
        for token in tokens {
            switch current {
            case .object(let o):
                guard let next = o[token] else { return nil }
                current = next
            case .array(let a):
                guard let i = Int(token), token == String(i), i >= 0, i < a.count else { return nil }
                current = a[i]
            default:
                return nil
            }
        }
        return current
    }

    static func number(_ v: JSON) -> Double? {
        switch v {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// JSON equality, with 1 and 1.0 the same number.
    static func same(_ a: JSON, _ b: JSON) -> Bool {
        if let x = number(a), let y = number(b) { return x == y }
        return a == b
    }
}

extension Condition {
    /// Reads a condition from a flow (docs/flows.md, "Guards and redirects"); the error says what is wrong, the
    /// caller says where.
    public init(json: JSON) throws(ConditionError) {
        guard let o = json.objectValue else { throw ConditionError(path: [], "a condition must be an object, got \(json.typeName)") }
        func list(_ key: String, _ v: JSON) throws(ConditionError) -> [Condition] {
            guard let items = v.arrayValue, !items.isEmpty else { throw ConditionError(path: [key], "'\(key)' must be a non-empty list of conditions") }
            var out: [Condition] = []
            for (i, item) in items.enumerated() {
                do throws(ConditionError) { out.append(try Condition(json: item)) } catch { throw error.inside([key, "[\(i)]"]) }
            }
            return out
        }
        if o.count == 1, let key = o.keys.first, let v = o[key], ["all", "any", "not"].contains(key) {
            switch key {
            case "all": self = .all(try list(key, v))
            case "any": self = .any(try list(key, v))
            default:
                do throws(ConditionError) { self = .not(try Condition(json: v)) } catch { throw error.inside(["not"]) }
            }
            return
        }
        guard let pointerJSON = o["path"] else {
            throw ConditionError(path: [], "a condition needs 'path' and one test, or is {\"all\": [...]}, {\"any\": [...]} or {\"not\": ...}")
        }
        guard let pointer = pointerJSON.stringValue, pointer.isEmpty || pointer.hasPrefix("/") else {
            throw ConditionError(path: ["path"], "'path' must be a JSON Pointer into the session's data, like \"/user\"")
        }
        let tests = o.keys.filter { $0 != "path" }
        guard tests.count == 1, let key = tests.first, let v = o[key] else {
            throw ConditionError(path: [], "a condition has 'path' and exactly one of equals, notEquals, in, exists, gt, gte, lt, lte (got \(tests.isEmpty ? "none" : tests.joined(separator: ", ")))")
        }
        let test: Test
        switch key {
        case "equals": test = .equals(v)
        case "notEquals": test = .notEquals(v)
        case "in":
            guard let items = v.arrayValue else { throw ConditionError(path: [key], "'in' must be a list of values") }
            test = .isIn(items)
        case "exists":
            guard case .bool(let b) = v else { throw ConditionError(path: [key], "'exists' must be true or false") }
            test = .exists(b)
        case "gt", "gte", "lt", "lte":
            guard let n = Self.number(v) else { throw ConditionError(path: [key], "'\(key)' must be a number, got \(v.typeName)") }
            test = key.hasPrefix("g") ? .greater(n, orEqual: key == "gte") : .less(n, orEqual: key == "lte")
        default:
            throw ConditionError(path: [key], "unknown test '\(key)' (expected equals, notEquals, in, exists, gt, gte, lt or lte)")
        }
        let tokens: [String]
        do throws(JSONPatchError) { tokens = try JSONPointer.tokens(pointer) } catch { throw ConditionError(path: ["path"], "'path': \(error)") }
        self = .test(pointer: pointer, tokens: tokens, test)
    }

    public var json: JSON {
        switch self {
        case .all(let list): return ["all": .array(list.map(\.json))]
        case .any(let list): return ["any": .array(list.map(\.json))]
        case .not(let c): return ["not": c.json]
        case .test(let pointer, _, let test):
            var o: JSONObject = ["path": .string(pointer)]
            switch test {
            case .equals(let v): o["equals"] = v
            case .notEquals(let v): o["notEquals"] = v
            case .isIn(let list): o["in"] = .array(list)
            case .exists(let b): o["exists"] = .bool(b)
            case .greater(let n, let orEqual): o[orEqual ? "gte" : "gt"] = .double(n)
            case .less(let n, let orEqual): o[orEqual ? "lte" : "lt"] = .double(n)
            }
            return .object(o)
        }
    }
}

/// Why a condition is malformed, and where inside it (`all[1].in`).
public struct ConditionError: Error, Sendable, Equatable {
    public var path: [String]
    public var message: String
    init(path: [String], _ message: String) { self.path = path; self.message = message }
    func inside(_ outer: [String]) -> ConditionError { ConditionError(path: outer + path, message) }
}

extension Guard {
    /// As a flow declares it: `{"when": …, "else": …}`.
    public var json: JSON { Self.json(when: condition.json, otherwise) }

    static func json(when condition: JSON, _ otherwise: Otherwise) -> JSON {
        let text: JSON = switch otherwise {
        case .deny: "deny"
        case .redirect(let url): ["redirect": .string(url)]
        }
        return ["when": condition, "else": text]
    }
}
