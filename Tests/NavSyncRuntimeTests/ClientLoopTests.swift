import NavSyncLibuv
import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport
@testable import NavSyncRuntime

@Suite("Client loop")
struct ClientLoopTests {
    /// Timers are kept by identity: of many, cancelled in an order of their own (some
    /// before they fire, some twice), exactly the others fire, each once.
    @Test func cancelledTimersNeverFireAndTheOthersFireOnce() {
        let loop = ClientLoop()
        var fired: [Int] = []
        let timers = (0..<200).map { i in loop.after(Int64(1 + i % 5)) { fired.append(i) } }
        let cancelled = Set(stride(from: 199, through: 0, by: -3))
        for i in cancelled { timers[i].cancel() }
        for i in cancelled.prefix(10) { timers[i].cancel() }
        loop.after(50) { loop.stop() }
        loop.run()
        #expect(fired.sorted() == (0..<200).filter { !cancelled.contains($0) })
        loop.shutdown()
    }
}
