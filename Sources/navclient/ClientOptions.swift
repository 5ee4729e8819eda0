import NavSync
import NavSyncLibuv
/// navclient's shared flags (README.md, "What is built"), parsed as a value.
/// navclient's command line: the session client's options (`SessionClient.Options`, read
/// and set through this value: `urls`, `session`, `name`, `token`, `create`, `flow`) and
/// what only the command line has.
@dynamicMemberLookup
public struct ClientOptions: Sendable, Equatable {
    public var connection = SessionClient.Options()
    /// `--cacert FILE`: what `wss://` servers are checked against, instead of the
    /// system's CAs.
    public var cacert: String?
    public var json = false
    /// A label for the commands sent (history shows it; `restore LABEL` finds it).
    public var label: String?
    /// Arguments that are neither the URL nor a flag (the commands of `exec`).
    public var rest: [String] = []

    public subscript<Value>(dynamicMember field: WritableKeyPath<SessionClient.Options, Value>) -> Value {
        get { connection[keyPath: field] }
        set { connection[keyPath: field] = newValue }
    }

    public static let help = """
      URL                the server: ws://HOST:PORT/ws, http://HOST:PORT/ (the web: address
                         navsyncd prints), HOST:PORT or PORT (default ws://127.0.0.1:7420/ws);
                         several, comma-separated, are tried in turn (the nodes of a cluster)
      --server URL       a server (repeatable): the same as URL; clients move to the next
                         one when a server fails and resume where they were
      --session NAME     the session (default demo)
      --create           create the session if it does not exist
      --flow NAME        the flow of a session created with --create
      --name NAME        the name others see for this client (default navclient)
      --token TOKEN      an access token (or a JWT), for servers with an auth file or --jwt-key
      --cacert FILE      check wss:// servers against the CA certificates in FILE (PEM) instead
                         of the system's (a self-signed server's certificate file, say)
      --label TEXT       label the commands sent (exec): history shows it, restore finds it
      --json             machine-readable output
    """

    public static func parse(_ args: [String]) -> Result<ClientOptions, UsageError> {
        var o = ClientOptions()
        var rest = args[...]
        var sawURL = false
        var servers: [WebSocketURL] = []
        func addresses(_ text: String) -> Result<[WebSocketURL], UsageError> {
            var list: [WebSocketURL] = []
            for part in text.split(separator: ",", omittingEmptySubsequences: false).map(String.init) {
                guard let url = WebSocketURL(part) else { return .failure(UsageError(WebSocketURL.refusal(part))) }
                list.append(url)
            }
            return .success(list)
        }
        while let arg = rest.popFirst() {
            func value() -> String? { rest.popFirst() }
            switch arg {
            case "--server":
                guard let v = value() else { return .failure(UsageError("--server needs a URL (ws://HOST:PORT/ws, HOST:PORT or PORT)")) }
                switch addresses(v) {
                case .success(let list): servers += list
                case .failure(let e): return .failure(e)
                }
            case "--session":
                guard let v = value(), ClientRequest.isValidSessionName(v) else { return .failure(UsageError("--session needs a name (letters, digits, -_.:)")) }
                o.session = v
            case "--name":
                guard let v = value() else { return .failure(UsageError("--name needs a name")) }
                o.name = v
            case "--token":
                guard let v = value() else { return .failure(UsageError("--token needs a token")) }
                o.token = v
            case "--cacert":
                guard let v = value() else { return .failure(UsageError("--cacert needs a PEM file")) }
                do { _ = try TLSContext.client(caFile: v) } catch { return .failure(UsageError("--cacert: \(error)")) }
                o.cacert = v
            case "--label":
                guard let v = value(), (1...64).contains(v.count) else { return .failure(UsageError("--label needs a label of 1 to 64 characters")) }
                o.label = v
            case "--flow":
                guard let v = value() else { return .failure(UsageError("--flow needs a flow name")) }
                o.flow = v
            case "--json": o.json = true
            case "--create": o.create = true
            case "-h", "--help": return .failure(.help)
            default:
                if arg.hasPrefix("--") { return .failure(UsageError("unknown option '\(arg)'")) }
                // The first word, when it looks like an address (ws://…, http://…, HOST:PORT,
                // PORT), is the server; one that does not parse is refused, never ignored.
                if !sawURL && o.rest.isEmpty && WebSocketURL.looksLikeAddress(arg.split(separator: ",").first.map(String.init) ?? arg) {
                    switch addresses(arg) {
                    case .success(let list): servers = list + servers
                    case .failure(let e): return .failure(e)
                    }
                    sawURL = true
                } else {
                    o.rest.append(arg)
                }
            }
        }
        if !servers.isEmpty { o.urls = servers }
        return .success(o)
    }

}


/// A usage mistake on the command line; an empty message asks for the help text.
public struct UsageError: Error, Sendable, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public static let help = UsageError("")
}

extension ClientOptions {
    /// A loop for this run's connections: `wss://` ones trust `--cacert` (checked when
    /// parsed) or the system's CAs.
    public func makeLoop() -> ClientLoop {
        let loop = ClientLoop()
        if let cacert { loop.tls = try? TLSContext.client(caFile: cacert) }
        return loop
    }

    /// The session client's options for these command-line options.
    public func sessionOptions(reconnect: Bool) -> SessionClient.Options {
        var s = connection
        s.reconnect = reconnect
        return s
    }
}
