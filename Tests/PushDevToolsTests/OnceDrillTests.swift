import Foundation
import PushTestSupport
import Testing
@testable import PushChaos

/// The once-promise's drills at a small scale (docs/reliability.md): real processes, real harm.
@Suite("Once, even when the provider does not answer: drills", .serialized)
struct OnceDrillTests {
    @Test("a provider slower than the request timeout: one resend at most, with the same replace key; no result says timeout")
    func slowProvider() {
        let report = ChaosDrills.run("slow-provider", ReliabilityTests.options(scale: 0.6))
        #expect(report.passed, "\(ReliabilityTests.describe(report))")
        #expect(ReliabilityTests.check(report, "copies a device would show twice")?.value == "0")
        #expect(ReliabilityTests.check(report, "no result says timeout")?.value == "0")
    }

    @Test("the same under never: no msgId accepted twice")
    func slowProviderNever() {
        let report = ChaosDrills.run("slow-provider-never", ReliabilityTests.options(scale: 0.6))
        #expect(report.passed, "\(ReliabilityTests.describe(report))")
        #expect(ReliabilityTests.check(report, "under never, msgIds accepted twice")?.value == "0")
    }

    @Test("SIGTERM while the provider takes 3-6 s: exit 0 within the drain, the next worker resends with the same replace key, nothing lost")
    func drainSlow() {
        let report = ChaosDrills.run("drain-slow", ReliabilityTests.options(scale: 0.5))
        #expect(report.passed, "\(ReliabilityTests.describe(report))")
        #expect(ReliabilityTests.check(report, "copies a device would show twice")?.value == "0")
    }

    @Test("one app at 429 with Retry-After 3600: another app's job is sent within 10 s")
    func tenant429() {
        let report = ChaosDrills.run("tenant-429", ReliabilityTests.options(scale: 1))
        #expect(report.passed, "\(ReliabilityTests.describe(report))")
    }

    @Test("a 20 s connection outage of the provider: the breaker opens, nothing fails, everything is sent after it")
    func providerOutage() {
        let report = ChaosDrills.run("provider-outage", ReliabilityTests.options(scale: 0.2))
        #expect(report.passed, "\(ReliabilityTests.describe(report))")
        #expect(ReliabilityTests.check(report, "none failed")?.value == "0")
    }

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
