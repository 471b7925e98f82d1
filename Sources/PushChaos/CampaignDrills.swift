import Foundation
import PushCore
import PushProcess
import PushDevTools
import PushRedis

/// The campaign-control drills (docs/campaigns.md): a campaign of 20,000 iOS recipients
/// (`--scale` scales it) against a provider answering in 200 ms, over two workers of 200
/// in-flight sends each, steered mid-send through the campaign controls in Redis as
/// `pushworker campaign` steers them.
extension ChaosDrills {
    public static let campaignDrillNames = ["campaign-cancel", "campaign-pause", "campaign-throttle", "campaign-guard"]

    /// The provider's latency in these drills (ms).
    static let campaignLatencyMs: Int64 = 200

    /// What the drills share: the services, a campaign, its watcher, two workers and the store
    /// the operator's commands go through.
    struct CampaignRig {
        let harness: ChaosHarness
        let campaign: ChaosCampaign
        let watcher: ResultWatcher
        let store: DeliveryStateStore
        var workers: [ChaosHarness.Worker] = []
        static let app = ChaosHarness.app
        let campaignID: String

        init(_ options: ChaosOptions, _ report: DrillReport, prefix: String, sandbox: [String] = [], extra: [ChaosCampaign] = [],
             before: (DeliveryStateStore, String) throws -> Void = { _, _ in }) throws {
            harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "\(campaignLatencyMs)"] + sandbox)
            campaignID = "cmp_" + prefix
            campaign = ChaosCampaign.make(prefix: prefix, jobs: options.scaled(40, minimum: 2), perJob: 500, platforms: ["ios"],
                                          seed: options.seed, collapseID: nil, campaignID: campaignID)
            watcher = try ResultWatcher(harness, expected: extra.reduce(campaign.expected) { $0.union($1.expected) })
            store = DeliveryStateStore(client: try RedisClient(url: harness.redisURL))
            try before(store, campaignID)
        }

        mutating func start(_ settings: [String: String] = [:]) throws {
            let base = ["PUSHWORKER_MAX_IN_FLIGHT": "200", "PUSHWORKER_PAUSE_RECHECK_SECONDS": "2"]
            let merged = base.merging(settings) { $1 }
            workers = [try harness.startWorker(extra: merged), try harness.startWorker(extra: merged)]
            // Both in the group before the jobs arrive: no rebalance takes jobs mid-send.
            let workers = self.workers
            _ = ChildProcess.waitFor(timeout: 60) { workers.allSatisfy { $0.readyz() == 200 } }
            try harness.produce(campaign.jobs)
        }

        func apply(_ action: CampaignAction) throws -> Int64 {
            let at = Int64(Date().timeIntervalSince1970 * 1000)
            _ = try store.apply(action, appID: Self.app, campaignID: campaignID)
            return at
        }

        /// Waits until `count` recipients of the campaign were sent (results), up to `timeout`.
        func waitForSent(_ count: Int, timeout: Double) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                watcher.update(0.1)
                if (watcher.statuses["sent"] ?? 0) >= count { return true }
            }
            return false
        }

        func stop(_ report: inout DrillReport) {
            for worker in workers { ChaosDrills.stop(worker, &report) }
        }
    }

    /// The times (Unix ms) the sandbox received each accepted request, by msgId.
    static func acceptedTimes(_ harness: ChaosHarness) -> [String: [Int64]] {
        let text = ChaosHarness.curl(["-s", "--max-time", "30", "--cacert", harness.certificate, harness.origin + "/_sandbox/messages"])
        var times: [String: [Int64]] = [:]
        for line in text.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let msgID = object["msgId"] as? String, let at = (object["receivedAtMs"] as? NSNumber)?.int64Value else { continue }
            times[msgID, default: []].append(at)
        }
        return times
    }

    static func oneResultEach(_ rig: CampaignRig, _ report: inout DrillReport) {
        nothingLost(rig.watcher, &report)
        report.check("exactly one final result per recipient (duplicate results)", "\(rig.watcher.duplicateResults)", rig.watcher.duplicateResults == 0)
    }

    // MARK: campaign-cancel

    /// Cancel a quarter of the way through: no request is accepted by the provider later than
    /// 2 s after the cancel; every recipient has exactly one final result, `sent` or `cancelled`.
    static func campaignCancel(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        var rig = try CampaignRig(options, report, prefix: "cancel")
        try rig.start()
        let total = rig.campaign.recipientCount
        guard rig.waitForSent(total / 4, timeout: 120) else {
            report.check("a quarter sent before the cancel", "\(rig.watcher.statuses["sent"] ?? 0)", false)
            return rig.stop(&report)
        }
        let cancelledAt = try rig.apply(.cancel(reason: "chaos drill"))
        let sentAtCancel = rig.watcher.statuses["sent"] ?? 0
        rig.watcher.wait(timeout: 120)
        let times = acceptedTimes(rig.harness).values.flatMap { $0 }
        let late = times.filter { $0 + campaignLatencyMs > cancelledAt + 2000 }.count
        let afterCancel = times.filter { $0 > cancelledAt }.count
        report.figure("results", rig.watcher.statusSummary)
        report.figure("sent when cancelled (results so far)", "\(sentAtCancel)")
        report.figure("requests the provider received after the cancel", "\(afterCancel)")
        report.check("requests accepted by the provider later than 2 s after the cancel", "\(late)", late == 0)
        oneResultEach(rig, &report)
        let sent = rig.watcher.statuses["sent"] ?? 0, cancelled = rig.watcher.statuses["cancelled"] ?? 0
        report.check("every recipient sent or cancelled", "\(sent) + \(cancelled) of \(total)", sent + cancelled == total && cancelled > 0)
        report.check("sent results match the provider's acceptances", "\(sent) results, \(times.count) accepted", sent == times.count)
        rig.stop(&report)
    }

    // MARK: campaign-pause

    /// Pause a quarter of the way through for 8 s, then resume: nothing is received by the
    /// provider from 2 s after the pause until the resume; afterwards everything is sent, no
    /// msgId twice.
    static func campaignPause(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        var rig = try CampaignRig(options, report, prefix: "pause")
        try rig.start()
        let total = rig.campaign.recipientCount
        guard rig.waitForSent(total / 4, timeout: 120) else {
            report.check("a quarter sent before the pause", "\(rig.watcher.statuses["sent"] ?? 0)", false)
            return rig.stop(&report)
        }
        let pausedAt = try rig.apply(.pause(reason: "chaos drill"))
        let pauseEnd = Date().addingTimeInterval(8)
        while Date() < pauseEnd { rig.watcher.update(0.2) }
        let resumedAt = try rig.apply(.resume)
        let resumed = rig.watcher.wait(timeout: 180)
        let accepted = acceptedTimes(rig.harness)
        let times = accepted.values.flatMap { $0 }
        let whilePaused = times.filter { $0 > pausedAt + 2000 && $0 < resumedAt }.count
        let twice = accepted.values.filter { $0.count > 1 }.count
        report.figure("results", rig.watcher.statusSummary)
        report.figure("received within 2 s of the pause", "\(times.filter { $0 > pausedAt && $0 <= pausedAt + 2000 }.count)")
        report.check("requests received while paused (2 s after the pause until the resume)", "\(whilePaused)", whilePaused == 0)
        report.check("all sent after the resume", "\(rig.watcher.statuses["sent"] ?? 0)/\(total)", resumed && (rig.watcher.statuses["sent"] ?? 0) == total)
        report.check("msgIds the provider accepted twice", "\(twice)", twice == 0)
        oneResultEach(rig, &report)
        rig.stop(&report)
    }

    // MARK: campaign-throttle

    /// A throttle of 600 per minute (scaled) set before the campaign starts: the provider's
    /// rate over two minutes (scaled, at least 20 s) is within ±10 %; another campaign enqueued
    /// meanwhile, its job behind the throttled campaign's on the partitions, is sent within 30 s; a
    /// cancel then ends the throttled one.
    static func campaignThrottle(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        let perMinute = max(120, Int(600 * min(1, options.scale * 4)))
        let window = max(20, 120 * min(1, options.scale))
        let other = ChaosCampaign.make(prefix: "other", jobs: 1, perJob: 20, platforms: ["ios"], seed: options.seed + 7, collapseID: nil,
                                       campaignID: "cmp_other")
        var rig = try CampaignRig(options, report, prefix: "throttle", extra: [other]) { store, campaign in
            _ = try store.apply(.throttle(perMinute: perMinute), appID: CampaignRig.app, campaignID: campaign)
        }
        try rig.start()
        guard rig.waitForSent(1, timeout: 60) else {
            report.check("the throttled campaign sends", "0", false)
            return rig.stop(&report)
        }
        // The bucket's first burst is left out: the window starts 5 s in.
        let startMs = Int64(Date().timeIntervalSince1970 * 1000) + 5000
        let endMs = startMs + Int64(window * 1000)
        var otherSentIn: Double?
        var otherEnqueued: Date?
        while Int64(Date().timeIntervalSince1970 * 1000) < endMs + 500 {
            rig.watcher.update(0.2)
            if otherEnqueued == nil && Int64(Date().timeIntervalSince1970 * 1000) > startMs + 2000 {
                try rig.harness.produce(other.jobs)
                otherEnqueued = Date()
            }
            if let enqueued = otherEnqueued, otherSentIn == nil, rig.watcher.covered.intersection(other.expected).count == other.expected.count {
                otherSentIn = Date().timeIntervalSince(enqueued)
            }
        }
        let accepted = acceptedTimes(rig.harness)
        let inWindow = accepted.values.flatMap { $0 }.filter { $0 >= startMs && $0 < endMs }.count - other.recipientCount
        let rate = Double(inWindow) / (Double(endMs - startMs) / 60_000)
        let error = abs(rate - Double(perMinute)) / Double(perMinute)
        report.figure("throttle", "\(perMinute) per minute over \(Int(window)) s")
        report.figure("recipients parked while waiting for tokens (both workers)",
                      "\(rig.workers.map { worker in ChaosDrills.counter(worker, "pushworker_parked_total") }.reduce(0, +))")
        report.check("measured rate within ±10 %", String(format: "%.0f per minute (%.1f %%)", rate, error * 100), error <= 0.10)
        report.check("another campaign enqueued meanwhile is sent within 30 s (its job queued behind the throttled ones)",
                     otherSentIn.map { format($0) } ?? "not all sent", (otherSentIn ?? 999) <= 30)
        _ = try rig.apply(.cancel(reason: "chaos drill: end of the throttle window"))
        rig.watcher.wait(timeout: 120)
        report.figure("results", rig.watcher.statusSummary)
        oneResultEach(rig, &report)
        rig.stop(&report)
    }

    // MARK: campaign-guard

    /// A campaign of dead tokens (every token answered 410 Unregistered): the guardrail
    /// (200 results, 50 %) pauses it with its reason, after at most its minimum plus what the
    /// two workers had in flight; a cancel then ends it.
    static func campaignGuard(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        var rig = try CampaignRig(options, report, prefix: "guard", sandbox: ["--unregistered-share", "1"])
        try rig.start(["PUSHWORKER_GUARD_MIN_SENDS": "200", "PUSHWORKER_GUARD_INVALID_SHARE": "0.5"])
        var status = try rig.store.status(appID: CampaignRig.app, campaignID: rig.campaignID)
        let deadline = Date().addingTimeInterval(60)
        while status.control.state != .paused && Date() < deadline {
            rig.watcher.update(0.2)
            status = try rig.store.status(appID: CampaignRig.app, campaignID: rig.campaignID)
        }
        let settle = Date().addingTimeInterval(5)
        while Date() < settle { rig.watcher.update(0.2) }
        let sends = acceptedRequests(rig.harness, status: "410")
        let bound = 200 + 2 * 200
        report.check("the campaign paused itself", "\(status.control.state.rawValue): \(status.control.reason ?? "")", status.guardTripped)
        report.check("requests sent before it stopped (bound: 200 + 2 × 200 in flight)", "\(sends) of \(rig.campaign.recipientCount)",
                     sends >= 200 && sends <= bound)
        _ = try rig.apply(.cancel(reason: "chaos drill: the token list is wrong"))
        rig.watcher.wait(timeout: 120)
        report.figure("results", rig.watcher.statusSummary)
        oneResultEach(rig, &report)
        rig.stop(&report)
    }

    /// A counter of a worker's `/metrics` (0 when absent).
    static func counter(_ worker: ChaosHarness.Worker, _ name: String) -> Int {
        Int(worker.metricsText().split(separator: "\n").first { $0.hasPrefix(name + " ") }?.split(separator: " ").last.flatMap { Double($0) } ?? 0)
    }

    /// Requests the sandbox answered with `status`.
    static func acceptedRequests(_ harness: ChaosHarness, status: String) -> Int {
        (harness.sandboxStats()["responses"] as? [String: Any])?[status] as? Int ?? 0
    }
}
