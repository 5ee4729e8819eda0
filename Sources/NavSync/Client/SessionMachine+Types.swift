/// What a `SessionMachine` is configured with, tells its program, and asks its shell to
/// do (the machine itself: SessionMachine.swift).
extension SessionMachine {
    public struct Options: Sendable, Equatable {
        /// The servers, tried in turn: a lost connection moves to the next one (the nodes
        /// of a cluster, docs/cluster.md, "How it works"), and `since`/`epoch` mean the same on every node.
        public var urls = [WebSocketURL.default]
        /// The first server (setting it makes it the only one).
        public var url: WebSocketURL {
            get { urls[0] }
            set { urls = [newValue] }
        }
        public var session = "demo"
        public var name = "navclient"
        public var role: String?
        /// An access token, sent on the upgrade (Authorization: Bearer) and in `hello`.
        public var token: String?
        public var create = false
        public var flow: String?
        /// Reconnect after a lost connection (not after a refusal at the first join).
        public var reconnect = true
        /// First reconnect delay and its cap, in ms; each attempt doubles the delay and
        /// waits a random 50–100% of it, so many clients do not return in lockstep.
        public var backoff = Backoff(first: 250, max: 5_000)
        /// Seconds of silence after which the client pings the server, and after which a
        /// server that still said nothing counts as gone (a stalled node: the client moves
        /// on). `tick()` is called once a second.
        public var pingAfter = 5
        public var deadAfter = 10
        /// Keep a *shown* state (docs/protocol.md, "The client's three states"): this
        /// client's unanswered commands replayed over the confirmed state, each gesture
        /// shown at once. A command's patch is then held until its ack (which names the
        /// entries it made) so the two never count twice. A changed epoch on rejoin drops
        /// the pending commands with `gone` rather than replaying them onto a session
        /// they were not made for.
        public var speculative = false
        /// Commands kept while unanswered (offline, they pile up): past it a new one is
        /// refused at once with `full`.
        public var maxPending = 1_000
        /// Keep trying when the very first connection fails (an app launched offline);
        /// by default a server never reached is reported and not retried.
        public var retryFirstConnect = false
        public init() {}
    }

    /// Reconnect delays, ms: the first, and the cap.
    public struct Backoff: Sendable, Equatable {
        public var first: Int64
        public var max: Int64
        public init(first: Int64, max: Int64) { self.first = first; self.max = max }
    }

    /// What changed, for the program that uses the client.
    public enum Event: Sendable, Equatable {
        /// The mirrored state changed (a patch, a snapshot, or the first join).
        case state
        /// Someone joined, left, or reported what they show.
        case presence
        /// Connected and joined, or the connection was lost (with why).
        case connection(connected: Bool, reason: String)
        /// The server refused something not tied to a command (join, get…).
        case error(NavError)
        /// The session was made anew while this client was away (another epoch): the
        /// state is the new session's, and (speculative) pending commands were dropped.
        case reset(reason: String)
        /// (Speculative) the replay of this new command over what is shown failed (a
        /// guard, a route the stack does not have): what the server will most likely
        /// answer, known at once. The command is sent all the same.
        case refusedLocally(command: Int64, NavError)
    }

    public enum Effect: Sendable, Equatable {
        /// Open a WebSocket to `currentURL`.
        case connect
        /// Send this text message.
        case send([UInt8])
        /// Close the WebSocket (the close handshake).
        case close
        /// Drop the connection at once, without the close handshake (a silent server);
        /// the shell then reports it closed.
        case abort
        /// Call `retry()` after this many ms.
        case retry(after: Int64)
        case event(Event)
        /// A command's answer.
        case answered(command: Int64, Result<Ack, NavError>)
        /// The answer to a request made with `request(_:wantsReply:)`.
        case replied(request: String, JSON)
        /// Every message from the server, as it came (`navclient watch --json`).
        case received(JSON)
        /// Done for good (every command still waiting was answered just before, with why
        /// the client ended): the shell may let go of its callbacks.
        case finished
    }

    /// The connection, one state at a time.
}
