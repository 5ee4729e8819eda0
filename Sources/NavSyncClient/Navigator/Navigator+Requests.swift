import NavSync

/// What a navigator asks the server besides commands (docs/protocol.md, "History";
/// the same as navsync.js's `history`, `stateAt` and `list`, docs/clients.md). Each
/// waits at most `Options.requestTimeout`, throws `.timeout` naming the server past it,
/// and `.offline` when not joined or when the connection drops before the answer (a
/// request, unlike a command, is not sent again).
@available(iOS 17, macOS 14, tvOS 17, watchOS 10, visionOS 1, *)
extension Navigator {
    /// A page of history, newest first: the current revision, the oldest one held, and
    /// the entries (`rev`, `ts`, `client`, `name`, `ops`, `results`, `label`).
    public func history(before: Int? = nil, limit: Int = 100) async throws(NavError) -> (rev: Int, earliest: Int, entries: [HistoryEntry]) {
        var m: JSONObject = ["type": "history", "session": .string(options.session), "limit": .int(Int64(limit))]
        if let before { m["before"] = .int(Int64(before)) }
        guard case .history(_, let rev, let earliest, let entries) = try await ask(m) else { throw unexpected("history") }
        return (rev, earliest, entries)
    }

    /// The state of a revision history holds; what is shown is untouched. Older than
    /// history holds: `.gone`.
    public func stateAt(_ rev: Int) async throws(NavError) -> JSON {
        switch try await ask(["type": "get", "session": .string(options.session), "rev": .int(Int64(rev))]) {
        case .historic(_, _, let state), .snapshot(_, _, let state): return state
        default: throw unexpected("get")
        }
    }

    /// The sessions on the server.
    public func sessions() async throws(NavError) -> [SessionSummary] {
        guard case .sessions(let list) = try await ask(["type": "sessions"]) else { throw unexpected("sessions") }
        return list
    }

    /// Pops the screen this device shows, by its entry id (`pop` `from` it): two devices
    /// pressing Back at once pop one screen, not two.
    @discardableResult
    public func back() async throws(NavError) -> Ack {
        guard let top = tree?.activePath.last(where: { $0.presentation != .root && $0.presentation != nil }) else {
            throw NavError(.invalidOp, "nothing to go back from: every stack on the active path is at its root")
        }
        return try await pop(from: top.id)
    }

    private func unexpected(_ what: String) -> NavError {
        NavError(.internal, "the server answered '\(what)' with something else")
    }
}
