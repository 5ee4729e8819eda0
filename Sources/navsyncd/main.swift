// navsyncd: flags -> configuration -> the server's loop.
import NavSync
import NavSyncServer
import NavSyncRuntime
import NavSyncLibuv
@preconcurrency import Glibc

func say(_ text: String, to fd: Int32) {
    let bytes = Array((text + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}

var options: Options
switch Options.parse(Array(CommandLine.arguments.dropFirst())) {
case .help:
    say(Options.usage, to: 1)
    exit(0)
case .usageError(let message):
    say("navsyncd: \(message)\n(try navsyncd --help)", to: 2)
    exit(2)
case .run(let o):
    options = o
}

// --lan without an auth file: one admin token, made for this run.
var lanToken: String?
if options.lan && options.authFile == nil { lanToken = RandomIDs.hex(16) }

let loopback = options.server.host.hasPrefix("127.") || options.server.host == "::1" || options.server.host == "localhost"
if !loopback && !options.insecure && options.authFile == nil && lanToken == nil && options.jwtKeys.isEmpty {
    say("navsyncd: refusing to listen on \(options.server.host) without --auth: anyone who can reach it could drive every session.\nListen on 127.0.0.1, or pass --insecure if this network is trusted.", to: 2)
    exit(1)
}
if options.server.host == "localhost" { options.server.host = "127.0.0.1" }

var flows: [Flow] = []
if let dir = options.flowsDirectory {
    do { flows = try FlowDirectory.load(dir) } catch {
        say("navsyncd: flow refused: \(error)", to: 2)
        exit(1)
    }
}

var policy: AccessPolicy?
var jwtSummary = ""
var jwtKeys: JWTKeys?
if let lanToken { policy = AccessPolicy(grants: [.init(token: lanToken, role: .admin, sessions: nil, label: "lan admin")]) }
if let file = options.authFile {
    do {
        policy = try AccessPolicy.load(file: file)
    } catch {
        say("navsyncd: auth file refused: \(error)", to: 2)
        exit(1)
    }
    // Weak tokens: a warning on loopback, a refusal where others can reach the server.
    for (i, reason) in policy!.weakTokens {
        if loopback {
            say("navsyncd: warning: \(file): tokens[\(i)].token \(reason); it would be refused beyond loopback", to: 2)
        } else {
            say("navsyncd: auth file refused: \(file): tokens[\(i)].token \(reason), and the server listens on \(options.server.host); use a long random token (openssl rand -hex 16)", to: 2)
            exit(1)
        }
    }
}
// TLS: the certificate is loaded now, so a bad file stops the start with its reason.
var selfSigned: (SelfSignedCertificate, String)?
do {
    if let certificate = options.tlsCertificate, let key = options.tlsKey {
        options.server.tls = try TLSContext.server(certificate: certificate, key: key)
    } else if options.tlsSelfSigned {
        let wildcard = options.server.host == "0.0.0.0" || options.server.host == "::"
        let addresses = (wildcard ? interfaceAddresses() : []) + (wildcard ? ["127.0.0.1", "::1"] : [options.server.host])
        let made = try SelfSignedCertificate(names: [], addresses: addresses)
        let file = try made.save()
        selfSigned = (made, file)
        options.server.tls = try TLSContext.server(made)
    }
} catch {
    say("navsyncd: TLS: \(error)", to: 2)
    exit(1)
}

if !options.jwtKeys.isEmpty {
    do {
        let keys = try JWTKeys(files: options.jwtKeys)
        if policy == nil { policy = AccessPolicy(grants: []) }
        policy!.jwt = JWTSettings(audience: options.jwtAudience)
        jwtKeys = keys
        jwtSummary = keys.summary
    } catch {
        say("navsyncd: \(error)", to: 2)
        exit(1)
    }
}

// libcurl (the backend's hooks and webhooks) sets itself up before any thread starts,
// and only when there is a backend: a server without --hooks never initializes it.
if options.hooksFile != nil { HTTPClient.setUp() }

let filesLimit = raiseOpenFilesLimit()
let wantedConnections = options.server.maxConnections
options.server.maxConnections = min(options.server.maxConnections, max(16, filesLimit - 64))
let connectionsCapped = options.server.maxConnections < wantedConnections

var store: DataStore?
var restored: [Session] = []
if let dir = options.dataDirectory, !options.wsEcho {
    do {
        (store, restored) = try DataStore.open(path: dir, sync: options.sync, repair: options.repair, snapshotEvery: options.snapshotEvery,
                                               flows: flows, configuration: options.hub, logger: Logger(level: options.server.logLevel))
    } catch {
        say("navsyncd: \(error)", to: 2)
        exit(1)
    }
}

var cluster: ClusterStore?
if let url = options.cluster {
    var host = [CChar](repeating: 0, count: 256)
    gethostname(&host, host.count)
    let hostname = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    do {
        cluster = try ClusterStore(url: url, node: options.node ?? "\(hostname)-\(options.server.port)", passwordFile: options.redisPasswordFile,
                                   waitReplicas: options.redisWait, waitTimeout: options.redisWaitTimeout,
                                   waitHold: options.redisWaitHold)
    } catch {
        say("navsyncd: \(error)", to: 2)
        exit(1)
    }
}

let application: ServerApplication
if options.wsEcho {
    application = EchoApplication()
} else {
    // Client ids are unique across a cluster: random, and long enough.
    let mode: Hub.Mode = if let cluster {
        .clustered(Hub.ClusterSettings(node: cluster.node, incarnation: cluster.incarnation,
                                       snapshotEvery: options.snapshotEveryGiven ? options.snapshotEvery : 10_000,
                                       confirmsWrites: cluster.waitReplicas > 0))
    } else if store != nil { .journaled } else { .plain }
    let hub = Hub(configuration: options.hub, flows: flows, policy: policy, restored: restored, mode: mode,
                  ids: .random(seed: UInt64.random(in: .min ... .max)))
    var hooks: HooksFile?
    if let file = options.hooksFile {
        do { hooks = try HooksFile.load(file) } catch {
            say("navsyncd: --hooks: \(error)", to: 2)
            exit(1)
        }
    }
    application = SessionServer(hub: hub, lagThreshold: options.lagThreshold,
                                allowedOrigins: options.allowedOrigins, authFile: options.authFile,
                                store: store, cluster: cluster, hooks: hooks, jwtKeys: jwtKeys)
}

let server: Server
do {
    server = try Server(configuration: options.server, application: application)
} catch {
    say("navsyncd: \(error)", to: 2)
    exit(1)
}
if connectionsCapped {
    server.logger.warn("the open-files limit is \(filesLimit): at most \(options.server.maxConnections) connections, not --max-connections \(wantedConnections); raise it (ulimit -n, LimitNOFILE= in a systemd unit; docs/operations.md)")
}
if !loopback && policy == nil { server.logger.warn("listening on \(server.host) with --insecure and no --auth: every client is admin") }
if lanToken != nil {
    server.logger.info("auth: --lan made one admin token for this run; connections without it may only hello and ping")
} else if let policy {
    let from = [options.authFile.map { "\(policy.grants.count) tokens from \($0)" }, policy.jwt.map { _ in "JWTs signed with \(jwtSummary)" }]
    server.logger.info("auth: \(from.compactMap { $0 }.joined(separator: ", ")); connections without a token may only hello and ping")
} else {
    server.logger.info("no auth file: every client is admin (loopback only, or --insecure)")
}
// On a wildcard address the first line names loopback (usable here); every address
// of the machine is listed after it.
let wildcard = server.host == "0.0.0.0" || server.host == "::"
let shownHost = wildcard ? (server.host == "::" ? "[::1]" : "127.0.0.1") : (server.host.contains(":") ? "[\(server.host)]" : server.host)
let (ws, web) = options.server.tls == nil ? ("ws", "http") : ("wss", "https")
say("navsyncd listening on \(ws)://\(shownHost):\(server.port)/ws (web: \(web)://\(shownHost):\(server.port)/)", to: 1)
if let (made, file) = selfSigned {
    say("TLS: a self-signed certificate for this run, in \(file) (clients: --cacert \(file))\n  SHA-256 fingerprint \(made.fingerprint)", to: 1)
}
let reachable = wildcard ? interfaceAddresses().filter { server.host == "::" || !$0.contains(":") } : [server.host]
if options.wsEcho {
    server.logger.info("--ws-echo: every WebSocket message is echoed back; no sessions")
} else {
    if let cluster {
        server.logger.info("cluster: node \(cluster.node), sessions live in Redis at \(cluster.url)\(cluster.waitReplicas > 0 ? ", acknowledged once \(cluster.waitReplicas) replicas have them" : "") (connecting)")
    } else if let store {
        server.logger.info("sessions are kept in \(store.path) (--fsync \(store.sync.rawValue)): \(restored.count) restored")
    } else {
        server.logger.info("sessions are in memory only: they are lost when navsyncd stops (--data DIR keeps them)")
    }
    server.logger.info("flows: \(([Flow.demo] + flows).map(\.name).joined(separator: ", "))\(options.hub.demoSession.map { "; session '\($0)' is ready to join" } ?? "")")
    if options.lan {
        lanHint(addresses: reachable, port: server.port, session: options.hub.demoSession ?? "demo", token: lanToken, scheme: web)
    } else if wildcard {
        server.logger.info("also reachable at: \(reachable.map { "\(web)://\($0.contains(":") ? "[\($0)]" : $0):\(server.port)/" }.joined(separator: " "))")
    }
    if let demo = options.hub.demoSession, !options.lan {
        let cacert = selfSigned.map { " --cacert \($0.1)" } ?? ""
        server.logger.info("try it: open \(server.httpURL)?session=\(demo) in a browser\(selfSigned == nil ? "" : " (it will ask you to accept the certificate)"), or run: navclient \(server.webSocketURL) --session \(demo)\(cacert)")
    }
}
server.run()
// The certificate made for this run goes with it.
if let (_, file) = selfSigned {
    unlink(file)
    rmdir(String(file[..<(file.lastIndex(of: "/") ?? file.endIndex)]))
}
server.logger.info("stopped")
exit(0)

/// --lan: the page's URL for each address of this machine, with the token, and a QR
/// code of the first when `qrencode` is installed (to standard output: for people).
func lanHint(addresses: [String], port: Int, session: String, token: String?, scheme: String) {
    guard !addresses.isEmpty else {
        return say("navsyncd: --lan: this machine has no network address besides loopback", to: 1)
    }
    let query = "?session=\(session)" + (token.map { "&token=\($0)" } ?? "")
    let urls = addresses.map { "\(scheme)://\($0.contains(":") ? "[\($0)]" : $0):\(port)/\(query)" }
    say("\nOpen the device page on any phone or computer of this network\(token == nil ? " (tokens from --auth)" : " (the token is for this run only)"):", to: 1)
    for url in urls { say("  \(url)", to: 1) }
    if token != nil { say("Without the token, access is refused. From this machine: navclient \(scheme == "https" ? "wss" : "ws")://127.0.0.1:\(port)/ws --session \(session) --token \(token!)", to: 1) }
    if system("command -v qrencode >/dev/null 2>&1") == 0 {
        say("", to: 1)
        _ = system("qrencode -t ANSIUTF8 '\(urls[0])'")
    } else {
        say("(apt-get install qrencode to get a QR code of the link here)", to: 1)
    }
}
