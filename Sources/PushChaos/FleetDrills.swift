import Foundation
import PushCore
import PushWorker
import PushDevTools

/// The fleet drills (docs/pipeline.md, docs/reference/redis.md; docs/reliability.md): what a fleet does to a job —
/// copies processed at once, workers joining and leaving, Redis losing its data — must not
/// notify a device twice. The sandbox counts msgIds it accepted more than once: that is the
/// figure each drill prints and bounds.
extension ChaosDrills {
    /// Environment that makes a dead worker's claims run out quickly in a drill (request timeout
    /// 2 s, lease 5 s: more than two request timeouts, as `config check` demands).
    static let shortLease = ["PUSHWORKER_REQUEST_TIMEOUT_MS": "2000", "PUSHWORKER_CLAIM_LEASE_SECONDS": "5"]

    /// Per recipient: how many `sent` results and how many in all.
    static func tally(_ watcher: ResultWatcher) -> (exactlyOneSent: Int, moreThanOneSent: Int, noneSent: Int, otherStatuses: [String: Int]) {
        var one = 0, many = 0, none = 0
        var other: [String: Int] = [:]
        for (_, results) in watcher.byPair {
            let sent = results.filter { $0.status == "sent" }.count
            if sent == 1 { one += 1 } else if sent > 1 { many += 1 } else { none += 1 }
            for result in results where result.status != "sent" && result.status != "duplicate" { other[result.status, default: 0] += 1 }
        }
        return (one, many, none, other)
    }

    // MARK: copies — N copies of one job at once on two workers

    static func copies(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "100"], partitions: 4)
        let copies = 6
        let size = options.scaled(150, minimum: 30)
        let campaign = ChaosCampaign.make(prefix: "copy", jobs: 1, perJob: size, seed: options.seed)
        let watcher = try ResultWatcher(harness, expected: campaign.expected)
        let first = try harness.startWorker()
        let second = try harness.startWorker()
        // Both ready at once needs the group's rebalance for the second member to settle; on a
        // loaded 2-core CI machine (make test runs suites side by side) that took over 40 s once.
        guard ChildProcess.waitFor(timeout: 90, { first.readyz() == 200 && second.readyz() == 200 }) else {
            report.check("both workers ready", "\(first.readyz()) / \(second.readyz())", false)
            return
        }
        // The same job, six times at once, keyed so the copies land on different partitions
        // (the worker never looks at the key): both workers process copies at the same moment.
        let job = campaign.jobs[0]
        try harness.produce((0..<copies).map { (key: "copy-\($0)", value: job.value) })
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline && watcher.results < copies * size { watcher.update(0.2) }
        let tally = Self.tally(watcher)
        let duplicates = sandboxDuplicates(harness)
        let accepted = (harness.sandboxStats()["accepted"] as? [String: Any])?.values.compactMap { $0 as? Int }.reduce(0, +) ?? -1
        report.figure("copies × recipients", "\(copies) × \(size)")
        report.figure("results", "\(watcher.results) (\(watcher.statusSummary))")
        report.check("every copy's recipient has a result", "\(watcher.results)/\(copies * size)", watcher.results >= copies * size)
        report.check("each device notified once (duplicate sends at the sandbox)", "\(duplicates)", duplicates == 0)
        report.check("the sandbox accepted each recipient once", "\(accepted)/\(size)", accepted == size)
        report.check("exactly one sent result per recipient", "\(tally.exactlyOneSent)/\(size), \(tally.moreThanOneSent) with more",
                     tally.exactlyOneSent == size && tally.moreThanOneSent == 0)
        let duplicateResults = watcher.statuses["duplicate"] ?? 0
        report.check("the other copies answered duplicate", "\(duplicateResults)/\((copies - 1) * size)", duplicateResults == (copies - 1) * size)
        for worker in [first, second] { worker.signal(SIGTERM) }
        for worker in [first, second] { _ = worker.wait(timeout: 30) }
    }

    // MARK: join-leave — workers join and leave mid-campaign

    static func joinLeave(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        // Slow enough (≈ 330 sends/s per worker) that rebalances move partitions with jobs in flight.
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "300"], partitions: 4)
        let campaign = ChaosCampaign.make(prefix: "fleet", jobs: options.scaled(80, minimum: 16), perJob: 50, seed: options.seed)
        let watcher = try ResultWatcher(harness, expected: campaign.expected)
        try harness.produce(campaign.jobs)
        let limits = ["PUSHWORKER_MAX_IN_FLIGHT": "100"]
        let a = try harness.startWorker(extra: limits)
        var workers = [a]
        guard watcher.wait(fraction: 0.15, timeout: 120) else {
            report.check("campaign started", "\(watcher.covered.count) results", false)
            return
        }
        let b = try harness.startWorker(extra: limits)          // joins: partitions move from A
        workers.append(b)
        harness.log("B joined at \(watcher.covered.count) results")
        watcher.wait(fraction: 0.4, timeout: 120)
        a.signal(SIGTERM)                                           // leaves: drains, its partitions move
        let drained = a.wait(timeout: 40)
        report.check("A drains and exits 0", drained.map { "exit \($0)" } ?? "still running", drained == 0)
        harness.log("A left at \(watcher.covered.count) results")
        watcher.wait(fraction: 0.6, timeout: 120)
        let c = try harness.startWorker(extra: limits)          // another joins
        workers.append(c)
        harness.log("C joined at \(watcher.covered.count) results")
        watcher.wait(timeout: 180)
        nothingLost(watcher, &report)
        let duplicates = sandboxDuplicates(harness)
        report.check("zero duplicate sends at the sandbox", "\(duplicates)", duplicates == 0)
        let tally = Self.tally(watcher)
        report.check("no recipient with two sent results", "\(tally.moreThanOneSent)", tally.moreThanOneSent == 0)
        report.figure("duplicate results (at-least-once: the new owner answers duplicate)", "\(watcher.duplicateResults)")
        report.figure("result statuses", watcher.statusSummary)
        for worker in workers where worker.child.isRunning { worker.signal(SIGTERM) }
        for worker in workers { _ = worker.wait(timeout: 30) }
    }

    // MARK: redis-empty — Redis restarted without its data mid-campaign

    /// Every job enqueued twice (two copies), two workers; at 40 % of the results Redis is
    /// replaced by an empty one on the same port. The workers write again what their unfinished
    /// jobs sent and claimed as soon as it answers; what the fleet forgets is the sends of
    /// processings already finished, and the sends in flight at that moment. The documented
    /// bound (docs/redis.md, "When Redis loses its data"): duplicate sends ≤ recipients sent
    /// before the loss whose other copy was answered after it + the fleet's sends in flight at
    /// the loss (each worker ≤ `PUSHWORKER_MAX_IN_FLIGHT`).
    static func redisEmpty(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "400"], partitions: 4)
        let campaign = ChaosCampaign.make(prefix: "empty", jobs: options.scaled(40, minimum: 16), perJob: 50, seed: options.seed)
        let watcher = try ResultWatcher(harness, expected: campaign.expected)
        let limits = ["PUSHWORKER_MAX_IN_FLIGHT": "50"]
        let workers = [try harness.startWorker(extra: limits), try harness.startWorker(extra: limits)]
        // Copy 1 of each job, then copy 2 of each, interleaved in time with the loss.
        var messages: [(key: String, value: [UInt8])] = []
        for (index, job) in campaign.jobs.enumerated() {
            messages.append((key: job.key, value: job.value))
            messages.append((key: "\(job.key)#copy\(index)", value: job.value))
        }
        try harness.produce(messages)
        guard watcher.wait(fraction: 0.4, timeout: 120) else {
            report.check("campaign started", "\(watcher.covered.count) results", false)
            return
        }
        let inFlightAtLoss = workers.map { $0.inFlight() ?? 50 }.reduce(0, +)
        harness.stopRedis()
        let lossMs = Int64(Date().timeIntervalSince1970 * 1000)
        try harness.startRedis()
        harness.log("redis replaced by an empty one at \(watcher.covered.count) results")
        let deadline = Date().addingTimeInterval(180)
        while Date() < deadline && watcher.results < 2 * campaign.recipientCount { watcher.update(0.2) }
        report.check("every copy's recipient has a result", "\(watcher.results)/\(2 * campaign.recipientCount)",
                     watcher.results >= 2 * campaign.recipientCount)
        // The bound: sent before the loss with its other copy answered after it, plus what was in flight.
        var bound = inFlightAtLoss
        for (_, results) in watcher.byPair {
            guard let sentAt = results.first(where: { $0.status == "sent" })?.atMs, sentAt < lossMs else { continue }
            if results.contains(where: { $0.atMs > lossMs }) { bound += 1 }
        }
        let duplicates = sandboxDuplicates(harness)
        report.figure("duplicate sends at the sandbox / bound", "\(duplicates) / \(bound) (of which in flight at the loss: \(inFlightAtLoss))")
        report.check("duplicate sends within the documented bound", "\(duplicates) ≤ \(bound)", duplicates >= 0 && duplicates <= bound)
        report.figure("result statuses", watcher.statusSummary)
        let alive = workers.allSatisfy(\.child.isRunning)
        report.check("workers alive at the end", alive ? "running" : "exited", alive)
        for worker in workers { worker.signal(SIGTERM) }
        for worker in workers { _ = worker.wait(timeout: 30) }
    }
}
