// navclient: the terminal front of navsync. Parses the subcommand and its flags, then
// runs it on the NavSync client runtime.
import Foundation
import NavSync

let usage = """
usage: navclient <command> [URL] [options]

commands:
  bench      load generator: members, publishers, latency percentiles (navclient bench --help)

URL is ws://HOST:PORT/ws or HOST:PORT (default ws://127.0.0.1:7420/ws).
"""

var arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else {
    Stderr.line(usage)
    exit(2)
}
arguments.removeFirst()

switch command {
case "bench":
    switch Bench.parse(arguments) {
    case .success(let bench): exit(bench.run())
    case .failure(let e) where e.message.isEmpty:
        print(Bench.usage)
        exit(0)
    case .failure(let e):
        Stderr.line("navclient bench: \(e.message)\n(try navclient bench --help)")
        exit(2)
    }
case "-h", "--help", "help":
    print(usage)
    exit(0)
default:
    Stderr.line("navclient: unknown command '\(command)'\n\n\(usage)")
    exit(2)
}
