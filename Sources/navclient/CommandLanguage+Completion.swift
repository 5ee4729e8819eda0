import NavSync
/// Tab completion for the prompt: commands, then the routes valid on screen, then params.
extension CommandLanguage {
    /// Completions for the word being typed at the end of `line`: command names first,
    /// then the routes that coordinators on the active path declare, then param keys.
    public static func completions(_ line: String, flow: Flow?, state: JSON?) -> [String] {
        let words = (try? tokenize(line)) ?? []
        let endsWithSpace = line.last == " "
        let current = endsWithSpace ? "" : (words.last ?? "")
        let position = endsWithSpace ? words.count : max(words.count - 1, 0)
        if position == 0 {
            return commands.map(\.name).filter { $0.hasPrefix(current) }
        }
        let command = words[0]
        let routeCommands: Set<String> = ["push", "route", "present", "setRoot", "appendTab", "insertTab", "popToFirst", "popToLast",
                                          "popBefore", "removeFirst", "removeLast", "select", "setStack", "jumpTo", "setTabs"]
        guard routeCommands.contains(command), let flow else { return [] }
        if position == 1 || ["setStack", "jumpTo", "setTabs"].contains(command) {
            return activeRoutes(flow: flow, state: state).filter { $0.hasPrefix(current) }
        }
        // Param keys of the chosen route.
        let route = words[1]
        let keys = (flow.types(declaring: route).first?.routes[route]?.paramOrder ?? []).map { $0 + "=" }
        let typed = Set(words.dropFirst(2).compactMap { $0.split(separator: "=").first.map { String($0) + "=" } })
        return keys.filter { $0.hasPrefix(current) && !typed.contains($0) }
    }

    /// Routes declared by the coordinators on the active path, deepest first.
    public static func activeRoutes(flow: Flow, state: JSON?) -> [String] {
        var types: [String] = []
        var node = state?["root"]
        while let c = node, let type = c["type"]?.stringValue {
            types.append(type)
            var visible: JSON?
            switch c["kind"]?.stringValue {
            case "root": visible = c["current"]
            case "stack": visible = c["stack"]?.arrayValue?.last
            default: visible = c["tabs"]?.arrayValue?.first { $0["id"] == c["selected"] }
            }
            node = visible?["coordinator"]
        }
        var seen = Set<String>()
        return types.reversed().flatMap { flow.coordinators[$0]?.routeOrder ?? [] }.filter { seen.insert($0).inserted }
    }
}
