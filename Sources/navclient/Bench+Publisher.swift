import Foundation
import NavSync
import NavSyncLibuv

extension Bench {
    /// One publisher: commands in a window of `inFlight`, or at a fixed rate. With
    /// several publishers in a session, publisher `index` of N sends ids n·N + index, so
    /// ids stay unique per session (the members' latency bookkeeping keys on them).
    final class Publisher {
        let client: WebSocketClient
        let session: String
        let index: Int
        let bench: Bench
        let stats: PublisherStats
        unowned let loop: ClientLoop
        var next: Int64 = 0
        var inFlight = 0
        var stopped = false
        var sentAt: [Int64: UInt64] = [:]
        /// Called after each ack or error.
        var onAnswered: (() -> Void)?

        init(loop: ClientLoop, url: WebSocketURL, session: String, index: Int, bench: Bench, stats: PublisherStats) {
            self.loop = loop
            client = WebSocketClient(loop: loop, url: url)
            self.session = session
            self.index = index
            self.bench = bench
            self.stats = stats
        }

        func start() {
            client.onOpen = { [weak self] in
                guard let self else { return }
                if let rate = bench.rate {
                    // Every 10 ms, the commands due by the clock since the start: a timer
                    // that fires late (a busy loop) does not lower the rate. (Counting
                    // rate/100 per tick sent 4,915 commands in 10 s at `--rate 500`.)
                    let start = monotonicNanoseconds()
                    var sent = 0
                    loop.every(10) { [weak self] in
                        let due = Int(Double(monotonicNanoseconds() &- start) / 1e9 * rate)
                        while sent < due { self?.send(); sent += 1 }
                    }
                } else {
                    fill()
                }
            }
            client.onText = { [weak self] bytes in
                guard let self else { return }
                // Acks are read without a full parse, so the load generator stays light.
                let id: Int64
                let isAck: Bool
                var code = "?"
                if let ackID = Bench.ackID(bytes) {
                    (id, isAck) = (ackID, true)
                } else {
                    guard let m = try? JSON.parse(bytes), let mid = m["id"]?.intValue else { return }
                    (id, isAck) = (mid, m["type"] == "ack")
                    code = m["code"]?.stringValue ?? "?"
                }
                if let sent = sentAt[id] {
                    stats.ackLatencies.append(monotonicNanoseconds() &- sent)
                    inFlight -= 1
                }
                if isAck { stats.acked += 1 } else { stats.errors[code, default: 0] += 1 }
                if bench.rate == nil { fill() }
                onAnswered?()
            }
            client.onClose = { [weak self] _, reason in
                guard let self, !stopped else { return }
                stats.failure = reason
                loop.stop()
            }
            client.connect()
        }

        func stop() {
            guard !stopped else { return }
            stopped = true
            stats.sent[session, default: [:]].merge(sentAt) { a, _ in a }
            onAnswered = nil   // it captures every publisher
            client.close()
        }

        private func fill() {
            while !stopped && inFlight < bench.inFlight && (bench.commands.map { next < Int64($0) } ?? true) { send() }
        }

        private func send() {
            guard !stopped, bench.commands.map({ next < Int64($0) }) ?? true else { return }
            // The first command opens the main screen; then push and pop alternate (or,
            // with --update, the session's product list is replaced).
            let op = next == 0 ? #"{"op":"setRoot","route":"main"}"#
                : bench.updateBytes.map { Bench.productListUpdate(bytes: $0, seed: Int(next)) }
                ?? (next % 2 == 1 ? #"{"op":"push","route":"detail","params":{"id":7}}"# : #"{"op":"pop"}"#)
            let id = next * Int64(bench.publishers) + Int64(index)
            let text = #"{"type":"command","session":"\#(session)","id":\#(id),"ops":[\#(op)]}"#
            sentAt[id] = monotonicNanoseconds()
            client.send(text: Array(text.utf8))
            next += 1
            inFlight += 1
        }
    }

    /// The id of an ack (`{"type":"ack","id":N,...}`, as the server writes it), or nil.
    static func ackID(_ bytes: [UInt8]) -> Int64? {
        bytes.withUnsafeBufferPointer { b -> Int64? in
            guard startsWith(b, ackPrefix), let (value, end) = digits(in: b, at: ackPrefix.count), end < b.count, b[end] == 44 else { return nil }
            return value
        }
    }

    static let ackPrefix = Array(#"{"type":"ack","id":"#.utf8)
}

extension Bench {
    /// `--update BYTES`: an `update` of the session's data with a product list of about
    /// `bytes` of JSON, as a shop's screen carries it (names, prices, stock, tags), its
    /// prices and stock changing with `seed`, so every command is a real change.
    static func productListUpdate(bytes: Int, seed: Int) -> String {
        let names = ["Trail Runner", "City Sneaker", "Rain Jacket", "Wool Beanie", "Canvas Tote", "Desk Lamp", "Travel Mug", "Day Pack"]
        let colors = ["black", "blue", "green", "sand", "red", "grey"]
        var items: [String] = []
        var size = 0
        var i = 0
        while size < bytes - 64 {
            let price = 19 + (i * 37 + seed * 7) % 180
            let item = #"{"id":\#(1000 + i),"name":"\#(names[i % names.count]) \#(i / names.count + 2)","color":"\#(colors[(i + seed) % colors.count])","price":\#(price).\#(i % 10)9,"stock":\#((i * 13 + seed) % 40),"tags":["\#(i % 2 == 0 ? "new" : "sale")","\#(colors[i % colors.count])"]}"#
            items.append(item)
            size += item.utf8.count + 1
            i += 1
        }
        return #"{"op":"update","scope":"session","data":{"products":[\#(items.joined(separator: ","))],"page":\#(seed % 5)}}"#
    }
}
