import Foundation
@testable import PushDevTools
import PushTestSupport
import Testing
@testable import PushChaos

/// Starts one 3 + 3 Redis Cluster (node timeout 2 s) for the whole suite and stops it by PID
/// when the suite ends; the drills flush it and leave it healthy (the failover drill restarts
/// the node it killed, which rejoins as a replica).
struct SharedDrillCluster: SuiteTrait, TestScoping {
    @TaskLocal static var current: LocalRedisCluster?

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let folder = try TemporaryFolder.make(prefix: "drill-cluster")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cluster = try LocalRedisCluster(folder: folder, masters: 3, replicasPerMaster: 1, nodeTimeoutMs: 2000)
        defer { cluster.stop() }
        try await Self.$current.withValue(cluster) { try await function() }
    }
}

/// The worker against a real Redis Cluster, end to end (docs/redis.md "Cluster",
/// docs/reliability.md "Cluster drills"): real `pushworker run`, dev-broker and sandbox
/// processes, `PUSHWORKER_REDIS_URL=redis+cluster://…`, the `pushworker-dev chaos` cluster drills at
/// a small scale, one cluster for the suite.
@Suite("Redis Cluster drills (real processes, 3 masters + 3 replicas)", .serialized, SharedDrillCluster())
struct ClusterDrillTests {
    let cluster: LocalRedisCluster

    init() throws {
        guard let cluster = SharedDrillCluster.current else { throw TestSupportError("no cluster") }
        self.cluster = cluster
    }

    func run(_ drill: String) -> DrillReport {
        ChaosDrills.run(drill, ChaosOptions(executable: BuiltProducts.pushworkerDev, scale: 0.3, seed: 11), cluster: cluster)
    }

    static func check(_ report: DrillReport, _ what: String) -> DrillReport.Check? {
        report.checks.first { $0.what.hasPrefix(what) }
    }

    static func describe(_ report: DrillReport) -> String {
        (report.checks.map { "\($0.ok ? "ok" : "FAIL") \($0.what): \($0.value)" } + report.figures.map { "· \($0.0): \($0.1)" }).joined(separator: "\n")
    }

    @Test("a campaign over the cluster: every recipient sent, the campaign's keys on every master, per-node metrics, a redelivered job answered duplicate for every recipient")
    func campaign() {
        let report = run("cluster-campaign")
        #expect(report.passed, "\(Self.describe(report))")
        #expect(Self.check(report, "every recipient sent")?.ok == true)
        #expect(Self.check(report, "one campaign's state lands on several masters")?.value == "3 of 3 masters")
        #expect(Self.check(report, "/metrics: round trips and slots per master")?.ok == true)
        #expect(Self.check(report, "redelivery: redelivered jobs answered duplicate for every recipient")?.ok == true)
        #expect(Self.check(report, "redelivery: nothing sent again")?.ok == true)
    }

    @Test("slots migrated mid-campaign (by hand: ASK, then MOVED; then redis-cli --cluster reshard): nothing lost, no duplicate send, ASK and MOVED in the per-node counters")
    func reshard() {
        let report = run("cluster-reshard")
        #expect(report.passed, "\(Self.describe(report))")
        #expect(Self.check(report, "every recipient has a final result")?.ok == true)
        #expect(Self.check(report, "zero duplicate sends at the sandbox")?.value == "0")
        #expect(Self.check(report, "ASK replies counted")?.ok == true)
        #expect(Self.check(report, "MOVED replies counted")?.ok == true)
    }

    @Test("a master killed mid-campaign: /readyz 503 while its slots have no master, 200 by itself after the promotion, nothing lost, duplicates within the sends in flight, a redelivery answered duplicate")
    func failover() {
        let report = run("cluster-failover")
        #expect(report.passed, "\(Self.describe(report))")
        #expect(Self.check(report, "/readyz 503 while a slot range has no master")?.ok == true)
        #expect(Self.check(report, "/readyz 200 again, by itself")?.ok == true)
        #expect(Self.check(report, "every recipient has a final result")?.ok == true)
        #expect(Self.check(report, "duplicate sends ≤ sends in flight at the kill")?.ok == true)
        #expect(Self.check(report, "redelivery after the failover: redelivered jobs answered duplicate for every recipient")?.ok == true)
    }
}
