import Foundation
import PushTestSupport
import Testing
@testable import PushChaos

/// The lanes drill at a small scale (docs/lanes.md): a real worker saturated by a bulk campaign
/// against a 200 ms provider, single-recipient transactional jobs enqueued meanwhile.
@Suite("Lanes: drill", .serialized)
struct LaneDrillTests {
    /// The drill's absolute 1 s bound is checked at full scale by `pushworker-dev chaos --drill
    /// lanes-priority` on a machine of its own (docs/lanes.md); here, beside the whole test suite
    /// on the same cores: every other check, and transactional jobs sent in a fraction of the time
    /// the same jobs take on the bulk lane.
    @Test("transactional jobs are sent long before the same jobs on the bulk lane while a bulk campaign saturates the worker")
    func lanesPriority() {
        let report = ChaosDrills.run("lanes-priority", ReliabilityTests.options(scale: 0.2))
        let others = report.checks.filter { !$0.what.hasPrefix("transactional p99") }
        #expect(!others.isEmpty && others.allSatisfy(\.ok), "\(ReliabilityTests.describe(report))")
        let p99 = Self.seconds(report, "transactional lane: enqueue → sent", "p99")
        let bulkP50 = Self.seconds(report, "every job on the bulk lane: enqueue → sent", "p50")
        #expect(p99 > 0 && p99 <= 2 && p99 * 3 < bulkP50, "transactional p99 \(p99) s, bulk-lane p50 \(bulkP50) s")
    }

    /// `p50 0.24 s, p99 0.37 s, …` of figure `name`: the value after `label`.
    static func seconds(_ report: DrillReport, _ name: String, _ label: String) -> Double {
        guard let text = report.figures.first(where: { $0.0 == name })?.1 else { return 0 }
        let parts = text.split(separator: " ")
        guard let index = parts.firstIndex(of: Substring(label)), index + 1 < parts.count else { return 0 }
        return Double(parts[index + 1]) ?? 0
    }

    @Test("percentiles by nearest rank")
    func percentiles() {
        #expect(ChaosDrills.percentile([], 0.5) == 0)
        #expect(ChaosDrills.percentile([3, 1, 2], 0.5) == 2)
        #expect(ChaosDrills.percentile(Array(1...20).map(Double.init), 0.99) == 20)
        #expect(ChaosDrills.percentile(Array(1...100).map(Double.init), 0.99) == 99)
    }
}
