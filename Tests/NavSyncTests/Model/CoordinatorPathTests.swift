import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

/// `CoordinatorPath` against the array it stands for: random appends (past 8 levels and
/// past 16-bit indices, where it spills) and cuts, checked after every step.
@Suite("Coordinator paths")
struct CoordinatorPathTests {
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func behavesAsAnArrayOfIndices(_ seed: UInt64) {
        var rng = SeededRandom(seed: seed)
        var path = CoordinatorPath()
        var model: [Int] = []
        for step in 0..<4000 {
            if model.isEmpty || rng.next() % 3 != 0 {
                let index = rng.next() % 50 == 0 ? Int(rng.next() % 200_000) : Int(rng.next() % 12)
                path.append(index)
                model.append(index)
            } else {
                let k = Int(rng.next() % UInt64(model.count + 1))
                path.removeLast(k)
                model.removeLast(k)
            }
            if model.count > 12 {
                path.removeLast(model.count - 3)
                model.removeLast(model.count - 3)
            }
            #expect(Array(path) == model, "step \(step)")
            #expect(path.count == model.count && path.last == model.last)
            let rebuilt = CoordinatorPath(model)
            #expect(rebuilt == path && rebuilt.hashValue == path.hashValue, "step \(step): \(path) and \(rebuilt)")
            #expect(path.appending(7) == CoordinatorPath(model + [7]))
        }
    }

    @Test func equalOnlyWithTheSameIndices() {
        let p: CoordinatorPath = [0, 2]
        #expect(p == CoordinatorPath([0, 2]) && p != [0, 2, 0] && p != [2, 0] && p != [0] && CoordinatorPath() == [])
        var spilled: CoordinatorPath = [0, 70_000]
        spilled.removeLast()
        #expect(spilled == [0] && spilled.hashValue == CoordinatorPath([0]).hashValue, "spilled and inline, the same indices")
        var reversed: CoordinatorPath = [1, 2, 3]
        reversed.reverse()
        #expect(reversed == [3, 2, 1] && "\(reversed)" == "[3, 2, 1]")
        let deep = CoordinatorPath(0..<20)
        #expect(Array(deep) == Array(0..<20) && deep[19] == 19)
    }
}
