/// The error codes of protocol v1 (docs/protocol.md, "Error codes"), one closed set for every layer.
public enum ErrorCode: String, Sendable, CaseIterable {
    case badJSON = "bad_json"
    case badRequest = "bad_request"
    case unknownSession = "unknown_session"
    case unknownRoute = "unknown_route"
    case badParams = "bad_params"
    case invalidOp = "invalid_op"
    case notFound = "not_found"
    case conflict
    case busy
    case forbidden
    case rateLimited = "rate_limited"
    case tooLarge = "too_large"
    case full
    /// A command id reused with a different command (docs/protocol.md, "Operations: fine points", idempotency).
    case idReused = "id_reused"
    /// A revision older than the history holds (docs/protocol.md, "History").
    case gone
    /// A guard refused the command (docs/flows.md, "Guards and redirects").
    case guarded
    /// Redirects went round in a circle, or past the limit (docs/flows.md, "Guards and redirects").
    case redirectLoop = "redirect_loop"
    /// Cluster mode with `--redis-wait`: Redis has the command but too few replicas
    /// confirmed it in time. It may or may not survive a failover; resending it under
    /// the same id is safe (HTTP 503).
    case unconfirmed
    /// Cluster mode: the node cannot reach its store (Redis down, a failover under way,
    /// a refused password): nothing was applied, and the same command under the same id
    /// may be sent again (HTTP 503). Clients resend it like `unconfirmed`.
    case unavailable
    /// The app's backend refused the command through its command hook (docs/backend.md):
    /// its `message`, and `details` when it gave any (HTTP 409).
    case refused
    case `internal`

    // The clients' own (never sent by a server; the same names in navsync.js and the
    // Python package, docs/clients.md):
    /// No connection could be made: no network, a refused port, a name that does not
    /// resolve, a connection dropped before the upgrade was answered.
    case offline
    /// The TLS handshake failed (an untrusted or expired certificate, a wrong name).
    case tls
    /// The server answered the upgrade with an HTTP error (a wrong path, a proxy that
    /// refuses, a bad token at the door) or broke the handshake.
    case rejected
    /// The client was closed; nothing more is sent.
    case closed
    /// The session was made anew (another epoch) while this client was away: a command
    /// made for the old one was not sent to it.
    case reset
    /// No answer within a call's deadline.
    case timeout
}

/// A refused request: its code, a message for people, the index of the operation at
/// fault (for commands) and the current revision (for `conflict`).
public struct NavError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String
    public var op: Int?
    public var rev: Int?
    /// For `guarded`: the guard that refused, and the entry and route it protects.
    public var guarded: Guarded?
    /// For `unavailable`: seconds after which the same command (the same id) may be sent
    /// again (a backend hook that failed; docs/backend.md).
    public var retryAfter: Int?
    /// For `refused`: what the app's backend said beside its message (an object).
    public var details: JSON?

    /// (A class: one reference in every error, not three strings. Every command's
    /// outcome carries room for an error, so its size is paid on every command.)
    /// For `redirect_loop`: the guard that failed again (or last), and the redirects
    /// taken before, in order (`chain`, on the wire as [{guard, route, link}]).
    public final class Guarded: Sendable, Equatable {
        public let `guard`: String
        public let route: String
        public let entry: String
        public let chain: [RedirectStep]
        public init(guard: String, route: String, entry: String, chain: [RedirectStep] = []) {
            self.guard = `guard`; self.route = route; self.entry = entry; self.chain = chain
        }
        public static func == (a: Guarded, b: Guarded) -> Bool {
            a.guard == b.guard && a.route == b.route && a.entry == b.entry && a.chain == b.chain
        }
    }

    /// One redirect of a chain: the guard, the route it protected, the link it opened.
    public struct RedirectStep: Sendable, Equatable {
        public var `guard`: String
        public var route: String
        public var link: String
        public init(guard: String, route: String, link: String) { self.guard = `guard`; self.route = route; self.link = link }
        public var json: JSON { ["guard": .string(`guard`), "route": .string(route), "link": .string(link)] }
    }

    public init(_ code: ErrorCode, _ message: String, op: Int? = nil, rev: Int? = nil, guarded: Guarded? = nil,
                retryAfter: Int? = nil, details: JSON? = nil) {
        self.code = code
        self.message = message
        self.op = op
        self.rev = rev
        self.guarded = guarded
        self.retryAfter = retryAfter
        self.details = details
    }

    public var description: String {
        (op.map { "op \($0): " } ?? "") + "\(code.rawValue): \(message)"
    }
}
