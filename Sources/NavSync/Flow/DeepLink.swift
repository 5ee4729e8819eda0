/// Deep links (DESIGN.md section 2 and Appendix A, "Links"): a URL is matched against
/// the flow's patterns and expands to that link's operations with captures substituted.
extension Flow {
    /// Expands a deep link into operations, or fails with `not_found` (no pattern
    /// matches), `bad_params` (a capture does not convert) or the error of a link op.
    public func expand(url: String) throws(NavError) -> (link: Link, ops: [Operation]) {
        guard let parsed = ParsedURL(url) else { throw NavError(.badParams, "'\(url)' is not a valid URL or path") }
        guard let link = links.first(where: { $0.matches(parsed.segments) }) else {
            throw NavError(.notFound, "no link of flow '\(name)' matches '\(url)'")
        }
        // Path captures win over query items; of repeated query items the first wins.
        var captures: [String: String] = [:]
        for (key, value) in parsed.query where captures[key] == nil { captures[key] = value }
        for (segment, value) in zip(link.segments, parsed.segments) {
            if case .capture(let name) = segment { captures[name] = value }
        }
        var ops: [Operation] = []
        ops.reserveCapacity(link.ops.count)
        for (i, raw) in link.ops.enumerated() {
            if let compiled = link.compiled[i] { ops.append(compiled); continue }
            do throws(NavError) {
                ops.append(try Operation(json: substitute(raw, captures, types: link.captureTypes[i])))
            } catch {
                throw NavError(error.code, "link '\(link.pattern)' op \(i): \(error.message)")
            }
        }
        return (link, ops)
    }

    /// Replaces whole-string `":name"` param values with the capture converted to the
    /// param's type (`types`, from the link), in the op's `params` and in its `routes`
    /// items' `params`.
    private func substitute(_ raw: JSON, _ captures: [String: String], types: [Link.CaptureType]) throws(NavError) -> JSON {
        guard var op = raw.objectValue else { return raw }
        func fill(_ paramsJSON: JSON?, route: String?, item: Int?) throws(NavError) -> JSON? {
            guard let params = paramsJSON?.objectValue, route != nil else { return paramsJSON }
            var result = JSONObject()
            for (key, value) in params {
                guard Link.isCapture(value), let s = value.stringValue else { result[key] = value; continue }
                let captureName = String(s.dropFirst())
                guard let captured = captures[captureName] else { continue }   // absent: param left out
                let type = types.first { $0.item == item && $0.key == key }?.type ?? ParamType(base: .string, optional: true)
                guard let converted = type.convert(capture: captured) else {
                    throw NavError(.badParams, "capture ':\(captureName)' = '\(captured)' is not a valid \(type.base.rawValue) for param '\(key)'")
                }
                result[key] = converted
            }
            return .object(result)
        }
        op["params"] = try fill(op["params"], route: op["route"]?.stringValue, item: nil)
        if let routes = op["routes"]?.arrayValue {
            var items: [JSON] = []
            for (i, item) in routes.enumerated() {
                guard var o = item.objectValue else { items.append(item); continue }
                o["params"] = try fill(o["params"], route: o["route"]?.stringValue, item: i)
                items.append(.object(o))
            }
            op["routes"] = .array(items)
        }
        return .object(op)
    }

    /// The declared type of a param: on `at`'s type, else on the first type of a kind
    /// the op works on that declares the route.
    func paramType(route: String, param: String, at: String?, op: OpName?) -> ParamType? {
        if let at, let spec = coordinators[at] { return spec.routes[route]?.params[param] }
        let kinds = op?.kinds
        return types(declaring: route).first { kinds?.contains($0.kind) ?? true }?.routes[route]?.params[param]
    }
}

extension Link {
    func matches(_ path: [String]) -> Bool {
        guard path.count == segments.count else { return false }
        for (segment, value) in zip(segments, path) {
            if case .literal(let literal) = segment, literal != value { return false }
        }
        return true
    }
}
