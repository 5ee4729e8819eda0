// navsync-bench: how fast the pure core applies commands, and how big its patches are.
import Glibc
// Prints figures; asserts nothing. Run in release mode:
//
//     swift run -c release navsync-bench [--commands N] [--rounds R]
//
// Each workload runs R rounds (plain and encoded alternating) and prints the median
// and the best round: on a shared machine the median is the fair figure, and the best
// is the nearest to the core's own speed (noise only ever slows a round down).
//
// Each workload runs on the demo flow (or, with --unguarded, the demo without its guards:
// what a flow without guards costs) through `Sequencer.submit`, which is everything
// a session does per command except the network: decode the ops, resolve, apply on a
// copy, diff to a JSON Patch, update conflict bookkeeping and the idempotency table,
// append to the patch log. "+encode" also writes the patch message into its WebSocket
// frame once, as the server does before queueing the frame on every member.
import CUV
import NavSync
import NavSyncServer
import NavSyncRuntime
import NavSyncLibuv

var commands = 200_000
var only: String?
var history = 10_000
var rounds = 5
var unguarded = false
var args = CommandLine.arguments.dropFirst()
while let arg = args.popFirst() {
    switch arg {
    case "--commands": commands = Int(args.popFirst() ?? "") ?? commands
    case "--only": only = args.popFirst()
    case "--history": history = Int(args.popFirst() ?? "") ?? history
    case "--rounds": rounds = max(1, Int(args.popFirst() ?? "") ?? rounds)
    case "--unguarded": unguarded = true
    case "-h", "--help":
        print("usage: navsync-bench [--commands N] [--rounds R] [--only WORKLOAD-PREFIX] [--history N] [--unguarded]   (defaults 200000, 5, all, 10000 as navsyncd; build with -c release)")
        exit(0)
    default:
        print("navsync-bench: unknown argument '\(arg)' (try --help)")
        exit(2)
    }
}

/// The demo flow, or the demo with its guards taken out (`--unguarded`).
let flow: Flow = {
    guard unguarded else { return .demo }
    func strip(_ v: JSON) -> JSON {
        switch v {
        case .object(let o): return .object(JSONObject(o.keys.filter { $0 != "guards" && $0 != "guard" }.map { ($0, strip(o[$0]!)) }))
        case .array(let a): return .array(a.map(strip))
        default: return v
        }
    }
    return try! Flow.load(strip(Flow.demo.source))
}()

struct Workload {
    let name: String
    /// The ops of command number i.
    let ops: (Int) -> [JSON]
}

let push: JSON = ["op": "push", "route": "detail", "params": ["id": 42]]
let workloads: [Workload] = [
    Workload(name: "push/pop (simple)") { i in i % 2 == 0 ? [push] : [["op": "pop"]] },
    Workload(name: "select tab") { i in [["op": "select", "index": .int(Int64(i % 4))]] },
    Workload(name: "update data") { i in [["op": "update", "data": ["n": .int(Int64(i)), "q": "shoes"]]] },
    Workload(name: "present+push / dismiss") { i in
        i % 2 == 0 ? [["op": "present", "route": "settings"], ["op": "push", "route": "about"]] : [["op": "dismiss"]]
    },
    Workload(name: "deep link /product/:id") { i in [["op": "open", "url": .string("/product/\(i)?note=x")]] },
]

/// Runs `count` commands of the workload; returns commands per second and the mean
/// size of the patch frame of an applied command (when `encode`).
func measure(_ w: Workload, count: Int, encode: Bool, history: Int) -> (perSecond: Double, patchBytes: Double) {
    var seq = Sequencer(flow: flow, epoch: "bench", historyCapacity: history)
    _ = seq.submit(Command(id: .int(-1), ops: [["op": "setRoot", "route": "main"]]), client: "bench")
    // Commands are built up front: the figure is the core's, not the benchmark's.
    let prepared = (0..<count).map { Command(id: .int(Int64($0)), ops: w.ops($0)) }
    var bytes = 0
    var applied = 0
    let elapsed = ContinuousClock().measure {
        for command in prepared {
            guard case .applied(_, let patch) = seq.submit(command, client: "bench") else { continue }
            applied += 1
            if encode { bytes += OutgoingBuffer(text: .patch(session: "bench", patch)).count }
        }
    }
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return (Double(count) / seconds, Double(bytes) / Double(max(applied, 1)))
}

#if DEBUG
print("warning: debug build; figures are meaningless. Use: swift run -c release navsync-bench")
#endif
print("navsync-bench: \(commands) commands per workload and round, \(rounds) rounds, demo flow\(unguarded ? " without its guards" : " (guarded)"), one core, history of \(history) revisions")
print("workload                         commands/s median   best   +encode median    best   patch frame bytes/cmd")
for w in workloads where only.map({ w.name.hasPrefix($0) }) ?? true {
    var plain: [Double] = [], encoded: [Double] = []
    var patchBytes = 0.0
    for _ in 0..<rounds {
        plain.append(measure(w, count: commands, encode: false, history: history).perSecond)
        let e = measure(w, count: commands, encode: true, history: history)
        encoded.append(e.perSecond)
        patchBytes = e.patchBytes
    }
    plain.sort()
    encoded.sort()
    let name = w.name.padding(toLength: 32, withPad: " ", startingAt: 0)
    let figures = [plain[plain.count / 2], plain.last!, encoded[encoded.count / 2], encoded.last!]
        .map { String(Int($0)).leftPad(8) }
    print("\(name)        \(figures[0]) \(figures[1])        \(figures[2]) \(figures[3])   \(format1(patchBytes).leftPad(21))")
}

/// History (docs/protocol.md, "History"): the state of random revisions of a full history,
/// and the memory a held revision costs (RSS with history on, less with it off).
@MainActor func historyFigures() {
    func rssKiB() -> Int {
        // Freed memory goes back to the system first: the workloads before this one
        // leave free heap behind that the sequencers built here would otherwise reuse.
        malloc_trim(0)
        guard let bytes = FileSystem.read("/proc/self/statm"),
              let pages = Int(String(decoding: bytes, as: UTF8.self).split(separator: " ")[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
    }
    let held = 10_000
    func build(_ capacity: Int) -> Sequencer {
        var seq = Sequencer(flow: .demo, epoch: "h", historyCapacity: capacity)
        _ = seq.submit(Command(id: .int(-1), ops: [["op": "setRoot", "route": "main"]]), client: "bench")
        for i in 0..<(held + 1000) {
            let ops: [JSON] = switch i % 4 {
            case 0: [push]
            case 1: [["op": "update", "data": ["n": .int(Int64(i))]]]
            case 2: [["op": "select", "index": .int(Int64(i % 3))]]
            default: [["op": "pop"]]
            }
            _ = seq.submit(Command(id: .int(Int64(i)), ops: ops), client: "bench", sender: .init(name: "bench", ts: Int64(i)))
        }
        return seq
    }
    let base = rssKiB()
    let off = build(0)
    let afterOff = rssKiB()
    let on = build(held)
    let afterOn = rssKiB()
    withExtendedLifetime(off) {}
    let perRevision = Double((afterOn - afterOff) - (afterOff - base)) * 1024 / Double(held)
    var rng = SystemRandomNumberGenerator()
    var times: [Double] = []
    let current = on.state.json
    for _ in 0..<2000 {
        let rev = Int.random(in: on.history.earliest...on.rev, using: &rng)
        let t = ContinuousClock().measure { _ = try? on.history.state(at: rev, current: current) }
        times.append(Double(t.components.attoseconds) / 1e12 + Double(t.components.seconds) * 1e6)
    }
    times.sort()
    print("history: \(held) revisions held (of \(on.rev)); get rev of random revisions: " +
          "median \(format1(times[times.count / 2])) µs, p99 \(format1(times[times.count * 99 / 100])) µs; " +
          "about \(Int(perRevision)) bytes of memory per held revision")

    // What history costs push/pop (patch encoded): alternating pairs, on then off, so
    // that a noisy machine slows both alike; the median of the pairs' ratios.
    var ratios: [Double] = []
    for _ in 0..<15 {
        let on = measure(workloads[0], count: 60_000, encode: true, history: held)
        let off = measure(workloads[0], count: 60_000, encode: true, history: 0)
        ratios.append(on.perSecond / off.perSecond)
    }
    ratios.sort()
    print("history: push/pop (+encode) with \(held) revisions held / with history off: median \(format2(ratios[ratios.count / 2])) " +
          "over \(ratios.count) alternating pairs (range \(format2(ratios.first!))–\(format2(ratios.last!)))")
}

if only == nil || only == "history" { historyFigures() }


func format1(_ d: Double) -> String { String(Double(Int(d * 10)) / 10) }
func format2(_ d: Double) -> String { String(Double(Int((d * 100).rounded())) / 100) }

extension String {
    func leftPad(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
    func padding(toLength n: Int, withPad pad: String, startingAt: Int) -> String {
        count >= n ? String(prefix(n)) : self + String(repeating: pad, count: n - count)
    }
}
