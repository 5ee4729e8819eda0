import NavSync
import NavSyncServer
import NavSyncLibuv
/// `joined` messages sent in parts (docs/protocol.md, "Server messages, unasked"): each join's few bytes of its
/// own, between the parts every join of the session at that revision shares (the flow,
/// the member listing once it is full, the state), each made once and queued by
/// reference, as a broadcast's frame is.
///
/// Written whole, every join made a large frame of its own (the flow, the member
/// listing, the state), a herd of joins grew the heap by all of them at once, and the
/// members' own memory, made in between, stayed scattered over it after the frames were
/// freed (docs/architecture.md, "Measured reasons in the code").
struct JoinedFrames {
    /// A part shared by the joins of one session, and the bytes it was made from (kept:
    /// their storage is how a later join's are known to be the same, and held, it
    /// cannot be freed and reused by other bytes).
    private struct Part {
        let source: [UInt8]
        let buffer: OutgoingBuffer

        func isMade(from bytes: [UInt8]) -> Bool {
            source.withUnsafeBufferPointer { a in
                bytes.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress && a.count == b.count }
            }
        }
    }

    private struct Shared {
        var flow: Part?
        var members: Part?
        var state: Part?

        /// Whether a connection still has one of them to write.
        var isQueued: Bool { [flow, members, state].contains { ($0?.buffer.holders ?? 0) > 0 } }
    }

    /// Per session, the parts of its last join. Once the table has doubled since it was
    /// last cleared out, a session seen for the first time first clears out those no
    /// connection still has to write (a session deleted meanwhile among them): parts are
    /// kept for a storm of joins, not for every session there is (each would hold a
    /// second copy of its flow and state). Clearing on every new session instead made a
    /// herd over many sessions quadratic (docs/architecture.md, "Measured reasons in the code").
    private var sessions: [String: Shared] = [:]
    private var clearAt = 64

    /// The frame of a `joined` whose parts its session encoded, as buffers to queue in
    /// order; nil for any other message (sent as one frame, `OutgoingBuffer(text:)`).
    mutating func frame(_ message: ServerMessage, id: JSON?) -> [OutgoingBuffer]? {
        guard case .joined(let j) = message, let e = j.encoded, case .state(let state) = j.catchUp else { return nil }
        if sessions[j.session] == nil, sessions.count >= clearAt {
            sessions = sessions.filter { $0.value.isQueued }
            clearAt = max(64, 2 * sessions.count)
        }
        var shared = sessions[j.session] ?? Shared()
        defer { sessions[j.session] = shared }
        // A full listing (`others` counted) is the same for the joins that follow. One
        // that lists everybody changes with every join: it goes into the join's own
        // bytes (held here, it would also make the session copy it to extend it).
        let sharesListing = j.others != nil
        if !sharesListing { shared.members = nil }
        var parts = [Self.part(&shared.flow, e.flow) { out, bytes in
            out.append(contentsOf: bytes)
            out.append(ascii: ServerMessage.Joined.afterFlow)
        }]
        if sharesListing {
            parts.append(Self.part(&shared.members, e.members) { out, bytes in out.append(contentsOf: bytes.dropLast()) })
        }
        parts.append(OutgoingBuffer(capacity: 128 + (e.joiner?.count ?? 0) + (sharesListing ? 0 : e.members.count)) { out in
            if !sharesListing { out.append(contentsOf: e.members.dropLast()) }
            j.writeMiddle(e, state: state, into: &out)
        })
        if let bytes = e.state {
            parts.append(Self.part(&shared.state, bytes) { out, bytes in
                out.append(contentsOf: bytes)
                out.append(ascii: ServerMessage.Joined.afterState)
            })
        }
        let rest = parts.reduce(0) { $0 + $1.count }
        parts.insert(OutgoingBuffer(frame: .text, capacity: 256, followedBy: rest) { j.writeHead(id: id, into: &$0) }, at: 0)
        return parts
    }

    /// The part made from `bytes`: the one held when it was made from these same bytes,
    /// else a new one (`write` writes it), held from now on.
    private static func part(_ held: inout Part?, _ bytes: [UInt8],
                             _ write: (inout ByteWriter, [UInt8]) -> Void) -> OutgoingBuffer {
        if let held, held.isMade(from: bytes) { return held.buffer }
        let made = Part(source: bytes, buffer: OutgoingBuffer(capacity: bytes.count + 16) { write(&$0, bytes) })
        held = made
        return made.buffer
    }
}
