import NavSync
import NavSyncServer
import NavSyncLibuv
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
        if let cluster {
            m.counter("navsync_cluster_appends_total", "Compare-and-append calls to Redis.", cluster.appends)
            m.counter("navsync_cluster_appended_records_total", "Log entries those calls carried (several commands per call under load).", cluster.appendedRecords)
            m.counter("navsync_cluster_retries_total", "Appends refused because another node appended first (the commands ran again).", hub.clusterRetries)
            m.counter("navsync_cluster_catchups_total", "Times this node read sessions from Redis to catch up (reconnects, gaps, stalls).", cluster.catchUps)
            m.gauge("navsync_cluster_redis_rtt_seconds", "Round-trip time of the last answered Redis command.", cluster.roundTripMs / 1000)
            m.gauge("navsync_cluster_redis_connected", "1 while the command connection to Redis is up.", cluster.connected ? 1 : 0)
            m.counter("navsync_cluster_unconfirmed_total", "Appends fewer replicas confirmed in time than --redis-wait asks (answered unconfirmed).", hub.unconfirmedWrites)
            m.gauge("navsync_cluster_ready", "1 while this node can acknowledge commands (/readyz).", cluster.notReady == nil ? 1 : 0)
            m.gauge("navsync_cluster_nodes", "Nodes whose heartbeat is at most 5 s old.", cluster.nodes.values.filter { unixMilliseconds() - $0.seen <= 5_000 }.count)
        }
        if let backend {
            m.counter("navsync_hook_calls_total", "Hook calls to the app's backend by outcome: allowed, refused, failed (docs/backend.md).",
                      labelled: hub.hooks.outcomes.sorted { $0.key < $1.key }.map { ("outcome=\"\($0.key)\"", $0.value) })
            let hl = backend.hookLatency
            m.histogram("navsync_hook_seconds", "Hook round trips, from the post to the answer.", bounds: LatencyHistogram.bounds,
                        cumulative: hl.cumulative, sum: hl.sum, count: hl.count)
            let t = server?.now ?? 0
            func each(_ value: (WebhookOutbox) -> Int) -> [(String, Int)] {
                backend.outboxes.map { ("endpoint=\"\($0.endpoint.url)\"", value($0)) }
            }
            m.counter("navsync_webhook_events_delivered_total", "Webhook events delivered (answered 2xx), per endpoint.", labelled: each(\.delivered))
            m.gauge("navsync_webhook_events_pending", "Webhook events not yet delivered, per endpoint.", labelled: each(\.pending))
            m.gauge("navsync_webhook_oldest_pending_seconds", "Age of the oldest undelivered event, per endpoint.",
                    labelled: each { Int($0.oldestAge(now: t) / 1000) })
            m.counter("navsync_webhook_failures_total", "Webhook batches that failed (retried with backoff), per endpoint.", labelled: each(\.failures))
            m.counter("navsync_webhook_events_dropped_total", "Webhook events dropped past maxQueue, per endpoint.", labelled: each(\.dropped))
        }
        m.gauge("navsync_sessions", "Sessions held.", hub.sessionCount)
        m.gauge("navsync_members", "Session memberships (a connection in two sessions counts twice).", hub.memberCount)
        m.counter("navsync_commands_total", "Commands by outcome: applied, unchanged, duplicate, or the error code.",
                  labelled: hub.commandOutcomes.sorted { $0.key < $1.key }.map { ("result=\"\($0.key)\"", $0.value) })
        m.counter("navsync_patches_sent_total", "Patch messages queued to members.", patchesSent)
        m.counter("navsync_presence_sent_total", "Presence messages queued to members.", presenceSent)
        m.gauge("navsync_history_bytes", "Bytes history holds, all sessions (roughly; --history-bytes bounds it).", hub.historyBytes)
        let held = hub.heldRevisions
        m.gauge("navsync_history_revisions", "Revisions held by history, all sessions (--history per session).", held)
        m.gauge("navsync_history_earliest", "The oldest revision history holds, per session.",
                labelled: hub.earliestRevisions.map { ("session=\"\($0.session)\"", $0.rev) })
        let h = hub.isClustered ? hub.applyLatency : commandLatency
        m.histogram("navsync_command_apply_seconds", "Time to sequence and apply one command.", bounds: LatencyHistogram.bounds,
                    cumulative: h.cumulative, sum: h.sum, count: h.count)
        return m.text
    }
}
