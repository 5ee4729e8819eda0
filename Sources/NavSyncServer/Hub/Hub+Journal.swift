import NavSync
/// The journal's side of the hub (docs/protocol.md, "Durable sessions (--data DIR)": nothing is acknowledged before
/// its record is durable).
///
/// Each change makes a numbered `JournalEntry` effect. Output made while entries are
/// unwritten waits in the gate, tagged with the newest entry; a `JournalResult` says
/// which entries are written and which sessions failed, and releases what waited.
///
/// A failed write means the session's revisions since its last durable one never
/// happened. The session refuses commands and is read back from disk (a `reload`
/// entry); once it is back, what is held for it is rewritten (acks past the durable
/// revision become `internal` errors, their patches are dropped) and everything goes
/// out. A session whose creation failed, or that cannot be read back, is removed.
public struct JournalEntry: Sendable, Equatable {
    /// Numbered from 1 in the order made; `JournalResult.through` names one.
    public let seq: Int
    public let op: Op

    public enum Op: Sendable {
        /// A new session at revision 0.
        case create(session: String, flow: Flow, Sequencer)
        /// A command made a new revision; the sequencer is the session after it (for a
        /// snapshot, when the store decides to take one).
        case append(session: String, JournalRecord, Sequencer)
        /// Read the session back as it is on disk (after a failed write).
        case reload(session: String, flow: Flow)
        /// The session was deleted: its files go.
        case delete(session: String)

        public var session: String {
            switch self {
            case .create(let s, _, _), .append(let s, _, _), .reload(let s, _), .delete(let s): return s
            }
        }
    }

    /// Entries are equal when they are the same entry: number, kind and session.
    public static func == (a: JournalEntry, b: JournalEntry) -> Bool {
        guard a.seq == b.seq, a.op.session == b.op.session else { return false }
        switch (a.op, b.op) {
        case (.create, .create), (.reload, .reload), (.delete, .delete): return true
        case (.append(_, let x, _), .append(_, let y, _)): return x.rev == y.rev && x.client == y.client
        default: return false
        }
    }
}

/// What the journal writer reports for the entries through `through`.
public struct JournalResult: Sendable {
    public enum Failure: Sendable, Equatable {
        /// A record could not be written: the session is read back from disk.
        case append(String)
        /// The session's folder or first snapshot could not be written: it never existed.
        case creation(String)
        /// Reading it back failed too: it is unavailable until a restart.
        case reload(String)
    }

    /// Every entry up to this number is done (written, or failed below).
    public var through: Int
    /// Sessions whose writes failed, and how.
    public var failed: [String: Failure]
    /// Sessions read back from disk after a failure: as they are there.
    public var reloaded: [String: Sequencer]

    public init(through: Int, failed: [String: Failure] = [:], reloaded: [String: Sequencer] = [:]) {
        self.through = through
        self.failed = failed
        self.reloaded = reloaded
    }
}

extension Hub {
    /// The journaled mode's state.
    struct JournalSide: Sendable {
        /// The newest journal entry made, and the newest known written; output made
        /// while they differ waits in `gate` (numbered by entry).
        var seq = 0
        var durableThrough = 0
        var gate = DurabilityGate()
        /// Sessions being read back after a failed write, and why the write failed.
        var reloading: [String: String] = [:]
    }

    /// A journal entry: the next number, as an effect; never held.
    mutating func writeJournal(_ op: JournalEntry.Op) {
        guard case .journaled = mode else { return }
        journal.seq += 1
        out.append(.journal(JournalEntry(seq: journal.seq, op: op)))
    }

    mutating func journalDone(_ result: JournalResult) {
        journal.durableThrough = max(journal.durableThrough, result.through)
        for (s, failure) in result.failed.sorted(by: { $0.key < $1.key }) {
            switch failure {
            case .creation(let reason):
                out.append(.log(.error, "data: session '\(s)' could not be created: \(reason)"))
                removeSession(s)
                journal.gate.fail(session: s, .gone, because: reason)
            case .append(let reason):
                guard let flow = sessions[s]?.flow else {
                    out.append(.log(.error, "data: session '\(s)' (deleted): removing its files failed: \(reason); they may bring it back at the next start"))
                    continue
                }
                out.append(.log(.error, "data: session '\(s)': journal write failed: \(reason); its commands are refused while it is read back from disk"))
                frozen[s] = NavError(.internal, "session '\(s)' could not write its journal (\(reason)); it is being restored, try again")
                journal.reloading[s] = reason
                writeJournal(.reload(session: s, flow: flow))
            case .reload(let reason):
                out.append(.log(.error, "data: session '\(s)' could not be read back (\(reason)); it is unavailable until navsyncd restarts"))
                removeSession(s)
                frozen[s] = NavError(.internal, "session '\(s)' is unavailable after a disk error; restart navsyncd")
                journal.gate.fail(session: s, .gone, because: journal.reloading.removeValue(forKey: s) ?? reason)
            }
        }
        for (s, sequencer) in result.reloaded.sorted(by: { $0.key < $1.key }) where sessions[s] != nil {
            out.append(.log(.warn, "data: session '\(s)' is back at revision \(sequencer.rev), as on disk; it takes commands again"))
            sessions[s]!.sequencer = sequencer
            frozen[s] = nil
            journal.gate.fail(session: s, .to(rev: sequencer.rev, state: sequencer.state.json),
                      because: journal.reloading.removeValue(forKey: s) ?? "a failed write")
        }
        // Nothing goes out while a session is being read back: what is held for it may
        // still have to be rewritten.
        guard journal.reloading.isEmpty else { return }
        out += journal.gate.release(through: journal.durableThrough)
    }
}
