@testable import PushHTTP
import Testing

private final class Tracked {
    let value: Int
    init(_ value: Int) { self.value = value }
}

@Suite("FIFOQueue")
struct FIFOQueueTests {
    @Test("elements leave in the order they came, across drains and compactions")
    func order() {
        var queue = FIFOQueue<Int>()
        #expect(queue.isEmpty && queue.first == nil && queue.popFirst() == nil)
        var expected: [Int] = []
        var next = 0
        // Never drains in the middle: three in, two out, so the head passes 1,024 with entries
        // behind it and the array is compacted several times.
        for _ in 0..<5_000 {
            for _ in 0..<3 { queue.append(next); expected.append(next); next += 1 }
            for _ in 0..<2 {
                #expect(queue.first == expected.first)
                #expect(queue.popFirst() == expected.removeFirst())
            }
            #expect(queue.count == expected.count)
        }
        #expect(queue.slots.count <= 2 * queue.count + 1_024 + 3)
        while let value = queue.popFirst() { #expect(value == expected.removeFirst()) }
        #expect(expected.isEmpty && queue.isEmpty && queue.count == 0 && queue.head == 0 && queue.slots.isEmpty)
        queue.append(7)
        #expect(queue.first == 7 && queue.count == 1)
    }

    @Test("a taken element is released at once, not at the next compaction")
    func releasesOnPop() {
        var queue = FIFOQueue<Tracked>()
        weak var first: Tracked?
        do {
            let a = Tracked(1)
            first = a
            queue.append(a)
            queue.append(Tracked(2))
        }
        #expect(queue.popFirst()?.value == 1)
        #expect(first == nil)
        #expect(queue.count == 1 && queue.first?.value == 2)
    }
}
