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
        // (A link has a handful: looked up where they are, no list or table made.)
        let segments = link.segments, values = parsed.segments, query = parsed.query
        func capture(_ name: String) -> String? {
            for i in values.indices {
                if case .capture(let n) = segments[i], n == name { return values[i] }
            }
            for i in query.indices where query[i].0 == name { return query[i].1 }
            return nil
        }
        var ops = link.compiled
        for i in ops.indices where !link.captureTypes[i].isEmpty {
            do throws(NavError) { try ops[i].fill(capture, types: link.captureTypes[i]) } catch {
                throw NavError(error.code, "link '\(link.pattern)' op \(i): \(error.message)")
            }
        }
        return (link, ops)
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

extension Operation {
    /// Replaces whole-string `":name"` param values with the capture converted to the
    /// param's type (`types`, from the link), in the op's item or items; a param whose
    /// capture is absent (`capture` gives nil) is left out.
    mutating func fill(_ capture: (String) -> String?, types: [Link.CaptureType]) throws(NavError) {
        func fill(_ item: inout OpenItem, _ index: Int?) throws(NavError) {
            for slot in types where slot.item == index {
                guard let captured = capture(slot.capture) else {
                    item.params[slot.key] = nil
                    continue
                }
                guard let converted = slot.type.convert(capture: captured) else {
                    throw NavError(.badParams, "capture ':\(slot.capture)' = '\(captured)' is not a valid \(slot.type.base.rawValue) for param '\(slot.key)'")
                }
                item.params[slot.key] = converted
            }
        }
        func fill(_ items: inout [OpenItem]) throws(NavError) {
            for i in items.indices { try fill(&items[i], i) }
        }
        switch action {
        case .route(var item): try fill(&item, nil); action = .route(item)
        case .present(var item, let style): try fill(&item, nil); action = .present(item, style: style)
        case .setRoot(var item): try fill(&item, nil); action = .setRoot(item)
        case .appendTab(var item): try fill(&item, nil); action = .appendTab(item)
        case .insertTab(var item, let index): try fill(&item, nil); action = .insertTab(item, index: index)
        case .setStack(var items): try fill(&items); action = .setStack(items)
        case .setTabs(var items): try fill(&items); action = .setTabs(items)
        default: break
        }
    }
}
