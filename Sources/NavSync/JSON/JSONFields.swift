/// Typed access to the fields of a JSON object, where every mistake is one error code
/// that names the field: `bad_params` for an operation's fields, `bad_request` for a
/// message's. A field that is `null` counts as absent.
struct Fields {
    let object: JSONObject
    var code: ErrorCode = .badParams

    init(object: JSONObject, code: ErrorCode = .badParams) {
        self.object = object
        self.code = code
    }

    package func string(_ key: String) throws(NavError) -> String {
        guard let s = try optionalString(key) else { throw NavError(code, "missing field '\(key)'") }
        return s
    }

    func optionalString(_ key: String) throws(NavError) -> String? {
        guard let v = object[key], !v.isNull else { return nil }
        guard let s = v.stringValue else { throw NavError(code, "'\(key)' must be a string, got \(v.typeName)") }
        return s
    }

    package func int(_ key: String) throws(NavError) -> Int {
        guard let i = try optionalInt(key) else { throw NavError(code, "missing field '\(key)'") }
        return i
    }

    func optionalInt(_ key: String) throws(NavError) -> Int? {
        guard let v = object[key], !v.isNull else { return nil }
        guard let i = v.intValue, let n = Int(exactly: i) else {
            throw NavError(code, "'\(key)' must be an integer, got \(v.typeName)")
        }
        return n
    }

    func optionalBool(_ key: String) throws(NavError) -> Bool? {
        guard let v = object[key], !v.isNull else { return nil }
        guard let b = v.boolValue else { throw NavError(code, "'\(key)' must be a bool, got \(v.typeName)") }
        return b
    }

    func array(_ key: String) throws(NavError) -> [JSON] {
        guard let v = object[key], !v.isNull else { throw NavError(code, "missing field '\(key)'") }
        guard let a = v.arrayValue else { throw NavError(code, "'\(key)' must be an array, got \(v.typeName)") }
        return a
    }

    func object(_ key: String) throws(NavError) -> JSONObject {
        guard let v = object[key], !v.isNull else { throw NavError(code, "missing field '\(key)'") }
        guard let o = v.objectValue else { throw NavError(code, "'\(key)' must be an object, got \(v.typeName)") }
        return o
    }
}
