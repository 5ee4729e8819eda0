import Testing
@testable import NavSync
@testable import NavSyncServer
import TestSupport

@Suite("Conflict records")
struct ConflictRecordsTests {
    /// What the table must behave like: a dictionary of records, and a list of them in
    /// the order made, from which the oldest are forgotten down to half the capacity
    /// (with the other records of the newest revision forgotten).
    struct Model {
        var capacity: Int
        var records: [EntryID: Int] = [:]
        var order: [(id: EntryID, rev: Int)] = []
        var horizon = 0

        mutating func note(_ id: EntryID, _ rev: Int) {
            records[id] = rev
            order.append((id, rev))
        }

        mutating func forgetIfFull() {
            guard records.count > capacity else { return }
            while let first = order.first, records.count > capacity / 2 || first.rev <= horizon {
                if records[first.id] == first.rev {
                    records[first.id] = nil
                    horizon = max(horizon, first.rev)
                }
                order.removeFirst()
            }
        }
    }

    static func check(_ table: RemovalTable, _ model: Model, probes: some Sequence<Int>) {
        #expect(table.count == model.records.count)
        #expect(table.horizon == model.horizon)
        #expect(table.records.map(\.id) == model.records.keys.sorted())
        #expect(table.records.allSatisfy { model.records[$0.id] == $0.rev })
        for n in probes { #expect(table[EntryID(n)] == model.records[EntryID(n)], "e\(n)") }
    }

    /// Random revisions, each removing a few ids: mostly recent ones, sometimes one that
    /// has lived long (below the window), sometimes after a jump in the id counter (a
    /// `load`), sometimes reviving a gone id (a `restore`). The table keeps exactly the
    /// records the model keeps, through the window's slides.
    @Test(arguments: [4, 16, 100, 2000])
    func keepsWhatADictionaryKeeps(capacity: Int) {
        var rng = SeededRandom(seed: UInt64(capacity))
        var table = RemovalTable(capacity: capacity)
        var model = Model(capacity: capacity)
        var next = 1
        var live: [Int] = []
        for rev in 1...3000 {
            if Int.random(in: 0..<200, using: &rng) == 0 { next += Int.random(in: 1...50_000, using: &rng) }
            for _ in 0..<Int.random(in: 0...6, using: &rng) {
                live.append(next)
                next += 1
            }
            for _ in 0..<Int.random(in: 0...5, using: &rng) where !live.isEmpty {
                // Mostly the newest live ids; now and then one of the oldest.
                let i = Int.random(in: 0..<10, using: &rng) == 0 ? 0 : max(0, live.count - Int.random(in: 1...4, using: &rng))
                let id = EntryID(live.remove(at: i))
                table.note(id, removedAt: rev)
                model.note(id, rev)
            }
            if Int.random(in: 0..<20, using: &rng) == 0, let (id, _) = model.records.randomElement(using: &rng) {
                table.revive(id)
                model.records[id] = nil
                live.append(id.number)
            }
            table.forgetIfFull()
            model.forgetIfFull()
            if rev % 100 == 0 || capacity <= 16 {
                Self.check(table, model, probes: (0..<40).map { _ in Int.random(in: 0...next, using: &rng) })
            }
        }
        Self.check(table, model, probes: 0...min(next, 5000))
        #expect(model.horizon > 0 || capacity == 2000)
    }

    /// A snapshot's records, given in any order, are the table's, forgotten oldest first
    /// from there on.
    @Test func readBackFromRecords() {
        let records = [(EntryID(9), 5), (EntryID(3), 2), (EntryID(70_000), 7), (EntryID(4), 2)]
        var table = RemovalTable(capacity: 4, horizon: 1, records: records)
        #expect(table.count == 4 && table.horizon == 1)
        #expect(table.records.map(\.id) == [EntryID(3), EntryID(4), EntryID(9), EntryID(70_000)])
        #expect(table == RemovalTable(capacity: 99, horizon: 0, records: records.reversed()))
        table.note(EntryID(70_001), removedAt: 8)
        table.forgetIfFull()
        // Down to half the capacity: revision 2's records and then revision 5's.
        #expect(table.records.map(\.rev) == [7, 8] && table.horizon == 5)
        #expect(table[EntryID(3)] == nil && table[EntryID(9)] == nil && table[EntryID(70_000)] == 7)
    }

    /// The change table keeps root, alert and entry keys apart, forgets a cleared one,
    /// and finds every entry key after its window has slid past it (ids far apart).
    @Test func changeTableKeepsEveryKey() {
        var table = ChangeTable()
        var model: [CoordinatorKey: Int] = [:]
        var rng = SeededRandom(seed: 5)
        var keys: [CoordinatorKey] = [.root, .alert]
        for rev in 0..<5000 {
            let key: CoordinatorKey = Int.random(in: 0..<4, using: &rng) == 0
                ? keys.randomElement(using: &rng)!
                : .entry(EntryID(rev * Int.random(in: 1...3, using: &rng)))
            keys.append(key)
            let value: Int? = Int.random(in: 0..<5, using: &rng) == 0 ? nil : rev
            table[key] = value
            model[key] = value
        }
        for key in keys { #expect(table[key] == model[key], "\(key)") }
        #expect(table.records.count == model.count && table.records.allSatisfy { model[$0.key] == $0.rev })
        var copy = ChangeTable()
        for (key, rev) in model { copy[key] = rev }
        #expect(copy == table)
        copy[.root] = nil
        #expect(copy != table)
    }
}
