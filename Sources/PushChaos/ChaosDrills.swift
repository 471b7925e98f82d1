import Foundation
import PushCore
import PushKafkaMock
import PushSandbox
import PushKafka
import PushWorker
import PushEvents
import PushDevTools

/// The reliability drills of `pushworker-dev chaos` (docs/reliability.md). Each starts its own
/// dev-broker, redis-server, sandbox and workers as processes, does harm mid-run, and checks
/// that nothing was lost: every recipient of every enqueued job has a final result on
/// `push.results.v1`.
public enum ChaosDrills {
    /// Drill names in the order `--drill all` runs them.
    public static let names = ["copies", "join-leave", "sigkill", "sigterm", "broker-outage", "redis-restart", "redis-empty",
                               "429-storm", "503-storm", "410-flood", "hostile-jobs", "fuzz"] + onceDrillNames + campaignDrillNames + ["caps"]
        + clusterDrillNames + sentinelDrillNames + laneDrillNames + localTimeDrillNames

    /// The drills of the once-promise when the provider does not answer (docs/reliability.md).
    public static let onceDrillNames = ["slow-provider", "slow-provider-never", "drain-slow", "clock-skew", "tenant-429",
                                        "provider-outage", "retry-too-far"]

    /// Runs drill `name`; a drill that cannot even set up reports a failed check. The cluster
    /// drills use `cluster` when given (the tests share one), otherwise start their own.
    public static func run(_ name: String, _ options: ChaosOptions) -> DrillReport { run(name, options, cluster: nil) }

    static func run(_ name: String, _ options: ChaosOptions, cluster: LocalRedisCluster?) -> DrillReport {
        let started = Date()
        var report = DrillReport(name: name)
        do {
            switch name {
            case "copies": try copies(options, &report)
            case "join-leave": try joinLeave(options, &report)
            case "redis-empty": try redisEmpty(options, &report)
            case "sigkill": try workerDeath(options, signal: SIGKILL, &report)
            case "sigterm": try workerDeath(options, signal: SIGTERM, &report)
            case "broker-outage": try brokerOutage(options, &report)
            case "redis-restart": try redisRestart(options, &report)
            case "429-storm": try providerStorm(options, faults: #"{"throttleShare":1,"retryAfter":1}"#, &report)
            case "503-storm": try providerStorm(options, faults: #"{"errorShare":1}"#, &report)
            case "410-flood": try unregisteredFlood(options, &report)
            case "hostile-jobs": try HostileJobs.run(options, &report)
            case "fuzz": ChaosFuzz.run(options, &report)
            case "clock-skew": try clockSkew(options, &report)
            case "retry-too-far": try retryTooFar(options, &report)
            case "slow-provider": try slowProvider(options, policy: "replace", &report)
            case "slow-provider-never": try slowProvider(options, policy: "never", &report)
            case "drain-slow": try drainSlow(options, &report)
            case "tenant-429": try tenant429(options, &report)
            case "provider-outage": try providerOutage(options, &report)
            case "campaign-cancel": try campaignCancel(options, &report)
            case "campaign-pause": try campaignPause(options, &report)
            case "campaign-throttle": try campaignThrottle(options, &report)
            case "campaign-guard": try campaignGuard(options, &report)
            case "caps": try capsDrill(options, &report)
            case "cluster-campaign": try withCluster(cluster, options) { try clusterCampaign(options, cluster: $0, &report) }
            case "cluster-reshard": try withCluster(cluster, options) { try clusterReshard(options, cluster: $0, &report) }
            case "cluster-failover": try withCluster(cluster, options) { try clusterFailover(options, cluster: $0, &report) }
            case "sentinel-failover": try sentinelFailover(options, &report)
            case "lanes-priority": try lanesPriority(options, &report)
            case "quiet-hours": try quietHours(options, &report)
            default: report.check("known drill", name, false)
            }
        } catch {
            report.check("drill ran", "\(error)", false)
        }
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    static func nothingLost(_ watcher: ResultWatcher, _ report: inout DrillReport) {
        report.check("every recipient has a final result", "\(watcher.covered.count)/\(watcher.expected.count)", watcher.complete)
    }

    static func sandboxDuplicates(_ harness: ChaosHarness) -> Int { harness.sandboxStats()["duplicateMsgIds"] as? Int ?? -1 }

    /// Waits until `fraction` of the campaign has results (up to 120 s); false, with a failed
    /// check, when it never gets there (the drill then stops: there is nothing to harm).
    static func campaignStarted(_ watcher: ResultWatcher, fraction: Double, _ report: inout DrillReport) -> Bool {
        guard watcher.wait(fraction: fraction, timeout: 120) else {
            report.check("campaign started", "\(watcher.covered.count) results", false)
            return false
        }
        return true
    }

    /// Waits (at most 10 s, or until the campaign completes) until `worker` has at least `target`
    /// sends in flight, and returns the last reading of its gauge (read at scrape time), nil
    /// when unreadable: a fault then lands while sends are in flight.
    static func inFlightReading(_ worker: ChaosHarness.Worker, _ watcher: ResultWatcher, atLeast target: Int) -> Int? {
        var inFlight = worker.inFlight()
        let deadline = Date().addingTimeInterval(10)
        while (inFlight ?? 0) < target && Date() < deadline && !watcher.complete {
            watcher.update(0.02)
            inFlight = worker.inFlight()
        }
        return inFlight
    }

    /// The closing figures of an outage drill: nothing lost, duplicate results and sends,
    /// result statuses.
    static func outcome(_ watcher: ResultWatcher, _ harness: ChaosHarness, _ report: inout DrillReport) {
        nothingLost(watcher, &report)
        report.figure("duplicate results", "\(watcher.duplicateResults)")
        report.figure("duplicate sends at the sandbox", "\(sandboxDuplicates(harness))")
        report.figure("result statuses", watcher.statusSummary)
    }

    /// Checks that `worker` survived the drill (`check` names it), then stops it with SIGTERM.
    static func stop(_ worker: ChaosHarness.Worker, checking check: String = "worker alive at the end", _ report: inout DrillReport) {
        report.check(check, worker.child.isRunning ? "running" : "exited", worker.child.isRunning)
        worker.signal(SIGTERM)
        _ = worker.wait(timeout: 30)
    }

    static func format(_ seconds: Double) -> String { String(format: "%.1f s", seconds) }

    /// Waits (up to `timeout` s) for the rest of the campaign after the harm done at `harmedAt`
    /// (`harm` names it), then reports how long that took, that nothing was lost, the duplicate
    /// results (`duplicatesLabel`) and the statuses. Returns the msgIds the sandbox accepted twice.
    static func completion(_ watcher: ResultWatcher, _ harness: ChaosHarness, after harm: String, at harmedAt: Date, timeout: Double,
                           duplicatesLabel: String = "duplicate results", _ report: inout DrillReport) -> Int {
        watcher.wait(timeout: timeout)
        report.figure("time from \(harm) to complete", format(Date().timeIntervalSince(harmedAt)))
        nothingLost(watcher, &report)
        let duplicateSends = sandboxDuplicates(harness)
        report.figure(duplicatesLabel, "\(watcher.duplicateResults)")
        report.figure("result statuses", watcher.statusSummary)
        return duplicateSends
    }

    // MARK: a, b — a worker dies mid-campaign

    static func workerDeath(_ options: ChaosOptions, signal: Int32, _ report: inout DrillReport) throws {
        // 400 ms provider latency × 200 in flight ≈ 500 sends/s: the signal lands mid-campaign
        // with the in-flight window full even on a fast machine.
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "400"])
        let campaign = ChaosCampaign.make(prefix: report.name, jobs: options.scaled(100, minimum: 4), perJob: 50, seed: options.seed)
        let watcher = try ResultWatcher(harness, expected: campaign.expected)
        try harness.produce(campaign.jobs)
        // A short lease so the second worker takes the dead one's claims over within seconds.
        let limits = ["PUSHWORKER_MAX_IN_FLIGHT": "200"].merging(shortLease) { $1 }
        let first = try harness.startWorker(extra: limits)
        harness.log("campaign of \(campaign.recipientCount) recipients enqueued; waiting for 30 %")
        guard campaignStarted(watcher, fraction: 0.3, &report) else { return }
        // Hit while sends are in flight (the gauge is refreshed every loop turn, ~50 ms).
        // The gauge is read at scrape time (exact): the last reading before the signal.
        var inFlight = 0
        let aimDeadline = Date().addingTimeInterval(20)
        let aimStarted = Date()
        while Date() < aimDeadline && !watcher.complete {
            inFlight = first.inFlight() ?? 0
            if inFlight >= 100 || (inFlight > 0 && Date().timeIntervalSince(aimStarted) > 2) { break }
            watcher.update(0.02)
        }
        let hitAt = Date()
        let before = watcher.covered.count
        first.signal(signal)
        report.figure("recipients in flight when the signal hit", "\(inFlight)")
        harness.log("sent signal \(signal) at \(before) results")
        if signal == SIGTERM {
            let status = first.wait(timeout: 40)
            report.check("SIGTERM: worker drains and exits 0", status.map { "exit \($0)" } ?? "still running", status == 0)
            report.figure("drain time", format(Date().timeIntervalSince(hitAt)))
        } else {
            _ = first.wait(timeout: 10)
        }
        watcher.update()
        report.figure("results when the signal hit / after the first worker", "\(before) / \(watcher.covered.count) of \(campaign.recipientCount)")
        report.check("signal hit mid-campaign", "\(before)/\(campaign.recipientCount)", before < campaign.recipientCount)
        let second = try harness.startWorker(extra: limits)
        let duplicateSends = completion(watcher, harness, after: "signal", at: hitAt, timeout: 180,
                                        duplicatesLabel: "duplicate results (at-least-once)", &report)
        if signal == SIGTERM {
            report.check("zero duplicate sends at the sandbox", "\(duplicateSends)", duplicateSends == 0)
        } else {
            report.figure("duplicate sends at the sandbox (msgIds accepted twice)", "\(duplicateSends)")
            report.check("kill -9: duplicate sends ≤ sends in flight at the kill ≤ PUSHWORKER_MAX_IN_FLIGHT (200)",
                         "\(duplicateSends) ≤ \(inFlight) (read just before the kill)", duplicateSends >= 0 && duplicateSends <= 200)
        }
        stop(second, checking: "second worker alive", &report)
    }

    // MARK: c — every broker down for ~10 s

    static func brokerOutage(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "100"])
        let campaign = ChaosCampaign.make(prefix: "outage", jobs: options.scaled(60, minimum: 4), perJob: 50, seed: options.seed)
        let watcher = try ResultWatcher(harness, expected: campaign.expected)
        try harness.produce(campaign.jobs)
        let worker = try harness.startWorker(extra: ["PUSHWORKER_MAX_IN_FLIGHT": "200"])
        guard campaignStarted(watcher, fraction: 0.2, &report) else { return }
        let outage = 10.0
        kill(harness.broker.process.processIdentifier, SIGUSR1)
        let downAt = Date()
        harness.log("brokers down at \(watcher.covered.count) results")
        while Date().timeIntervalSince(downAt) < outage { usleep(200_000) }
        let aliveDuring = worker.child.isRunning
        kill(harness.broker.process.processIdentifier, SIGUSR2)
        let upAt = Date()
        harness.log("brokers up")
        report.check("worker alive through a \(Int(outage)) s outage", aliveDuring ? "running" : "exited", aliveDuring)
        watcher.wait(timeout: 180)
        report.figure("time from brokers up to complete", format(Date().timeIntervalSince(upAt)))
        outcome(watcher, harness, &report)
        stop(worker, &report)
    }

    // MARK: d — Redis stopped and restarted on the same port

    static func redisRestart(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "100"])
        let campaign = ChaosCampaign.make(prefix: "redis", jobs: options.scaled(60, minimum: 6), perJob: 50, seed: options.seed)
        let watcher = try ResultWatcher(harness, expected: campaign.expected)
        // Half the campaign before the outage, half during it (those jobs must be held).
        let half = campaign.jobs.count / 2
        try harness.produce(Array(campaign.jobs.prefix(half)))
        let worker = try harness.startWorker(extra: ["PUSHWORKER_MAX_IN_FLIGHT": "200"])
        guard campaignStarted(watcher, fraction: 0.2, &report) else { return }
        report.check("/readyz before the outage", "\(worker.readyz())", worker.readyz() == 200)
        harness.stopRedis()
        let downAt = Date()
        harness.log("redis stopped at \(watcher.covered.count) results")
        try harness.produce(Array(campaign.jobs.suffix(from: half)))
        var notReady = false
        let outage = 5.0
        while Date().timeIntervalSince(downAt) < outage || !notReady && Date().timeIntervalSince(downAt) < 15 {
            watcher.update(0.2)
            if !notReady && worker.readyz() == 503 {
                notReady = true
                report.figure("time to not-ready", format(Date().timeIntervalSince(downAt)))
            }
        }
        watcher.update(0.5)
        let heldAt = watcher.covered.count
        report.check("/readyz 503 while Redis is down", notReady ? "503" : "never 503", notReady)
        let lateJobs = Set(campaign.jobs.suffix(from: half).map(\.key))
        let lateDone = watcher.covered.filter { lateJobs.contains(String($0.prefix { $0 != "|" })) }.count
        report.check("jobs enqueued during the outage are held (no result while down)", "\(lateDone) results", lateDone == 0)
        try harness.startRedis()
        let upAt = Date()
        var ready = false
        while Date().timeIntervalSince(upAt) < 30 {
            if worker.readyz() == 200 { ready = true; break }
            watcher.update(0.1)
        }
        report.figure("time from Redis back to ready", format(Date().timeIntervalSince(upAt)))
        report.check("/readyz 200 after Redis returns", ready ? "200" : "not ready", ready)
        watcher.wait(timeout: 180)
        report.figure("results while down / at the end", "\(heldAt) / \(watcher.covered.count) of \(campaign.recipientCount)")
        report.figure("time from Redis back to complete", format(Date().timeIntervalSince(upAt)))
        outcome(watcher, harness, &report)
        stop(worker, &report)
    }

    // MARK: e, f — a provider storm (429 + Retry-After, or 500/503)

    static func providerStorm(_ options: ChaosOptions, faults: String, _ report: inout DrillReport) throws {
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "20"])
        let web = try harness.subscriptions(5)
        let campaign = ChaosCampaign.make(prefix: report.name, jobs: options.scaled(40, minimum: 4), perJob: 50, web: web, seed: options.seed)
        let watcher = try ResultWatcher(harness, expected: campaign.expected)
        let retries = try harness.reader("push.retry.v1")
        let worker = try harness.startWorker(extra: ["PUSHWORKER_MAX_IN_FLIGHT": "100"])
        _ = ChildProcess.waitFor(timeout: 30) { worker.readyz() == 200 }
        // The storm starts before the campaign, so every platform meets it.
        try harness.setFaults(faults)
        let stormAt = Date()
        try harness.produce(campaign.jobs)
        let storm = 4.0
        while Date().timeIntervalSince(stormAt) < storm { watcher.update(0.2) }
        try harness.setFaults(#"{"throttleShare":0,"errorShare":0}"#)
        let endedAt = Date()
        let duringStorm = watcher.covered.count
        harness.log("storm over with \(duringStorm) results")
        watcher.wait(timeout: 120)
        retries.poll(1)
        report.figure("results during the \(Int(storm)) s storm", "\(duringStorm)")
        report.figure("time from storm end to complete", format(Date().timeIntervalSince(endedAt)))
        nothingLost(watcher, &report)
        report.check("retries went through push.retry.v1", "\(retries.messages.count) retry jobs", !retries.messages.isEmpty)
        let sent = watcher.statuses["sent"] ?? 0
        report.check("every recipient sent after the storm", "\(sent) sent; \(watcher.statusSummary)", sent >= campaign.recipientCount)
        let stats = harness.sandboxStats()
        report.figure("provider answers", "\(stats["responses"] ?? "?")")
        report.figure("duplicate sends at the sandbox", "\(stats["duplicateMsgIds"] ?? "?")")
        stop(worker, &report)
    }

    // MARK: g — 10,000 consecutive 410s on one connection

    static func unregisteredFlood(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--unregistered-share", "1"])
        let total = options.scaled(10_000, minimum: 100)
        let perJob = 500
        let campaign = ChaosCampaign.make(prefix: "dead", jobs: max(1, total / perJob), perJob: min(perJob, total), platforms: ["ios"], seed: options.seed)
        let watcher = try ResultWatcher(harness, expected: campaign.expected)
        let worker = try harness.startWorker(extra: ["PUSHWORKER_HTTP_CONNECTIONS": "1"])
        // Wait for the group join so the clock measures the 410s, not the join.
        _ = ChildProcess.waitFor(timeout: 30) { worker.readyz() == 200 }
        let started = Date()
        try harness.produce(campaign.jobs)
        let bound = 120.0
        watcher.wait(timeout: bound)
        let seconds = Date().timeIntervalSince(started)
        nothingLost(watcher, &report)
        let invalid = watcher.statuses["invalid_token"] ?? 0
        report.check("all invalid_token", "\(invalid)/\(campaign.recipientCount)", invalid == campaign.recipientCount)
        report.check("bounded time (< \(Int(bound)) s)", format(seconds), seconds < bound)
        report.figure("410s per second", String(format: "%.0f", Double(invalid) / max(seconds, 0.001)))
        let stats = harness.sandboxStats()
        report.figure("provider answers", "\(stats["responses"] ?? "?")")

        // No stall: the same connection still delivers once tokens are alive again.
        try harness.setFaults(#"{"unregisteredShare":0}"#)
        let after = ChaosCampaign.make(prefix: "alive", jobs: 1, perJob: 20, platforms: ["ios"], seed: options.seed + 1)
        let afterWatcher = try ResultWatcher(harness, expected: after.expected)
        try harness.produce(after.jobs)
        afterWatcher.wait(timeout: 30)
        let sent = afterWatcher.statuses["sent"] ?? 0
        report.check("then a normal job is sent (no stall)", "\(sent)/\(after.recipientCount)", sent == after.recipientCount)
        worker.signal(SIGTERM)
        _ = worker.wait(timeout: 30)
    }
}
