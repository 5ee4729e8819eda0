// navclient: the terminal front of navsync. Parses the subcommand and its flags, then
// runs it on the NavSync client runtime.
import Foundation
import NavSync

let usage = """
usage: navclient [URL] [options]                   interactive: the live tree and a prompt
       navclient exec [URL] [options] COMMAND...   run commands in order, stop at the first error
       navclient watch [URL] [options]             print the tree on every change (--json: every message)
       navclient get [URL] [options]               print the state once (--json: as JSON)
       navclient sessions [URL] [--json]           list the server's sessions
       navclient delete [URL] [options] NAME       delete a session (admin); its members are told
       navclient bench [URL] [options]             load generator (navclient bench --help)
       navclient log [URL] [options] [--from REV]  the session's recording (NDJSON) to standard output
       navclient replay FILE [URL] [options] [--speed X | --step] [--verify]
                                                   send a recording again, in order, onto --session
                                                   (default: the recording's); --speed 0 does not pause;
                                                   --verify stops at the first revision that differs

options:
\(ClientOptions.help)

COMMANDs are what the prompt takes: push detail id=42, back, pop 2, present settings,
select index=1, open /product/42, alert "Sure?", respond ok, update q=shoes, history,
show 3, restore 3, undo, help.
Without a subcommand and with standard input not a terminal, commands are read from it,
one per line.

exit codes: 0 done, 1 a command failed, 2 bad usage, 3 the server could not be reached
or refused the session.
"""

var arguments = Array(CommandLine.arguments.dropFirst())
let subcommands = ["exec", "watch", "get", "sessions", "delete", "bench", "log", "replay", "help"]
let command = arguments.first.flatMap { subcommands.contains($0) ? $0 : nil }
if command != nil { arguments.removeFirst() }

func common(_ arguments: [String]) -> ClientOptions {
    switch ClientOptions.parse(arguments) {
    case .success(let o): return o
    case .failure(let e) where e.message.isEmpty:
        print(usage)
        exit(Exit.ok)
    case .failure(let e):
        Stderr.line("navclient: \(e.message)\n(try navclient --help)")
        exit(Exit.usage)
    }
}

switch command {
case "bench":
    switch Bench.parse(arguments) {
    case .success(let bench): exit(bench.run())
    case .failure(let e) where e.message.isEmpty:
        print(Bench.usage)
        exit(Exit.ok)
    case .failure(let e):
        Stderr.line("navclient bench: \(e.message)\n(try navclient bench --help)")
        exit(Exit.usage)
    }
case "help":
    print(usage)
    exit(Exit.ok)
case "log", "replay":
    // Their own flags first; the rest are navclient's usual options.
    var from: Int?, speed = 1.0, step = false, verify = false, rest: [String] = []
    var args = arguments[...]
    while let arg = args.popFirst() {
        switch arg {
        case "--from" where command == "log":
            guard let v = args.popFirst().flatMap(Int.init), v >= 0 else { Stderr.line("navclient log: --from takes a revision"); exit(Exit.usage) }
            from = v
        case "--speed" where command == "replay":
            guard let v = args.popFirst().flatMap(Double.init), v >= 0 else { Stderr.line("navclient replay: --speed takes a factor (0: no pauses)"); exit(Exit.usage) }
            speed = v
        case "--step" where command == "replay": step = true
        case "--verify" where command == "replay": verify = true
        default: rest.append(arg)
        }
    }
    // replay's FILE: the first argument that names a file (the rest may hold the URL).
    var file: String?
    if command == "replay", let i = rest.firstIndex(where: { !$0.hasPrefix("-") && FileManager.default.fileExists(atPath: $0) }) {
        file = rest.remove(at: i)
    }
    let o = common(rest)
    if command == "log" {
        guard o.rest.isEmpty else { Stderr.line("navclient log: unexpected '\(o.rest[0])'"); exit(Exit.usage) }
        exit(Recording.log(o, from: from))
    }
    guard let file, o.rest.isEmpty else {
        Stderr.line("navclient replay: name one recording file that exists, e.g. navclient replay bug.navsync-log --verify" + (o.rest.first.map { " (not '\($0)')" } ?? ""))
        exit(Exit.usage)
    }
    exit(Recording.replay(o, file: file, sessionGiven: rest.contains("--session"), speed: speed, step: step, verify: verify))
case "exec":
    let o = common(arguments)
    guard !o.rest.isEmpty else {
        Stderr.line("navclient exec: give at least one command, e.g. navclient exec 'push detail id=42'")
        exit(Exit.usage)
    }
    exit(Scripted.exec(o, commands: o.rest))
case "watch":
    exit(Scripted.watch(common(arguments)))
case "get":
    exit(Scripted.get(common(arguments)))
case "sessions":
    exit(Scripted.sessions(common(arguments)))
case "delete":
    let o = common(arguments)
    guard o.rest.count == 1, ClientRequest.isValidSessionName(o.rest[0]) else {
        Stderr.line("navclient delete: name one session, e.g. navclient delete lab-1")
        exit(Exit.usage)
    }
    exit(Scripted.delete(o, session: o.rest[0]))
default:
    let o = common(arguments)
    if !o.rest.isEmpty {
        Stderr.line("navclient: unknown command '\(o.rest[0])'\n(try navclient --help)")
        exit(Exit.usage)
    }
    if let interactive = Interactive(o) { exit(interactive.run()) }
    exit(Scripted.stdinScript(o))
}
