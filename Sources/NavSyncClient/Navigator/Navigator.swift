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
@MainActor
@Observable
public final class Navigator {
    /// Where and as whom to join.
    public struct Options: Sendable {
        /// The servers, tried in turn (the nodes of a cluster).
        public var urls: [WebSocketURL]
        public var session: String
        /// The name other members see.
        public var name: String
        /// An access token (sent on the upgrade and in `hello`).
        public var token: String?
        /// Ask for less than the token grants (`viewer`, `controller`).
        public var role: String?
        /// Create the session when it does not exist, of this flow.
        public var create: Bool
        public var flow: String?
        /// Reconnect after a lost connection, and keep trying when the first one fails
        /// (default true).
        public var reconnect: Bool
        /// Where the session is kept between launches (confirmed state, flow, epoch,
        /// pending commands); nil keeps nothing. By default a file per server and
        /// session in the app's support folder (`FileStore`).
        public var store: (any NavigatorStore)?
        /// Commands kept while unanswered (offline they pile up); past it a gesture is
        /// refused at once with `full`.
        public var maxPending: Int

        public init(session: String, urls: [WebSocketURL] = [.default], name: String = "app", token: String? = nil,
                    role: String? = nil, create: Bool = false, flow: String? = nil, reconnect: Bool = true,
                    store: (any NavigatorStore)? = FileStore.standard, maxPending: Int = 1_000) {
            self.session = session; self.urls = urls; self.name = name; self.token = token
            self.role = role; self.create = create; self.flow = flow; self.reconnect = reconnect
            self.store = store; self.maxPending = maxPending
        }

        /// The same, with the server given as text (`ws://host:7420/ws`, `host:7420`);
        /// a text that is not a server address is `bad_params`.
        public init(session: String, url: String, name: String = "app", token: String? = nil,
                    create: Bool = false, flow: String? = nil,
                    store: (any NavigatorStore)? = FileStore.standard) throws(NavError) {
            guard let parsed = WebSocketURL(url) else {
                throw NavError(.badParams, "'\(url)' is not a server address: give ws://HOST:PORT/ws, wss://HOST/ws, http(s)://HOST:PORT or HOST:PORT")
            }
            self.init(session: session, urls: [parsed], name: name, token: token, create: create, flow: flow, store: store)
        }
    }

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
    @ObservationIgnored private let events: AsyncStream<(Int, TransportEvent)>
    @ObservationIgnored private let eventSink: AsyncStream<(Int, TransportEvent)>.Continuation
    @ObservationIgnored private var consumer: Task<Void, Never>?
    @ObservationIgnored private var ticker: Task<Void, Never>?
    @ObservationIgnored private var answers: [Int64: (Result<Ack, NavError>) -> Void] = [:]
    @ObservationIgnored private var saveScheduled = false
    @ObservationIgnored private var joinWaiters: [CheckedContinuation<Result<Void, NavError>, Never>] = []
    @ObservationIgnored private var closeWaiters: [CheckedContinuation<Void, Never>] = []
    @ObservationIgnored private let routeChecks: [RouteCheck]
    /// Waits this many milliseconds (the backoff, the one-second tick); tests pass their own.
    @ObservationIgnored private let sleep: @Sendable (Int64) async -> Void
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
        var machineOptions = SessionMachine.Options()
        machineOptions.urls = options.urls.isEmpty ? [.default] : options.urls
        machineOptions.session = options.session
        machineOptions.name = options.name
        machineOptions.token = options.token
        machineOptions.role = options.role
        machineOptions.create = options.create
        machineOptions.flow = options.flow
        machineOptions.reconnect = options.reconnect
        machineOptions.retryFirstConnect = options.reconnect
        machineOptions.speculative = true
        machineOptions.maxPending = options.maxPending
        machine = SessionMachine(options: machineOptions)
        (events, eventSink) = AsyncStream.makeStream(of: (Int, TransportEvent).self)
        if let saved = options.store?.load(session: options.session, server: machineOptions.urls[0]), machine.restore(saved) {
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
            consumer = Task { [weak self, events] in
                for await (generation, event) in events {
                    guard let self else { return }
                    self.transportEvent(event, generation: generation)
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
    public func send(_ operations: [Operation], base: Int? = nil, onConflict: ConflictPolicy = .rebase) async throws(NavError) -> Ack {
        let result = await withCheckedContinuation { k in
            gesture(operations, base: base, onConflict: onConflict) { k.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Shows a command at once and sends it; `answered` gets the server's answer.
    func gesture(_ operations: [Operation], base: Int? = nil, onConflict: ConflictPolicy = .rebase,
                 answered: @escaping (Result<Ack, NavError>) -> Void) {
        if case .closed(let reason) = status {
            return answered(.failure(NavError(.internal, "the navigator is closed (\(reason)); nothing was sent")))
        }
        let (id, effects) = machine.command(operations.map(\.json), base: base, onConflict: onConflict)
        answers[id] = answered
        perform(effects)
        publish()
        scheduleSave()
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
            perform(machine.received(bytes))
            // An answer that changed nothing shown (a refusal of a gesture the replay
            // refused too) still ends a pending command: `pendingCommands` and
            // `isWriting` stayed up for ever.
            if pendingCommands != machine.pending.count { publish() }
        case .closed(let code, let reason):
            connection = nil
            perform(machine.closed(code: code, reason: reason, jitter: Double.random(in: 0...1)))
        }
    }

    private func perform(_ effects: [SessionMachine.Effect]) {
        for effect in effects {
            switch effect {
            case .connect:
                generation += 1
                let generation = generation, sink = eventSink
                let headers = options.token.map { [("Authorization", "Bearer \($0)")] } ?? []
                connection = transport.connect(to: machine.currentURL, headers: headers) { sink.yield((generation, $0)) }
            case .send(let bytes):
                connection?.send(text: bytes)
            case .close:
                connection?.close()
            case .abort:
                connection?.abort()
            case .retry(let delay):
                Task { [weak self, sleep] in
                    await sleep(delay)
                    guard let self else { return }
                    self.perform(self.machine.retry())
                }
            case .event(let event):
                handle(event)
            case .answered(let id, let result):
                answers.removeValue(forKey: id)?(result)
            case .replied, .received:
                break
            case .finished:
                finish(reason: refusal?.message ?? "closed")
            }
        }
    }

    /// Publishes what the machine holds; only what changed is set, so observers of an
    /// unchanged property stay quiet.
    private func publish() {
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
            if let saved = self.machine.saved { self.options.store?.save(saved, server: self.machine.options.urls[0]) }
        }
    }

    private func handle(_ event: SessionMachine.Event) {
        switch event {
        case .state:
            publish()
            scheduleSave()
        case .reset(let reason):
            lastReset = reason
            publish()
            scheduleSave()
        case .presence:
            members = machine.members
        case .connection(let connected, let reason):
            if connected {
                clientID = machine.clientID
                flow = machine.flow
                members = machine.members
                status = .joined
                for k in joinWaiters { k.resume(returning: .success(())) }
                joinWaiters = []
            } else if machine.willRetry {
                if status == .connecting || { if case .offline = status { true } else { false } }() {
                    status = .offline(reason: reason)
                    // The first connection failed: the app goes on with what it shows
                    // (its stored state), or hears why when there is nothing to show.
                    let result: Result<Void, NavError> = machine.state != nil ? .success(())
                        : .failure(NavError(.internal, "could not join '\(options.session)' at \(machine.currentURL): \(reason) (still trying)"))
                    for k in joinWaiters { k.resume(returning: result) }
                    joinWaiters = []
                } else {
                    status = .reconnecting(reason: reason)
                }
            }
        case .error(let e):
            lastError = e
            if status == .connecting { refusal = e }
        }
    }

    /// Done for good: everything waiting is answered.
    private func finish(reason: String) {
        status = .closed(reason: reason)
        ticker?.cancel()
        ticker = nil
        let failure = refusal ?? NavError(.internal, "could not join '\(options.session)': \(reason)")
        for k in joinWaiters { k.resume(returning: .failure(failure)) }
        joinWaiters = []
        let closed = NavError(.internal, "the navigator closed (\(reason)) before the command was answered")
        let waiting = answers
        answers = [:]
        for (_, k) in waiting { k(.failure(closed)) }
        // Kept for the next launch: the confirmed state. The commands that failed just now
        // are not kept (their callers were told).
        if var saved = machine.saved {
            saved.pending = []
            saved.known = []
            options.store?.save(saved, server: machine.options.urls[0])
        }
        for k in closeWaiters { k.resume() }
        closeWaiters = []
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
