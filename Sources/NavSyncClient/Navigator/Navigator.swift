import Foundation
import Observation
import NavSync

/// One session's navigation state, mirrored live, and the coordinator API to drive it:
/// what a SwiftUI app's `NavigationStack`, sheets, tab bar and alerts bind to.
///
/// It is the app's shell around the pure client machine (`SessionMachine`), which holds
/// the rules every navsync client follows: the mirror kept by patches and resynced on a
/// gap, reconnecting with capped, jittered backoff through several server URLs, the
/// client identity resumed, unacknowledged commands resent under their ids (never
/// applied twice), and a ping when the server is silent. The navigator only carries
/// the machine's effects out through a `WebSocketTransport`, and publishes what the
/// machine holds as `@Observable` properties.
///
/// The navigator never waits for the network (docs/swift.md, "Three states: confirmed, pending, shown"): what it
/// shows (`state`, `tree`, every binding) is its own unanswered commands replayed over
/// the server's confirmed state, so a gesture is on screen in the same main-actor turn,
/// and a second gesture is computed against the first. A command the server refuses
/// leaves the shown state again (and `lastError` says why). Offline, commands queue,
/// and with a `store` an app launched without a network opens on its last state.
///
/// Every call that changes the session is one command: it is shown at once and
/// returns the server's `Ack` once answered, or throws the server's `NavError`.
///
/// ```swift
/// let nav = Navigator(.init(session: "demo", urls: [.default]),
///                     routes: [.coordinator("Home", HomeRoute.self)])
/// try await nav.connect()
/// try await nav.route(to: HomeRoute.detail(id: 42))
/// ```
@available(iOS 17, macOS 14, tvOS 17, watchOS 10, visionOS 1, *)
@MainActor
@Observable
public final class Navigator {
    /// The connection, as an app shows it.
    public enum Status: Sendable, Equatable {
        case idle
        /// Opening the first connection and joining.
        case connecting
        case joined
        /// Lost; trying again (commands wait and are resent).
        case reconnecting(reason: String)
        /// Not joined yet in this run: the first connection failed (why), and the
        /// navigator keeps trying. It shows the stored state, if any, and navigates;
        /// commands wait and go out once joined.
        case offline(reason: String)
        /// Closed for good: `close()`, or refused (with the reason).
        case closed(reason: String)
    }

    public let options: Options
    public private(set) var status = Status.idle
    /// The state shown: the confirmed state with this navigator's pending commands
    /// replayed over it. Entries a pending command made have ids `"~C.N"` until the
    /// server's answer names them. Equal to `confirmedState` once nothing is pending.
    public private(set) var state: JSON?
    /// The server's revision that `state` is built on (`confirmedRev`).
    public var rev: Int { confirmedRev }
    /// The state as of the last patch: the server's truth.
    public private(set) var confirmedState: JSON?
    /// The revision of `confirmedState`.
    public private(set) var confirmedRev = 0
    /// This navigator's commands not yet confirmed (made offline ones included).
    public private(set) var pendingCommands = 0
    /// The session's flow as the server sent it.
    public private(set) var flow: Flow?
    public private(set) var members: [Member] = []
    /// This client's identity (kept across reconnects).
    public private(set) var clientID: String?
    /// The last refusal of a change made through a binding (its effect left the shown
    /// state), of a write that named nothing, or of something not tied to a command.
    /// Set it to nil once shown.
    public var lastError: NavError?
    /// Why the last connection could not be made (nil once joined): `.offline` (no
    /// network, a refused port, a name that does not resolve), `.tls` (the certificate),
    /// `.rejected` (the server answered the upgrade with an HTTP error).
    public private(set) var connectionError: NavError?
    /// The last time the session was made anew while this navigator was away (its
    /// pending commands were dropped with `gone`): why. Set it to nil once shown.
    public var lastReset: String?

    /// Whether a change is still waiting for the server.
    public var isWriting: Bool { pendingCommands > 0 }

    /// The state, read: coordinators, entries, the alert, the active path.
    public var tree: NavTree? { state.flatMap(NavTree.init) }
    /// The session's data (what the flow's guards read); nil until first set.
    public var sessionData: JSONObject? { state?["data"]?.objectValue }

    /// The revision this device shows: set it once the screen shows `rev` (SwiftUI's
    /// `onChange(of: nav.rev)`); the other members see it as presence.
    public var renderedRevision: Int? {
        didSet { if let r = renderedRevision, r != oldValue { report(rev: r) } }
    }

    @ObservationIgnored private var machine: SessionMachine
    @ObservationIgnored private let transport: any WebSocketTransport
    @ObservationIgnored private var connection: (any TransportConnection)?
    /// Which connection events belong to: one from an older connection is dropped.
    @ObservationIgnored private var generation = 0
    /// Transport events wait here; the consumer takes all that came together in one
    /// turn and shows the outcome once (a queue resent after an outage is answered in a
    /// burst of hundreds of messages: one replay of what is pending, not one each).
    @ObservationIgnored private let inbox = Inbox()
    /// Answers for a later turn (`later`), and whether `perform` is inside a gesture's call.
    @ObservationIgnored private var deferred: [() -> Void] = []
    @ObservationIgnored private var answeringLater = false
    @ObservationIgnored private var consumer: Task<Void, Never>?
    @ObservationIgnored private var ticker: Task<Void, Never>?
    @ObservationIgnored private var answers: [Int64: (Result<Ack, NavError>) -> Void] = [:]
    @ObservationIgnored private var saveScheduled = false
    @ObservationIgnored private var joinWaiters: [CheckedContinuation<Result<Void, NavError>, Never>] = []
    @ObservationIgnored private var closeWaiters: [CheckedContinuation<Void, Never>] = []
    @ObservationIgnored private let routeChecks: [RouteCheck]
    /// Waits this many milliseconds (the backoff, the one-second tick); tests pass their own.
    @ObservationIgnored private let sleep: @Sendable (Int64) async -> Void
    /// Requests waiting for their reply, by request id.
    @ObservationIgnored private var replies: [String: (Result<JSON, NavError>) -> Void] = [:]
    /// The commands made by bindings' writes, until answered.
    @ObservationIgnored private var writes: Set<Int64> = []
    /// A server message is being taken in (its `.state` is shown after the burst).
    @ObservationIgnored private var inBurst = false
    /// Which backoff wait is current (one that `reconnectNow()` ended does nothing).
    @ObservationIgnored private var retryGeneration = 0
    /// The first refusal before joining, thrown by `connect()`.
    @ObservationIgnored private var refusal: NavError?

    /// A navigator for one session. `routes` are the typed route enums checked against the
    /// flow when it joins; `transport` is how it speaks WebSocket (`URLSessionTransport`
    /// on Apple platforms, the libuv one of NavSyncRuntime on Linux).
    public init(_ options: Options, routes: [RouteCheck] = [], transport: any WebSocketTransport,
                sleep: @escaping @Sendable (Int64) async -> Void = { ms in try? await Task.sleep(for: .milliseconds(ms)) }) {
        self.options = options
        routeChecks = routes
        self.transport = transport
        self.sleep = sleep
        var connection = options.connection
        if connection.urls.isEmpty { connection.urls = [.default] }
        connection.speculative = true
        machine = SessionMachine(options: connection)
        if let saved = options.store?.load(session: options.session, server: connection.urls[0]), machine.restore(saved) {
            publish()
        }
    }

    // MARK: Connecting

    /// Connects and joins; returns once joined. When the first connection fails, the
    /// navigator keeps trying (`status` is `.offline`) and navigates on what it shows:
    /// with a stored state it returns then, without one it throws why the connection
    /// failed. Throws the server's refusal (no such session, forbidden), or
    /// `bad_params` naming every mismatch between the typed routes and the session's flow.
    public func connect() async throws(NavError) {
        if consumer == nil {
            consumer = Task { [weak self, inbox] in
                for await _ in inbox.wakes {
                    guard let self else { return }
                    for (generation, event) in inbox.takeAll() { self.transportEvent(event, generation: generation) }
                    self.publish()
                }
            }
        }
        if ticker == nil {
            ticker = Task { [weak self, sleep] in
                while !Task.isCancelled {
                    await sleep(1_000)
                    guard let self, !Task.isCancelled else { return }
                    self.perform(self.machine.tick())
                }
            }
        }
        if status == .joined { return }
        if case .offline = status {
            // Already trying: wait for the join (or the next failure).
        } else {
            refusal = nil
            status = .connecting
            perform(machine.start())
        }
        let joined = await withCheckedContinuation { joinWaiters.append($0) }
        try joined.get()
        guard status == .joined else { return }   // offline, on the stored state
        if let flow {
            let problems = routeChecks.flatMap { $0.mismatches(flow) }
            if !problems.isEmpty {
                await close()
                throw NavError(.badParams, "the app's routes do not fit flow '\(flow.name)':\n" + problems.joined(separator: "\n"))
            }
        }
    }

    /// The network is back, or changed (`NWPathMonitor` says `.satisfied`, the app came
    /// to the foreground): a wait before the next attempt ends now and the backoff starts
    /// over, an attempt under way is made again, and a joined connection is checked
    /// (dropped and made again if the server does not answer within 2 s). Pending
    /// commands go out as soon as it is joined.
    ///
    /// ```swift
    /// let monitor = NWPathMonitor()
    /// monitor.pathUpdateHandler = { path in
    ///     if path.status == .satisfied { Task { @MainActor in nav.reconnectNow() } }
    /// }
    /// monitor.start(queue: .main)
    /// ```
    public func reconnectNow() {
        retryGeneration += 1
        perform(machine.reconnectNow())
    }

    /// Closes for good and waits until the connection is gone; commands still waiting
    /// fail.
    public func close() async {
        if case .closed = status { return }
        if status == .idle { return finish(reason: "closed") }
        await withCheckedContinuation { k in
            closeWaiters.append(k)
            perform(machine.stop())
        }
    }

    // MARK: Commands

    /// Sends one command of these operations: it is shown at once (before this call
    /// first suspends), and the call returns the server's ack, or throws its error (the
    /// effect then leaves the shown state). It waits through reconnects and offline
    /// spells (and is resent under its id); on a navigator closed for good it fails at once.
    @discardableResult
    public func send(_ operations: [NavOperation], base: Int? = nil, onConflict: ConflictPolicy = .rebase) async throws(NavError) -> Ack {
        let result = await withCheckedContinuation { k in
            gesture(operations, base: base, onConflict: onConflict) { k.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Shows a command at once and sends it; `answered` gets the server's answer.
    /// `isWrite`: a binding's write, whose refusal goes to `lastError` (at once when the
    /// replay refuses it already).
    func gesture(_ operations: [NavOperation], base: Int? = nil, onConflict: ConflictPolicy = .rebase, isWrite: Bool = false,
                 answered: @escaping (Result<Ack, NavError>) -> Void) {
        if case .closed(let reason) = status {
            let refusal = NavError(.closed, "the navigator is closed (\(reason)); nothing was sent")
            return later { answered(.failure(refusal)) }
        }
        let id = machine.nextCommand
        if isWrite { writes.insert(id) }
        let (made, effects) = machine.command(operations.map(\.json), base: base, onConflict: onConflict)
        assert(made == id)
        answers[id] = { [weak self] result in
            self?.writes.remove(id)
            answered(result)
        }
        // An answer the machine gives at once (too many waiting) comes on a later turn.
        answeringLater = true
        perform(effects)
        answeringLater = false
        publish()
        scheduleSave()
    }

    /// Runs `body` on a later main-actor turn: what a call decides at once (a refusal) is
    /// never answered from inside the call, which may be in the middle of its own work.
    private func later(_ body: @escaping () -> Void) {
        deferred.append(body)
        guard deferred.count == 1 else { return }
        Task { @MainActor [weak self] in
            guard let self else { return }
            let due = deferred
            deferred = []
            for d in due { d() }
        }
    }

    /// Several operations as one atomic command: all apply, as one revision, or none.
    ///
    /// ```swift
    /// try await nav.batch { b in
    ///     try b.setRoot(AppRoute.main)
    ///     b.select("home")
    ///     try b.route(to: HomeRoute.detail(id: 7))
    /// }
    /// ```
    @discardableResult
    public func batch(base: Int? = nil, onConflict: ConflictPolicy = .rebase,
                      _ build: (inout Batch) throws -> Void) async throws(NavError) -> Ack {
        var b = Batch()
        do { try build(&b) } catch let e as NavError { throw e } catch { throw NavError(.badParams, "\(error)") }
        return try await send(b.operations, base: base, onConflict: onConflict)
    }

    /// Sends a request and waits for its reply, decoded; the server's error is thrown.
    func ask(_ message: JSONObject) async throws(NavError) -> ServerMessage {
        guard status == .joined else {
            throw NavError(status == .idle ? .offline : { if case .closed = status { ErrorCode.closed } else { .offline } }(),
                           "not joined to '\(options.session)' right now (\(status)); nothing was sent")
        }
        let (id, effects) = machine.request(message, wantsReply: true)
        guard let id else { throw NavError(.offline, "not connected to \(machine.currentURL) right now; nothing was sent") }
        let what = message["type"]?.stringValue ?? "request"
        let timeout = options.requestTimeout
        let result = await withCheckedContinuation { (k: CheckedContinuation<Result<JSON, NavError>, Never>) in
            replies[id] = { k.resume(returning: $0) }
            perform(effects)
            Task { [weak self, sleep, url = machine.currentURL] in
                let c = timeout.components
                await sleep(c.seconds * 1_000 + c.attoseconds / 1_000_000_000_000_000)
                self?.replies.removeValue(forKey: id)?(.failure(NavError(.timeout, "no answer from \(url) within \(timeout) to '\(what)'")))
            }
        }
        let json = try result.get()
        guard let decoded = (try? ServerMessage.decode(json))??.message else {
            throw NavError(.internal, "an answer to '\(what)' that cannot be read: \(json.encodedString().prefix(200))")
        }
        if case .error(let e) = decoded { throw e }
        return decoded
    }

    private func failRequests(_ error: NavError) {
        let waiting = replies
        replies = [:]
        for (_, k) in waiting { k(.failure(error)) }
    }

    /// Tells the other members which revision this device shows.
    private func report(rev: Int) {
        let (_, effects) = machine.request(["type": "status", "session": .string(options.session), "rev": .int(Int64(rev))], wantsReply: false)
        perform(effects)
    }

    // MARK: Effects

    private func transportEvent(_ event: TransportEvent, generation: Int) {
        guard generation == self.generation else { return }
        switch event {
        case .opened:
            perform(machine.opened())
        case .text(let bytes):
            // Shown once the whole burst is in (the consumer publishes after it); an
            // answer that changed nothing shown still ends a pending command there.
            inBurst = true
            perform(machine.received(bytes))
            inBurst = false
        case .closed(let code, let reason):
            connection = nil
            perform(machine.closed(code: code, reason: reason, jitter: Double.random(in: 0...1)))
        case .failed(let error):
            connection = nil
            connectionError = error
            perform(machine.closed(code: nil, reason: error.message, jitter: Double.random(in: 0...1), failure: error.code))
        }
    }

    private func perform(_ effects: [SessionMachine.Effect]) {
        for effect in effects {
            switch effect {
            case .connect:
                generation += 1
                let generation = generation, inbox = inbox
                let headers = options.token.map { [("Authorization", "Bearer \($0)")] } ?? []
                connection = transport.connect(to: machine.currentURL, headers: headers) { inbox.put((generation, $0)) }
            case .send(let bytes):
                connection?.send(text: bytes)
            case .close:
                connection?.close()
            case .abort:
                connection?.abort()
            case .retry(let delay):
                retryGeneration += 1
                let planned = retryGeneration
                Task { [weak self, sleep] in
                    await sleep(delay)
                    // A wait `reconnectNow()` ended early is over.
                    guard let self, planned == self.retryGeneration else { return }
                    self.perform(self.machine.retry())
                }
            case .event(let event):
                handle(event)
            case .answered(let id, let result):
                guard let answer = answers.removeValue(forKey: id) else { break }
                if answeringLater { later { answer(result) } } else { answer(result) }
            case .replied(let id, let json):
                replies.removeValue(forKey: id)?(.success(json))
            case .received:
                break
            case .finished:
                finish(reason: refusal?.message ?? "closed")
            }
        }
    }

    /// Publishes what the machine holds; only what changed is set, so observers of an
    /// unchanged property stay quiet.
    private func publish() {
        machine.showNow()
        if state != machine.shown { state = machine.shown }
        if confirmedState != machine.state { confirmedState = machine.state }
        if confirmedRev != machine.rev { confirmedRev = machine.rev }
        let count = machine.pending.count
        if pendingCommands != count { pendingCommands = count }
        if flow == nil || machine.flow?.name != flow?.name { flow = machine.flow }
        if clientID != machine.clientID { clientID = machine.clientID }
    }

    /// Keeps the session in the store once this main-actor turn is over (one write for
    /// a burst of changes).
    private func scheduleSave() {
        guard options.store != nil, !saveScheduled else { return }
        saveScheduled = true
        Task { [weak self] in
            guard let self else { return }
            self.saveScheduled = false
            // Closed meanwhile: `finish` kept (or forgot) what stays.
            if case .closed = self.status { return }
            if let saved = self.machine.saved { self.options.store?.save(saved, server: self.machine.options.urls[0]) }
        }
    }

    private func handle(_ event: SessionMachine.Event) {
        switch event {
        case .state:
            if !inBurst { publish() }
            scheduleSave()
        case .reset(let reason):
            lastReset = reason
            publish()
            scheduleSave()
        case .presence:
            members = machine.members
        case .connection(let connected, let reason):
            if connected {
                connectionError = nil
                clientID = machine.clientID
                flow = machine.flow
                members = machine.members
                status = .joined
                for k in joinWaiters { k.resume(returning: .success(())) }
                joinWaiters = []
            } else {
                // A request is not sent again: those waiting hear why now.
                failRequests(NavError(.offline, "the connection to \(machine.currentURL) closed before the answer (\(reason))"))
            }
            if !connected, machine.willRetry {
                if status == .connecting || { if case .offline = status { true } else { false } }() {
                    status = .offline(reason: reason)
                    // The first connection failed: the app goes on with what it shows
                    // (its stored state), or hears why when there is nothing to show.
                    let result: Result<Void, NavError> = machine.state != nil ? .success(())
                        : .failure(NavError(connectionError?.code ?? .offline, "could not join '\(options.session)' at \(machine.currentURL): \(reason) (still trying)"))
                    for k in joinWaiters { k.resume(returning: result) }
                    joinWaiters = []
                } else {
                    status = .reconnecting(reason: reason)
                }
            }
        case .refusedLocally(let id, let e):
            // A binding's write: said at once. The server is asked all the same; its
            // answer comes later (the same, most likely). A call's refusal is thrown.
            if writes.contains(id) { lastError = e }
        case .error(let e):
            lastError = e
            // Refused for good (at the first join, offline before it, or deleted).
            if machine.ending == e { refusal = e }
        }
    }

    /// Done for good: everything waiting is answered. The machine answered the commands
    /// still pending (with why it ended: a refusal keeps its code) before saying so.
    private func finish(reason: String) {
        status = .closed(reason: reason)
        ticker?.cancel()
        ticker = nil
        let ending = machine.ending ?? NavError(.closed, "the navigator closed (\(reason))")
        let failure = refusal ?? NavError(ending.code == .closed ? .offline : ending.code, "could not join '\(options.session)': \(reason)")
        for k in joinWaiters { k.resume(returning: .failure(failure)) }
        joinWaiters = []
        let waiting = answers
        answers = [:]
        for (_, k) in waiting { k(.failure(ending)) }
        failRequests(ending)
        let dropped = machine.droppedAtEnd
        publish()
        let server = machine.options.urls[0]
        if let refusal {
            // Refused at the door (the session is gone, the token no longer fits): the
            // reason stays in `lastError`, with what became of the commands that waited.
            lastError = dropped == 0 ? refusal
                : NavError(refusal.code, "\(refusal.message); the \(dropped) command\(dropped == 1 ? "" : "s") waiting for it \(dropped == 1 ? "was" : "were") dropped")
            // A stored session the server does not have is not shown again at the next launch.
            if refusal.code == .unknownSession { options.store?.remove(session: options.session, server: server); return finishClose() }
        }
        // Kept for the next launch: the confirmed state. The commands that failed just now
        // are not kept (their callers were told).
        if var saved = machine.saved {
            saved.pending = []
            saved.known = []
            options.store?.save(saved, server: server)
        }
        finishClose()
    }

    private func finishClose() {
        for k in closeWaiters { k.resume() }
        closeWaiters = []
    }
}

/// Where transport events wait for the main actor: put from any thread, taken all at
/// once. `wakes` yields once each time the inbox goes from empty to not.
final class Inbox: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [(Int, TransportEvent)] = []
    let wakes: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    init() { (wakes, wake) = AsyncStream.makeStream(of: Void.self) }

    func put(_ event: (Int, TransportEvent)) {
        let first = lock.withLock { events.append(event); return events.count == 1 }
        if first { wake.yield() }
    }

    func takeAll() -> [(Int, TransportEvent)] {
        lock.withLock { defer { events = [] }; return events }
    }
}

/// A typed route enum to check against a coordinator type of the flow when a navigator
/// joins (`RouteSchema`).
public struct RouteCheck: Sendable {
    let mismatches: @Sendable (Flow) -> [String]

    /// `R` must fit the routes of the coordinator type `type`.
    public static func coordinator<R: NavRoute>(_ type: String, _ routes: R.Type) -> RouteCheck {
        RouteCheck { flow in
            guard let spec = flow.coordinators[type] else { return ["the flow has no coordinator type '\(type)'"] }
            return RouteSchema.mismatches(R.self, coordinator: spec)
        }
    }
}
