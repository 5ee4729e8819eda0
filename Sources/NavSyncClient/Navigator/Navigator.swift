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
/// Every call that changes the session is one command, awaited: it returns the server's
/// `Ack` once the change is in the mirror, or throws the server's `NavError`.
///
/// ```swift
/// let nav = Navigator(.init(session: "demo", url: "ws://127.0.0.1:7420/ws"),
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
        /// Reconnect after a lost connection (default true).
        public var reconnect: Bool

        public init(session: String, urls: [WebSocketURL] = [.default], name: String = "app", token: String? = nil,
                    role: String? = nil, create: Bool = false, flow: String? = nil, reconnect: Bool = true) {
            self.session = session; self.urls = urls; self.name = name; self.token = token
            self.role = role; self.create = create; self.flow = flow; self.reconnect = reconnect
        }

        /// The same, with the server given as text (`ws://host:7420/ws`, `host:7420`);
        /// a text that is not a server address leaves the default.
        public init(session: String, url: String, name: String = "app", token: String? = nil,
                    create: Bool = false, flow: String? = nil) {
            self.init(session: session, urls: [WebSocketURL(url) ?? .default], name: name, token: token, create: create, flow: flow)
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
        /// Closed for good: `close()`, or refused (with the reason).
        case closed(reason: String)
    }

    public let options: Options
    public private(set) var status = Status.idle
    /// The mirrored state document, as the server's `snapshot` would give it.
    public private(set) var state: JSON?
    /// The revision of `state`.
    public private(set) var rev = 0
    /// The session's flow as the server sent it.
    public private(set) var flow: Flow?
    public private(set) var members: [Member] = []
    /// This client's identity (kept across reconnects).
    public private(set) var clientID: String?
    /// The last refusal of a change made through a binding (the model snapped back), or
    /// of something not tied to a command. Set it to nil once shown.
    public var lastError: NavError?
    /// Binding writes in flight, by coordinator and place: what the bindings show until
    /// the server answers (see `Navigator+Bindings.swift`).
    var pending: [String: JSON] = [:]
    @ObservationIgnored var writes = 0

    /// Whether a change made through a binding is still waiting for the server.
    public var isWriting: Bool { !pending.isEmpty }

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
    @ObservationIgnored private var answers: [Int64: CheckedContinuation<Result<Ack, NavError>, Never>] = [:]
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
        machine = SessionMachine(options: machineOptions)
        (events, eventSink) = AsyncStream.makeStream(of: (Int, TransportEvent).self)
    }

    // MARK: Connecting

    /// Connects and joins; returns once joined. Throws the server's refusal (no such
    /// session, forbidden), the first connection's failure, or `bad_params` naming
    /// every mismatch between the typed routes and the session's flow.
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
        refusal = nil
        status = .connecting
        perform(machine.start())
        let joined = await withCheckedContinuation { joinWaiters.append($0) }
        try joined.get()
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

    /// Sends one command of these operations and waits for its answer: the ack once its
    /// patch is in the mirror, or the server's error. It waits through reconnects (and
    /// is resent under its id); on a navigator closed for good it fails at once.
    @discardableResult
    public func send(_ operations: [Operation], base: Int? = nil, onConflict: ConflictPolicy = .rebase) async throws(NavError) -> Ack {
        if case .closed(let reason) = status { throw NavError(.internal, "the navigator is closed (\(reason)); nothing was sent") }
        let (id, effects) = machine.command(operations.map(\.json), base: base, onConflict: onConflict)
        let result = await withCheckedContinuation { k in
            answers[id] = k
            perform(effects)
        }
        return try result.get()
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
                answers.removeValue(forKey: id)?.resume(returning: result)
            case .replied, .received:
                break
            case .finished:
                finish(reason: refusal?.message ?? "closed")
            }
        }
    }

    private func handle(_ event: SessionMachine.Event) {
        switch event {
        case .state:
            // Only what changed is set, so observers of an unchanged property stay quiet.
            if state != machine.state { state = machine.state }
            if rev != machine.rev { rev = machine.rev }
            if flow == nil || machine.flow?.name != flow?.name { flow = machine.flow }
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
                status = .reconnecting(reason: reason)
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
        for (_, k) in answers { k.resume(returning: .failure(closed)) }
        answers = [:]
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
