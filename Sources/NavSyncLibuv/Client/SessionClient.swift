import NavSync
/// A member of one session on a `ClientLoop`: the libuv shell around a
/// `SessionMachine`, which holds the mirror, the resend queue, resync and backoff.
/// This class opens sockets, runs timers and calls back; callbacks run on the loop's
/// thread.
public final class SessionClient {
    public typealias Options = SessionMachine.Options
    public typealias Event = SessionMachine.Event

    public var options: Options { machine.options }
    public var state: JSON? { machine.state }
    public var rev: Int { machine.rev }
    public var epoch: String? { machine.epoch }
    /// The session's flow as the server sent it.
    public var flow: Flow? { machine.flow }
    public var members: [Member] { machine.members }
    /// This client's identity; kept across reconnects.
    public var clientID: String? { machine.clientID }
    /// The server this client is on (or trying next).
    public var server: WebSocketURL { machine.currentURL }
    public var isJoined: Bool { machine.isJoined }
    /// A lost or failed connection will be tried again (the next server, or later).
    public var willRetry: Bool { machine.willRetry }
    public var unacknowledged: Int { machine.unacknowledged }

    /// The answer to a command sent on a client closed for good.
    static let closed = NavError(.internal, "this client is closed; the command was not sent")

    public var onEvent: ((Event) -> Void)?
    /// Every message from the server, as it came (for `navclient watch --json`).
    public var onMessage: ((JSON) -> Void)?

    unowned let loop: ClientLoop
    private var machine: SessionMachine
    private var socket: WebSocketClient?
    private var answers: [Int64: (Result<Ack, NavError>) -> Void] = [:]
    private var replies: [String: (JSON) -> Void] = [:]
    /// Async observers (`states()`, `close()`); see `SessionClient+Async.swift`.
    private var stateObservers: [AsyncStream<JSON>.Continuation] = []
    private var finishWaiters: [() -> Void] = []
    private var isFinished = false
    /// Inside `send`: answers are handed out on a later loop turn.
    private var answeringLater = false
    private var ticker: ClientLoop.Timer?
    /// The loop this client runs on alone (`running`), kept as long as the client.
    var ownedLoop: ClientLoop?

    public init(loop: ClientLoop, options: Options) {
        self.loop = loop
        machine = SessionMachine(options: options)
    }

    public func start() {
        // Once a second: a silent server is pinged, then dropped (the machine decides).
        if ticker == nil { ticker = loop.every(1_000) { [weak self] in guard let self else { return }; perform(machine.tick()) } }
        perform(machine.start())
    }

    public func stop() { perform(machine.stop()) }

    // MARK: Sending

    /// Sends a command of operations; `done` gets its ack or error. Commands queue up
    /// while disconnected and go out (or out again) once joined.
    public func send(_ ops: [JSON], base: Int? = nil, onConflict: ConflictPolicy = .rebase, label: String? = nil,
                     done: @escaping (Result<Ack, NavError>) -> Void) {
        guard !isFinished else {
            loop.after(0) { done(.failure(Self.closed)) }
            return
        }
        let (id, effects) = machine.command(ops, base: base, onConflict: onConflict, label: label)
        answers[id] = done
        // An answer the machine gives at once (too many waiting, the session refused)
        // comes on a later loop turn, never from inside this call.
        answeringLater = true
        perform(effects)
        answeringLater = false
    }

    public func send(_ operations: [NavOperation], done: @escaping (Result<Ack, NavError>) -> Void) {
        send(operations.map(\.json), done: done)
    }

    /// Any other request (`sessions`, `get`, `status`…): `reply` gets the answer.
    public func request(_ message: JSONObject, reply: ((JSON) -> Void)? = nil) {
        let (id, effects) = machine.request(message, wantsReply: reply != nil)
        if let id, let reply { replies[id] = reply }
        perform(effects)
    }

    /// Tells the other members which revision this client shows.
    public func reportStatus(focus: String? = nil) { perform(machine.reportStatus(focus: focus)) }

    func observeStates(_ continuation: AsyncStream<JSON>.Continuation) {
        guard !isFinished else { return continuation.finish() }
        if isJoined, let state { continuation.yield(state) }
        stateObservers.append(continuation)
    }

    func whenFinished(_ body: @escaping () -> Void) {
        if isFinished { body() } else { finishWaiters.append(body) }
    }

    // MARK: Effects

    private func perform(_ effects: [SessionMachine.Effect]) {
        for effect in effects {
            switch effect {
            case .connect:
                let socket = WebSocketClient(loop: loop, url: machine.currentURL, headers: options.token.map { [("Authorization", "Bearer \($0)")] } ?? [])
                self.socket = socket
                socket.onOpen = { [weak self] in guard let self else { return }; perform(machine.opened()) }
                socket.onText = { [weak self] bytes in guard let self else { return }; perform(machine.received(bytes)) }
                socket.onClose = { [weak self] code, reason in
                    guard let self else { return }
                    self.socket = nil
                    perform(machine.closed(code: code, reason: reason, jitter: Double.random(in: 0...1, using: &loop.random)))
                }
                socket.connect()
            case .send(let bytes):
                socket?.send(text: bytes)
            case .close:
                socket?.close()
            case .abort:
                socket?.abort()
            case .retry(let delay):
                loop.after(delay) { [weak self] in guard let self else { return }; perform(machine.retry()) }
            case .event(let event):
                if event == .state, let state { for o in stateObservers { o.yield(state) } }
                onEvent?(event)
            case .answered(let id, let result):
                guard let answer = answers.removeValue(forKey: id) else { break }
                if answeringLater { loop.after(0) { answer(result) } } else { answer(result) }
            case .replied(let id, let json):
                replies.removeValue(forKey: id)?(json)
            case .received(let json):
                onMessage?(json)
            case .finished:
                // Done for good: let go of the callbacks, which often capture this client.
                onEvent = nil
                onMessage = nil
                isFinished = true
                ticker?.cancel()
                ticker = nil
                for o in stateObservers { o.finish() }
                stateObservers = []
                for w in finishWaiters { w() }
                finishWaiters = []
            }
        }
    }
}
