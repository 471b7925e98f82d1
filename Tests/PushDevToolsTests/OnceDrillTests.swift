import Foundation
import PushTestSupport
import Testing
@testable import PushChaos

/// The once-promise's drills at a small scale (docs/reliability.md): real processes, real harm.
@Suite("Once, even when the provider does not answer: drills", .serialized)
struct OnceDrillTests {
    @Test("workers whose clocks run 30 s ahead and behind, beside one on time, on copies of the same jobs: no device notified twice")
    func clockSkew() {
        let report = ChaosDrills.run("clock-skew", ReliabilityTests.options(scale: 0.3))
        #expect(report.passed, "\(ReliabilityTests.describe(report))")
        #expect(ReliabilityTests.check(report, "each device notified once")?.value == "0")
        #expect(ReliabilityTests.check(report, "the shifted workers' clocks")?.ok == true)
    }

    @Test("a retry due in 2099 is dead-lettered; a due retry behind it on the same partition is not delayed")
    func retryTooFar() {
        let report = ChaosDrills.run("retry-too-far", ReliabilityTests.options(scale: 1))
        #expect(report.passed, "\(ReliabilityTests.describe(report))")
        #expect(ReliabilityTests.check(report, "the retry due in 2099 is dead-lettered")?.value == "1")
    }
}
