import NavSync
/// Output held back until the journal writes it depends on are durable (
/// docs/protocol.md, "Durable sessions (--data DIR)": nothing is acknowledged before its record is on disk).
///
/// Journal entries are numbered. While any is unwritten, everything the server would
/// send is held, tagged with the newest entry, and released in order once that entry
/// is durable: acks, the patches of the same revisions, and every
/// other reply, so no client ever sees a revision that could still be lost, and each
/// connection gets its messages in the order they were made.
///
/// When a session's write fails, its revisions past the last durable one never happened:
/// `fail` rewrites what is held for it (acks become `internal` errors, patches are
/// dropped, states and revisions are those of the durable point). Pure.
public struct DurabilityGate: Sendable {
    /// Where a failed session stands now: its durable revision and state, or gone (its
    /// creation was never recorded).
    public enum Reverted: Sendable, Equatable {
        case to(rev: Int, state: JSON)
        case gone
    }

    /// Held output (`send`, `broadcast` and `answer` effects), with the journal entry
    /// each waits for. A held broadcast keeps the members it was made for: who joins
    /// while it waits gets the state in its `joined` instead.
    private var held: [(entry: Int, effect: Hub.Effect)] = []
    private var head = 0

    public init() {}

    public var count: Int { held.count - head }
    public var isEmpty: Bool { count == 0 }

    public mutating func hold(_ effect: consuming Hub.Effect, until entry: Int) {
        held.append((entry, effect))
    }

    /// Everything held for entries up to `entry`, in the order it was held.
    public mutating func release(through entry: Int) -> [Hub.Effect] {
        var out: [Hub.Effect] = []
        while head < held.count, held[head].entry <= entry {
            out.append(held[head].effect)
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
        var kept: [(entry: Int, effect: Hub.Effect)] = []
        kept.reserveCapacity(count)
        for (entry, effect) in held[head...] {
            if let rewritten = Self.rewrite(effect, session: session, durableRev: durableRev, reverted: reverted, error: e) {
                kept.append((entry, rewritten))
            }
        }
        held = kept
        head = 0
    }

    static func rewrite(_ effect: Hub.Effect, session: String, durableRev: Int, reverted: Reverted, error e: NavError) -> Hub.Effect? {
        switch effect {
        case .answer(let c, let request, .ack(let s, let a), let id) where s == session && a.rev > durableRev:
            return .answer(connection: c, request, .error(e), id: id)
        case .broadcast(let s, let message, _):
            guard s == session else { return effect }
            switch message {
            case .patch(_, let p) where p.rev > durableRev: return nil
            case .presence where reverted == .gone: return nil
            default: return effect
            }
        case .send(let to, let message, let id):
            switch message {
            case .ack(let s, let a) where s == session && a.rev > durableRev:
                return .send(to: to, .error(e), id: id)
            case .patch(let s, let p) where s == session && p.rev > durableRev:
                return nil
            case .joined(var j) where j.session == session && j.rev > durableRev:
                guard case .to(let rev, let state) = reverted else {
                    return .send(to: to, .error(NavError(.internal, "session '\(session)' could not be created: \(e.message)")), id: id)
                }
                j.rev = rev
                j.catchUp = .state(state)
                return .send(to: to, .joined(j), id: id)
            case .snapshot(let s, let rev, _) where s == session && rev > durableRev,
                 .synced(let s, let rev) where s == session && rev > durableRev:
                guard case .to(let r, let state) = reverted else {
                    return .send(to: to, .error(NavError(.unknownSession, "no session '\(session)'")), id: id)
                }
                return .send(to: to, .snapshot(session: session, rev: r, state: state), id: id)
            default:
                return effect
            }
        default:
            return effect
        }
    }
}
