import Testing
@testable import NavSync

/// The paged array under the sequencer's large tables behaves as an array, and a copy
/// is its own value.
@Suite("Paged array")
struct PagedArrayTests {
    @Test func behavesAsAnArrayAcrossPages() {
        var paged = PagedArray<Int>()
        var plain: [Int] = []
        for i in 0..<5_000 { paged.append(i); plain.append(i) }
        #expect(Array(paged) == plain && paged.count == 5_000)
        let copy = paged
        for i in stride(from: 0, to: 5_000, by: 7) { paged[i] = -i; plain[i] = -i }
        #expect(Array(paged) == plain)
        #expect(Array(copy) == Array(0..<5_000), "a copy keeps its own elements")
        paged.removeFirst(2_048)                         // whole pages
        plain.removeFirst(2_048)
        #expect(Array(paged) == plain && paged[0] == plain[0])
        paged.removeFirst(5)                             // part of one
        plain.removeFirst(5)
        paged.append(9)
        plain.append(9)
        #expect(Array(paged) == plain && paged.count == plain.count)
        for _ in 0..<3 {                                 // across a page boundary
            paged.removeFirst(700)
            plain.removeFirst(700)
            for i in 0..<300 { paged.append(i); plain.append(i) }
            #expect(Array(paged) == plain)
        }
        paged[1_500] = 77
        plain[1_500] = 77
        #expect(Array(paged) == plain)
        paged.removeAll { $0 % 3 == 0 }
        plain.removeAll { $0 % 3 == 0 }
        #expect(Array(paged) == plain)
        paged.removeFirst(paged.count)
        #expect(paged.isEmpty)
        paged.append(1)
        #expect(Array(paged) == [1])
    }
}
