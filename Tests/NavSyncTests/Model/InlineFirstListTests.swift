import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

/// The id and key lists that hold their first element inline, against the arrays they
/// stand for: empty, one (inline only), and past the spill array's first 16.
@Suite("Inline-first lists")
struct InlineFirstListTests {
    @Test(arguments: [0, 1, 2, 17, 40])
    func behaveAsArrays(_ n: Int) {
        var ids = EntryIDList()
        var keys = KeyList()
        let model = (0..<n).map { EntryID($0 * 7 + 1) }
        for id in model {
            ids.append(id)
            keys.append(.entry(id))
        }
        #expect(Array(ids) == model && ids.count == n && ids.isEmpty == (n == 0))
        #expect(Array(keys) == model.map { .entry($0) })
        var visited: [EntryID] = []
        ids.forEach { visited.append($0) }
        #expect(visited == model, "forEach in order")
        for probe in [EntryID(1), EntryID(8), EntryID(7 * (n - 1) + 1), EntryID(2), EntryID(7 * n + 1)] {
            #expect(ids.contains(probe) == model.contains(probe), "\(probe)")
            #expect(keys.contains(.entry(probe)) == model.contains(probe))
        }
        #expect(!keys.contains(.root) && !keys.contains(.alert))
        var same = EntryIDList()
        model.forEach { same.append($0) }
        #expect(same == ids)
        same.append(EntryID(999))
        #expect(same != ids)
    }
}
