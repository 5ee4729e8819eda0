import NavSync
/// Which browser origins may open a WebSocket or send commands (docs/protocol.md, "Who may do what (--auth FILE)").
/// Browsers name their page's origin; other clients send none and are not checked.
///
/// The server's own origin is always allowed: the address it listens on (and
/// `localhost` when that is loopback), and an `Origin` equal to the request's own
/// `Host` when that `Host` is `localhost` or an IP literal of this machine: a page
/// loaded from `http://192.0.2.2:7420/` talks to the server that served it. A DNS name
/// is never enough on its own: with DNS rebinding, `evil.example` can resolve to this
/// machine, and its pages would otherwise pass. `--allow-origin` adds origins.
public struct OriginPolicy: Sendable, Equatable {
    /// `--allow-origin`: origins allowed besides the server's own.
    public var listed: [String]
    /// The address and port the server listens on.
    public var host: String
    public var port: Int
    /// IP addresses of this machine's interfaces (without brackets or zone).
    public var localAddresses: Set<String>
    /// `http`, or `https` when the server speaks TLS itself: its pages' origins.
    public var scheme: String

    public init(listed: [String] = [], host: String, port: Int, localAddresses: Set<String> = [], scheme: String = "http") {
        self.listed = listed
        self.host = host
        self.port = port
        self.localAddresses = localAddresses.union(["127.0.0.1", "::1"])
        self.scheme = scheme
    }

    public func allows(origin given: String?, host requestHost: String?) -> Bool {
        guard let origin = given?.lowercased() else { return true }
        if listed.contains(where: { $0.lowercased() == origin }) { return true }
        let own = scheme + "://"
        if origin == "\(own)\(Self.bracketed(host)):\(port)" { return true }
        if Self.isLoopback(host) && origin == "\(own)localhost:\(port)" { return true }
        // The page was loaded from the address this request is sent to.
        let defaultPort = scheme == "https" ? ":443" : ":80"
        guard let requestHost = requestHost?.lowercased(), origin == own + requestHost || origin == own + requestHost + defaultPort else { return false }
        let name = Self.hostname(of: requestHost)
        return name == "localhost" || localAddresses.contains(name)
    }

    /// `192.0.2.2:7420` -> `192.0.2.2`; `[fe80::1]:7420` -> `fe80::1`.
    static func hostname(of host: String) -> String {
        if host.hasPrefix("["), let end = host.firstIndex(of: "]") {
            return String(host[host.index(after: host.startIndex)..<end])
        }
        return host.split(separator: ":", maxSplits: 1).first.map(String.init) ?? host
    }

    static func bracketed(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }

    public static func isLoopback(_ host: String) -> Bool { host.hasPrefix("127.") || host == "::1" || host == "localhost" }
}
