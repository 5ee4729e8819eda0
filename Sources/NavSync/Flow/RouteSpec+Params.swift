extension RouteSpec {
    /// Checks params against the declaration (docs/protocol.md, "Operations: fine points", "Params"): undeclared names,
    /// wrong types and missing required params are `bad_params`; `null` for an optional
    /// param leaves it out.
    public func validate(params: JSONObject) throws(NavError) -> JSONObject {
        if isValidAsSent(params) { return params }
        for (key, value) in params {
            guard let type = self.params[key] else {
                throw NavError(.badParams, "route '\(name)' has no param '\(key)'")
            }
            if value.isNull {
                guard type.optional else { throw NavError(.badParams, "param '\(key)' of route '\(name)' is required, got null") }
                continue
            }
            guard type.accepts(value) else {
                throw NavError(.badParams, "param '\(key)' of route '\(name)' must be \(type.base.rawValue), got \(value.typeName)")
            }
        }
        // Declaration order, whatever order the sender used: every client sees the same entry.
        var result = JSONObject()
        for key in paramOrder {
            if let value = params[key], !value.isNull {
                result[key] = value
            } else if !self.params[key]!.optional {
                throw NavError(.badParams, "route '\(name)' needs param '\(key)' (\(self.params[key]!))")
            }
        }
        return result
    }

    /// Whether the params are valid and already as `validate` would give them (declared
    /// names in declaration order, no `null`, every required one there): the common case,
    /// kept as sent without building a new object.
    private func isValidAsSent(_ params: JSONObject) -> Bool {
        var next = 0
        for (key, value) in params {
            while next < declared.count, declared[next].name != key {
                guard declared[next].type.optional else { return false }
                next += 1
            }
            guard next < declared.count, declared[next].type.accepts(value) else { return false }
            next += 1
        }
        return declared[next...].allSatisfy(\.type.optional)
    }
}
