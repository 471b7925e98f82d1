import Foundation
import PushTestSupport
import Testing
@testable import PushChaos

/// The frequency-cap drill at a small scale (docs/caps.md): real workers, a real broker, Redis and
/// the sandbox; three campaigns to the same users at once under marketing=2/1d.
@Suite("Frequency caps: drill", .serialized)
struct CapsDrillTests {
    @Test("three campaigns to the same users on two workers: every user reached exactly twice, the third capped")
    func caps() {
        let report = ChaosDrills.run("caps", ReliabilityTests.options(scale: 0.1))
        #expect(report.passed, "\(ReliabilityTests.describe(report))")
        #expect(ReliabilityTests.check(report, "users over the cap (accepted requests per device token)")?.value == "0")
    }
}
