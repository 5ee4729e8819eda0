/// `GET /metrics`: the transport's figures, then the journal's and the hub's.
extension SessionServer {
    func metrics() -> String {
        var m = PrometheusText()
        if let store {
            m.counter("navsync_journal_batches_total", "Journal batches written (group commits).", store.batchesWritten)
            m.counter("navsync_journal_records_total", "Journal records written.", store.recordsWritten)
            m.counter("navsync_journal_bytes_total", "Bytes written to the data directory.", store.bytesWritten)
            m.counter("navsync_journal_syncs_total", "fdatasync/fsync calls on journal files.", store.syncs)
            m.counter("navsync_journal_write_failures_total", "Session writes that failed (their commands were rejected).", store.failedWrites)
        }
        m.gauge("navsync_sessions", "Sessions held.", hub.sessions.count)
        m.gauge("navsync_members", "Session memberships (a connection in two sessions counts twice).", hub.memberCount)
        m.counter("navsync_commands_total", "Commands by outcome: applied, unchanged, duplicate, or the error code.",
                  labelled: hub.commandOutcomes.sorted { $0.key < $1.key }.map { ("result=\"\($0.key)\"", $0.value) })
        m.counter("navsync_patches_sent_total", "Patch messages queued to members.", patchesSent)
        let held = hub.sessions.values.reduce(0) { $0 + $1.sequencer.history.count }
        m.gauge("navsync_history_revisions", "Revisions held by history, all sessions (--history per session).", held)
        m.gauge("navsync_history_earliest", "The oldest revision history holds, per session.",
                labelled: hub.sessions.keys.sorted().map { ("session=\"\($0)\"", hub.sessions[$0]!.sequencer.history.earliest) })
        let h = hub.applyLatency
        m.histogram("navsync_command_apply_seconds", "Time to sequence and apply one command.", bounds: LatencyHistogram.bounds,
                    cumulative: h.cumulative, sum: h.sum, count: h.count)
        return m.text
    }
}
