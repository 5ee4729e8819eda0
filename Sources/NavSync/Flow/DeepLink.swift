/// Deep links (DESIGN.md section 2 and Appendix A, "Links"): a URL is matched against
/// the flow's patterns and expands to that link's operations with captures substituted.
extension Flow {
    /// Expands a deep link into operations, or fails with `not_found` (no pattern
    /// matches), `bad_params` (a capture does not convert) or the error of a link op.
    public func expand(url: String) throws(NavError) -> (link: Link, ops: [Operation]) {
        let (link, values) = try match(url: url)
        return (link, link.ops(filling: values))
    }

    /// The link `url` opens and its captures converted to their params' types, one per
    /// slot of the link (`Link.slots`), nil where the URL does not give the capture.
    func match(url: String) throws(NavError) -> (link: Link, values: [JSON?]) {
        guard let parsed = ParsedURL(url) else { throw NavError(.badParams, "'\(url)' is not a valid URL or path") }
        guard let link = links.first(where: { $0.matches(parsed.segments) }) else {
            throw NavError(.notFound, "no link of flow '\(name)' matches '\(url)'")
        }
        guard !link.slots.isEmpty else { return (link, []) }
        // Path captures win over query items; of repeated query items the first wins.
        // (A link has a handful: looked up where they are, no list or table made.)
        let segments = link.segments, values = parsed.segments, query = parsed.query
        func capture(_ name: String) -> String? {
            for i in values.indices {
                if case .capture(let n) = segments[i], n == name { return values[i] }
            }
            for i in query.indices where query[i].0 == name { return query[i].1 }
            return nil
        }
        var converted: [JSON?] = []
        converted.reserveCapacity(link.slots.count)
        for slot in link.slots {
            guard let captured = capture(slot.capture) else {
                converted.append(nil)
                continue
            }
            guard let value = slot.type.convert(capture: captured) else {
                throw NavError(.badParams, "link '\(link.pattern)' op \(slot.op): capture ':\(slot.capture)' = '\(captured)' is not a valid \(slot.type.base.rawValue) for param '\(slot.key)'")
            }
            converted.append(value)
        }
        return (link, converted)
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

extension Link {
    /// The link's operations with `values` (one per slot, as `Flow.match` gives them)
    /// put in their params; a param whose capture is absent (nil) is left out.
    func ops(filling values: [JSON?]) -> [Operation] { Self.ops(compiled, slots, filling: values) }

    /// The same for operations and slots not yet made into a link (its plan's).
    static func ops(_ compiled: [Operation], _ slots: [CaptureSlot], filling values: [JSON?]) -> [Operation] {
        var ops = compiled
        for (slot, value) in zip(slots, values) { ops[slot.op].setParam(slot.key, to: value, item: slot.item) }
        return ops
    }
}

extension Operation {
    /// Sets (or with nil removes) a param of the op's item, or of its item `index`.
    mutating func setParam(_ key: String, to value: JSON?, item index: Int?) {
        func set(_ items: inout [OpenItem]) { items[index!].params[key] = value }
        switch action {
        case .route(var item): item.params[key] = value; action = .route(item)
        case .present(var item, let style): item.params[key] = value; action = .present(item, style: style)
        case .setRoot(var item): item.params[key] = value; action = .setRoot(item)
        case .appendTab(var item): item.params[key] = value; action = .appendTab(item)
        case .insertTab(var item, let at): item.params[key] = value; action = .insertTab(item, index: at)
        case .setStack(var items): set(&items); action = .setStack(items)
        case .setTabs(var items): set(&items); action = .setTabs(items)
        default: break
        }
    }
}
