import Foundation
import PushTestSupport
import Testing
@testable import PushChaos

/// The local-time drill at a small scale (docs/local-time.md): a real worker, quiet hours ending
/// at three minute boundaries in three zones, and a local send time per zone.
@Suite("Local time: drill", .serialized)
struct LocalTimeDrillTests {
    @Test("every recipient is sent once, none before its zone's quiet end or local send time")
    func quietHours() {
        let report = ChaosDrills.run("quiet-hours", ReliabilityTests.options(scale: 0.1))
        #expect(report.passed, "\(ReliabilityTests.describe(report))")
        #expect(ReliabilityTests.check(report, "requests the provider received before the recipient's quiet end or send time")?.value == "0")
    }

    @Test("wall-clock times and minute boundaries")
    func clockMath() throws {
        let instant = Date(timeIntervalSince1970: 1_796_000_000)  // 2026-11-30T00:53:20Z
        #expect(ChaosDrills.wallClock(instant, try #require(TimeZone(identifier: "UTC"))) == "00:53")
        #expect(ChaosDrills.wallClock(instant, try #require(TimeZone(identifier: "Europe/Paris"))) == "01:53")
        #expect(ChaosDrills.wallClock(instant, try #require(TimeZone(identifier: "America/New_York"))) == "19:53")
        #expect(ChaosDrills.minuteBoundary(after: instant, lead: 12).timeIntervalSince1970 == 1_796_000_040)
        #expect(ChaosDrills.minuteBoundary(after: instant, lead: 45).timeIntervalSince1970 == 1_796_000_100)
    }

    @Test("each zone's quiet hours contain the start and end at its own minute")
    func groups() throws {
        let first = Date(timeIntervalSince1970: 1_796_000_040)
        let groups = ChaosDrills.deferredGroups(ReliabilityTests.options(scale: 0.1), first: first)
        #expect(groups.map(\.notBefore.timeIntervalSince1970) == [1_796_000_040, 1_796_000_040, 1_796_000_100, 1_796_000_040,
                                                                 1_796_000_160, 1_796_000_040])
        let paris = String(decoding: try #require(groups.first?.campaign.jobs.first?.value), as: UTF8.self)
        #expect(paris.hasPrefix(#"{"quietHours":{"start":"01:49","end":"01:54"},"schemaVersion":1,"#))
        #expect(paris.contains(#""timezone":"Europe/Paris","platform":"#))
        let tokyo = String(decoding: try #require(groups.last?.campaign.jobs.first?.value), as: UTF8.self)
        #expect(tokyo.hasPrefix(#"{"timezone":"Asia/Tokyo","sendAtLocal":"09:54","schemaVersion":1,"#))
    }
}
