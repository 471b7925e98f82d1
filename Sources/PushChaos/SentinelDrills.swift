import Foundation
import PushCore
import PushDevTools
import PushRuntime

/// The Redis Sentinel drill (docs/redis.md "Sentinel", docs/reliability.md): the real
/// `pushworker run`, dev-broker and sandbox processes against a master, its replica and three
/// Sentinels the drill starts (``LocalRedisSentinel``), `PUSHWORKER_REDIS_URL=redis+sentinel://…`.
extension ChaosDrills {
    /// The Sentinel drills, in the order `--drill all` runs them.
    static let sentinelDrillNames = ["sentinel-failover"]

    // MARK: sentinel-failover — the master killed mid-campaign, the Sentinels promote its replica

    /// The master is SIGKILLed with sends in flight; the Sentinels promote the replica (quorum 2 of
    /// 3, down after 1 s). Checks: every recipient one final result, duplicate sends ≤ the sends in
    /// flight at the kill (plus unreplicated writes, 0 bytes on loopback), `/readyz` 200 again
    /// within seconds of the promotion, the worker writes back what the new master may lack, and
    /// the jobs enqueued again afterwards are answered `duplicate` by the new master.
    static func sentinelFailover(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-chaos-sentinel-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { if options.keep { printError("kept \(folder.path)") } else { try? FileManager.default.removeItem(at: folder) } }
        let sentinel = try LocalRedisSentinel(folder: folder, replicas: 1, sentinels: 3)
        defer { sentinel.stop() }
        let maxInFlight = 50
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "300"], redisURL: sentinel.url)
        let campaign = ChaosCampaign.make(prefix: "sfail", jobs: options.scaled(60, minimum: 12), perJob: 50, seed: options.seed)
        let watcher = try ResultWatcher(harness, expected: campaign.expected)
        let worker = try harness.startWorker(extra: ["PUSHWORKER_MAX_IN_FLIGHT": "\(maxInFlight)"])
        guard ChildProcess.waitFor(timeout: 40, { worker.readyz() == 200 }) else {
            report.check("worker ready on redis+sentinel://", "/readyz \(worker.readyz())", false)
            return
        }
        guard let victim = sentinel.masterPort(), let replica = sentinel.syncedReplicas().first else {
            report.check("a master with a synced replica", "\(sentinel.dataPorts)", false)
            return
        }
        try harness.produce(campaign.jobs)
        guard campaignStarted(watcher, fraction: 0.25, &report) else { return }

        // Hit while sends are in flight.
        let inFlight = inFlightReading(worker, watcher, atLeast: maxInFlight / 2)
        var lagBytes: Int64?
        if let master = sentinel.replicationOffset(victim), let copy = sentinel.replicationOffset(replica) { lagBytes = master - copy }
        let before = watcher.covered.count
        sentinel.kill(victim)
        let killedAt = Date()
        harness.log("killed master \(victim) at \(before) results (\(inFlight.map(String.init) ?? "?") in flight); replica \(replica)")
        report.figure("sends in flight at the kill (pushworker_in_flight)", inFlight.map(String.init) ?? "unreadable")
        report.figure("replication lag at the kill (master_repl_offset master − replica)", lagBytes.map { "\($0) bytes" } ?? "unreadable")

        let (promotedAfter, notReadyAfter, readyAfter) = watchFailover(sentinel, worker, watcher, replacing: victim, killedAt: killedAt)
        report.check("the Sentinels promoted replica \(replica)", promotedAfter.map { "\(format($0)) after the kill" } ?? "not within 30 s",
                     promotedAfter != nil && sentinel.masterPort() == replica)
        report.figure("/readyz 503 first seen", notReadyAfter.map { "\(format($0)) after the kill" } ?? "never (the retries rode the failover out)")
        report.check("/readyz 200 again within 10 s of the promotion",
                     readyAfter.map { "\(format($0)) after the kill" } ?? "still \(worker.readyz())",
                     readyAfter != nil && promotedAfter != nil && readyAfter! - promotedAfter! <= 10)
        report.figure("results at the kill / at the promotion", "\(before) / \(watcher.covered.count) of \(campaign.recipientCount)")

        // The killed master comes back empty; the Sentinels make it the new master's replica.
        try sentinel.restart(victim)
        let duplicates = completion(watcher, harness, after: "kill", at: killedAt, timeout: 120, &report)
        let sent = watcher.statuses["sent"] ?? 0
        report.check("every recipient sent", "\(sent)/\(campaign.recipientCount); \(watcher.statusSummary)", sent == campaign.recipientCount)
        report.check("duplicate sends ≤ sends in flight at the kill (+ unreplicated writes)",
                     "\(duplicates) ≤ \(inFlight.map(String.init) ?? "?")", duplicates >= 0 && duplicates <= (inFlight ?? maxInFlight))
        let log = worker.child.log()
        let wroteBack = ["redis master changed", "redis is back"].first { log.contains($0) }
        report.check("the worker wrote back its sent markers and claims on the new master",
                     wroteBack.map { "logged \"\($0): re-recording…\"" } ?? "no such log line", wroteBack != nil)
        if let line = log.split(separator: "\n").last(where: { $0.contains("re-recorded after a Redis loss") }) {
            report.figure("worker log", String(line.suffix(200)))
        }
        try sentinel.waitUntilWatched(timeout: 30)
        report.figure("after the drill", "master \(sentinel.masterPort().map(String.init) ?? "?"), replicas in sync \(sentinel.syncedReplicas())")
        try redelivery(campaign, watcher, harness, worker, label: "redelivery after the failover", &report)
        stop(worker, &report)
    }

    /// Watches a failover for up to 30 s after the kill: when the Sentinels named a new master
    /// that answers as master, when `/readyz` was first not 200, and when it was 200 again after
    /// the promotion (seconds after `killedAt`, nil when it did not happen).
    static func watchFailover(_ sentinel: LocalRedisSentinel, _ worker: ChaosHarness.Worker, _ watcher: ResultWatcher, replacing victim: UInt16,
                              killedAt: Date) -> (promoted: Double?, notReady: Double?, ready: Double?) {
        var promoted: Double?, notReady: Double?, ready: Double?
        while Date().timeIntervalSince(killedAt) < 30 {
            watcher.update(0.1)
            let status = worker.readyz()
            let elapsed = Date().timeIntervalSince(killedAt)
            if status != 200 && notReady == nil { notReady = elapsed }
            if promoted == nil, let master = sentinel.masterPort(), master != victim, sentinel.isMaster(master) { promoted = Date().timeIntervalSince(killedAt) }
            if promoted != nil && status == 200 {
                ready = elapsed
                break
            }
        }
        return (promoted, notReady, ready)
    }
}
