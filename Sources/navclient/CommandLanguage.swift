import NavSync
/// navclient's command language: `OP [route] [key=value ...]`, as a person types it,
/// turned into protocol operations (docs/protocol.md, "Operations"). Pure: the flow types the
/// values, the state resolves `back` and `respond`.
public enum ClientCommand: Sendable, Equatable {
    /// Operations to send as one command.
    case ops([JSON])
    case sessions
    case join(String)
    /// `create NAME`: join the session, creating it if it does not exist.
    case create(String)
    /// Nothing to send: the command would change nothing (`back` with nothing to go
    /// back from). Like an op that answers `noop`, it is not an error.
    case nothing(String)
    case members
    case get
    /// `history [N]`: the last N revisions (docs/protocol.md, "History").
    case history(Int)
    /// `show REV`: the tree of a past revision.
    case show(Int)
    /// `undo`: restore the revision before the current one, refused as a conflict if
    /// someone changed the session meanwhile.
    case undo
    case help(String?)
    case quit
}

public struct CommandError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

public enum CommandLanguage {
    /// Every command with its usage line, for `help` and completion.
    public static let commands: [(name: String, usage: String)] = [
        ("push", "push ROUTE [param=value ...] [at=TARGET]   open ROUTE (alias: route)"),
        ("route", "route ROUTE [param=value ...]             same as push"),
        ("present", "present ROUTE [style=sheet|cover] [param=value ...]"),
        ("back", "back                                       pop the screen on top (pop from its entry)"),
        ("pop", "pop [N] [from=ENTRY]                        remove the top N screens, or from ENTRY up"),
        ("popToRoot", "popToRoot"),
        ("popToFirst", "popToFirst ROUTE"),
        ("popToLast", "popToLast ROUTE"),
        ("popTo", "popTo ENTRY"),
        ("popBefore", "popBefore ROUTE"),
        ("dismiss", "dismiss [all]                              close the top (or every) sheet or cover"),
        ("setRoot", "setRoot ROUTE [param=value ...]"),
        ("setStack", "setStack ROUTE ROUTE ...                  (alias: jumpTo)"),
        ("restart", "restart [at=TARGET]"),
        ("select", "select ROUTE | INDEX | ENTRY                select a tab"),
        ("setTabs", "setTabs ROUTE ROUTE ..."),
        ("appendTab", "appendTab ROUTE [param=value ...]"),
        ("insertTab", "insertTab ROUTE index=N [param=value ...]"),
        ("removeFirst", "removeFirst ROUTE"),
        ("removeLast", "removeLast ROUTE"),
        ("removeTab", "removeTab ENTRY"),
        ("update", "update [ENTRY | --session] key=value ... merge into the screen's data, or the session's (what guards read); key=null deletes"),
        ("open", "open URL                                   a deep link: open /product/42"),
        ("alert", "alert TITLE [BUTTON ...] [message=TEXT]   show an alert; quote a title of several words; a BUTTON is LABEL or LABEL:ROLE (default, cancel, destructive)"),
        ("respond", "respond BUTTON                             answer the alert"),
        ("reset", "reset                                      the whole session back to its start"),
        ("restore", "restore REV | LABEL                        bring back a revision history holds, ids included"),
        ("undo", "undo                                       restore the revision before this one (a conflict if someone changed it since)"),
        ("history", "history [N]                                the last N revisions (10): who, when, what"),
        ("show", "show REV                                   the tree of a past revision (read-only)"),
        ("sessions", "sessions                                   list the server's sessions"),
        ("join", "join NAME                                  switch to another session"),
        ("create", "create NAME                                make a session (admin) and join it"),
        ("members", "members                                    who is here, and what they show"),
        ("get", "get                                        print the state as JSON"),
        ("help", "help [COMMAND]"),
        ("quit", "quit                                       (also: exit, Ctrl-D)"),
    ]

    public static func usage(_ name: String) -> String? {
        let canonical = name == "jumpTo" ? "setStack" : name
        return commands.first { $0.name == canonical }?.usage
    }

    /// Parses one line; nil for an empty line or a comment (`#`).
    public static func parse(_ line: String, flow: Flow?, state: JSON?) throws(CommandError) -> ClientCommand? {
        let trimmed = line.drop { $0 == " " || $0 == "\t" }
        if trimmed.isEmpty || trimmed.hasPrefix("#") { return nil }
        // Raw JSON: one operation object, or a list of them.
        if trimmed.hasPrefix("{") || trimmed.hasPrefix("[") {
            guard let json = try? JSON.parse(String(trimmed)) else { throw CommandError("that is not valid JSON") }
            return .ops(json.arrayValue ?? [json])
        }
        var words = try tokenize(String(trimmed))
        let name = words.removeFirst()
        // A URL may hold '=' and spaces: `open` takes the rest of the line as it is.
        if name == "open" {
            let url = String(trimmed.drop { $0 != " " }.drop { $0 == " " })
            guard !url.isEmpty else { throw CommandError("usage: \(usage("open")!)") }
            return .ops([["op": "open", "url": .string(url)]])
        }
        var positional: [String] = []
        var fields: [(String, String)] = []
        for w in words {
            if let eq = w.firstIndex(of: "="), eq != w.startIndex {
                fields.append((String(w[..<eq]), String(w[w.index(after: eq)...])))
            } else {
                positional.append(w)
            }
        }
        let b = OpBuilder(flow: flow, state: state, fields: fields)
        switch name {
        case "sessions": return .sessions
        case "members": return .members
        case "get": return .get
        case "undo": return .undo
        case "history":
            guard let n = positional.first else { return .history(10) }
            guard let count = Int(n), (1...1_000).contains(count) else { throw CommandError("history takes a count of 1 to 1000, got '\(n)'") }
            return .history(count)
        case "show":
            guard let r = positional.first else { throw CommandError("usage: show REV") }
            guard let rev = Int(r), rev >= 0 else { throw CommandError("show takes a revision (a number >= 0), got '\(r)'") }
            return .show(rev)
        case "restore":
            guard let target = positional.first, positional.count == 1 else { throw CommandError("usage: restore REV | LABEL (quote a label of several words)") }
            if let rev = Int(target) {
                guard rev >= 0 else { throw CommandError("restore takes a revision >= 0, got \(rev)") }
                return .ops([["op": "restore", "rev": .int(Int64(rev))]])
            }
            return .ops([["op": "restore", "label": .string(target)]])
        case "quit", "exit": return .quit
        case "help", "?": return .help(positional.first)
        case "join":
            guard let session = positional.first else { throw CommandError("usage: join NAME") }
            return .join(session)
        case "create":
            guard let session = positional.first else { throw CommandError("usage: create NAME") }
            return .create(session)
        case "push", "route", "present", "setRoot", "appendTab", "insertTab":
            guard let route = positional.first else { throw CommandError("usage: \(usage(name)!)") }
            let op = name   // `push` goes as typed: the server takes the alias, and errors name it
            return .ops([try b.open(op, route: route, extra: positional.dropFirst())])
        case "back":
            guard let top = backTarget(state) else { return .nothing("nothing to go back from: no stack on screen holds more than its root") }
            return .ops([["op": "pop", "from": .string(top)]])
        case "pop":
            var op: JSONObject = ["op": "pop"]
            if let n = positional.first {
                guard let count = Int64(n), count >= 1 else { throw CommandError("pop takes a count of 1 or more, got '\(n)'") }
                op["count"] = .int(count)
            }
            return .ops([try b.finish(op, known: ["count": .int, "from": .string, "at": .string])])
        case "popToRoot", "restart", "reset":
            return .ops([try b.finish(["op": .string(name)], known: ["at": .string])])
        case "popToFirst", "popToLast", "popBefore", "removeFirst", "removeLast":
            guard let route = positional.first else { throw CommandError("usage: \(usage(name)!)") }
            return .ops([try b.finish(["op": .string(name), "route": .string(route)], known: ["at": .string])])
        case "popTo", "removeTab":
            guard let entry = positional.first else { throw CommandError("usage: \(usage(name)!)") }
            return .ops([try b.finish(["op": .string(name), "entry": .string(entry)], known: ["at": .string])])
        case "dismiss":
            var op: JSONObject = ["op": "dismiss"]
            if positional.first == "all" { op["all"] = true }
            return .ops([try b.finish(op, known: ["all": .bool, "at": .string])])
        case "setStack", "jumpTo", "setTabs":
            guard !positional.isEmpty else { throw CommandError("usage: \(usage(name)!)") }
            return .ops([try b.finish(["op": .string(name == "jumpTo" ? "setStack" : name), "routes": .array(positional.map { .string($0) })],
                                      known: ["at": .string])])
        case "select":
            var op: JSONObject = ["op": "select"]
            if let target = positional.first {
                if let i = Int64(target) { op["index"] = .int(i) } else if EntryID(target) != nil { op["entry"] = .string(target) } else {
                    op["route"] = .string(target)
                }
            }
            return .ops([try b.finish(op, known: ["index": .int, "route": .string, "entry": .string, "at": .string])])
        case "update":
            var op: JSONObject = ["op": "update"]
            if positional.first == "--session" {
                guard positional.count == 1, !fields.contains(where: { $0.0 == "at" }) else {
                    throw CommandError("update --session takes only key=value pairs: the session's data belongs to no screen")
                }
                op["scope"] = "session"
            } else if let entry = positional.first { op["entry"] = .string(entry) }
            var data = JSONObject()
            for (k, v) in fields where k != "at" { data[k] = v == "null" ? .null : literal(v) }
            guard !data.isEmpty else { throw CommandError("usage: \(usage("update")!)") }
            op["data"] = .object(data)
            if let at = fields.first(where: { $0.0 == "at" })?.1 { op["at"] = .string(at) }
            return .ops([.object(op)])
        case "open":
            guard let url = positional.first else { throw CommandError("usage: \(usage("open")!)") }
            return .ops([["op": "open", "url": .string(url)]])
        case "alert":
            // `alert "Sure?" Yes No:cancel`: the first word is the title (quote several
            // words), each further word a button, LABEL or LABEL:ROLE; its id is the label
            // in lower case, which `respond` takes (as it takes the label).
            guard let title = positional.first else { throw CommandError("usage: \(usage("alert")!)") }
            var op: JSONObject = ["op": "alert", "title": .string(title)]
            if let m = fields.first(where: { $0.0 == "message" })?.1 { op["message"] = .string(m) }
            var buttons: [JSON] = []
            for word in positional.dropFirst() {
                let parts = word.split(separator: ":", maxSplits: 1).map(String.init)
                guard let label = parts.first, !label.isEmpty else { throw CommandError("a button needs a label: '\(word)'") }
                var button: JSONObject = ["id": .string(label.lowercased()), "label": .string(label)]
                if parts.count == 2 {
                    guard ["default", "cancel", "destructive"].contains(parts[1]) else {
                        throw CommandError("button '\(label)': the role after ':' is default, cancel or destructive, got '\(parts[1])'")
                    }
                    button["role"] = .string(parts[1])
                }
                buttons.append(.object(button))
            }
            if !buttons.isEmpty { op["buttons"] = .array(buttons) }
            return .ops([.object(op)])
        case "respond":
            guard let button = positional.last else { throw CommandError("usage: \(usage("respond")!)") }
            let alert = positional.count > 1 ? positional[0] : state?["alert"]?["id"]?.stringValue
            guard let alert else { throw CommandError("no alert is shown") }
            // A button may be named by its label too, in any case.
            let shown = state?["alert"]?["buttons"]?.arrayValue ?? []
            let id = shown.first { $0["id"]?.stringValue == button }?["id"]?.stringValue
                ?? shown.first { $0["label"]?.stringValue?.lowercased() == button.lowercased() }?["id"]?.stringValue
                ?? button
            return .ops([["op": "respond", "alert": .string(alert), "button": .string(id)]])
        default:
            throw CommandError("unknown command '\(name)' (try help)")
        }
    }

    /// Words split on spaces; "double" or 'single' quotes keep spaces inside a word.
    static func tokenize(_ line: String) throws(CommandError) -> [String] {
        var words: [String] = []
        var current = ""
        var quote: Character?
        var inWord = false
        for c in line {
            if let q = quote {
                if c == q { quote = nil } else { current.append(c) }
            } else if c == "\"" || c == "'" {
                quote = c
                inWord = true
            } else if c == " " || c == "\t" {
                if inWord { words.append(current); current = ""; inWord = false }
            } else {
                current.append(c)
                inWord = true
            }
        }
        if quote != nil { throw CommandError("a quote is not closed") }
        if inWord { words.append(current) }
        return words
    }

    /// A value typed from how it looks: integers, numbers, true/false, a JSON list or
    /// object (`cart=[42]`; one that does not parse stays a string), else a string.
    static func literal(_ text: String) -> JSON {
        if text.hasPrefix("[") || text.hasPrefix("{"), let json = try? JSON.parse(Array(text.utf8)) { return json }
        if let i = Int64(text) { return .int(i) }
        if let d = Double(text), d.isFinite, text.contains(".") { return .double(d) }
        if text == "true" { return true }
        if text == "false" { return false }
        return .string(text)
    }

    /// The entry `back` pops: the top of the deepest stack on the active path that
    /// holds more than its root.
    public static func backTarget(_ state: JSON?) -> String? {
        var found: String?
        var node = state?["root"]
        while let c = node {
            var visible: JSON?
            switch c["kind"]?.stringValue {
            case "root": visible = c["current"]
            case "stack":
                let stack = c["stack"]?.arrayValue ?? []
                if stack.count > 1 { found = stack.last?["id"]?.stringValue }
                visible = stack.last
            case "tabs": visible = c["tabs"]?.arrayValue?.first { $0["id"] == c["selected"] }
            default: visible = nil
            }
            node = visible?["coordinator"]
        }
        return found
    }
}

/// Builds one operation: `key=value` pairs are op fields when the op has such a field,
/// params otherwise, typed by the route's declared params.
struct OpBuilder {
    enum FieldType { case string, int, bool }
    let flow: Flow?
    let state: JSON?
    let fields: [(String, String)]

    func open(_ op: String, route: String, extra: ArraySlice<String>) throws(CommandError) -> JSON {
        var o: JSONObject = ["op": .string(op), "route": .string(route)]
        let known: [String: FieldType] = ["at": .string, "style": .string, "index": .int]
        let at = fields.first { $0.0 == "at" }?.1
        let spec = at.flatMap { flow?.coordinators[$0]?.routes[route] } ?? flow?.types(declaring: route).first?.routes[route]
        var params = JSONObject()
        var hints = JSONObject()
        for (key, value) in fields {
            if let type = known[key] {
                o[key] = try typed(key, value, type)
            } else if key.hasPrefix("hints.") {
                hints[String(key.dropFirst(6))] = CommandLanguage.literal(value)
            } else {
                params[key] = try param(key, value, spec?.params[key])
            }
        }
        if let extraWord = extra.first { throw CommandError("unexpected '\(extraWord)': params are written key=value") }
        if !params.isEmpty { o["params"] = .object(params) }
        if !hints.isEmpty { o["hints"] = .object(hints) }
        return .object(o)
    }

    func finish(_ op: JSONObject, known: [String: FieldType]) throws(CommandError) -> JSON {
        var o = op
        for (key, value) in fields {
            guard let type = known[key] else { throw CommandError("'\(op["op"]!.stringValue!)' has no field '\(key)'") }
            o[key] = try typed(key, value, type)
        }
        return .object(o)
    }

    private func typed(_ key: String, _ value: String, _ type: FieldType) throws(CommandError) -> JSON {
        switch type {
        case .string: return .string(value)
        case .int:
            guard let i = Int64(value) else { throw CommandError("\(key) must be a whole number, got '\(value)'") }
            return .int(i)
        case .bool:
            guard let b = ParamType(base: .bool, optional: false).convert(capture: value == "yes" ? "true" : value == "no" ? "false" : value) else {
                throw CommandError("\(key) must be true or false, got '\(value)'")
            }
            return b
        }
    }

    private func param(_ key: String, _ value: String, _ type: ParamType?) throws(CommandError) -> JSON {
        guard let type else { return CommandLanguage.literal(value) }
        if value == "null" && type.optional { return .null }
        guard let v = type.convert(capture: value) else {
            throw CommandError("\(key) must be \(type.base == .int ? "a whole number" : type.base == .number ? "a number" : type.base == .bool ? "true or false" : "text"), got '\(value)'")
        }
        return v
    }
}

extension CommandLanguage {
    /// One history entry as a line: `rev 12  14:03:22  tablet  setRoot main, push detail  "checkout start"`.
    public static func describe(historyEntry e: JSON, utcOffsetSeconds: Int = 0) -> String {
        let rev = e["rev"]?.intValue.map(String.init) ?? "?"
        var time = "--:--:--"
        if let ts = e["ts"]?.intValue, ts > 0 {
            let s = (Int(ts / 1000) + utcOffsetSeconds) % 86_400
            func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
            time = "\(two(s / 3600)):\(two(s / 60 % 60)):\(two(s % 60))"
        }
        let who = e["name"]?.stringValue ?? e["client"]?.stringValue ?? "?"
        let ops = (e["ops"]?.arrayValue ?? []).map { op -> String in
            let name = op["op"]?.stringValue ?? "?"
            let arg = op["route"]?.stringValue ?? op["url"]?.stringValue ?? op["rev"]?.intValue.map { "rev \($0)" }
                ?? op["label"]?.stringValue.map { "\"\($0)\"" } ?? op["title"]?.stringValue.map { "\"\($0)\"" }
            return arg.map { "\(name) \($0)" } ?? name
        }.joined(separator: ", ")
        return "rev \(rev)  \(time)  \(who)  \(ops)" + (e["label"]?.stringValue.map { "  \"\($0)\"" } ?? "")
    }
}
