import NavSync

/// What a navigator is made with: where and as whom it joins, how it reconnects, where
/// it keeps the session between launches (the navigator itself: Navigator.swift).
@available(iOS 17, macOS 14, tvOS 17, watchOS 10, visionOS 1, *)
extension Navigator {
    /// Where and as whom to join, and how the connection behaves: the session machine's
    /// options (`SessionMachine.Options`, read and set through this value: `urls`,
    /// `session`, `name`, `token`, `role` (ask for less than the token grants), `create`
    /// and `flow`, `maxPending`), and what only a navigator has.
    @dynamicMemberLookup
    public struct Options: Sendable {
        /// The session machine's options, as the navigator runs it: it always keeps a
        /// shown state (`speculative`).
        public var connection: SessionMachine.Options
        /// Where the session is kept between launches (confirmed state, flow, epoch,
        /// pending commands); nil keeps nothing. By default a file per server and
        /// session in the app's support folder (`FileStore`).
        public var store: (any NavigatorStore)?
        /// How long a request (`history`, `stateAt`, `sessions`) waits for its answer.
        public var requestTimeout: Duration

        public subscript<Value>(dynamicMember field: WritableKeyPath<SessionMachine.Options, Value>) -> Value {
            get { connection[keyPath: field] }
            set { connection[keyPath: field] = newValue }
        }

        /// Reconnect after a lost connection, and keep trying when the first one fails
        /// (default true).
        public var reconnect: Bool {
            get { connection.reconnect }
            set { connection.reconnect = newValue; connection.retryFirstConnect = newValue }
        }

        /// The wait before trying again after a lost connection: `first`, doubled each
        /// attempt up to `max`, each wait a random 50–100% of it (so many devices do not
        /// return in lockstep). A path monitor's "the network is back" need not wait:
        /// `reconnectNow()`.
        public var backoff: Backoff {
            get { Backoff(first: .milliseconds(connection.backoff.first), max: .milliseconds(connection.backoff.max)) }
            set { connection.backoff = newValue.milliseconds }
        }

        public init(session: String, urls: [WebSocketURL] = [.default], name: String = "app", token: String? = nil,
                    role: String? = nil, create: Bool = false, flow: String? = nil, reconnect: Bool = true,
                    store: (any NavigatorStore)? = FileStore.standard, maxPending: Int = 1_000, backoff: Backoff = Backoff(),
                    requestTimeout: Duration = .seconds(10)) {
            connection = SessionMachine.Options()
            connection.urls = urls.isEmpty ? [.default] : urls
            connection.session = session; connection.name = name; connection.token = token; connection.role = role
            connection.create = create; connection.flow = flow; connection.maxPending = maxPending
            connection.speculative = true
            self.store = store
            self.requestTimeout = requestTimeout
            self.reconnect = reconnect
            self.backoff = backoff
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

    /// How long to wait between attempts to connect again (0.25 s first, 5 s at most, by
    /// default; the same in navsync.js and the Python package).
    public struct Backoff: Sendable, Equatable {
        public var first: Duration
        public var max: Duration
        public init(first: Duration = .milliseconds(250), max: Duration = .seconds(5)) {
            self.first = first
            self.max = max
        }

        var milliseconds: SessionMachine.Backoff {
            func ms(_ d: Duration) -> Int64 { d.components.seconds * 1_000 + d.components.attoseconds / 1_000_000_000_000_000 }
            let first = Swift.max(1, ms(self.first))
            return SessionMachine.Backoff(first: first, max: Swift.max(first, ms(self.max)))
        }
    }
}
