/// A client's *shown* state (docs/protocol.md, "The client's three states"): its own
/// unanswered commands replayed over the *confirmed* state by the same sequencer the
/// server runs, with the session's flow, so a gesture shows in the frame that made it
/// and a second gesture is computed against the first.
///
/// Pure: the replay is a function of the confirmed state, the flow, the pending
/// commands and the acks already known. Entries a pending command `C` makes get ids
/// from a range the server never reaches (`localBase` up) during the replay and are
/// shown as `"~C.N"`, the reference the server resolves to whatever id it picks; a
/// pending command naming `"~C.N"` is replayed against that entry by the sequencer's
/// own reference resolution.
public struct Speculation: Sendable {
    /// Where the replay's ids start: far past any counter a session reaches.
    public static let localBase = 1 << 40
    /// The client identity the replay runs its commands as (local only).
    static let localClient = "~local"

    /// One command not yet answered (or answered, with its patch not yet in the
    /// confirmed state).
    public struct Command: Sendable, Equatable {
        public var id: Int64
        public var ops: [JSON]
        public init(id: Int64, ops: [JSON]) { self.id = id; self.ops = ops }
    }

    /// The replay so far: the sequencer after the commands replayed, and the
    /// references its own ids stand for.
    private var sequencer: Sequencer
    private var names: [Int: String] = [:]
    /// The replayed commands that did not apply over the confirmed state (their effect
    /// is not shown; the server will most likely refuse them too).
    public private(set) var failed: [Int64: NavError] = [:]

    /// A replay over `confirmed`, with nothing replayed yet. `known`: acks of this
    /// client's commands whose effect is confirmed already, so a pending command's
    /// reference to an entry they made resolves to the server's id.
    public init(over confirmed: NavState, flow: Flow, known: [Ack]) {
        // Room for every pending command a client keeps, so none is forgotten.
        sequencer = Sequencer(flow: flow, epoch: "local", idempotencyCapacity: 4096, logCapacity: 0, historyCapacity: 0)
        sequencer.document = NavDocument(flow: flow, limits: sequencer.document.limits, state: confirmed, nextID: Self.localBase)
        for ack in known { sequencer.idempotency.remember(client: Self.localClient, ack, fingerprint: nil) }
    }

    /// Replays one more command on top (a new gesture costs one command, not all).
    public mutating func replay(_ command: Command) {
        switch sequencer.submit(NavSync.Command(id: .int(command.id), ops: command.ops), client: Self.localClient) {
        case .applied(let ack, _), .unchanged(let ack), .duplicate(let ack):
            for (n, id) in ack.created.enumerated() where id.number >= Self.localBase {
                names[id.number] = EntryReference.text(command: .int(command.id), index: n)
            }
        case .failed(let e):
            failed[command.id] = e
        }
    }

    /// The shown state document: the replay's ids written as references.
    public var state: JSON { Self.rename(sequencer.state.json, names) }

    /// `pending` replayed, in order, over `confirmed`.
    public static func replay(over confirmed: NavState, flow: Flow, pending: [Command], known: [Ack]) -> Speculation {
        var s = Speculation(over: confirmed, flow: flow, known: known)
        for command in pending { s.replay(command) }
        return s
    }

    /// The document with the replay's own ids written as the references they stand for.
    static func rename(_ json: JSON, _ names: [Int: String]) -> JSON {
        guard !names.isEmpty else { return json }
        func name(_ v: JSON) -> JSON {
            guard case .string(let s) = v, let id = EntryID(s), id.number >= localBase, let ref = names[id.number] else { return v }
            return .string(ref)
        }
        func walk(_ v: JSON) -> JSON {
            switch v {
            case .object(let o):
                var out = JSONObject()
                for (key, value) in o {
                    switch key {
                    case "id", "selected": out[key] = name(value)
                    case "params", "hints", "data", "tab": out[key] = value
                    default: out[key] = walk(value)
                    }
                }
                return .object(out)
            case .array(let list): return .array(list.map(walk))
            default: return v
            }
        }
        return walk(json)
    }
}
