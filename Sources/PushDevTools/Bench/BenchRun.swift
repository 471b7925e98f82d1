import Foundation
import PushRuntime
import PushCore
import PushWorker

/// What every `pushworker-dev bench` takes besides its own options: `--report`, `--quiet`,
/// `--keep` (the benches with a scratch folder), and whether this binary is a debug build (its
/// figures are then meaningless; the report says which build made it).
package struct BenchCommonOptions: Sendable {
    package var report: String
    package var quiet = false
    package var keep = false
    package var isDebugBuild = false

    package init(report: String) { self.report = report }
}

/// A bench's options: its own and the common ones.
package protocol BenchOptions {
    var common: BenchCommonOptions { get set }
}

/// What the benches that start the sandbox and run the references take besides:
/// `--h2load-requests`, `--peer`, `--sandbox-arg`, `--sandbox-cpus`, `--timeout`, `--keep`.
package protocol BenchRunOptions: BenchOptions {
    var h2loadRequests: Int? { get set }
    var peers: [String] { get set }
    var sandboxArguments: [String] { get set }
    var sandboxCPUs: String? { get set }
    var timeout: Double { get set }
}

extension BenchE2E.Options: BenchRunOptions {}
extension BenchHTTP.Options: BenchRunOptions {}
extension BenchRedis.Options: BenchOptions {}
extension BenchDecode.Options: BenchOptions {}

/// A benchmark: its options and progress on stderr; those that start the sandbox also their
/// scratch space (``BenchScratch``) and the references.
protocol Benchmark {
    associatedtype Options: BenchOptions
    var options: Options { get }
}

extension Benchmark {
    /// One progress line on stderr, unless `--quiet`.
    func step(_ text: String) { if !options.common.quiet { printError("▸ \(text)") } }
}

extension Benchmark where Options: BenchRunOptions {

    /// A fresh scratch folder named `<prefix>-<run id>` (``BenchScratch``).
    func makeScratch(prefix: String) throws -> BenchScratch {
        try BenchScratch(prefix: prefix, keep: options.common.keep, isDebugBuild: options.common.isDebugBuild)
    }

    /// The references a bench is compared with, one after the other on the same request:
    /// `h2load` with `connections` x `streams`, then the libcurl floors (`pushworker-curl-floor
    /// --mode tuned`, the reference line, and `--mode plain`, for the record) and every `peers`
    /// sender, all with h2load's arguments. None when `requests` is 0.
    func measureReferences(requests: Int, connections: Int, streams: Int, sample: BenchSampleRequest, folder: URL,
                           cpus: String?, sandboxPID: Int32?, peers: [String] = []) throws -> BenchReferences {
        var references = BenchReferences()
        guard requests > 0 else { return references }
        step("h2load: \(requests) requests, -c \(connections) -m \(streams), \(sample.body.count)-byte APNs body")
        let outcome = try BenchH2load.run(requests: requests, connections: connections, streams: streams, sample: sample,
                                          folder: folder, cpus: cpus, sandboxPID: sandboxPID)
        references.h2load = outcome.entry
        references.h2loadCPUPerRequest = outcome.cpuMicrosPerRequest
        let all = try CurlFloorReference.runAll(requestArguments: outcome.requestArguments, requests: requests, cpus: cpus,
                                                folder: folder, sandboxPID: sandboxPID, peers: peers, step: step)
        references.curlFloor = all.tuned.report
        references.curlFloorCPUPerRequest = all.tuned.cpuMicrosPerRequest
        references.curlFloorPlain = all.plain.report
        references.curlFloorPlainCPUPerRequest = all.plain.cpuMicrosPerRequest
        references.peers = all.peers
        return references
    }
}

/// What ``Benchmark/measureReferences(requests:connections:streams:sample:folder:cpus:sandboxPID:)``
/// measured: each reference's report entry and CPU µs per succeeded request (nil: not run).
struct BenchReferences {
    var h2load: [String: Any]?
    var h2loadCPUPerRequest: Double?
    /// The tuned libcurl floor: the reference line.
    var curlFloor: [String: Any]?
    var curlFloorCPUPerRequest: Double?
    /// The plain perform/poll floor, for the record.
    var curlFloorPlain: [String: Any]?
    var curlFloorPlainCPUPerRequest: Double?
    /// Peers (`make bench-peers`), each with its report entry.
    var peers: [[String: Any]] = []

    /// Makes the reference line the mean of the tuned floor measured `before` the worker phase
    /// and the one measured after it (``curlFloor``), which ``BenchE2E`` runs a minute or more
    /// apart: the machine's speed can move in that time; the mean follows it as the worker phase
    /// between them does, where either run alone would skew the ratio (docs/performance.md
    /// "`bench e2e`"). The entry keeps both figures (`cpuMicrosPerRequestBefore`/`After`) and the
    /// before run's own entry (`before`). Nothing changes when either run has no figure.
    mutating func bracketFloor(before: CurlFloorReference.Outcome?) {
        guard let before, let beforeCPU = before.cpuMicrosPerRequest, let afterCPU = curlFloorCPUPerRequest,
              var entry = curlFloor else { return }
        let mean = (beforeCPU + afterCPU) / 2
        entry["cpuMicrosPerRequestBefore"] = BenchE2E.round(beforeCPU, 2)
        entry["cpuMicrosPerRequestAfter"] = BenchE2E.round(afterCPU, 2)
        entry["cpuMicrosPerRequest"] = BenchE2E.round(mean, 2)
        entry["before"] = before.report
        curlFloor = entry
        curlFloorCPUPerRequest = mean
    }

    /// The report members `h2load`, `curlFloor`, `curlFloorPlain` and `peers` (null / empty when not run).
    var reportMembers: [String: Any] {
        ["h2load": h2load ?? NSNull(), "curlFloor": curlFloor ?? NSNull(), "curlFloorPlain": curlFloorPlain ?? NSNull(), "peers": peers]
    }

    /// The `ratio` members every bench reports: `mine` (the bench's CPU µs per request or
    /// notification) to h2load's and to the libcurl floor's CPU µs per request, under the keys
    /// given, and the floor's to h2load's (`curlFloorToH2load`); null where a side is missing.
    func ratios(_ mine: Double?, toH2load: String, toCurlFloor: String) -> [String: Any] {
        [
            toH2load: BenchE2E.ratio(mine, h2loadCPUPerRequest),
            toCurlFloor: BenchE2E.ratio(mine, curlFloorCPUPerRequest),
            "curlFloorToH2load": BenchE2E.ratio(curlFloorCPUPerRequest, h2loadCPUPerRequest),
        ]
    }
}

/// One bench run's identity and scratch space: a random run id, a folder under the temporary
/// directory (removed by ``close()`` unless `keep`), and the load average when it started.
struct BenchScratch {
    let runID = String(UInt32.random(in: 0...UInt32.max), radix: 36)
    let folder: URL
    let keep: Bool
    let isDebugBuild: Bool
    private let loadBefore = ProcessStats.loadAverage()

    init(prefix: String, keep: Bool, isDebugBuild: Bool) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(runID)")
        self.keep = keep
        self.isDebugBuild = isDebugBuild
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    /// Removes the folder, or says where it was kept.
    func close() {
        if keep { printError("kept \(folder.path)") } else { try? FileManager.default.removeItem(at: folder) }
    }

    /// The report members every bench writes: `schema`, `build`, `machine` (CPUs, model, load
    /// average before and after the run).
    func reportHeader(schema: String) -> [String: Any] {
        [
            "schema": schema,
            "build": isDebugBuild ? "debug" : "release",
            "machine": [
                "nproc": ProcessInfo.processInfo.activeProcessorCount, "cpuModel": ProcessStats.cpuModel(),
                "loadAverageBefore": loadBefore, "loadAverageAfter": ProcessStats.loadAverage(),
            ] as [String: Any],
        ]
    }
}
