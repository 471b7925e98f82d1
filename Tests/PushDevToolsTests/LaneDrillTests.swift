import Foundation
import PushTestSupport
import Testing
@testable import PushChaos

/// The lanes drill at a small scale (docs/lanes.md): a real worker saturated by a bulk campaign
/// against a 200 ms provider, single-recipient transactional jobs enqueued meanwhile.
@Suite("Lanes: drill", .serialized)
struct LaneDrillTests {
    @Test("transactional jobs reach sent within 1 s (p99) while a bulk campaign saturates the worker")
    func lanesPriority() {
        let report = ChaosDrills.run("lanes-priority", ReliabilityTests.options(scale: 0.2))
        #expect(report.passed, "\(ReliabilityTests.describe(report))")
        #expect(ReliabilityTests.check(report, "transactional p99 enqueue → sent ≤ 1 s")?.ok == true)
    }

    @Test("percentiles by nearest rank")
    func percentiles() {
        #expect(ChaosDrills.percentile([], 0.5) == 0)
        #expect(ChaosDrills.percentile([3, 1, 2], 0.5) == 2)
        #expect(ChaosDrills.percentile(Array(1...20).map(Double.init), 0.99) == 20)
        #expect(ChaosDrills.percentile(Array(1...100).map(Double.init), 0.99) == 99)
    }
}
