import Foundation
import PushCore
import PushDevTools
import PushProcess

/// The lanes drill (docs/lanes.md): a bulk campaign of 50,000 iOS recipients (`--scale` scales
/// it) saturates one worker of 500 in-flight sends against a provider answering in 200 ms;
/// 20 single-recipient transactional jobs are enqueued meanwhile, one every 250 ms. Run twice:
/// with the jobs on the transactional lane, then with every job on the bulk lane.
extension ChaosDrills {
    public static let laneDrillNames = ["lanes-priority"]

    /// Enqueue-to-`sent` latencies (seconds) of the transactional jobs, and the bulk campaign's
    /// results when the last of them was sent.
    struct LaneRun {
        var latencies: [Double] = []
        var bulkSentWhenDone = 0
        var bulkTotal = 0
        var transactionalSent = 0
        var transactionalTotal = 0
        var bulkComplete = false
        var duplicates = 0
        /// The slowest enqueue of a single job (a fresh producer, produce, acknowledgement).
        var slowestEnqueueMs: Int64 = 0
    }

    static func lanesPriority(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        let lanes = try laneRun(options, &report, transactional: true)
        let bulkOnly = try laneRun(options, &report, transactional: false)
        func summary(_ run: LaneRun) -> String {
            String(format: "p50 %.2f s, p99 %.2f s, max %.2f s (%d jobs)", percentile(run.latencies, 0.5), percentile(run.latencies, 0.99),
                   run.latencies.max() ?? 0, run.latencies.count)
        }
        report.figure("bulk campaign", "\(lanes.bulkTotal) recipients, 1 worker of 500 in flight, provider latency \(campaignLatencyMs) ms")
        report.figure("transactional lane: enqueue → sent", summary(lanes))
        report.figure("every job on the bulk lane: enqueue → sent", summary(bulkOnly))
        report.figure("slowest enqueue of one transactional job (new producer → acknowledged)", "\(lanes.slowestEnqueueMs) ms")
        report.figure("bulk sent when the last transactional job was sent (lanes)", "\(lanes.bulkSentWhenDone) of \(lanes.bulkTotal)")
        report.check("every transactional job sent", "\(lanes.transactionalSent)/\(lanes.transactionalTotal)",
                     lanes.transactionalSent == lanes.transactionalTotal)
        report.check("the bulk campaign was still sending when the last transactional job was sent",
                     "\(lanes.bulkSentWhenDone) of \(lanes.bulkTotal)", lanes.bulkSentWhenDone < lanes.bulkTotal)
        report.check("transactional p99 enqueue → sent ≤ 1 s", String(format: "%.2f s", percentile(lanes.latencies, 0.99)),
                     !lanes.latencies.isEmpty && percentile(lanes.latencies, 0.99) <= 1.0)
        report.check("the bulk campaign completes (both runs)", "\(lanes.bulkComplete), \(bulkOnly.bulkComplete)",
                     lanes.bulkComplete && bulkOnly.bulkComplete)
        report.check("exactly one final result per recipient (duplicate results)", "\(lanes.duplicates + bulkOnly.duplicates)",
                     lanes.duplicates + bulkOnly.duplicates == 0)
    }

    /// One run: the bulk campaign, then the single-recipient jobs on their lane's topic
    /// (`transactional`) or as bulk jobs on the jobs topic.
    private static func laneRun(_ options: ChaosOptions, _ report: inout DrillReport, transactional: Bool) throws -> LaneRun {
        let harness = try ChaosHarness(options, name: report.name + (transactional ? "-lanes" : "-bulk"),
                                       sandboxArguments: ["--latency-ms", "\(campaignLatencyMs)"])
        let bulk = ChaosCampaign.make(prefix: "bulk", jobs: options.scaled(100, minimum: 4), perJob: 500, platforms: ["ios"],
                                      seed: options.seed, collapseID: nil, campaignID: "cmp_bulk")
        var singles = ChaosCampaign.make(prefix: "tx", jobs: 20, perJob: 1, platforms: ["ios"], seed: options.seed + 11,
                                         collapseID: nil, campaignID: "cmp_tx")
        if transactional {
            singles.jobs = singles.jobs.map { job in
                (job.key, Array(String(decoding: job.value, as: UTF8.self)
                    .replacingOccurrences(of: #"{"schemaVersion":1,"#, with: #"{"schemaVersion":1,"lane":"transactional","#).utf8))
            }
        }
        let watcher = try ResultWatcher(harness, expected: bulk.expected.union(singles.expected))
        let worker = try harness.startWorker(extra: ["PUSHWORKER_MAX_IN_FLIGHT": "500"])
        _ = ChildProcess.waitFor(timeout: 60) { worker.readyz() == 200 }
        try harness.produce(bulk.jobs)
        var run = LaneRun(bulkTotal: bulk.recipientCount, transactionalTotal: singles.recipientCount)
        // Saturated: a worker's worth of the campaign already sent.
        let started = Date().addingTimeInterval(120)
        while (watcher.statuses["sent"] ?? 0) < min(1000, bulk.recipientCount / 4) && Date() < started { watcher.update(0.1) }
        var enqueuedAt: [String: Int64] = [:]
        for job in singles.jobs {
            enqueuedAt[job.key] = Int64(Date().timeIntervalSince1970 * 1000)
            try harness.produce([job], topic: transactional ? "push.jobs.transactional.v1" : "push.jobs.v1")
            run.slowestEnqueueMs = max(run.slowestEnqueueMs, Int64(Date().timeIntervalSince1970 * 1000) - (enqueuedAt[job.key] ?? 0))
            let next = Date().addingTimeInterval(0.25)
            while Date() < next { watcher.update(0.02) }
        }
        let deadline = Date().addingTimeInterval(240)
        while watcher.covered.intersection(singles.expected).count < singles.recipientCount && Date() < deadline { watcher.update(0.05) }
        run.bulkSentWhenDone = watcher.covered.intersection(bulk.expected).count
        for pair in singles.expected {
            guard let sent = watcher.byPair[pair]?.first(where: { $0.status == "sent" }),
                  let enqueued = enqueuedAt[String(pair.split(separator: "|")[0])] else { continue }
            run.transactionalSent += 1
            run.latencies.append(Double(sent.atMs - enqueued) / 1000)
        }
        run.bulkComplete = watcher.wait(timeout: 300)
        run.duplicates = watcher.duplicateResults
        stop(worker, checking: "worker alive at the end (\(transactional ? "lanes" : "bulk only"))", &report)
        return run
    }

    /// The `fraction` percentile of `values` (nearest rank); 0 when empty.
    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }
}
