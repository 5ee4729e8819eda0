import NavSync
import Dispatch

/// Swift concurrency on top of `SessionClient`. The client and its loop belong to one
/// thread; these methods may be called from any task: each hops onto the loop's thread
/// with `ClientLoop.post` and comes back through a continuation. Everything else (the
/// callbacks, `state`, `send(_:done:)`) stays on the loop's thread, as before.
///
/// ```swift
/// let client = SessionClient.running(options)          // its own loop, on its own thread
/// let ack = try await client.send([["op": "push", "route": "detail", "params": ["id": 7]]])
/// for await state in client.states() { … }
/// await client.close()
/// ```
extension SessionClient: @unchecked Sendable {}

extension SessionClient {
    /// A client on a loop of its own, run on a thread of its own until the client is
    /// closed for good. Use it through the async methods.
    public static func running(_ options: Options) -> SessionClient {
        // The loop runs until `close()` lets it go and the client's socket is gone.
        ClientLoop.onThreadOfItsOwn { loop in
            let client = SessionClient(loop: loop, options: options)
            client.ownedLoop = loop
            client.start()
            return client
        }
    }

    /// Sends a command and waits for its ack; throws the server's `NavError`. Like
    /// `send(_:done:)`, it waits through reconnects and is resent with its id; on a
    /// client closed for good (or refused at its first join) it throws at once.
    public func send(_ ops: [JSON], base: Int? = nil, onConflict: ConflictPolicy = .rebase) async throws(NavError) -> Ack {
        let result = await withCheckedContinuation { (k: CheckedContinuation<Result<Ack, NavError>, Never>) in
            let posted = loop.post { self.send(ops, base: base, onConflict: onConflict) { k.resume(returning: $0) } }
            if !posted { k.resume(returning: .failure(Self.closed)) }
        }
        return try result.get()
    }

    /// A page of the session's history (docs/protocol.md, "History"), newest first, below
    /// `before`: the current revision, the oldest held, and the entries.
    public func history(before: Int? = nil, limit: Int = 100) async throws(NavError) -> (rev: Int, earliest: Int, entries: [HistoryEntry]) {
        var m: JSONObject = ["type": "history", "session": .string(options.session), "limit": .int(Int64(limit))]
        if let before { m["before"] = .int(Int64(before)) }
        let reply = try await ask(m)
        guard case .history(_, let rev, let earliest, let entries)? = (try? ServerMessage.decode(reply))?.message else {
            throw NavError(.internal, "unexpected answer to history: \(reply.encodedString().prefix(200))")
        }
        return (rev, earliest, entries)
    }

    /// The state of revision `rev` as history holds it (the current one too); never
    /// touches the mirror. Older than history holds: `gone`.
    public func state(at rev: Int) async throws(NavError) -> JSON {
        let reply = try await ask(["type": "get", "session": .string(options.session), "rev": .int(Int64(rev))])
        guard reply["type"] == "snapshot", let state = reply["state"] else {
            throw NavError(.internal, "unexpected answer to get: \(reply.encodedString().prefix(200))")
        }
        return state
    }

    /// Restores revision `rev` (or, with `label`, the newest revision so labelled) as
    /// one new revision. With `base`, refused as a `conflict` if the session changed
    /// after it (an undo: `restore(rev: client.rev - 1, base: client.rev)`).
    public func restore(rev: Int, base: Int? = nil) async throws(NavError) -> Ack {
        try await send([["op": "restore", "rev": .int(Int64(rev))]], base: base, onConflict: base == nil ? .rebase : .reject)
    }

    public func restore(label: String, base: Int? = nil) async throws(NavError) -> Ack {
        try await send([["op": "restore", "label": .string(label)]], base: base, onConflict: base == nil ? .rebase : .reject)
    }

    /// One request and its reply (an `error` reply throws it).
    private func ask(_ message: JSONObject) async throws(NavError) -> JSON {
        let reply = await withCheckedContinuation { (k: CheckedContinuation<JSON?, Never>) in
            let posted = loop.post {
                guard self.isJoined else { return k.resume(returning: nil) }
                self.request(message) { k.resume(returning: $0) }
            }
            if !posted { k.resume(returning: nil) }
        }
        guard let reply else { throw NavError(.internal, "not joined to '\(options.session)' right now") }
        if reply["type"] == "error" {
            throw NavError(ErrorCode(rawValue: reply["code"]?.stringValue ?? "") ?? .internal, reply["message"]?.stringValue ?? "error",
                           op: reply["op"]?.intValue.map(Int.init), rev: reply["rev"]?.intValue.map(Int.init))
        }
        return reply
    }

    /// The mirrored state: the current one when joined, then one after every change,
    /// until the client is closed for good.
    public func states() -> AsyncStream<JSON> {
        AsyncStream { continuation in
            if !loop.post({ self.observeStates(continuation) }) { continuation.finish() }
        }
    }

    /// Closes the client for good and waits until its connection is gone; then the
    /// loop of a `running` client ends with its thread.
    public func close() async {
        await withCheckedContinuation { (k: CheckedContinuation<Void, Never>) in
            let posted = loop.post {
                self.whenFinished {
                    self.loop.keepsRunningForPosts(false)
                    k.resume()
                }
                self.stop()
            }
            if !posted { k.resume() }   // its loop is over: closed already
        }
    }
}
