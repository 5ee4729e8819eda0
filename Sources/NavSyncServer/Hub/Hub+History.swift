import NavSync

/// The node's history kept within its bound (`--history-bytes`, docs/protocol.md,
/// "History"): what the hub changes of its sessions' history on its own.
extension Hub {
    /// `--history-bytes`: while the node's history holds more, the session holding most
    /// drops its oldest revisions, about as many as the excess is of its share. Checked
    /// on the presence tick, so it may pass the bound for one interval.
    mutating func trimHistory() {
        guard let limit = configuration.historyBytes else { return }
        var total = historyBytes
        var spent = Set<String>()
        while total > limit {
            guard let (name, largest) = sessions.filter({ !spent.contains($0.key) })
                .max(by: { $0.value.sequencer.history.bytes < $1.value.sequencer.history.bytes }),
                  largest.sequencer.history.bytes > 0 else { break }
            let h = largest.sequencer.history
            let share = Double(total - limit) / Double(h.bytes)
            let count = min(h.count, max(h.checkpointEvery, Int((Double(h.count) * share).rounded(.up))))
            var freed = sessions[name]!.sequencer.history.trim(dropping: count)
            // Entries go a checkpoint at a time: past the next one if nothing went yet.
            if freed == 0 { freed = sessions[name]!.sequencer.history.trim(dropping: h.checkpointEvery) }
            if freed == 0 { spent.insert(name) }
            total -= freed
        }
    }
}
