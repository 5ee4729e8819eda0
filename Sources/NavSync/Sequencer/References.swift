/// References to one's own entries (docs/protocol.md, "References to one's own
/// entries"): wherever an op takes an entry id, `"~CMD.N"` names the entry at index `N`
/// of the `created` list of the sender's command `CMD`. A client that has not heard
/// back yet names an entry its own command made without guessing the id the server
/// picked. They are resolved from the idempotency table, the record that makes command
/// ids idempotent, so a reference means the same on every node of a cluster, after a
/// restart with a data directory, and for a command resent after a reconnect.
extension Sequencer {
    /// The fields that take an entry (or alert) id.
    static let referenceFields: Set<String> = ["at", "from", "entry", "alert"]

    /// The op with each reference replaced by the id it names; nil when it has none (the
    /// op is used as it is). A malformed reference is `bad_params`; one that names no
    /// entry (the command unknown here, refused, forgotten, or `N` out of range) is
    /// `not_found`, so an intent that depended on a refused gesture fails with it.
    func resolvingReferences(in op: JSON, client: String) throws(NavError) -> JSON? {
        guard case .object(let object) = op else { return nil }
        var resolved: JSONObject?
        for (key, value) in object {
            guard case .string(let text) = value, text.utf8.first == UInt8(ascii: "~"), Self.referenceFields.contains(key) else { continue }
            let id = try resolve(reference: text, client: client)
            if resolved == nil { resolved = object }
            resolved![key] = .string(id.description)
        }
        return resolved.map(JSON.object)
    }

    /// The entry id a reference names.
    func resolve(reference text: String, client: String) throws(NavError) -> EntryID {
        guard let (cmd, index) = EntryReference.parse(text) else {
            throw NavError(.badParams, "'\(text)' is not a reference: it must be \"~CMD.N\", a command id of yours and an index from 0 (\"~7.0\")")
        }
        // Both 7 and "7" may have been used: the later one (the higher revision) counts.
        var candidates: [Ack] = []
        if let ack = idempotency.ack(client: client, id: .string(cmd)) { candidates.append(ack) }
        if let n = Int64(cmd), String(n) == cmd, let ack = idempotency.ack(client: client, id: .int(n)) { candidates.append(ack) }
        guard let ack = candidates.max(by: { $0.rev < $1.rev }) else {
            throw NavError(.notFound, "reference '\(text)' names no entry: command \(cmd) of yours is not known here (never acknowledged, refused, or forgotten)")
        }
        guard index < ack.created.count else {
            let made = ack.created.isEmpty ? "no entries" : "\(ack.created.count) (~\(cmd).0 to ~\(cmd).\(ack.created.count - 1))"
            throw NavError(.notFound, "reference '\(text)' names no entry: command \(cmd) created \(made)")
        }
        return ack.created[index]
    }
}

/// The text form of a reference, `"~CMD.N"`.
public enum EntryReference {
    /// Splits `"~CMD.N"` at its last `.`; nil when malformed (`~`, `~7`, `~7.x`, `~7.-1`, `~.0`).
    public static func parse(_ text: String) -> (command: String, index: Int)? {
        guard text.utf8.first == UInt8(ascii: "~"), let dot = text.lastIndex(of: ".") else { return nil }
        let command = text[text.index(after: text.startIndex)..<dot]
        let digits = text[text.index(after: dot)...]
        guard !command.isEmpty, !digits.isEmpty, digits.utf8.count <= 9, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              let index = Int(digits) else { return nil }
        return (String(command), index)
    }

    /// The reference to entry `index` of command `command`'s `created`.
    public static func text(command: CommandID, index: Int) -> String {
        switch command {
        case .int(let n): return "~\(n).\(index)"
        case .string(let s): return "~\(s).\(index)"
        }
    }

    /// Whether a string is a reference (it may still be malformed).
    public static func isReference(_ text: String) -> Bool { text.utf8.first == UInt8(ascii: "~") }
}
