/// Output held back until the journal writes it depends on are durable (DESIGN.md
/// section 9: nothing is acknowledged before its record is on disk).
///
/// Writes go to disk in numbered batches. While a batch is outstanding, everything the
/// server would send is held, tagged with the newest outstanding batch, and released in
/// order once that batch is durable: acks, the patches of the same revisions, and every
/// other reply, so no client ever sees a revision that could still be lost, and each
/// connection gets its messages in the order they were made.
///
/// When a session's write fails, its revisions past the last durable one never happened:
/// `fail` rewrites what is held for it (acks become `internal` errors, patches are
/// dropped, states and revisions are those of the durable point). Pure.
public struct DurabilityGate: Sendable {
    public enum Item: Sendable, Equatable {
        /// For a broadcast, `members` are the session's members when it was made: who
        /// joins while it waits gets the state in its `joined` instead.
        case delivery(Hub.Delivery, members: [Int]? = nil)
        /// An HTTP answer to a command (`POST /api/sessions/NAME/commands`); `rev` is the
        /// revision its ack names, `id` the command's id.
        case answer(connection: Int, request: HTTPRequest, response: HTTPResponse, session: String, rev: Int?, id: JSON?)
    }

    /// Where a failed session stands now: its durable revision and state, or gone (its
    /// creation was never recorded).
    public enum Reverted: Sendable, Equatable {
        case to(rev: Int, state: JSON)
        case gone
    }

    private var held: [(batch: Int, item: Item)] = []
    private var head = 0

    public init() {}

    public var count: Int { held.count - head }
    public var isEmpty: Bool { count == 0 }

    public mutating func hold(_ item: Item, until batch: Int) {
        held.append((batch, item))
    }

    /// Everything held for batches up to `batch`, in the order it was held.
    public mutating func release(through batch: Int) -> [Item] {
        var out: [Item] = []
        while head < held.count, held[head].batch <= batch {
            out.append(held[head].item)
            head += 1
        }
        if head == held.count || head > 4096 {
            held.removeFirst(head)
            head = 0
        }
        return out
    }

    /// The session's writes failed: every held message of it past the durable point is
    /// rewritten (or dropped) as if those revisions never happened.
    public mutating func fail(session: String, _ reverted: Reverted, because reason: String) {
        let e = NavError(.internal, "the session's journal could not be written (\(reason)); the command was not applied")
        let durableRev: Int
        switch reverted {
        case .to(let rev, _): durableRev = rev
        case .gone: durableRev = -1
        }
        var kept: [(batch: Int, item: Item)] = []
        kept.reserveCapacity(count)
        for (batch, item) in held[head...] {
            if let rewritten = Self.rewrite(item, session: session, durableRev: durableRev, reverted: reverted, error: e) {
                kept.append((batch, rewritten))
            }
        }
        held = kept
        head = 0
    }

    static func rewrite(_ item: Item, session: String, durableRev: Int, reverted: Reverted, error e: NavError) -> Item? {
        switch item {
        case .answer(let c, let request, var response, let s, let rev, let id):
            if s == session, let rev, rev > durableRev {
                response = .json(500, ServerMessage.error(e).json(id: id))
            }
            return .answer(connection: c, request: request, response: response, session: s, rev: rev, id: id)
        case .delivery(.broadcast(let s, let message, _), _):
            guard s == session else { return item }
            switch message {
            case .patch(_, let p) where p.rev > durableRev: return nil
            case .presence where reverted == .gone: return nil
            default: return item
            }
        case .delivery(.reply(let to, let message, let id), _):
            switch message {
            case .ack(let s, let a) where s == session && a.rev > durableRev:
                return .delivery(.reply(to: to, .error(e), id: id))
            case .patch(let s, let p) where s == session && p.rev > durableRev:
                return nil
            case .joined(var j) where j.session == session && j.rev > durableRev:
                guard case .to(let rev, let state) = reverted else {
                    return .delivery(.reply(to: to, .error(NavError(.internal, "session '\(session)' could not be created: \(e.message)")), id: id))
                }
                j.rev = rev
                j.catchUp = .state(state)
                return .delivery(.reply(to: to, .joined(j), id: id))
            case .snapshot(let s, let rev, _) where s == session && rev > durableRev,
                 .synced(let s, let rev) where s == session && rev > durableRev:
                guard case .to(let r, let state) = reverted else {
                    return .delivery(.reply(to: to, .error(NavError(.unknownSession, "no session '\(session)'")), id: id))
                }
                return .delivery(.reply(to: to, .snapshot(session: session, rev: r, state: state), id: id))
            default:
                return item
            }
        }
    }
}
