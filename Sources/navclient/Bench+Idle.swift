import Foundation
import NavSync
import NavSyncLibuv

extension Bench {
    /// `--idle N`: N idle connections (joined with `--join`), and the server memory
    /// each one costs, read from /proc 3 s after the last is in.
    func runIdle(_ count: Int) -> Int32 {
        let loop = makeLoop()
        let before = ProcessStats.read(pid)
        var joined = 0
        var failures = 0
        var clients: [WebSocketClient] = []
        var lastReason = ""
        // Memory is read 3 s after the last connection is in: the server hands memory
        // freed after the join burst back to the system once it is idle.
        func check() { if joined + failures == count { loop.after(3_000) { loop.stop() } } }
        for i in 0..<count {
            let c = WebSocketClient(loop: loop, url: url)
            let join = idleJoin
            c.onOpen = {
                let message = join ? #"{"type":"join","session":"idle-\#(i % 10)","create":true}"# : #"{"type":"hello","name":"idle"}"#
                c.send(text: Array(message.utf8))
            }
            c.onText = { bytes in
                if Bench.isPresence(bytes) { return }
                let type = (try? JSON.parse(bytes))?["type"]
                if type == "joined" || type == "welcome" { joined += 1; check() }
            }
            c.onClose = { _, reason in failures += 1; lastReason = reason; check() }
            clients.append(c)
            c.connect()
        }
        loop.every(1000) { progress("idle: \(joined)/\(count) joined, \(failures) failed") }
        loop.run()
        let after = ProcessStats.read(pid)
        printLine("navclient bench --idle: \(joined) idle connections \(idleJoin ? "joined" : "open"), \(failures) failed\(failures > 0 ? " (\(lastReason))" : "")")
        if let before, let after, joined > 0 {
            let perConnection = Double(after.rssKiB - before.rssKiB) * 1024 / Double(joined)
            printLine(String(format: "  server RSS %d KiB -> %d KiB: %.1f KiB per connection", before.rssKiB, after.rssKiB, perConnection / 1024))
        }
        loop.shutdown()
        return failures > 0 && joined == 0 ? 1 : 0
    }
}
