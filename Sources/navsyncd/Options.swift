import NavSync
import NavSyncServer
import NavSyncRuntime

/// navsyncd's command line (README.md, "What is built") -> a ServerConfiguration.
struct Options {
    var server = ServerConfiguration()
    var hub = HubConfiguration()
    /// Queued bytes past which a member stops getting patches until it drains.
    var lagThreshold = 1 << 20
    var wsEcho = false
    var insecure = false
    /// `--lan`: listen on every address, with a fresh admin token for this run.
    var lan = false
    var hostGiven = false
    var flowsDirectory: String?
    var authFile: String?
    /// `--hooks FILE`: the app's backend (docs/backend.md).
    var hooksFile: String?
    /// `--jwt-key` (repeatable) and `--jwt-audience`.
    var jwtKeys: [String] = []
    var jwtAudience: String?
    var allowedOrigins: [String] = []
    var dataDirectory: String?
    var sync = DataStore.Sync.batch
    var repair = false
    var snapshotEvery = 50_000
    var snapshotEveryGiven = false
    /// `--cluster URL`, `--node NAME`, `--redis-password-file FILE`, `--redis-wait N`
    /// and `--redis-wait-timeout MS`.
    var cluster: RedisURL?
    var node: String?
    var redisPasswordFile: String?
    var redisWait = 0
    var redisWaitTimeout = 1_000
    var redisWaitHold = 5_000
    /// `--tls-cert`, `--tls-key`, `--tls-self-signed`.
    var tlsCertificate: String?
    var tlsKey: String?
    var tlsSelfSigned = false
    /// `--compression` and `--compression-threshold`, in any order: they make
    /// `server.compressionThreshold` once all flags are read.
    var compression = true
    var compressionThreshold = 256

    static let usage = """
    usage: navsyncd [options]

    Shares one live navigation state per session between many clients over WebSocket
    (ws://HOST:PORT/ws, protocol navsync.v1) and HTTP on the same port.

    options:
      --host ADDR             address to listen on, IPv4 or IPv6 (default 127.0.0.1)
      --port N                TCP port; 0 takes a free one (default 7420)
      --flows DIR             load every *.json flow in DIR besides the built-in demo flow
      --max-message BYTES     largest WebSocket message, larger closes with 1009 (default 1048576)
      --max-queue BYTES       cap on one connection's queued output (default 8388608)
      --write-timeout MS      drop a connection whose output makes no progress this long (default 30000)
      --socket-send-buffer BYTES  kernel send buffer per connection (default: the kernel's autotuning)
      --handshake-timeout MS  an HTTP connection must finish its request/handshake in this long (default 10000)
      --ping-interval MS      ping a WebSocket silent this long (default 30000)
      --dead-timeout MS       drop a WebSocket silent this long, pings unanswered (default 60000)
      --max-sessions N        sessions the server holds (default 1000)
      --max-members N         members of one session (default 10000)
      --max-ops N             operations in one command (default 64)
      --rate N                commands per second per connection (default 200)
      --burst N               commands a connection may send in a burst (default 400)
      --patch-log N           patches kept per session for catch-up with since (default 1024)
      --history N             revisions of history each session holds: who, when, which
                              command, and the state of each (get with rev); 0 turns it
                              off (default 10000)
      --history-bytes BYTES   history's bytes on this node, all sessions together: past it,
                              the oldest revisions of the sessions holding most go first
                              (default: no bound but --history per session)
      --presence-interval MS  presence changes of a session are gathered and sent this often (default 50)
      --presence-detail N     members listed one by one in presence; the rest are a count (default 256)
      --presence-max-delay MS while the server is saturated, a session's presence waits up to this long,
                              gathering more changes per message (default 1000)
      --lag-threshold BYTES   a member with this much output queued stops getting patches
                              and gets a snapshot once it drains (default 1048576)
      --no-demo-session       do not create the session "demo" at start
      --data DIR              keep every session in DIR (journal + snapshots) and restore
                              them at start; without it sessions live in memory only
      --fsync MODE            with --data: always (sync each command's record before its
                              ack), batch (one sync per batch of commands: group commit),
                              off (the OS syncs; a process crash loses nothing, a power
                              cut may) (default batch)
      --snapshot-every N      with --data: compact a session's journal into a snapshot
                              after N records, once the journal has grown past the last snapshot (default 50000)
      --repair                with --data: cut a journal at a corrupt record instead of
                              refusing to start (the records after it are lost)
      --cluster URL           join a cluster: every node naming the same Redis (7.x)
                              serves every session, and a client may use any of them.
                              Redis holds and orders everything; nothing is kept on disk
                              here (not with --data). With --snapshot-every N (default
                              10000 here) a node stores a session's snapshot in Redis
                              every N records it appended. URL is one of
                                redis://[USER[:PASSWORD]@]HOST[:PORT][/DB]
                                rediss://…[?cacert=FILE][&cert=FILE&key=FILE]   (TLS)
                                redis+sentinel://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT…]/MASTER
                                  [?sentinel_password=…][&db=N]   (also rediss+sentinel://)
                              HOST is a DNS name or an IP address. See docs/cluster.md.
      --node NAME             this node's name in the cluster (default: HOSTNAME-PORT)
      --redis-password-file FILE
                              the password of the URL's user (redis://USER@HOST…), kept
                              out of ps; one trailing newline ignored; re-read on SIGHUP
      --redis-wait N          acknowledge a command only once N Redis replicas have it, and
                              every other replica online too (WAIT; default 0): any of
                              them may be promoted. One whose replicas do not confirm in
                              time is answered `unconfirmed` (HTTP 503): resend it by id
      --redis-wait-timeout MS how long WAIT waits (default 1000)
      --redis-wait-hold MS    a replica that stops acknowledging is still waited for this
                              long: it may be the one the Sentinels are promoting
                              (default 5000; above your Sentinels' down-after-milliseconds
                              to cover a primary cut off from them)
      --tls-cert FILE         serve HTTPS and wss:// on the port (TLS 1.2 and 1.3), with this
                              certificate (PEM, a chain allowed); needs --tls-key. Re-read
                              on SIGHUP (open connections keep theirs; one that does not
                              load is logged and the old one stays)
      --tls-key FILE          the certificate's private key (PEM)
      --tls-self-signed       serve TLS with a certificate made for this run (localhost and
                              every address listened on); its file and SHA-256
                              fingerprint are printed (clients: --cacert FILE)
      --auth FILE             tokens, roles and the sessions each may use (JSON); re-read on SIGHUP
      --jwt-key FILE          take JWTs signed with this key (repeatable, for rotation): an
                              HS256 secret (the file's bytes, at least 32), or an RS256 or
                              ES256 public key or certificate (PEM). Claims: sub, role,
                              sessions, exp (required), nbf, aud. Alone it makes a token
                              required, as --auth does; with --auth either kind is taken.
                              Re-read on SIGHUP. See docs/deploy.md#tokens.
      --jwt-audience AUD      a JWT must name AUD in its aud claim
      --hooks FILE            the app's backend in the loop (JSON): join and command hooks
                              it answers, signed webhooks it is told of, delivered at least
                              once (with --data, across restarts). Re-read on SIGHUP.
                              See docs/backend.md.
      --allow-origin ORIGIN   a browser origin that may connect and POST, besides the
                              server's own (repeatable). The server's own: http://HOST:PORT
                              of --host, and any http://ADDR:PORT where ADDR is localhost
                              or an IP address of this machine; never a DNS name.
      --trusted-proxy ADDR[/BITS]  a reverse proxy (nginx, Caddy) in front (repeatable):
                              from it, the --forwarded-header family is believed, so
                              limits, logs and the origin check see the client; from
                              anyone else it is ignored. See docs/deploy.md.
      --trusted-hops N        how many proxies stand in front (each appends one hop): the
                              client is the N-th hop from the right, even one a client on
                              a trusted address wrote itself (Envoy's xff_num_trusted_hops)
      --forwarded-header x-forwarded-for|forwarded  which headers the proxies set: the
                              X-Forwarded-For / -Proto / -Host family (default, what
                              the nginx recipe sets) or RFC 7239's Forwarded; the other
                              is ignored, since a client may send it through a proxy
      --max-connections N     open connections in all (default 16384, at most the open-files
                              limit; navsyncd warns when that limit is lower)
      --backlog N             connections the kernel queues before navsyncd accepts them
                              (default: net.core.somaxconn, which also caps it)
      --max-connections-per-ip N  open connections from one address (default 4096)
      --compression on|off    offer permessage-deflate (RFC 7692) to WebSocket clients; a
                              broadcast is compressed once for every member that took it
                              (default on; --ws-echo honours it too)
      --compression-threshold BYTES  messages shorter than this go uncompressed (default 256)
      --log-level LEVEL       debug, info, warn, error or off (default info)
      --ws-echo               run only the WebSocket layer: echo every message back
                              (for conformance suites such as Autobahn)
      --lan                   for phones and other machines of this network: listen on
                              every address (0.0.0.0, or --host), make a random admin
                              token for this run (without --auth), and print the page's
                              URL with ?token= for each address (a QR code too when
                              qrencode is installed). Without the token, access is refused.
      --insecure              allow listening beyond loopback without --auth
      -h, --help              show this help

    The first line on standard output names the real address:
      navsyncd listening on ws://HOST:PORT/ws (web: http://HOST:PORT/)
    (with TLS: wss://HOST:PORT/ws (web: https://HOST:PORT/)).
    SIGINT and SIGTERM close every connection with 1001 and exit 0.

    exit codes: 0 after a clean shutdown, 1 if the server cannot start, 2 for bad usage.
    """

    enum ParseResult {
        case run(Options)
        case help
        case usageError(String)
    }

    /// A flag that takes a whole number in a range.
    struct NumericFlag: Sendable {
        let range: ClosedRange<Int64>
        /// What the number is, for the usage error: "milliseconds", "a byte count".
        let unit: String
        let apply: @Sendable (inout Options, Int64) -> Void
    }

    static let numericFlags: [String: NumericFlag] = [
        "--port": NumericFlag(range: 0...65535, unit: "a port number") { $0.server.port = Int($1) },
        "--max-message": NumericFlag(range: 1024...(1 << 30), unit: "a byte count") {
            $0.server.connection.maxMessage = Int($1)
            $0.hub.limits.maxMessage = Int($1)
        },
        "--max-queue": NumericFlag(range: 65536...(1 << 40), unit: "a byte count") { $0.server.maxQueueBytes = Int($1) },
        "--socket-send-buffer": NumericFlag(range: 4096...(1 << 30), unit: "a byte count") { $0.server.socketSendBuffer = Int($1) },
        "--write-timeout": NumericFlag(range: 100...86_400_000, unit: "milliseconds") { $0.server.connection.writeTimeout = $1 },
        "--handshake-timeout": NumericFlag(range: 100...86_400_000, unit: "milliseconds") { $0.server.connection.handshakeTimeout = $1 },
        "--ping-interval": NumericFlag(range: 100...86_400_000, unit: "milliseconds") { $0.server.connection.pingInterval = $1 },
        "--dead-timeout": NumericFlag(range: 100...86_400_000, unit: "milliseconds") { $0.server.connection.deadTimeout = $1 },
        "--max-sessions": NumericFlag(range: 1...10_000_000, unit: "a number") { $0.hub.maxSessions = Int($1) },
        "--max-members": NumericFlag(range: 1...10_000_000, unit: "a number") { $0.hub.maxMembers = Int($1) },
        "--max-ops": NumericFlag(range: 1...10_000, unit: "a number") { $0.hub.limits.model.maxOps = Int($1) },
        "--rate": NumericFlag(range: 1...100_000_000, unit: "commands per second") { $0.hub.commandRate = Double($1) },
        "--burst": NumericFlag(range: 1...100_000_000, unit: "a number") { $0.hub.commandBurst = Int($1) },
        "--presence-interval": NumericFlag(range: 1...60_000, unit: "milliseconds") { $0.hub.presenceInterval = $1 },
        "--presence-detail": NumericFlag(range: 1...1_000_000, unit: "a number") { $0.hub.presenceDetail = Int($1) },
        "--presence-max-delay": NumericFlag(range: 0...60_000, unit: "milliseconds") { $0.hub.presenceMaxDelay = $1 },
        "--patch-log": NumericFlag(range: 1000...10_000_000, unit: "a number") { $0.hub.patchLog = Int($1) },
        "--history-bytes": NumericFlag(range: 0...(1 << 50), unit: "a byte count") { $0.hub.historyBytes = Int($1) },
        "--history": NumericFlag(range: 0...10_000_000, unit: "a number of revisions") { $0.hub.history = Int($1) },
        "--lag-threshold": NumericFlag(range: 4096...(1 << 40), unit: "a byte count") { $0.lagThreshold = Int($1) },
        "--snapshot-every": NumericFlag(range: 1...100_000_000, unit: "a number of records") {
            $0.snapshotEvery = Int($1)
            $0.snapshotEveryGiven = true
        },
        "--compression-threshold": NumericFlag(range: 0...(1 << 30), unit: "a byte count") { $0.compressionThreshold = Int($1) },
        "--backlog": NumericFlag(range: 1...1_000_000, unit: "a number") { $0.server.backlog = Int32($1) },
        "--max-connections": NumericFlag(range: 1...10_000_000, unit: "a number") { $0.server.maxConnections = Int($1) },
        "--max-connections-per-ip": NumericFlag(range: 1...10_000_000, unit: "a number") { $0.server.maxConnectionsPerIP = Int($1) },
        "--redis-wait": NumericFlag(range: 0...16, unit: "a number of replicas") { $0.redisWait = Int($1) },
        "--redis-wait-timeout": NumericFlag(range: 10...60_000, unit: "milliseconds") { $0.redisWaitTimeout = Int($1) },
        "--redis-wait-hold": NumericFlag(range: 0...600_000, unit: "milliseconds") { $0.redisWaitHold = Int($1) },
    ]

    static func parse(_ arguments: [String]) -> ParseResult {
        var o = Options()
        var args = arguments[...]
        /// The flags given, in either form (for the checks of what goes together).
        var given = Set<String>()
        while let arg = args.popFirst() {
            // --flag=value is accepted too.
            var flag = arg
            if arg.hasPrefix("--"), let eq = arg.firstIndex(of: "=") {
                flag = String(arg[..<eq])
                args.insert(String(arg[arg.index(after: eq)...]), at: args.startIndex)
            }
            given.insert(flag)
            if let spec = numericFlags[flag] {
                guard let text = args.popFirst(), let n = Int64(text), spec.range.contains(n) else {
                    return .usageError("\(flag) needs \(spec.unit) from \(spec.range.lowerBound) to \(spec.range.upperBound)")
                }
                spec.apply(&o, n)
                continue
            }
            switch flag {
            case "-h", "--help": return .help
            case "--host":
                guard let v = args.popFirst(), !v.isEmpty else { return .usageError("--host needs an address") }
                o.server.host = v.hasPrefix("[") && v.hasSuffix("]") ? String(v.dropFirst().dropLast()) : v
                o.hostGiven = true
            case "--flows":
                guard let v = args.popFirst() else { return .usageError("--flows needs a directory") }
                o.flowsDirectory = v
            case "--log-level":
                guard let v = args.popFirst(), let level = Logger.Level(name: v) else { return .usageError("--log-level needs debug, info, warn, error or off") }
                o.server.logLevel = level
            case "--no-demo-session": o.hub.demoSession = nil
            case "--ws-echo": o.wsEcho = true
            case "--insecure": o.insecure = true
            case "--lan": o.lan = true
            case "--tls-cert":
                guard let v = args.popFirst(), !v.isEmpty else { return .usageError("--tls-cert needs a PEM file") }
                o.tlsCertificate = v
            case "--tls-key":
                guard let v = args.popFirst(), !v.isEmpty else { return .usageError("--tls-key needs a PEM file") }
                o.tlsKey = v
            case "--tls-self-signed": o.tlsSelfSigned = true
            case "--compression":
                guard let v = args.popFirst(), v == "on" || v == "off" else { return .usageError("--compression needs on or off") }
                o.compression = v == "on"
            case "--auth":
                guard let v = args.popFirst() else { return .usageError("--auth needs a file") }
                o.authFile = v
            case "--hooks":
                guard let v = args.popFirst(), !v.isEmpty else { return .usageError("--hooks needs a file (docs/backend.md)") }
                o.hooksFile = v
            case "--jwt-key":
                guard let v = args.popFirst(), !v.isEmpty else { return .usageError("--jwt-key needs a key file") }
                o.jwtKeys.append(v)
            case "--jwt-audience":
                guard let v = args.popFirst(), !v.isEmpty else { return .usageError("--jwt-audience needs an audience") }
                o.jwtAudience = v
            case "--trusted-proxy":
                guard let v = args.popFirst(), let range = IPRange(v) else {
                    return .usageError("--trusted-proxy needs an address or a network, like 127.0.0.1 or 10.0.0.0/8")
                }
                o.server.trustedProxies.proxies.append(range)
            case "--trusted-hops":
                guard let v = args.popFirst(), let n = Int(v), (1...16).contains(n) else {
                    return .usageError("--trusted-hops needs how many proxies stand in front, 1 to 16")
                }
                o.server.trustedProxies.hops = n
            case "--forwarded-header":
                guard let v = args.popFirst(), let h = ProxyTrust.Header(rawValue: v.lowercased()) else {
                    return .usageError("--forwarded-header needs x-forwarded-for or forwarded")
                }
                o.server.trustedProxies.header = h
            case "--allow-origin":
                guard let v = args.popFirst(), v.hasPrefix("http://") || v.hasPrefix("https://") else {
                    return .usageError("--allow-origin needs an origin like http://192.168.1.20:7420")
                }
                o.allowedOrigins.append(v.hasSuffix("/") ? String(v.dropLast()) : v)
            case "--data":
                guard let v = args.popFirst(), !v.isEmpty else { return .usageError("--data needs a directory") }
                o.dataDirectory = v
            case "--fsync":
                guard let v = args.popFirst(), let mode = DataStore.Sync(rawValue: v) else {
                    return .usageError("--fsync needs always, batch or off")
                }
                o.sync = mode
            case "--repair": o.repair = true
            case "--cluster":
                guard let v = args.popFirst() else { return .usageError("--cluster needs a Redis URL: redis://[USER:PASSWORD@]HOST:PORT[/DB]") }
                do { o.cluster = try RedisURL(v) } catch {
                    return .usageError("--cluster \(error): redis://[USER:PASSWORD@]HOST:PORT[/DB], rediss://… or redis+sentinel://HOST:PORT,…/MASTER")
                }
            case "--redis-password-file":
                guard let v = args.popFirst(), !v.isEmpty else { return .usageError("--redis-password-file needs a file") }
                o.redisPasswordFile = v
            case "--node":
                guard let v = args.popFirst(), ClientRequest.isValidSessionName(v), v.utf8.count <= 64 else {
                    return .usageError("--node needs a name of 1-64 letters, digits or -_.: characters")
                }
                o.node = v
            default:
                return .usageError("unknown option '\(arg)'")
            }
        }
        o.hub.heartbeat = Int(max(1, o.server.connection.pingInterval / 1000))
        o.server.compressionThreshold = o.compression ? o.compressionThreshold : nil
        if o.lagThreshold >= o.server.maxQueueBytes {
            return .usageError("--lag-threshold must be below --max-queue")
        }
        if o.server.connection.deadTimeout <= o.server.connection.pingInterval {
            return .usageError("--dead-timeout must be longer than --ping-interval")
        }
        if o.lan && !o.hostGiven { o.server.host = "0.0.0.0" }
        if o.lan && o.wsEcho { return .usageError("--lan is for sessions, not --ws-echo") }
        if o.cluster != nil && o.dataDirectory != nil {
            return .usageError("--cluster and --data exclude each other: in a cluster, Redis keeps the sessions")
        }
        if o.cluster != nil && (o.repair || given.contains("--fsync")) {
            return .usageError("--fsync and --repair are for --data; in a cluster, Redis's appendfsync decides")
        }
        if o.node != nil && o.cluster == nil { return .usageError("--node needs --cluster") }
        for flag in ["--redis-password-file", "--redis-wait", "--redis-wait-timeout", "--redis-wait-hold"] where given.contains(flag) && o.cluster == nil {
            return .usageError("\(flag) needs --cluster")
        }
        if o.redisPasswordFile != nil && o.cluster?.password != nil {
            return .usageError("--redis-password-file and a password in the --cluster URL exclude each other: give it once")
        }
        if (o.tlsCertificate == nil) != (o.tlsKey == nil) { return .usageError("--tls-cert and --tls-key go together") }
        if o.jwtAudience != nil && o.jwtKeys.isEmpty { return .usageError("--jwt-audience needs --jwt-key") }
        if o.server.trustedProxies.hops != nil && o.server.trustedProxies.isEmpty {
            return .usageError("--trusted-hops needs --trusted-proxy (the address of the proxy next to navsyncd)")
        }
        if o.tlsSelfSigned && o.tlsCertificate != nil { return .usageError("--tls-self-signed and --tls-cert exclude each other") }
        if o.cluster != nil && o.wsEcho { return .usageError("--cluster is for sessions, not --ws-echo") }
        return .run(o)
    }
}
