import Foundation
import NavSync

/// Flags every subcommand shares (DESIGN.md section 12).
struct CommonOptions {
    var url = WebSocketURL.default
    var session = "demo"
    var name = "navclient"
    var token: String?
    var json = false
    var create = false
    var flow: String?
    /// Arguments that are neither the URL nor a flag (the commands of `exec`).
    var rest: [String] = []

    static let help = """
      URL                ws://HOST:PORT/ws or HOST:PORT (default ws://127.0.0.1:7420/ws)
      --session NAME     the session (default demo)
      --create           create the session if it does not exist
      --flow NAME        the flow of a session created with --create
      --name NAME        the name others see for this client (default navclient)
      --token TOKEN      an access token, for servers with an auth file
      --json             machine-readable output
    """

    static func parse(_ args: [String]) -> Result<CommonOptions, UsageError> {
        var o = CommonOptions()
        var rest = args[...]
        var sawURL = false
        while let arg = rest.popFirst() {
            func value() -> String? { rest.popFirst() }
            switch arg {
            case "--session":
                guard let v = value(), ClientRequest.isValidSessionName(v) else { return .failure(UsageError("--session needs a name (letters, digits, -_.:)")) }
                o.session = v
            case "--name":
                guard let v = value() else { return .failure(UsageError("--name needs a name")) }
                o.name = v
            case "--token":
                guard let v = value() else { return .failure(UsageError("--token needs a token")) }
                o.token = v
            case "--flow":
                guard let v = value() else { return .failure(UsageError("--flow needs a flow name")) }
                o.flow = v
            case "--json": o.json = true
            case "--create": o.create = true
            case "-h", "--help": return .failure(.help)
            default:
                if arg.hasPrefix("--") { return .failure(UsageError("unknown option '\(arg)'")) }
                if !sawURL && o.rest.isEmpty, let url = WebSocketURL(arg), arg.contains(":") || arg.contains("/") && !arg.contains(" ") {
                    o.url = url
                    sawURL = true
                } else {
                    o.rest.append(arg)
                }
            }
        }
        return .success(o)
    }

    func sessionOptions(reconnect: Bool) -> SessionClient.Options {
        var s = SessionClient.Options()
        s.url = url
        s.session = session
        s.name = name
        s.create = create
        s.flow = flow
        s.reconnect = reconnect
        return s
    }
}

/// Exit codes, the same for every subcommand.
enum Exit {
    static let ok: Int32 = 0
    /// A command was refused by the server, or could not be parsed.
    static let commandFailed: Int32 = 1
    static let usage: Int32 = 2
    /// The server could not be reached, or refused the session.
    static let unreachable: Int32 = 3
}

/// One line to standard output, written at once (scripts read it as it comes).
func printLine(_ text: String) {
    let bytes = Array((text + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

/// Words for an op result list: "rev 5: applied".
func describe(_ ack: Ack) -> String {
    "rev \(ack.rev): \(ack.results.map(\.rawValue).joined(separator: ", "))"
}

func describe(_ e: NavError) -> String {
    (e.op.map { "op \($0): " } ?? "") + "\(e.code.rawValue): \(e.message)"
}
