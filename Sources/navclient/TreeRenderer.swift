import NavSync
/// Draws a session's state as a tree for terminals: each coordinator with its type and
/// kind, each entry with its route, params, id and presentation, the selected tab, the
/// active path (flagged so a terminal can highlight it), and the alert.
public enum TreeRenderer {
    public struct Line: Sendable, Equatable {
        public var text: String
        /// On the active path: what a device shows.
        public var active: Bool
    }

    public static func render(_ state: JSON, flow: Flow?) -> [Line] {
        var lines: [Line] = []
        if let root = state["root"] { coordinator(root, flow: flow, prefix: "", active: true, into: &lines) }
        if let alert = state["alert"], !alert.isNull {
            let buttons = (alert["buttons"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }.map { "[\($0)]" }.joined(separator: " ")
            var text = "alert \(alert["id"]?.stringValue ?? "") \"\(alert["title"]?.stringValue ?? "")\""
            if let m = alert["message"]?.stringValue { text += " — \(m)" }
            lines.append(Line(text: text + " " + buttons, active: true))
        }
        return lines
    }

    /// The tree as plain text, active lines marked with `*`.
    public static func plain(_ state: JSON, flow: Flow?) -> String {
        render(state, flow: flow).map { ($0.active ? "* " : "  ") + $0.text }.joined(separator: "\n")
    }

    private static func coordinator(_ c: JSON, flow: Flow?, prefix: String, active: Bool, into lines: inout [Line]) {
        let type = c["type"]?.stringValue ?? "?"
        let kind = c["kind"]?.stringValue ?? "?"
        lines.append(Line(text: "\(prefix)\(type) (\(kind))", active: active))
        let entries: [JSON]
        var visible: String?
        switch kind {
        case "root":
            entries = c["current"].map { [$0] } ?? []
            visible = entries.first?["id"]?.stringValue
        case "stack":
            entries = c["stack"]?.arrayValue ?? []
            visible = entries.last?["id"]?.stringValue
        default:
            entries = c["tabs"]?.arrayValue ?? []
            visible = c["selected"]?.stringValue
        }
        for (i, e) in entries.enumerated() {
            let last = i == entries.count - 1
            let id = e["id"]?.stringValue ?? ""
            let onPath = active && id == visible
            var text = prefix + (last ? "└─ " : "├─ ") + describe(e, owner: type, flow: flow)
            if kind == "tabs" && id == visible { text += "  (selected)" }
            lines.append(Line(text: text, active: onPath))
            if let child = e["coordinator"] {
                coordinator(child, flow: flow, prefix: prefix + (last ? "   " : "│  "), active: onPath, into: &lines)
            }
        }
    }

    /// `detail id=42 "Product 42" e11 push`
    static func describe(_ e: JSON, owner: String, flow: Flow?) -> String {
        let route = e["route"]?.stringValue ?? "?"
        var parts = [route]
        if let params = e["params"]?.objectValue {
            for (k, v) in params { parts.append("\(k)=\(v.stringValue.map { $0.contains(" ") ? "\"\($0)\"" : $0 } ?? v.description)") }
        }
        if let template = flow?.coordinators[owner]?.routes[route]?.title, let t = title(template, e["params"]?.objectValue), t != route {
            parts.append("\"\(t)\"")
        }
        parts.append(e["id"]?.stringValue ?? "")
        if let p = e["presentation"]?.stringValue, p != "root" { parts.append(p) }
        if let d = e["data"], d.objectValue?.isEmpty == false { parts.append("data=\(d)") }
        return parts.joined(separator: " ")
    }

    /// A route's title with `{param}` placeholders filled in.
    public static func title(_ template: String, _ params: JSONObject?) -> String? {
        var out = ""
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{") {
            out += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}") else { out += rest[open...]; return out }
            let name = String(rest[rest.index(after: open)..<close])
            let v = params?[name]
            out += v?.stringValue ?? v?.description ?? ""
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }
}
