import Foundation
import PushTestSupport
import Testing
@testable import PushChaos

/// The worker against a real Sentinel deployment, end to end (docs/redis.md "Sentinel",
/// docs/reliability.md): the `sentinel-failover` drill of `pushworker-dev chaos` at a small scale.
@Suite("Redis Sentinel drill (real processes, master + replica + 3 Sentinels)")
struct SentinelDrillTests {
    @Test("the master killed mid-campaign: the Sentinels promote the replica, the worker follows, nothing lost, duplicates within the sends in flight, /readyz 200 within seconds, a redelivery answered duplicate")
    func failover() {
        let report = ChaosDrills.run("sentinel-failover", ReliabilityTests.options(scale: 0.3))
        #expect(report.passed, "\(ReliabilityTests.describe(report))")
        #expect(ReliabilityTests.check(report, "every recipient has a final result")?.ok == true)
        #expect(ReliabilityTests.check(report, "duplicate sends ≤ sends in flight at the kill")?.ok == true)
        #expect(ReliabilityTests.check(report, "/readyz 200 again within 10 s of the promotion")?.ok == true)
        #expect(ReliabilityTests.check(report, "the worker wrote back its sent markers and claims on the new master")?.ok == true)
        #expect(ReliabilityTests.check(report, "redelivery after the failover: redelivered jobs answered duplicate for every recipient")?.ok == true)
    }
}
