import PushCore
import PushRedis
import Testing
@testable import PushWorker

/// The ring of recent sent markers a worker writes again when Redis comes back empty.
@Suite("Recent sent markers: a bounded ring")
struct RecentSentTests {
    static func entry(_ number: Int) -> DeliveryStateStore.RecordEntry {
        DeliveryStateStore.RecordEntry(appID: "app", campaignID: "c", key: DedupKey(msgID: "m\(number)"), owner: "o",
                                       sentRetentionMs: 1000)
    }

    @Test("keeps the last `capacity` markers, oldest replaced first, and never reserves past the capacity")
    func boundedRing() {
        var ring = RecentSent()
        let capacity = 600
        for start in stride(from: 0, to: 2000, by: 100) {
            ring.append(contentsOf: (start..<start + 100).map(Self.entry), capacity: capacity)
            #expect(ring.entries.count == min(start + 100, capacity))
            // Doubling past the capacity would reserve 1,024 entries; malloc may round up a little.
            #expect(ring.entries.capacity <= capacity * 5 / 4)
        }
        let kept = Set(ring.entries.map(\.key))
        #expect(kept == Set((1400..<2000).map { Self.entry($0).key }))
    }

    @Test("a capacity of 0 keeps nothing")
    func zeroCapacity() {
        var ring = RecentSent()
        ring.append(contentsOf: (0..<10).map(Self.entry), capacity: 0)
        #expect(ring.entries.isEmpty)
    }
}
