import NavSync

/// navsyncd's command line (DESIGN.md section 12) -> a ServerConfiguration.
struct Options {
    var server = ServerConfiguration()
    var hub = HubConfiguration()
    /// Queued bytes past which a member stops getting patches until it drains.
    var lagThreshold = 1 << 20
    var wsEcho = false
    var insecure = false
    var flowsDirectory: String?

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
      --handshake-timeout MS  an HTTP connection must finish its request/handshake in this long (default 10000)
      --ping-interval MS      ping a WebSocket silent this long (default 30000)
      --dead-timeout MS       drop a WebSocket silent this long, pings unanswered (default 60000)
      --max-sessions N        sessions the server holds (default 1000)
      --max-members N         members of one session (default 10000)
      --max-ops N             operations in one command (default 64)
      --rate N                commands per second per connection (default 200)
      --burst N               commands a connection may send in a burst (default 400)
      --patch-log N           patches kept per session for catch-up with since (default 1024)
      --lag-threshold BYTES   a member with this much output queued stops getting patches
                              and gets a snapshot once it drains (default 1048576)
      --no-demo-session       do not create the session "demo" at start
      --log-level LEVEL       debug, info, warn, error or off (default info)
      --ws-echo               run only the WebSocket layer: echo every message back
                              (for conformance suites such as Autobahn)
      --insecure              allow listening beyond loopback without --auth
      -h, --help              show this help

    The first line on standard output names the real address:
      navsyncd listening on ws://HOST:PORT/ws (web: http://HOST:PORT/)
    SIGINT and SIGTERM close every connection with 1001 and exit 0.

    exit codes: 0 after a clean shutdown, 1 if the server cannot start, 2 for bad usage.
    """

    enum ParseResult {
        case run(Options)
        case help
        case usageError(String)
    }

    static func parse(_ arguments: [String]) -> ParseResult {
        var o = Options()
        var args = arguments[...]
        func value(_ flag: String) -> String? { args.popFirst() }
        func number(_ flag: String, _ text: String?, min: Int64 = 0) -> Int64? {
            guard let text, let n = Int64(text), n >= min else { return nil }
            return n
        }
        while let arg = args.popFirst() {
            // --flag=value is accepted too.
            var flag = arg
            if arg.hasPrefix("--"), let eq = arg.firstIndex(of: "=") {
                flag = String(arg[..<eq])
                args.insert(String(arg[arg.index(after: eq)...]), at: args.startIndex)
            }
            switch flag {
            case "-h", "--help": return .help
            case "--host":
                guard let v = value(flag), !v.isEmpty else { return .usageError("--host needs an address") }
                o.server.host = v.hasPrefix("[") && v.hasSuffix("]") ? String(v.dropFirst().dropLast()) : v
            case "--port":
                guard let n = number(flag, value(flag)), n <= 65535 else { return .usageError("--port needs a number from 0 to 65535") }
                o.server.port = Int(n)
            case "--flows":
                guard let v = value(flag) else { return .usageError("--flows needs a directory") }
                o.flowsDirectory = v
            case "--max-message":
                guard let n = number(flag, value(flag), min: 1024), n <= 1 << 30 else { return .usageError("--max-message needs a byte count from 1024 to 1073741824") }
                o.server.connection.maxMessage = Int(n)
                o.hub.limits.maxMessage = Int(n)
            case "--max-queue":
                guard let n = number(flag, value(flag), min: 64 * 1024) else { return .usageError("--max-queue needs a byte count of at least 65536") }
                o.server.maxQueueBytes = Int(n)
            case "--write-timeout":
                guard let n = number(flag, value(flag), min: 100) else { return .usageError("--write-timeout needs milliseconds (at least 100)") }
                o.server.writeTimeout = n
            case "--handshake-timeout":
                guard let n = number(flag, value(flag), min: 100) else { return .usageError("--handshake-timeout needs milliseconds (at least 100)") }
                o.server.connection.handshakeTimeout = n
            case "--ping-interval":
                guard let n = number(flag, value(flag), min: 100) else { return .usageError("--ping-interval needs milliseconds (at least 100)") }
                o.server.connection.pingInterval = n
            case "--dead-timeout":
                guard let n = number(flag, value(flag), min: 100) else { return .usageError("--dead-timeout needs milliseconds (at least 100)") }
                o.server.connection.deadTimeout = n
            case "--max-sessions":
                guard let n = number(flag, value(flag), min: 1) else { return .usageError("--max-sessions needs a number of at least 1") }
                o.hub.maxSessions = Int(n)
            case "--max-members":
                guard let n = number(flag, value(flag), min: 1) else { return .usageError("--max-members needs a number of at least 1") }
                o.hub.maxMembers = Int(n)
            case "--max-ops":
                guard let n = number(flag, value(flag), min: 1), n <= 10_000 else { return .usageError("--max-ops needs a number from 1 to 10000") }
                o.hub.limits.model.maxOps = Int(n)
            case "--rate":
                guard let n = number(flag, value(flag), min: 1) else { return .usageError("--rate needs commands per second (at least 1)") }
                o.hub.commandRate = Double(n)
            case "--burst":
                guard let n = number(flag, value(flag), min: 1) else { return .usageError("--burst needs a number of at least 1") }
                o.hub.commandBurst = Int(n)
            case "--patch-log":
                guard let n = number(flag, value(flag), min: 1000) else { return .usageError("--patch-log needs a number of at least 1000") }
                o.hub.patchLog = Int(n)
            case "--lag-threshold":
                guard let n = number(flag, value(flag), min: 4096) else { return .usageError("--lag-threshold needs a byte count of at least 4096") }
                o.lagThreshold = Int(n)
            case "--no-demo-session": o.hub.demoSession = nil
            case "--log-level":
                guard let v = value(flag), let level = Logger.Level(name: v) else { return .usageError("--log-level needs debug, info, warn, error or off") }
                o.server.logLevel = level
            case "--ws-echo": o.wsEcho = true
            case "--insecure": o.insecure = true
            case "--data", "--fsync", "--auth", "--allow-origin":
                return .usageError("\(flag) is not available in this build yet (see README: what is built so far)")
            default:
                return .usageError("unknown option '\(arg)'")
            }
        }
        o.hub.heartbeat = Int(max(1, o.server.connection.pingInterval / 1000))
        if o.lagThreshold >= o.server.maxQueueBytes {
            return .usageError("--lag-threshold must be below --max-queue")
        }
        if o.server.connection.deadTimeout <= o.server.connection.pingInterval {
            return .usageError("--dead-timeout must be longer than --ping-interval")
        }
        return .run(o)
    }
}
