import NavSyncLibuv
import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport
@testable import NavSyncRuntime

/// `joined` messages sent in parts: the parts, queued in order, are the message's one
/// frame byte for byte, and the parts a session's joins share are made once.
@Suite("Joined frames")
struct JoinedFramesTests {
    static func bytes(_ parts: [OutgoingBuffer]) -> [UInt8] {
        parts.flatMap { Array($0.bytes.prefix($0.count)) }
    }

    static func whole(_ message: ServerMessage, _ id: JSON?) -> [UInt8] {
        let frame = OutgoingBuffer(text: message, id: id)
        return Array(frame.bytes.prefix(frame.count))
    }

    /// Joins from the hub (listing growing, full with a count of others, changed by a
    /// leave and a role, the state changed by commands): each sent in parts is its frame.
    @Test func partsAreTheFrame() {
        let f = HubFixture { $0.presenceDetail = 4 }
        var frames = JoinedFrames()
        var sent = 0
        func check(_ effects: [Hub.Effect]) {
            for case .send(_, let m, let id) in effects {
                guard case .joined = m else { continue }
                let parts = frames.frame(m, id: id)
                #expect(parts != nil)
                #expect(parts.map(Self.bytes) == Self.whole(m, id), "\(m.json(id: id))")
                sent += 1
            }
        }
        var first: Int?
        for i in 0..<9 {
            let c = f.connect()
            first = first ?? c
            if i == 6 { _ = f.send(c, ["type": "hello", "role": "controller"]) }
            if i == 3 { _ = f.send(first!, ["type": "leave", "session": "demo"]) }
            check(f.send(c, ["type": "join", "session": "demo", "id": i % 2 == 0 ? .int(Int64(i)) : nil]))
            if i % 3 == 1 {
                _ = f.send(c, ["type": "command", "session": "demo", "id": .int(Int64(100 + i)),
                               "ops": [["op": "setRoot", "route": i == 4 ? "login" : "main"]]])
            }
        }
        #expect(sent == 9)
    }

    /// Joins of one session at one revision share the flow, the listing once it is full
    /// (while it lists everybody it changes with every join), and the state; a new
    /// revision makes a new state part and keeps the others.
    @Test func sharedPartsAreMadeOnce() {
        let f = HubFixture { $0.presenceDetail = 2 }
        var frames = JoinedFrames()
        func join() -> [OutgoingBuffer] {
            let c = f.connect()
            for case .send(_, let m, let id) in f.send(c, ["type": "join", "session": "demo"]) {
                if let parts = frames.frame(m, id: id) { return parts }
            }
            Issue.record("no joined")
            return []
        }
        // While the listing has everybody (3 members: the 2 of `presenceDetail` and the
        // joiner), it is in the join's own part, between the flow and the state.
        for _ in 0..<3 {
            let parts = join()
            #expect(parts.count == 4 && String(decoding: Self.bytes([parts[2]]), as: UTF8.self).contains(#""client""#))
        }
        let a = join(), b = join()   // the listing is full (`others` counted): it no longer changes
        #expect(a.count == 5 && b.count == 5)
        #expect(a[1] === b[1] && a[2] === b[2] && a[4] === b[4])   // flow, listing, state
        #expect(a[0] !== b[0] && a[3] !== b[3])                     // each join's own
        _ = f.send(1, ["type": "command", "session": "demo", "id": 1, "ops": [["op": "setRoot", "route": "main"]]])
        let c = join()
        #expect(c[1] === b[1] && c[2] === b[2] && c[4] !== b[4])
    }

    /// A frame past 125 and past 65,535 bytes gets the longer header, for the whole
    /// length of its parts.
    @Test(arguments: [10, 200, 70_000])
    func headerCountsEveryPart(pad: Int) {
        let state = Array(#"{"root":{"pad":""#.utf8) + Array(repeating: UInt8(ascii: "y"), count: pad) + Array(#""}}"#.utf8)
        var joined = ServerMessage.Joined(session: "s", epoch: "ep", rev: 7, flow: ["name": "shop"], members: [],
                                          catchUp: .state(["root": ["pad": .string(String(repeating: "y", count: pad))]]))
        joined.encoded = .init(flow: Array(#"{"name":"shop"}"#.utf8), members: Array("[]".utf8), state: state)
        var frames = JoinedFrames()
        let parts = frames.frame(.joined(joined), id: "j")
        #expect(parts.map(Self.bytes) == Self.whole(.joined(joined), "j"))
        var decoder = WebSocketDecoder(role: .client, maxMessage: 1 << 20)
        let (events, error) = decoder.feed(parts.map(Self.bytes) ?? [])
        #expect(error == nil && events == [.text(ServerMessage.joined(joined).bytes(id: "j"))])
    }

    /// Other messages, a `joined` with patches to catch up on and one not encoded are
    /// sent whole.
    @Test func otherMessagesAreNotParts() {
        var frames = JoinedFrames()
        var joined = ServerMessage.Joined(session: "s", epoch: "ep", rev: 7, flow: .null, members: [], catchUp: .patches([]))
        #expect(frames.frame(.joined(joined), id: nil) == nil)
        joined.encoded = .init(flow: Array("null".utf8), members: Array("[]".utf8))
        #expect(frames.frame(.joined(joined), id: nil) == nil)
        joined.catchUp = .state(.null)
        joined.encoded = nil
        #expect(frames.frame(.joined(joined), id: nil) == nil)
        #expect(frames.frame(.ack(session: "s", Ack(id: .int(1), rev: 1, results: [.applied])), id: nil) == nil)
    }

    /// Once the table has doubled since it was last cleared out (64 sessions at first),
    /// another session's first join drops the parts no connection still has queued (a
    /// session deleted meanwhile among them, once its parts are written): the same bytes
    /// then make new parts. Queued parts are kept. Clearing at every new session made a
    /// herd over many sessions quadratic. (The runtime asks the hub nothing while it
    /// carries out the hub's effects.)
    @Test func partsNotQueuedOrOfGoneSessionsAreDropped() {
        // One session's parts are known by the storage of the bytes they were made from.
        let encoded = ServerMessage.Joined.Encoded(flow: Array("null".utf8), members: Array("[]".utf8), state: Array("null".utf8))
        func joined(_ session: String) -> ServerMessage {
            var j = ServerMessage.Joined(session: session, epoch: "ep", rev: 1, flow: .null, members: [], catchUp: .state(.null))
            j.encoded = encoded
            return .joined(j)
        }
        var frames = JoinedFrames()
        var queue = OutputQueue()
        let a = frames.frame(joined("a"), id: nil)!
        #expect(frames.frame(joined("a"), id: nil)![1] === a[1])
        for part in a { queue.append(part) }                          // a connection has them to write
        let b = frames.frame(joined("b"), id: nil)!                   // queued nowhere
        for i in 0..<61 { _ = frames.frame(joined("s\(i)"), id: nil) }
        #expect(frames.frame(joined("b"), id: nil)![1] === b[1])      // 63 sessions: none dropped
        _ = frames.frame(joined("s61"), id: nil)                      // the 64th
        _ = frames.frame(joined("s62"), id: nil)                      // a new one clears out
        #expect(frames.frame(joined("a"), id: nil)![1] === a[1])      // still queued: kept
        #expect(frames.frame(joined("b"), id: nil)![1] !== b[1])
        #expect(queue.queuedBytes > 0)
    }
}
