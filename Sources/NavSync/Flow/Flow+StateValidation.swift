/// Checking a whole state document against a flow (the `load` operation, 
/// docs/protocol.md, "History"): its shape (docs/protocol.md, "The state document"), every coordinator's type and kind, every
/// entry's route, params, presentation and child coordinator, unique well-formed ids.
/// Errors are `bad_params` and name the place: `state.root.current.coordinator.tabs[2].params.id`.
extension Flow {
    public func validate(state json: JSON) throws(NavError) -> NavState {
        var ids = Set<String>()
        func fail(_ path: String, _ message: String) -> NavError { NavError(.badParams, "\(path): \(message)") }
        func object(_ j: JSON?, _ path: String) throws(NavError) -> JSONObject {
            guard let o = j?.objectValue else { throw fail(path, "must be an object, got \(j?.typeName ?? "nothing")") }
            return o
        }
        func only(_ o: JSONObject, _ keys: [String], _ path: String) throws(NavError) {
            for key in o.keys where !keys.contains(key) { throw fail(path + "." + key, "is not a field here (expected \(keys.joined(separator: ", ")))") }
        }
        func id(_ j: JSON?, _ path: String) throws(NavError) {
            guard let text = j?.stringValue, EntryID(text) != nil else {
                throw fail(path, "must be an entry id like \"e12\", got \(j.map { $0.encodedString() } ?? "nothing")")
            }
            guard ids.insert(text).inserted else { throw fail(path, "\(text) appears twice") }
        }
        func coordinator(_ j: JSON?, type expected: String, _ path: String) throws(NavError) {
            let o = try object(j, path)
            guard let typeName = o["type"]?.stringValue else { throw fail(path + ".type", "must be a coordinator type name") }
            guard typeName == expected else { throw fail(path + ".type", "must be \(expected) here, got \(typeName)") }
            guard let type = coordinators[typeName] else { throw fail(path + ".type", "no coordinator type '\(typeName)' in flow '\(name)'") }
            guard o["kind"]?.stringValue == type.kind.rawValue else {
                throw fail(path + ".kind", "\(typeName) is a \(type.kind.rawValue), got \(o["kind"].map { $0.encodedString() } ?? "nothing")")
            }
            switch type.kind {
            case .root:
                try only(o, ["type", "kind", "current"], path)
                try entry(o["current"], in: type, kind: .root, path + ".current")
            case .stack:
                try only(o, ["type", "kind", "stack"], path)
                guard let list = o["stack"]?.arrayValue, !list.isEmpty else { throw fail(path + ".stack", "must be a non-empty list of entries") }
                for (i, e) in list.enumerated() { try entry(e, in: type, kind: .stack, path + ".stack[\(i)]") }
            case .tabs:
                try only(o, ["type", "kind", "tabs", "selected"], path)
                guard let list = o["tabs"]?.arrayValue, !list.isEmpty else { throw fail(path + ".tabs", "must be a non-empty list of entries") }
                for (i, e) in list.enumerated() { try entry(e, in: type, kind: .tabs, path + ".tabs[\(i)]") }
                guard let selected = o["selected"]?.stringValue, list.contains(where: { $0["id"]?.stringValue == selected }) else {
                    throw fail(path + ".selected", "must be the id of one of its tabs")
                }
            }
        }
        func entry(_ j: JSON?, in type: CoordinatorSpec, kind: CoordinatorKind, _ path: String) throws(NavError) {
            let o = try object(j, path)
            try only(o, ["id", "route", "params", "presentation", "tab", "hints", "data", "coordinator"], path)
            try id(o["id"], path + ".id")
            guard let routeName = o["route"]?.stringValue else { throw fail(path + ".route", "must be a route name") }
            guard let route = type.routes[routeName] else {
                throw fail(path + ".route", "\(type.name) has no route '\(routeName)' (it has \(type.routeOrder.joined(separator: ", ")))")
            }
            let params = try object(o["params"] ?? .object([:]), path + ".params")
            do { _ = try route.validate(params: params) } catch { throw fail(path + ".params", error.message) }
            if let p = o["presentation"] {
                guard kind == .stack, let text = p.stringValue, Presentation(rawValue: text) != nil else {
                    throw fail(path + ".presentation", "must be push, sheet or cover, and only on stack entries")
                }
            }
            for key in ["hints", "data"] where o[key] != nil && o[key]?.objectValue == nil { throw fail(path + "." + key, "must be an object") }
            switch (route.coordinator, o["coordinator"]) {
            case (nil, nil): break
            case (nil, _?): throw fail(path + ".coordinator", "route '\(routeName)' opens no coordinator")
            case (let child?, nil): throw fail(path + ".coordinator", "route '\(routeName)' opens a \(child): it is missing")
            case (let child?, let c?): try coordinator(c, type: child, path + ".coordinator")
            }
        }

        let top = try object(json, "state")
        try only(top, ["root", "alert", "data"], "state")
        if let data = top["data"], data.objectValue == nil { throw fail("state.data", "must be an object") }
        try coordinator(top["root"], type: root, "state.root")
        if let alert = top["alert"], !alert.isNull {
            let a = try object(alert, "state.alert")
            try only(a, ["id", "title", "message", "buttons"], "state.alert")
            try id(a["id"], "state.alert.id")
            guard a["title"]?.stringValue != nil else { throw fail("state.alert.title", "must be a string") }
            guard let buttons = a["buttons"]?.arrayValue, !buttons.isEmpty,
                  buttons.allSatisfy({ $0["id"]?.stringValue != nil && $0["label"]?.stringValue != nil }) else {
                throw fail("state.alert.buttons", "must be a non-empty list of {id, label, role?}")
            }
        }
        do { return try NavState(json: json) } catch { throw fail("state", error.description) }
    }
}
