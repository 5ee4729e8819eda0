/// Operations to and from their wire form. Decoding checks each operation's own fields
/// only (types, required fields, ranges); whether a route exists or a param fits its
/// declaration is decided once the target coordinator is known.
extension NavOperation {
    /// Decodes one operation. Errors carry no op index; the caller adds it.
    public init(json: JSON) throws(NavError) {
        guard let object = json.objectValue else {
            throw NavError(.badRequest, "an operation must be an object, got \(json.typeName)")
        }
        guard let nameValue = object["op"] else { throw NavError(.badRequest, "missing field 'op'") }
        guard let wire = nameValue.stringValue else {
            throw NavError(.badRequest, "field 'op' must be a string, got \(nameValue.typeName)")
        }
        guard let name = OpName(wire: wire) else {
            throw NavError(.invalidOp, "unknown operation '\(wire)'")
        }
        var fields = Fields(object: object)
        let at = try fields.optionalString("at")
        let action = try Self.decodeAction(name, &fields)
        if case .updateSession = action, at != nil {
            throw NavError(.badRequest, "'at' cannot go with \"scope\": \"session\": the session's data belongs to no coordinator")
        }
        self.init(action, at: at)
    }

    private static func decodeAction(_ name: OpName, _ f: inout Fields) throws(NavError) -> Action {
        switch name {
        case .route: return .route(try f.openItem())
        case .present:
            let item = try f.openItem()
            var style: Presentation?
            if let s = try f.optionalString("style") {
                guard let p = Presentation(rawValue: s), p.isModal else {
                    throw NavError(.badParams, "'style' must be \"sheet\" or \"cover\", got \"\(s)\"")
                }
                style = p
            }
            return .present(item, style: style)
        case .pop:
            let count = try f.optionalInt("count") ?? 1
            guard count >= 1 else { throw NavError(.badParams, "'count' must be an integer >= 1, got \(count)") }
            return .pop(count: count, from: try f.optionalString("from"))
        case .popToRoot: return .popToRoot
        case .popToFirst: return .popToFirst(route: try f.string("route"))
        case .popToLast: return .popToLast(route: try f.string("route"))
        case .popTo: return .popTo(entry: try f.string("entry"))
        case .popBefore: return .popBefore(route: try f.string("route"))
        case .dismiss: return .dismiss(all: try f.optionalBool("all") ?? false)
        case .setRoot: return .setRoot(try f.openItem())
        case .setStack: return .setStack(try f.openItems(allowPresentation: true))
        case .setPath:
            let layer = try f.optionalInt("layer") ?? 0
            guard layer >= 0 else { throw NavError(.badParams, "'layer' must be an integer >= 0, got \(layer)") }
            let items = try f.openItems(allowPresentation: true, allowEmpty: true)
            if let i = items.firstIndex(where: { $0.presentation.map { $0 != .push } ?? false }) {
                throw NavError(.badParams, "routes[\(i)]: a path holds pushes only; present a sheet or cover with 'present'")
            }
            return .setPath(items, layer: layer)
        case .restart: return .restart
        case .select:
            let route = try f.optionalString("route")
            let index = try f.optionalInt("index")
            let entry = try f.optionalString("entry")
            switch (route, index, entry) {
            case (let r?, nil, nil): return .select(.route(r))
            case (nil, let i?, nil): return .select(.index(i))
            case (nil, nil, let e?): return .select(.entry(e))
            default: throw NavError(.badParams, "'select' needs exactly one of 'route', 'index', 'entry'")
            }
        case .setTabs: return .setTabs(try f.openItems(allowPresentation: false))
        case .appendTab: return .appendTab(try f.openItem())
        case .insertTab: return .insertTab(try f.openItem(), index: try f.int("index"))
        case .removeFirst: return .removeFirst(route: try f.string("route"))
        case .removeLast: return .removeLast(route: try f.string("route"))
        case .removeTab: return .removeTab(entry: try f.string("entry"))
        case .update:
            let entry = try f.optionalString("entry")
            guard let data = f.object["data"] else { throw NavError(.badParams, "missing field 'data'") }
            guard let patch = data.objectValue else {
                throw NavError(.badParams, "'data' must be an object, got \(data.typeName)")
            }
            let byHook: Bool
            switch try f.optionalString("by") {
            case nil: byHook = false
            case "hook": byHook = true
            case let other?: throw NavError(.badParams, "'by' can only be \"hook\" (the command hook's set), got \"\(other)\"")
            }
            switch try f.optionalString("scope") {
            case nil, "entry":
                guard !byHook else { throw NavError(.badParams, "\"by\": \"hook\" goes only with \"scope\": \"session\"") }
                return .update(entry: entry, data: patch)
            case "session":
                guard entry == nil else {
                    throw NavError(.badRequest, "'entry' cannot go with \"scope\": \"session\": the session's data belongs to no entry")
                }
                return .updateSession(data: patch, byHook: byHook)
            case let other?: throw NavError(.badParams, "'scope' must be \"entry\" or \"session\", got \"\(other)\"")
            }
        case .open: return .open(url: try f.string("url"))
        case .alert: return .alert(try f.alertSpec())
        case .respond: return .respond(alert: try f.string("alert"), button: try f.string("button"))
        case .reset: return .reset
        }
    }

    /// The operation's wire form, as a client sends it.
    public var json: JSON {
        var o = JSONObject()
        o["op"] = .string(action.name.rawValue)
        if let at { o["at"] = .string(at) }
        func put(_ item: OpenItem) {
            o["route"] = .string(item.route)
            if !item.params.isEmpty { o["params"] = .object(item.params) }
            if let hints = item.hints { o["hints"] = .object(hints) }
        }
        func items(_ list: [OpenItem]) -> JSON {
            .array(list.map { item in
                var i: JSONObject = ["route": .string(item.route)]
                if !item.params.isEmpty { i["params"] = .object(item.params) }
                if let p = item.presentation { i["presentation"] = .string(p.rawValue) }
                if let h = item.hints { i["hints"] = .object(h) }
                return .object(i)
            })
        }
        switch action {
        case .route(let item), .setRoot(let item), .appendTab(let item): put(item)
        case .present(let item, let style):
            put(item)
            if let style { o["style"] = .string(style.rawValue) }
        case .pop(let count, let from):
            if let from { o["from"] = .string(from) } else if count != 1 { o["count"] = .int(Int64(count)) }
        case .popToRoot, .restart, .reset: break
        case .popToFirst(let r), .popToLast(let r), .popBefore(let r), .removeFirst(let r), .removeLast(let r):
            o["route"] = .string(r)
        case .popTo(let e), .removeTab(let e): o["entry"] = .string(e)
        case .dismiss(let all): if all { o["all"] = true }
        case .setStack(let list), .setTabs(let list): o["routes"] = items(list)
        case .setPath(let list, let layer):
            o["routes"] = items(list)
            if layer != 0 { o["layer"] = .int(Int64(layer)) }
        case .select(.route(let r)): o["route"] = .string(r)
        case .select(.index(let i)): o["index"] = .int(Int64(i))
        case .select(.entry(let e)): o["entry"] = .string(e)
        case .insertTab(let item, let index):
            put(item)
            o["index"] = .int(Int64(index))
        case .update(let entry, let data):
            if let entry { o["entry"] = .string(entry) }
            o["data"] = .object(data)
        case .updateSession(let data, let byHook):
            o["scope"] = "session"
            o["data"] = .object(data)
            if byHook { o["by"] = "hook" }
        case .open(let url): o["url"] = .string(url)
        case .alert(let spec):
            o["title"] = .string(spec.title)
            if let m = spec.message { o["message"] = .string(m) }
            o["buttons"] = .array(spec.buttons.map(\.json))
        case .respond(let alert, let button):
            o["alert"] = .string(alert)
            o["button"] = .string(button)
        }
        return .object(o)
    }
}

extension AlertButton {
    var json: JSON {
        var o: JSONObject = ["id": .string(id), "label": .string(label)]
        if let role { o["role"] = .string(role) }
        return .object(o)
    }
}

/// An operation's own fields; the plain ones are in `Fields` (JSON/JSONFields.swift).
extension Fields {
    func params(_ key: String = "params") throws(NavError) -> JSONObject {
        guard let v = object[key], !v.isNull else { return [:] }
        guard let o = v.objectValue else { throw NavError(.badParams, "'\(key)' must be an object, got \(v.typeName)") }
        return o
    }

    /// `hints`: at most 16 keys of strings, numbers or bools; empty or null means none.
    func hints() throws(NavError) -> JSONObject? {
        guard let v = object["hints"], !v.isNull else { return nil }
        guard let o = v.objectValue else { throw NavError(.badParams, "'hints' must be an object, got \(v.typeName)") }
        guard o.count <= 16 else { throw NavError(.badParams, "'hints' has \(o.count) keys; at most 16 are allowed") }
        for (key, value) in o {
            switch value {
            case .string, .int, .double, .bool: continue
            default: throw NavError(.badParams, "hint '\(key)' must be a string, number or bool, got \(value.typeName)")
            }
        }
        return o.isEmpty ? nil : o
    }

    func openItem() throws(NavError) -> NavOperation.OpenItem {
        NavOperation.OpenItem(try string("route"), params: try params(), hints: try hints())
    }

    /// `routes` of `setStack` / `setTabs` / `setPath`: plain names or `{route, params,
    /// hints, presentation?}`; empty only for `setPath` (the layer's root alone).
    func openItems(allowPresentation: Bool, allowEmpty: Bool = false) throws(NavError) -> [NavOperation.OpenItem] {
        guard let v = object["routes"] else { throw NavError(.badParams, "missing field 'routes'") }
        guard let list = v.arrayValue else { throw NavError(.badParams, "'routes' must be an array, got \(v.typeName)") }
        guard !list.isEmpty || allowEmpty else { throw NavError(.badParams, "'routes' must not be empty") }
        var items: [NavOperation.OpenItem] = []
        for (i, element) in list.enumerated() {
            if let name = element.stringValue { items.append(NavOperation.OpenItem(name)); continue }
            guard let o = element.objectValue else {
                throw NavError(.badParams, "routes[\(i)] must be a route name or an object, got \(element.typeName)")
            }
            let f = Fields(object: o)
            do throws(NavError) {
                var item = try f.openItem()
                if allowPresentation, let p = try f.optionalString("presentation") {
                    guard let presentation = Presentation(rawValue: p), presentation != .root else {
                        throw NavError(.badParams, "'presentation' must be push, sheet or cover, got \"\(p)\"")
                    }
                    item.presentation = presentation
                }
                items.append(item)
            } catch {
                throw NavError(error.code, "routes[\(i)]: \(error.message)")
            }
        }
        return items
    }

    /// `alert` fields: `title`, optional `message`, `buttons` with unique ids.
    func alertSpec() throws(NavError) -> NavOperation.AlertSpec {
        var spec = NavOperation.AlertSpec(title: try string("title"), message: try optionalString("message"))
        guard let v = object["buttons"], !v.isNull else { return spec }
        guard let list = v.arrayValue, !list.isEmpty else {
            throw NavError(.badParams, "'buttons' must be a non-empty array")
        }
        var buttons: [AlertButton] = []
        for (i, element) in list.enumerated() {
            guard let o = element.objectValue else {
                throw NavError(.badParams, "buttons[\(i)] must be an object, got \(element.typeName)")
            }
            let f = Fields(object: o)
            do throws(NavError) {
                let button = AlertButton(id: try f.string("id"), label: try f.string("label"), role: try f.optionalString("role"))
                if let role = button.role, !["default", "cancel", "destructive"].contains(role) {
                    throw NavError(.badParams, "'role' must be default, cancel or destructive, got \"\(role)\"")
                }
                guard !buttons.contains(where: { $0.id == button.id }) else {
                    throw NavError(.badParams, "button id '\(button.id)' is used twice")
                }
                buttons.append(button)
            } catch {
                throw NavError(error.code, "buttons[\(i)]: \(error.message)")
            }
        }
        spec.buttons = buttons
        return spec
    }
}
