import Foundation
import PushCore
import PushWorker

/// `pushworker-dev bench e2e --redis-cluster --compare-standalone`: the same workload against a
/// standalone redis-server and a Redis Cluster (3 masters, started once for the whole run), in
/// `rounds` alternating pairs (the order flips every round), each a full ``BenchE2E`` run (its
/// own broker, sandbox, worker processes; standalone Redis started per run, the cluster flushed
/// per run). Reports per run the worker's CPU per notification, Redis round trips per job and
/// the Redis servers' CPU, then the medians and the cluster / standalone ratios — the median of
/// the per-round ratios too, since each pair ran minutes apart at most (issue 16: the cluster
/// client may cost at most 10 % more worker CPU per notification).
package struct BenchE2ECompare: Benchmark {
    let options: BenchE2E.Options
    static let maxCPURatio = 1.10

    package init(options: BenchE2E.Options) { self.options = options }

    package func run() throws -> (report: [String: Any], ok: Bool) {
        let scratch = try makeScratch(prefix: "pushworker-bench-compare")
        defer { scratch.close() }
        step("starting a Redis Cluster (3 masters, \(options.clusterReplicas) replica(s) each), shared by the cluster runs")
        let cluster = try LocalRedisCluster(folder: scratch.folder, masters: 3, replicasPerMaster: options.clusterReplicas)
        defer { cluster.stop() }
        var runs: [(mode: String, round: Int, report: [String: Any], ok: Bool)] = []
        for round in 0..<options.rounds {
            let order = round % 2 == 0 ? ["standalone", "cluster"] : ["cluster", "standalone"]
            for mode in order {
                step("round \(round + 1)/\(options.rounds): \(mode)")
                var single = options
                single.compareStandalone = false
                single.redisCluster = false
                single.redisURL = nil
                single.h2loadRequests = options.h2loadRequests ?? 0
                single.svg = nil
                let (report, ok) = try BenchE2E(options: single, cluster: mode == "cluster" ? cluster : nil).run()
                runs.append((mode, round + 1, report, ok))
                let figures = Self.figures(report)
                step("  \(mode): worker \(Self.text(figures["workerCPUMicrosPerNotification"])) µs/notification, \(Self.text(figures["redisRoundTripsPerJob"])) Redis round trips/job")
            }
        }

        func values(_ mode: String, _ key: String) -> [Double] {
            runs.filter { $0.mode == mode }.compactMap { Self.figures($0.report)[key] as? Double }
        }
        var medians: [String: Any] = [:]
        for key in ["workerCPUMicrosPerNotification", "redisRoundTripsPerJob", "notificationsPerSecond", "redisCPUMicrosPerNotification",
                    "nodePipelinesPerRoundTrip"] {
            medians[key] = [
                "standalone": Self.median(values("standalone", key)) ?? NSNull(),
                "cluster": Self.median(values("cluster", key)) ?? NSNull(),
            ] as [String: Any]
        }
        let standaloneCPU = Self.median(values("standalone", "workerCPUMicrosPerNotification"))
        let clusterCPU = Self.median(values("cluster", "workerCPUMicrosPerNotification"))
        let ratioOfMedians = standaloneCPU.flatMap { base in clusterCPU.map { $0 / base } }
        var pairedRatios: [Double] = []
        for round in 1...max(1, options.rounds) {
            let pair = runs.filter { $0.round == round }
            if let s = pair.first(where: { $0.mode == "standalone" }).flatMap({ Self.figures($0.report)["workerCPUMicrosPerNotification"] as? Double }),
               let c = pair.first(where: { $0.mode == "cluster" }).flatMap({ Self.figures($0.report)["workerCPUMicrosPerNotification"] as? Double }), s > 0 {
                pairedRatios.append(c / s)
            }
        }
        let ok = runs.allSatisfy(\.ok)
        var report = scratch.reportHeader(schema: "pushworker-bench-e2e-compare/1")
        report.merge([
            "config": [
                "notifications": options.notifications, "jobSize": options.jobSize, "mix": options.mix.description, "workers": options.workers,
                "workerCPUs": options.workerCPUs ?? NSNull(), "sandboxCPUs": options.sandboxCPUs ?? NSNull(), "rounds": options.rounds,
                "clusterMasters": 3, "clusterReplicasPerMaster": options.clusterReplicas,
            ] as [String: Any],
            "runs": runs.map { run -> [String: Any] in
                ["mode": run.mode, "round": run.round, "ok": run.ok, "figures": Self.figures(run.report)]
            },
            "medians": medians,
            "ratio": [
                "clusterToStandaloneWorkerCPU": ratioOfMedians.map { BenchE2E.round($0, 3) } ?? NSNull(),
                "pairedRoundRatios": pairedRatios.map { BenchE2E.round($0, 3) },
                "medianPairedRatio": Self.median(pairedRatios).map { BenchE2E.round($0, 3) } ?? NSNull(),
            ] as [String: Any],
            "targets": [
                "maxClusterToStandaloneWorkerCPU": Self.maxCPURatio,
                "met": ratioOfMedians.map { $0 <= Self.maxCPURatio } ?? NSNull(),
            ] as [String: Any],
            "fullRuns": runs.map(\.report),
        ]) { _, new in new }
        return (report, ok)
    }

    /// The figures compared, from one ``BenchE2E`` report.
    static func figures(_ report: [String: Any]) -> [String: Any] {
        let worker = report["worker"] as? [String: Any] ?? [:]
        let redis = report["redis"] as? [String: Any] ?? [:]
        let results = report["results"] as? [String: Any] ?? [:]
        return [
            "workerCPUMicrosPerNotification": worker["cpuMicrosPerNotification"] ?? NSNull(),
            "notificationsPerSecond": worker["notificationsPerSecond"] ?? NSNull(),
            "peakRSSBytes": worker["peakRSSBytes"] ?? NSNull(),
            "redisRoundTripsPerJob": redis["roundTripsPerJob"] ?? NSNull(),
            "nodePipelinesPerRoundTrip": redis["nodePipelinesPerRoundTrip"] ?? NSNull(),
            "redisCPUMicrosPerNotification": redis["cpuMicrosPerNotification"] ?? NSNull(),
            "complete": results["complete"] ?? NSNull(),
        ]
    }

    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    static func text(_ value: Any?) -> String {
        switch value {
        case let number as Double: String(format: "%.2f", number)
        case let number as Int: String(number)
        default: "-"
        }
    }

    /// The summary `pushworker-dev bench e2e --compare-standalone` prints.
    package static func summary(_ report: [String: Any]) -> String {
        let config = report["config"] as? [String: Any] ?? [:]
        let runs = report["runs"] as? [[String: Any]] ?? []
        let medians = report["medians"] as? [String: Any] ?? [:]
        let ratio = report["ratio"] as? [String: Any] ?? [:]
        let targets = report["targets"] as? [String: Any] ?? [:]
        var lines = ["pushworker-dev bench e2e --compare-standalone (\(report["build"] ?? "?") build, \(config["notifications"] ?? "?") notifications, worker CPUs \(config["workerCPUs"] as? String ?? "any"), \(config["rounds"] ?? "?") rounds)",
                     "  round  redis       worker µs/notif  round trips/job  node pipelines/trip  Redis µs/notif  notif/s"]
        for run in runs {
            let figures = run["figures"] as? [String: Any] ?? [:]
            lines.append("  \(run["round"] ?? "?")      \(String(describing: run["mode"] ?? "?").padding(toLength: 10, withPad: " ", startingAt: 0))  "
                + "\(text(figures["workerCPUMicrosPerNotification"]).padding(toLength: 15, withPad: " ", startingAt: 0))  "
                + "\(text(figures["redisRoundTripsPerJob"]).padding(toLength: 15, withPad: " ", startingAt: 0))  "
                + "\(text(figures["nodePipelinesPerRoundTrip"]).padding(toLength: 19, withPad: " ", startingAt: 0))  "
                + "\(text(figures["redisCPUMicrosPerNotification"]).padding(toLength: 14, withPad: " ", startingAt: 0))  "
                + "\((figures["notificationsPerSecond"] as? Double).map { String(format: "%.0f", $0) } ?? "-")")
        }
        func pair(_ key: String) -> String {
            let entry = medians[key] as? [String: Any] ?? [:]
            return "standalone \(text(entry["standalone"])), cluster \(text(entry["cluster"]))"
        }
        lines.append("  medians: worker µs/notification \(pair("workerCPUMicrosPerNotification")); round trips/job \(pair("redisRoundTripsPerJob")); Redis µs/notification \(pair("redisCPUMicrosPerNotification"))")
        lines.append("  worker CPU cluster / standalone: \(text(ratio["clusterToStandaloneWorkerCPU"])) (median of rounds' ratios \(text(ratio["medianPairedRatio"]))), target ≤ \(targets["maxClusterToStandaloneWorkerCPU"] ?? "?"): \((targets["met"] as? Bool).map { $0 ? "met" : "NOT met" } ?? "-")")
        return lines.joined(separator: "\n")
    }
}
