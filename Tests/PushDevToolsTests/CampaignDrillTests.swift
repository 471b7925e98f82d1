import Foundation
import PushTestSupport
import Testing
@testable import PushChaos

/// The campaign-control drills at a small scale (docs/campaigns.md): real workers, a real
/// broker, Redis and the sandbox; the controls set in Redis mid-send.
@Suite("Campaign control: drills", .serialized)
struct CampaignDrillTests {
    @Test("cancel mid-send: nothing accepted later than 2 s after it, one final result per recipient, sent or cancelled")
    func cancel() {
        let report = ChaosDrills.run("campaign-cancel", ReliabilityTests.options(scale: 0.1))
        #expect(report.passed, "\(ReliabilityTests.describe(report))")
        #expect(ReliabilityTests.check(report, "requests accepted by the provider later than 2 s after the cancel")?.value == "0")
    }

    @Test("pause then resume: nothing received while paused, everything sent after, no msgId twice")
    func pause() {
        let report = ChaosDrills.run("campaign-pause", ReliabilityTests.options(scale: 0.1))
        #expect(report.passed, "\(ReliabilityTests.describe(report))")
        #expect(ReliabilityTests.check(report, "requests received while paused")?.value == "0")
    }

    @Test("a throttle holds the campaign's rate within ±10 %; another campaign is not delayed")
    func throttle() {
        let report = ChaosDrills.run("campaign-throttle", ReliabilityTests.options(scale: 0.1))
        #expect(report.passed, "\(ReliabilityTests.describe(report))")
    }

    @Test("a campaign of dead tokens pauses itself through the guardrail, within its minimum plus what was in flight")
    func guardrail() {
        let report = ChaosDrills.run("campaign-guard", ReliabilityTests.options(scale: 0.1))
        #expect(report.passed, "\(ReliabilityTests.describe(report))")
        #expect(ReliabilityTests.check(report, "the campaign paused itself")?.ok == true)
    }
}
