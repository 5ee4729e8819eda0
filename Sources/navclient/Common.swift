import Foundation
import NavSync

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
        + ack.redirects.map { "\n  redirected: op \($0.op), guard \($0.guard) -> \($0.link)" }.joined()
}

/// The error a request's reply carries, in navclient's words; nil for any other reply.
func errorText(of reply: JSON) -> String? {
    guard reply["type"] == "error" else { return nil }
    return "\(reply["code"]?.stringValue ?? "error"): \(inNavclientTerms(reply["message"]?.stringValue ?? ""))"
}

/// `history` and `get` with `rev`, as requests (docs/protocol.md, "History").
func historyRequest(_ session: String, limit: Int) -> JSONObject {
    ClientRequest.encode(.history(session: session, before: nil, limit: limit)).objectValue!
}

func revisionRequest(_ session: String, rev: Int) -> JSONObject {
    ClientRequest.encode(.getRevision(session: session, rev: rev)).objectValue!
}

func describe(_ e: NavError) -> String {
    let guarded = e.guarded.map { " [guard \($0.guard), route \($0.route), \($0.entry)]" } ?? ""
    return (e.op.map { "op \($0): " } ?? "") + "\(e.code.rawValue): \(inNavclientTerms(e.message))" + guarded
}

/// The server's hints name protocol fields (any client may read them); navclient's
/// users need its own flags and commands instead.
func inNavclientTerms(_ message: String) -> String {
    let hints: [(String, String)] = [
        (#"send "create": true to make it"#, "--create makes it (at the prompt: create NAME)"),
        (#"send one in hello ("token"), an Authorization: Bearer header, or ?token= on the upgrade"#, "pass --token TOKEN"),
        ("this needs a valid token: Authorization: Bearer TOKEN", "this needs a valid token: pass --token TOKEN"),
    ]
    var text = message
    for (protocolHint, flag) in hints { text = text.replacing(protocolHint, with: flag) }
    return text
}
