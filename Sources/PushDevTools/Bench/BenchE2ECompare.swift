import Foundation
import PushCore
import PushWorker

/// `pushworker-dev bench e2e --redis-cluster --compare-standalone` and
/// `pushworker-dev bench e2e --redis-tls --compare-plain`: the same workload against two Redis
/// set-ups — a standalone redis-server and a Redis Cluster (3 masters, started once for the
/// whole run), or a plain redis-server and a TLS-only one — in `rounds` alternating pairs (the
/// order flips every round), each a full ``BenchE2E`` run (its own broker, sandbox, worker
/// processes; a redis-server started per run, the cluster flushed per run). Reports per run the
/// worker's CPU per notification, Redis round trips per job and the Redis servers' CPU, then the
/// medians and the second / first ratios — the median of the per-round ratios too, since each
/// pair ran minutes apart at most. The cluster client may cost at most 10 % more worker CPU per
/// notification (``Pair/maxCPURatio``); TLS has no target, its cost is reported.
package struct BenchE2ECompare: Benchmark {
    /// The two set-ups compared, the base first.
    enum Pair {
        case standaloneCluster
        case plainTLS

        var modes: (base: String, other: String) {
            switch self {
            case .standaloneCluster: ("standalone", "cluster")
            case .plainTLS: ("plain", "tls")
            }
        }

        /// The report's key of the other / base worker CPU ratio.
        var ratioKey: String {
            switch self {
            case .standaloneCluster: "clusterToStandaloneWorkerCPU"
            case .plainTLS: "tlsToPlainWorkerCPU"
            }
        }

        var maxCPURatio: Double? { self == .standaloneCluster ? 1.10 : nil }
        var flags: String { self == .standaloneCluster ? "--compare-standalone" : "--redis-tls --compare-plain" }
    }

    let options: BenchE2E.Options
    let pair: Pair

    package init(options: BenchE2E.Options) {
        self.options = options
        pair = options.comparePlain ? .plainTLS : .standaloneCluster
    }

    package func run() throws -> (report: [String: Any], ok: Bool) {
        let scratch = try makeScratch(prefix: "pushworker-bench-compare")
        defer { scratch.close() }
        var cluster: LocalRedisCluster?
        if pair == .standaloneCluster {
            step("starting a Redis Cluster (3 masters, \(options.clusterReplicas) replica(s) each), shared by the cluster runs")
            cluster = try LocalRedisCluster(folder: scratch.folder, masters: 3, replicasPerMaster: options.clusterReplicas)
        }
        defer { cluster?.stop() }
        let (base, other) = pair.modes
        var runs: [(mode: String, round: Int, report: [String: Any], ok: Bool)] = []
        for round in 0..<options.rounds {
            let order = round % 2 == 0 ? [base, other] : [other, base]
            for mode in order {
                step("round \(round + 1)/\(options.rounds): \(mode)")
                var single = options
                single.compareStandalone = false
                single.comparePlain = false
                single.redisCluster = false
                single.redisTLS = mode == "tls"
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
                base: Self.median(values(base, key)) ?? NSNull(),
                other: Self.median(values(other, key)) ?? NSNull(),
            ] as [String: Any]
        }
        let baseCPU = Self.median(values(base, "workerCPUMicrosPerNotification"))
        let otherCPU = Self.median(values(other, "workerCPUMicrosPerNotification"))
        let ratioOfMedians = baseCPU.flatMap { baseValue in otherCPU.map { $0 / baseValue } }
        var pairedRatios: [Double] = []
        for round in 1...max(1, options.rounds) {
            let both = runs.filter { $0.round == round }
            if let b = both.first(where: { $0.mode == base }).flatMap({ Self.figures($0.report)["workerCPUMicrosPerNotification"] as? Double }),
               let o = both.first(where: { $0.mode == other }).flatMap({ Self.figures($0.report)["workerCPUMicrosPerNotification"] as? Double }), b > 0 {
                pairedRatios.append(o / b)
            }
        }
        let ok = runs.allSatisfy(\.ok)
        var report = scratch.reportHeader(schema: "pushworker-bench-e2e-compare/1")
        report.merge([
            "config": [
                "notifications": options.notifications, "jobSize": options.jobSize, "mix": options.mix.description, "workers": options.workers,
                "workerCPUs": options.workerCPUs ?? NSNull(), "sandboxCPUs": options.sandboxCPUs ?? NSNull(), "rounds": options.rounds,
                "compared": [base, other], "flags": pair.flags,
                "clusterMasters": pair == .standaloneCluster ? 3 : 0, "clusterReplicasPerMaster": options.clusterReplicas,
            ] as [String: Any],
            "runs": runs.map { run -> [String: Any] in
                ["mode": run.mode, "round": run.round, "ok": run.ok, "figures": Self.figures(run.report)]
            },
            "medians": medians,
            "ratio": [
                pair.ratioKey: ratioOfMedians.map { BenchE2E.round($0, 3) } ?? NSNull(),
                "pairedRoundRatios": pairedRatios.map { BenchE2E.round($0, 3) },
                "medianPairedRatio": Self.median(pairedRatios).map { BenchE2E.round($0, 3) } ?? NSNull(),
            ] as [String: Any],
            "targets": pair.maxCPURatio.map { limit -> Any in
                ["max" + pair.ratioKey.prefix(1).uppercased() + pair.ratioKey.dropFirst(): limit,
                 "met": ratioOfMedians.map { $0 <= limit } ?? NSNull()] as [String: Any]
            } ?? NSNull(),
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

    /// The summary `pushworker-dev bench e2e --compare-standalone` (or `--compare-plain`) prints.
    package static func summary(_ report: [String: Any]) -> String {
        let config = report["config"] as? [String: Any] ?? [:]
        let runs = report["runs"] as? [[String: Any]] ?? []
        let medians = report["medians"] as? [String: Any] ?? [:]
        let ratio = report["ratio"] as? [String: Any] ?? [:]
        let targets = report["targets"] as? [String: Any] ?? [:]
        let compared = config["compared"] as? [String] ?? ["standalone", "cluster"]
        let (base, other) = (compared.first ?? "standalone", compared.last ?? "cluster")
        var lines = ["pushworker-dev bench e2e \(config["flags"] as? String ?? "--compare-standalone") (\(report["build"] ?? "?") build, \(config["notifications"] ?? "?") notifications, worker CPUs \(config["workerCPUs"] as? String ?? "any"), \(config["rounds"] ?? "?") rounds)",
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
            return "\(base) \(text(entry[base])), \(other) \(text(entry[other]))"
        }
        lines.append("  medians: worker µs/notification \(pair("workerCPUMicrosPerNotification")); round trips/job \(pair("redisRoundTripsPerJob")); Redis µs/notification \(pair("redisCPUMicrosPerNotification"))")
        let ratioKey = ratio.keys.first { $0.hasSuffix("WorkerCPU") } ?? "clusterToStandaloneWorkerCPU"
        let target = targets.first { $0.key.hasPrefix("max") }.map { limit in
            ", target ≤ \(limit.value): \((targets["met"] as? Bool).map { $0 ? "met" : "NOT met" } ?? "-")"
        } ?? " (no target)"
        lines.append("  worker CPU \(other) / \(base): \(text(ratio[ratioKey])) (median of rounds' ratios \(text(ratio["medianPairedRatio"])))\(target)")
        return lines.joined(separator: "\n")
    }
}
