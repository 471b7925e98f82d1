import Foundation
import PushCore
import PushProcess
import PushDevTools
import PushRedis

/// The frequency-cap drill (docs/caps.md): three campaigns of `capCategory` `marketing` to the
/// same 1,000 users (`--scale` scales them) under `PUSHWORKER_CAPS=marketing=2/1d`, sent at once
/// by two workers of 200 in-flight sends each against a provider answering in 200 ms.
extension ChaosDrills {
    /// Every user gets exactly two of the three campaigns (the provider's accepted requests
    /// counted per device token), the third ends `capped`; one final result per recipient.
    static func capsDrill(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        let users = options.scaled(1000, minimum: 50)
        let perJob = min(250, users)
        let jobs = max(1, users / perJob)
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "\(campaignLatencyMs)"])
        // One seed for the three: the same users and device tokens in each campaign.
        let campaigns = ["capsA", "capsB", "capsC"].map { prefix in
            ChaosCampaign.make(prefix: prefix, jobs: jobs, perJob: perJob, platforms: ["ios"], seed: options.seed, collapseID: nil,
                               campaignID: "cmp_" + prefix)
        }
        let watcher = try ResultWatcher(harness, expected: campaigns.reduce(Set<String>()) { $0.union($1.expected) })
        let settings = ["PUSHWORKER_MAX_IN_FLIGHT": "200", "PUSHWORKER_CAPS": "marketing=2/1d"]
        let workers = [try harness.startWorker(extra: settings), try harness.startWorker(extra: settings)]
        _ = ChildProcess.waitFor(timeout: 60) { workers.allSatisfy { $0.readyz() == 200 } }
        // The campaigns' jobs interleaved: all three are sent at once, by both workers.
        var messages: [(key: String, value: [UInt8])] = []
        for index in 0..<jobs {
            for campaign in campaigns {
                let job = campaign.jobs[index]
                messages.append((job.key, Array(#"{"capCategory":"marketing","#.utf8) + job.value.dropFirst()))
            }
        }
        try harness.produce(messages)
        let complete = watcher.wait(timeout: 240)
        let perToken = acceptedPerToken(harness)
        let total = campaigns.reduce(0) { $0 + $1.recipientCount }
        let sent = watcher.statuses["sent"] ?? 0, capped = watcher.statuses["capped"] ?? 0
        let over = perToken.values.filter { $0 > 2 }.count
        report.figure("results", watcher.statusSummary)
        report.figure("pushworker_capped_total (both workers)",
                      "\(workers.map { counter($0, #"pushworker_capped_total{category="marketing"}"#) }.reduce(0, +))")
        if let bytes = try? capSetBytes(harness, user: "u\(Int(options.seed % 1000) * 1_000_000 + 1)") {
            report.figure("one user's cap set (2 sends): MEMORY USAGE", "\(bytes) bytes")
        }
        report.check("all results in", "\(watcher.covered.count)/\(total)", complete)
        report.check("sent: two campaigns per user", "\(sent) of \(2 * users)", sent == 2 * users)
        report.check("capped: the third campaign per user", "\(capped) of \(users)", capped == users)
        report.check("users over the cap (accepted requests per device token)", "\(over)", over == 0)
        report.check("users the provider reached exactly twice", "\(perToken.values.filter { $0 == 2 }.count) of \(users)",
                     perToken.count == users && perToken.values.allSatisfy { $0 == 2 })
        report.check("exactly one final result per recipient (duplicate results)", "\(watcher.duplicateResults)", watcher.duplicateResults == 0)
        for worker in workers { stop(worker, &report) }
    }

    /// The provider's accepted requests per APNs device token (the request path's last part).
    static func acceptedPerToken(_ harness: ChaosHarness) -> [String: Int] {
        let text = ChaosHarness.curl(["-s", "--max-time", "30", "--cacert", harness.certificate, harness.origin + "/_sandbox/messages"])
        var counts: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let path = object["path"] as? String, let token = path.split(separator: "/").last else { continue }
            counts[String(token), default: 0] += 1
        }
        return counts
    }

    /// `MEMORY USAGE` of one user's `marketing` cap set.
    static func capSetBytes(_ harness: ChaosHarness, user: String) throws -> Int64? {
        let client = try RedisClient(url: harness.redisURL)
        let key = RedisKeys.frequencyCap(appID: ChaosHarness.app, userID: user, category: "marketing")
        return try client.pipeline([["MEMORY", "USAGE", .string(key)]]).first?.integerValue
    }
}
