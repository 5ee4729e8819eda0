import NavSync
/// One webhook endpoint's queue (docs/backend.md, "Webhooks"): events in the order they
/// happened, sent in batches of at most 100 events or 256 KiB after at most 50 ms, one
/// batch in flight, a failed batch sent again whole (the same `webhook-id`) after a
/// backoff of 0.5 s doubling to 60 s, without end. Pure: the time is passed in, and the
/// runtime posts what `take` gives and says how it went.
public struct WebhookOutbox: Sendable {
    public var endpoint: HooksConfiguration.Endpoint
    /// Events held at most; past it the oldest are dropped (and counted).
    public let maxQueue: Int
    public static let maxBatchEvents = 100
    public static let maxBatchBytes = 256 * 1024
    /// How long an event waits for others to join its batch, in ms.
    public static let lingerMS: Int64 = 50
    public static let firstBackoffMS: Int64 = 500
    public static let maxBackoffMS: Int64 = 60_000

    /// A batch as posted: its `webhook-id` (the same on every retry), its events, its body.
    public struct Batch: Sendable, Equatable {
        public var id: String
        public var events: [WebhookEvent]
        public var body: [UInt8]
    }

    /// Events not yet delivered, the in-flight batch's first; with when each was queued.
    private var queue: [(event: WebhookEvent, encoded: [UInt8], at: Int64)] = []
    private var head = 0
    /// The batch posted and not yet answered (its events are the first of the queue).
    public private(set) var inflight: Batch?
    /// A batch that failed, to be posted again at `retryAt`.
    private var failedBatch: Batch?
    private var retryAt: Int64?
    private var backoffMS: Int64 = 0

    public private(set) var delivered = 0
    public private(set) var failures = 0
    public private(set) var dropped = 0
    public private(set) var lastError: String?
    public private(set) var batches = 0

    public init(endpoint: HooksConfiguration.Endpoint, maxQueue: Int) {
        self.endpoint = endpoint
        self.maxQueue = maxQueue
    }

    /// Events not yet delivered (the batch in flight included).
    public var pending: Int { queue.count - head }

    /// How long the oldest undelivered event has waited, in ms.
    public func oldestAge(now: Int64) -> Int64 { head < queue.count ? now - queue[head].at : 0 }

    /// Queues an event the endpoint wants; false (and counted) when the oldest had to go.
    @discardableResult
    public mutating func add(_ event: WebhookEvent, now: Int64) -> Bool {
        guard endpoint.wants(event.type, session: event.session) else { return true }
        queue.append((event, event.json.encoded(), now))
        guard pending > maxQueue else { return true }
        // The oldest not in a batch already goes.
        let batched = (inflight ?? failedBatch)?.events.count ?? 0
        guard head + batched < queue.count - 1 else { return true }
        queue.remove(at: head + batched)
        dropped += 1
        return false
    }

    /// The batch to post now, if one is due: none while one is in flight or waiting to
    /// be retried; else the first events, once the oldest has lingered or the batch is full.
    public mutating func take(now: Int64, newID: () -> String) -> Batch? {
        guard inflight == nil else { return nil }
        if let failed = failedBatch {
            guard let at = retryAt, now >= at else { return nil }
            failedBatch = nil
            retryAt = nil
            inflight = failed
            return failed
        }
        guard pending > 0 else { return nil }
        var count = 0
        var bytes = 12
        while head + count < queue.count, count < Self.maxBatchEvents {
            let size = queue[head + count].encoded.count + 1
            if count > 0, bytes + size > Self.maxBatchBytes { break }
            bytes += size
            count += 1
        }
        let full = count == Self.maxBatchEvents || head + count < queue.count
        guard full || now - queue[head].at >= Self.lingerMS else { return nil }
        var body = Array(#"{"events":["#.utf8)
        body.reserveCapacity(bytes)
        for i in 0..<count {
            if i > 0 { body.append(UInt8(ascii: ",")) }
            body += queue[head + i].encoded
        }
        body += Array("]}".utf8)
        let batch = Batch(id: newID(), events: queue[head..<(head + count)].map(\.event), body: body)
        inflight = batch
        batches += 1
        return batch
    }

    /// When `take` may give a batch next (loop ms); nil: not until something changes.
    public func wake(now: Int64) -> Int64? {
        if inflight != nil { return nil }
        if failedBatch != nil { return retryAt }
        guard pending > 0 else { return nil }
        return queue[head].at + Self.lingerMS
    }

    /// The endpoint answered 2xx: the batch's events are delivered.
    public mutating func succeeded() -> [WebhookEvent] {
        guard let batch = inflight else { return [] }
        inflight = nil
        backoffMS = 0
        head += batch.events.count
        delivered += batch.events.count
        // The delivered prefix is let go once it is as long as what is left.
        if head > 1024, head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
        return batch.events
    }

    /// No 2xx (or no answer in time): the same batch goes again after the backoff.
    public mutating func failed(_ why: String, now: Int64) {
        guard let batch = inflight else { return }
        inflight = nil
        failures += 1
        lastError = why
        backoffMS = backoffMS == 0 ? Self.firstBackoffMS : min(backoffMS * 2, Self.maxBackoffMS)
        failedBatch = batch
        retryAt = now + backoffMS
    }

    /// The current backoff, in ms (0 when the last batch went through).
    public var backoff: Int64 { backoffMS }
}
