import NavSyncLibuv
import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport
@testable import NavSyncRuntime

/// Frames built in place in the runtime's outgoing buffers are the encoder's bytes.
@Suite("Outgoing buffers")
struct OutgoingBufferTests {
    /// A frame written in place (the payload behind room for the header, the header
    /// after) has the encoder's bytes at every header boundary, whether it was written
    /// on the stack and copied (up to 1,014 bytes), outgrew the stack, or was written
    /// on the heap from the start (a large capacity).
    @Test(arguments: [0, 1, 125, 126, 1014, 1015, 4096, 65535, 65536])
    func framesWrittenInPlaceEqualTheEncoders(length: Int) {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        for capacity in [16, 1 << 17] {
            for opcode in [Opcode.text, .binary] {
                let buffer = OutgoingBuffer(frame: opcode, capacity: capacity) { $0.append(contentsOf: payload) }
                #expect(Array(buffer.bytes.prefix(buffer.count)) == WebSocketEncoder.frame(opcode, payload), "capacity \(capacity)")
            }
        }
    }

    /// A server message framed in place is its bytes (`bytes(id:)`) in a text frame:
    /// a patch, an ack and an error with ids, and a joined whose encoded parts are past
    /// what is written on the stack.
    @Test func messagesFramedInPlaceAreTheirBytes() {
        let patch = Patch(rev: 5, by: "c1", cmd: .string("k"), ops: [PatchOperation(.remove, "/root/current/coordinator/stack/1")])
        let state = Array(#"{"root":{"type":"App","kind":"root","current":{"id":"e1","route":"x","params":{"pad":""#.utf8)
            + Array(repeating: UInt8(ascii: "y"), count: 5000) + Array(#""}}}}"#.utf8)
        let joined = ServerMessage.Joined(session: "s", epoch: "ep", rev: 7, flow: ["name": "shop"], members: [], catchUp: .state(["root": nil]))
        var big = joined
        big.encoded = .init(flow: Array(#"{"name":"shop"}"#.utf8), members: Array("[]".utf8), state: state)
        let messages: [(ServerMessage, JSON?)] = [
            (.patch(session: "demo", patch), nil),
            (.ack(session: "demo", Ack(id: .int(3), rev: 5, results: [.applied])), nil),
            (.error(NavError(.conflict, "Home changed", op: 1, rev: 9)), "x"),
            (.joined(joined), 4),
            (.joined(big), 4),
        ]
        for (message, id) in messages {
            let buffer = OutgoingBuffer(text: message, id: id)
            #expect(Array(buffer.bytes.prefix(buffer.count)) == WebSocketEncoder.frame(.text, message.bytes(id: id)))
        }
        #expect(ServerMessage.joined(big).bytes().count > 5000)
    }

    /// A broadcast frame built in one allocation has the encoder's bytes at every
    /// length boundary.
    @Test(arguments: [0, 1, 125, 126, 65535, 65536])
    func outgoingFramesEqualTheEncoders(length: Int) {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let buffer = OutgoingBuffer(frame: .text, payload)
        #expect(Array(buffer.bytes.prefix(buffer.count)) == WebSocketEncoder.frame(.text, payload))
    }
}
