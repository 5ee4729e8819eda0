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
        final class Handoff: @unchecked Sendable {
            var client: SessionClient?
            let ready = DispatchSemaphore(value: 0)
        }
        let handoff = Handoff()
        startThread {
            let loop = ClientLoop()
            let client = SessionClient(loop: loop, options: options)
            client.ownedLoop = loop
            loop.keepsRunningForPosts(true)   // until `close()`
            client.start()
            handoff.client = client
            handoff.ready.signal()
            loop.run()   // until the client is closed for good and its socket is gone
            loop.endPosts()
        }
        handoff.ready.wait()
        return handoff.client!
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
