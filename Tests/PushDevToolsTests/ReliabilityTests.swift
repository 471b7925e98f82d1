import Foundation
@testable import PushDevTools
import PushTestSupport
import Testing
@testable import PushWorker
@testable import PushChaos

/// The failure paths with real processes (docs/reliability.md): a small scale of the
/// `pushworker-dev chaos` drills that run in well under 40 s each. The long ones (SIGKILL, SIGTERM,
/// broker outage, 503 storm, 410 flood, full fuzz) run with `make chaos`.
@Suite("Reliability drills", .serialized)
struct ReliabilityTests {
    static func options(scale: Double) -> ChaosOptions {
        ChaosOptions(executable: BuiltProducts.pushworkerDev, scale: scale, seed: 7, fuzzSeconds: 2)
    }

    static func check(_ report: DrillReport, _ what: String) -> DrillReport.Check? {
        report.checks.first { $0.what.hasPrefix(what) }
    }

    static func describe(_ report: DrillReport) -> String {
        report.checks.map { "\($0.ok ? "ok" : "FAIL") \($0.what): \($0.value)" }.joined(separator: "\n")
    }

    // MARK: no device notified twice, whatever the fleet does (docs/reference/records.md)

    @Test("six copies of one job at once on two workers: each device notified once, one sent result per recipient, duplicate for the other copies")
    func copiesAtOnce() {
        let report = ChaosDrills.run("copies", Self.options(scale: 0.3))
        #expect(report.passed, "\(Self.describe(report))")
        #expect(Self.check(report, "each device notified once")?.value == "0")
        #expect(Self.check(report, "exactly one sent result per recipient")?.ok == true)
        #expect(Self.check(report, "the other copies answered duplicate")?.ok == true)
    }

    @Test("workers joining and leaving mid-campaign: zero duplicate sends, nothing lost")
    func joinAndLeave() {
        let report = ChaosDrills.run("join-leave", Self.options(scale: 0.3))
        #expect(report.passed, "\(Self.describe(report))")
        #expect(Self.check(report, "zero duplicate sends at the sandbox")?.value == "0")
        #expect(Self.check(report, "every recipient has a final result")?.ok == true)
    }

    @Test("SIGTERM mid-campaign: the worker drains and exits 0, zero duplicate sends, nothing lost")
    func sigterm() {
        let report = ChaosDrills.run("sigterm", Self.options(scale: 0.3))
        #expect(report.passed, "\(Self.describe(report))")
        #expect(Self.check(report, "zero duplicate sends at the sandbox")?.value == "0")
    }

    @Test("kill -9 mid-campaign: duplicate sends stay within the sends in flight (≤ PUSHWORKER_MAX_IN_FLIGHT), nothing lost")
    func sigkill() {
        let report = ChaosDrills.run("sigkill", Self.options(scale: 0.3))
        #expect(report.passed, "\(Self.describe(report))")
        #expect(Self.check(report, "kill -9: duplicate sends ≤ sends in flight")?.ok == true)
        #expect(Self.check(report, "every recipient has a final result")?.ok == true)
    }

    @Test("Redis replaced by an empty one mid-campaign: duplicate sends within the documented bound, nothing lost")
    func redisEmpty() {
        let report = ChaosDrills.run("redis-empty", Self.options(scale: 0.3))
        #expect(report.passed, "\(Self.describe(report))")
        #expect(Self.check(report, "duplicate sends within the documented bound")?.ok == true)
    }

    @Test("Redis stopped mid-campaign: /readyz goes 503, jobs are held, the worker resumes when it returns, nothing is lost")
    func redisRestart() {
        let report = ChaosDrills.run("redis-restart", Self.options(scale: 0.2))
        #expect(report.passed, "\(Self.describe(report))")
        #expect(Self.check(report, "/readyz 503 while Redis is down")?.ok == true)
        #expect(Self.check(report, "/readyz 200 after Redis returns")?.ok == true)
        #expect(Self.check(report, "every recipient has a final result")?.ok == true)
        #expect(report.seconds < 40)
    }

    @Test("a provider 429 storm with Retry-After: recipients go through push.retry.v1 and are all sent after the storm")
    func throttleStorm() {
        let report = ChaosDrills.run("429-storm", Self.options(scale: 0.2))
        #expect(report.passed, "\(Self.describe(report))")
        #expect(Self.check(report, "retries went through push.retry.v1")?.ok == true)
        #expect(Self.check(report, "every recipient sent after the storm")?.ok == true)
        #expect(report.seconds < 40)
    }

    @Test("malformed, truncated, oversized and hostile jobs: the worker stays up, each job is dead-lettered or its recipients rejected")
    func hostileJobs() {
        let report = ChaosDrills.run("hostile-jobs", Self.options(scale: 0.1))
        #expect(report.passed, "\(Self.describe(report))")
        #expect(Self.check(report, "worker alive")?.ok == true)
        #expect(Self.check(report, "no bad recipient was sent")?.ok == true)
        #expect(Self.check(report, "then a normal job is sent")?.ok == true)
        #expect(report.checks.count >= 10, "one check per kind of bad job")
        #expect(report.seconds < 40)
    }

    @Test("seeded fuzzing of decode → plan → payload keeps its invariants", arguments: [UInt64(1), 2, 3])
    func fuzz(seed: UInt64) {
        let stats = ChaosFuzz.run(seconds: 30, seed: seed, maxIterations: 3000)
        #expect(stats.iterations == 3000)
        #expect(stats.decoded > 0, "the mutations must leave some jobs valid")
        #expect(stats.violations.isEmpty, "\(stats.violations)")
    }
}
