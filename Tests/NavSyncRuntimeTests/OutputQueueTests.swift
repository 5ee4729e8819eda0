import NavSyncLibuv
import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport
@testable import NavSyncRuntime

/// A broadcast frame queued on many connections is held by a plain count of its
/// queues, with one retain for all of them: it lives while any queue holds it and is
/// freed when the last lets go.
@Suite("Output queue")
struct OutputQueueTests {
    @Test func aSharedFrameLivesUntilItsLastQueueLetsGo() {
        weak var watched: OutgoingBuffer?
        var first = OutputQueue()
        var second = OutputQueue()
        do {
            let frame = OutgoingBuffer(Array("patch".utf8))
            watched = frame
            first.append(frame)
            second.append(frame)
            second.append(frame)   // twice on one queue: two holds
            #expect(frame.holders == 3)
        }
        #expect(watched != nil, "queued: alive without any other reference")
        #expect(first.queuedBytes == 5 && second.queuedBytes == 10)
        first.discard()
        #expect(watched?.holders == 2)
        second.discard()
        #expect(watched == nil, "the last queue let go: freed")
        // A queue that goes away with frames still queued lets go of them too.
        do {
            var third = OutputQueue()
            let frame = OutgoingBuffer(Array("x".utf8))
            watched = frame
            third.append(frame)
            _ = consume third
        }
        #expect(watched == nil)
    }
}
