import Foundation
import PushRuntime
import PushCore
import PushCrypto
import PushHTTP
import PushSandbox
import PushWorker
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `pushworker-dev bench http`: the HTTP/2 client alone, beside `h2load`.
///
/// Starts the provider sandbox (or uses `--url`), builds ONE realistic APNs request (a live iOS
/// recipient of a bench job, planned as the worker plans it, with a provider JWT), and sends it
/// `requests` times through one ``HTTP2Client`` with the worker's connections x streams, keeping
/// every stream busy: each completion submits the next request. The bench process's own CPU
/// (`getrusage(RUSAGE_SELF)`) over the measured phase, divided by the requests, is the client's
/// cost per request; a warm-up phase first opens the connections (TLS handshakes) outside the
/// measurement. Then `h2load` sends the same request with the same connections x streams.
package struct BenchHTTP: Benchmark {
    package struct Options {
        package var requests = 100_000
        package var warmup: Int?
        /// Send to this origin instead of starting the sandbox (`https://host:port`, or `http://`
        /// for h2c); the request is signed with a throwaway key, so expect 403s from real APNs.
        package var url: String?
        package var caFile: String?
        package var h2loadRequests: Int?
        /// Passed to `pushworker-dev sandbox`, e.g. `--latency-ms=50`.
        package var sandboxArguments: [String] = []
        /// Pin this process (submitting side + the client's I/O thread) and the references
        /// (h2load, the libcurl floors, peers) with `taskset -c`.
        package var clientCPUs: String?
        /// Pin the sandbox with `taskset -a -p -c`.
        package var sandboxCPUs: String?
        /// Extra senders run with h2load's arguments (`make bench-peers`: the Go net/http sender).
        package var peers: [String] = []
        /// Keep the client's CPUs from halting while the senders wait: an ``IdleSpinner`` at
        /// `SCHED_IDLE` on `clientCPUs` for the whole run (needs `clientCPUs`).
        package var busyCore = false
        /// Requests sent one at a time after the measured phase: their latency shows that
        /// nothing waits in the client (the socket cork is lifted before every wait).
        package var loneRequests = 200
        /// Measured phase + tuned floor + h2load repeated this many times, alternately (the
        /// first round also runs the plain floor and the peers): per-round figures and medians.
        package var rounds = 1
        package var timeout = 300.0
        /// `--report` (default bench-http-report.json), `--quiet`, `--keep`, the build.
        package var common = BenchCommonOptions(report: "bench-http-report.json")

        package init() {}
    }

    let options: Options

    package init(options: Options) { self.options = options }

    package func run() throws -> (report: [String: Any], ok: Bool) {
        let options = self.options
        let scratch = try makeScratch(prefix: "pushworker-bench-http")
        defer { scratch.close() }
        let runID = scratch.runID, folder = scratch.folder

        var sandbox: Sandbox?
        let credentials: AppCredentials
        var caFile = options.caFile
        if let url = options.url {
            step("using \(url) (requests signed with a throwaway key)")
            let apns = AppCredentials.APNS(teamID: "BENCHTEAM1", keyID: "BENCHKEY01", key: try P256PrivateKey.generate(),
                                           topic: "com.example.bench", endpoint: url)
            credentials = AppCredentials(appID: BenchE2E.appID, apns: apns, fcm: nil, webPush: nil, additionalDataAtRoot: false,
                                         ratePerSecond: nil, problems: [])
        } else {
            step("starting the provider sandbox")
            let started = try Sandbox(folder: folder, apps: [BenchE2E.appID], seed: "bench-http-\(runID)", extra: options.sandboxArguments)
            sandbox = started
            caFile = caFile ?? started.certificate
            credentials = AppCredentials.load(appID: BenchE2E.appID,
                                              folder: URL(fileURLWithPath: started.credentialsDir).appendingPathComponent(BenchE2E.appID))
        }
        defer { sandbox?.child.stop() }
        let sandboxPID = sandbox?.child.process.processIdentifier
        if let cpus = options.sandboxCPUs, let sandboxPID { try BenchE2E.pin(pid: sandboxPID, cpus: cpus) }
        // Every thread of this process; the client's I/O thread, created below, inherits it.
        if let cpus = options.clientCPUs { try BenchE2E.pin(pid: getpid(), cpus: cpus) }
        var spinner: ChildProcess?
        if options.busyCore {
            guard let cpus = options.clientCPUs else { throw DemoError("--busy-core needs --client-cpus (the core to keep busy)") }
            step("idle spinner (SCHED_IDLE) on cpus \(cpus): the core does not halt while the senders wait")
            spinner = try IdleSpinner.start(cpus: cpus, folder: folder)
        }
        defer { spinner?.stop(grace: 1) }
        let spinnerCPUBefore = spinner.flatMap { ProcessStats.cpuSeconds(pid: $0.process.processIdentifier) }

        var mix = BenchWorkload.Mix()
        mix.android = 0
        mix.web = 0
        let workload = BenchWorkload(appID: BenchE2E.appID, runID: runID, notifications: 50, jobSize: 50, mix: mix, deadShare: 0,
                                     liveWeb: [], deadWeb: [])
        let sample = try BenchSampleRequest.apns(job: workload.job(0).json, credentials: credentials)
        let request = HTTPRequest(method: "POST", url: sample.url, headers: sample.headers.map { HTTPHeader(name: $0.name, value: $0.value) },
                                  body: sample.body)

        let environment = ProcessInfo.processInfo.environment
        let connections = Int(environment["PUSHWORKER_HTTP_CONNECTIONS"] ?? "") ?? 2
        let streams = Int(environment["PUSHWORKER_HTTP_STREAMS"] ?? "") ?? 100
        var configuration = HTTPClientConfiguration()
        configuration.caFile = caFile
        configuration.maxConnectionsPerHost = connections
        configuration.maxConcurrentStreams = streams
        configuration.allowCleartextHTTP2 = sample.url.hasPrefix("http://")
        let client = try HTTP2Client(configuration: configuration)
        defer { client.shutdown(drainTimeout: .seconds(5)) }
        let window = connections * streams
        let warmup = options.warmup ?? min(options.requests, 2 * window)

        step("warm-up: \(warmup) requests, \(connections) connection(s) x \(streams) streams, \(sample.body.count)-byte APNs body")
        let warm = BenchHTTPDriver(client: client, request: request, total: warmup)
        guard warm.run(window: window, timeout: options.timeout) else { throw DemoError("the warm-up did not finish in \(Int(options.timeout)) s") }

        step("measuring: \(options.requests) requests")
        let driver = BenchHTTPDriver(client: client, request: request, total: options.requests)
        let sandboxBefore = sandboxPID.flatMap { ProcessStats.cpuSeconds(pid: $0) }
        let usageBefore = Self.usage()
        let ioBefore = client.ioThreadCPUSeconds
        let started = ContinuousClock.now
        let finished = driver.run(window: window, timeout: options.timeout)
        let wall = started.duration(to: .now)
        let ioAfter = client.ioThreadCPUSeconds
        let usageAfter = Self.usage()
        let sandboxCPU = sandboxBefore.flatMap { before in sandboxPID.flatMap { ProcessStats.cpuSeconds(pid: $0) }.map { $0 - before } }
        let tally = driver.tally()
        let wallSeconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
        let user = usageAfter.user - usageBefore.user, system = usageAfter.system - usageBefore.system
        let completed = tally.completed
        let perRequest = completed > 0 ? (user + system) / Double(completed) * 1e6 : nil
        let ioThreadCPU = ioBefore.flatMap { before in ioAfter.map { $0 - before } }
        let ioPerRequest = ioThreadCPU.flatMap { completed > 0 ? $0 / Double(completed) * 1e6 : nil }
        step("\(completed)/\(options.requests) in \(String(format: "%.2f", wallSeconds)) s")

        // One request at a time: with nothing else in flight, a request that waited in a corked
        // socket would take 200 ms (the kernel's cork limit) more than the sandbox's latency.
        let lone = BenchHTTPDriver(client: client, request: request, total: options.loneRequests)
        if options.loneRequests > 0 {
            step("lone requests: \(options.loneRequests), one at a time")
            _ = lone.run(window: 1, timeout: options.timeout)
        }

        let h2loadRequests = options.h2loadRequests ?? options.requests
        let references = try measureReferences(requests: h2loadRequests, connections: connections, streams: streams, sample: sample,
                                               folder: folder, cpus: options.clientCPUs, sandboxPID: sandboxPID, peers: options.peers)
        let h2loadCPUPerRequest = references.h2loadCPUPerRequest
        let curlFloorCPUPerRequest = references.curlFloorCPUPerRequest
        let plainFloorCPUPerRequest = references.curlFloorPlainCPUPerRequest
        var peers = references.peers
        for index in peers.indices {
            peers[index]["toH2load"] = BenchE2E.ratio(peers[index]["cpuMicrosPerRequest"] as? Double, h2loadCPUPerRequest)
            peers[index]["ioThreadToPeer"] = BenchE2E.ratio(ioPerRequest, peers[index]["cpuMicrosPerRequest"] as? Double)
        }
        let loaded = driver.latencies(), alone = lone.latencies()

        // More rounds: client, tuned floor, h2load again, alternately, so that the ratios come
        // with their spread on a machine whose speed drifts.
        var roundIO = [ioPerRequest], roundFloor = [curlFloorCPUPerRequest], roundH2load = [h2loadCPUPerRequest]
        var roundP99 = [loaded.p99]
        if options.rounds > 1, h2loadRequests > 0 {
            for round in 2...options.rounds {
                step("round \(round)/\(options.rounds): \(options.requests) requests through the client")
                let again = BenchHTTPDriver(client: client, request: request, total: options.requests)
                let before = client.ioThreadCPUSeconds
                _ = again.run(window: window, timeout: options.timeout)
                let after = client.ioThreadCPUSeconds
                let done = again.tally().completed
                roundIO.append(before.flatMap { b in after.map { done > 0 ? ($0 - b) / Double(done) * 1e6 : 0 } })
                roundP99.append(again.latencies().p99)
                let outcome = try BenchH2load.run(requests: h2loadRequests, connections: connections, streams: streams, sample: sample,
                                                  folder: folder, cpus: options.clientCPUs, sandboxPID: sandboxPID)
                roundH2load.append(outcome.cpuMicrosPerRequest)
                let floor = try CurlFloorReference.run(mode: "tuned", requestArguments: outcome.requestArguments, requests: h2loadRequests,
                                                       cpus: options.clientCPUs, output: folder.appendingPathComponent("curl-floor-tuned-\(round).out").path,
                                                       sandboxPID: sandboxPID)
                roundFloor.append(floor.cpuMicrosPerRequest)
            }
        }
        let roundRatios = zip(roundIO, roundFloor).map { pair -> Double? in pair.0.flatMap { io in pair.1.map { io / $0 } } }
        func median(_ values: [Double?]) -> Any {
            let present = values.compactMap { $0 }.sorted()
            guard !present.isEmpty else { return NSNull() }
            let middle = present.count / 2
            return BenchE2E.round(present.count % 2 == 1 ? present[middle] : (present[middle - 1] + present[middle]) / 2, 2)
        }
        func list(_ values: [Double?]) -> [Any] {
            values.map { value -> Any in
                guard let value else { return NSNull() }
                return BenchE2E.round(value, 2)
            }
        }
        let rounds: [String: Any] = [
            "count": roundIO.count,
            "ioThreadCPUMicrosPerRequest": list(roundIO), "curlFloorCPUMicrosPerRequest": list(roundFloor),
            "h2loadCPUMicrosPerRequest": list(roundH2load), "ioThreadToCurlFloor": list(roundRatios), "loadedP99Ms": list(roundP99),
            "median": [
                "ioThreadCPUMicrosPerRequest": median(roundIO), "curlFloorCPUMicrosPerRequest": median(roundFloor),
                "h2loadCPUMicrosPerRequest": median(roundH2load), "ioThreadToCurlFloor": median(roundRatios), "loadedP99Ms": median(roundP99),
            ] as [String: Any],
            "order": "each round: client (measured phase), h2load, tuned libcurl floor; round 1 also the lone requests, the plain floor and peers",
        ]

        let busyCore: Any = spinner.map { child -> [String: Any] in
            let pid = child.process.processIdentifier
            let cpu = spinnerCPUBefore.flatMap { before in ProcessStats.cpuSeconds(pid: pid).map { $0 - before } }
            return ["cpus": options.clientCPUs ?? NSNull(), "pid": Int(pid), "policy": IdleSpinner.policy(pid: pid).map { Int($0) } ?? NSNull(),
                    "spinnerCPUSeconds": cpu.map { BenchE2E.round($0, 3) } ?? NSNull(),
                    "what": "a SCHED_IDLE child on the client's CPUs for the whole run: the core never halts, the spinner's CPU is nobody's"]
        } ?? NSNull()

        // Against the sandbox every answer must be 200; another server may refuse the throwaway JWT.
        let ok = finished && completed == options.requests && tally.errors.isEmpty
            && (options.url != nil || tally.statuses[200] == completed)
        let ratio: Double? = perRequest.flatMap { mine in h2loadCPUPerRequest.map { mine / $0 } }
        var report = scratch.reportHeader(schema: "pushworker-bench-http/1")
        report.merge([
            "config": [
                "requests": options.requests, "warmupRequests": warmup, "httpConnections": connections, "httpStreams": streams,
                "target": options.url == nil ? "sandbox" : "url", "url": sample.url, "bodyBytes": sample.body.count,
                "headers": sample.headers.map(\.name), "libcurl": client.libcurl.version,
                "sandboxArguments": options.sandboxArguments, "clientCPUs": options.clientCPUs ?? NSNull(),
                "sandboxCPUs": options.sandboxCPUs ?? NSNull(), "busyCore": busyCore,
            ] as [String: Any],
            "client": [
                "completed": completed, "byStatus": Dictionary(uniqueKeysWithValues: tally.statuses.enumerated().filter { $0.element > 0 }.map { ("\($0.offset)", $0.element) }),
                "transportErrors": tally.errors, "wallSeconds": BenchE2E.round(wallSeconds, 3),
                "requestsPerSecond": wallSeconds > 0 ? BenchE2E.round(Double(completed) / wallSeconds, 0) : NSNull(),
                "cpuSeconds": BenchE2E.round(user + system, 3), "userSeconds": BenchE2E.round(user, 3), "systemSeconds": BenchE2E.round(system, 3),
                "cpuMicrosPerRequest": perRequest.map { BenchE2E.round($0, 2) } ?? NSNull(),
                "what": "this process (getrusage RUSAGE_SELF) over the measured phase: submitting thread + the client's I/O thread",
                "ioThreadCPUSeconds": ioThreadCPU.map { BenchE2E.round($0, 3) } ?? NSNull(),
                "ioThreadCPUMicrosPerRequest": ioPerRequest.map { BenchE2E.round($0, 2) } ?? NSNull(),
                "latencyMs": loaded.summary,
                "loneRequestLatencyMs": alone.summary,
            ] as [String: Any],
            "sandbox": [
                "cpuSeconds": sandboxCPU.map { BenchE2E.round($0, 3) } ?? NSNull(),
                "cpuMicrosPerRequest": sandboxCPU.flatMap { completed > 0 ? BenchE2E.round($0 / Double(completed) * 1e6, 2) : nil } ?? NSNull(),
            ] as [String: Any],
            "h2load": references.h2load ?? NSNull(),
            "curlFloor": references.curlFloor ?? NSNull(),
            "curlFloorPlain": references.curlFloorPlain ?? NSNull(),
            "peers": peers,
            "rounds": rounds,
            "ratio": [
                "clientCPUPerRequestToH2loadCPUPerRequest": ratio.map { BenchE2E.round($0, 2) } ?? NSNull(),
                "clientToCurlFloor": BenchE2E.ratio(perRequest, curlFloorCPUPerRequest),
                "ioThreadToCurlFloor": BenchE2E.ratio(ioPerRequest, curlFloorCPUPerRequest),
                "ioThreadToCurlFloorPlain": BenchE2E.ratio(ioPerRequest, plainFloorCPUPerRequest),
                "ioThreadToH2load": BenchE2E.ratio(ioPerRequest, h2loadCPUPerRequest),
                "curlFloorToH2load": BenchE2E.ratio(curlFloorCPUPerRequest, h2loadCPUPerRequest),
                "curlFloorPlainToTuned": BenchE2E.ratio(plainFloorCPUPerRequest, curlFloorCPUPerRequest),
            ] as [String: Any],
        ]) { _, new in new }
        return (report, ok)
    }

    static func usage() -> (user: Double, system: Double) {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return (ProcessStats.seconds(usage.ru_utime), ProcessStats.seconds(usage.ru_stime))
    }
}

/// Sends one request `total` times with `window` in flight: each completion (on the client's
/// I/O thread) submits the next, so the submitting side costs what a completion handler costs.
final class BenchHTTPDriver: Sendable {
    struct Tally {
        var submitted = 0
        var completed = 0
        /// Responses by status code (index 0: a status outside 1...599).
        var statuses = [Int](repeating: 0, count: 600)
        var errors: [String: Int] = [:]
    }

    let client: HTTP2Client
    let request: HTTPRequest
    let total: Int
    private let state = Mutex(Tally())
    /// Submit → completion of each request, in ms (appended on the I/O thread).
    private let samples = Mutex([Double]())
    private let done = DispatchSemaphore(value: 0)

    init(client: HTTP2Client, request: HTTPRequest, total: Int) {
        self.client = client
        self.request = request
        self.total = total
    }

    /// Returns whether every request completed before `timeout` seconds.
    func run(window: Int, timeout: Double) -> Bool {
        guard total > 0 else { return true }
        for _ in 0..<min(window, total) { submitNext() }
        return done.wait(timeout: .now() + timeout) == .success
    }

    func tally() -> Tally { state.withLock { $0 } }

    private func submitNext() {
        let go = state.withLock { tally -> Bool in
            guard tally.submitted < total else { return false }
            tally.submitted += 1
            return true
        }
        guard go else { return }
        let submitted = ContinuousClock.now
        client.submit(request) { [self] result in
            let took = submitted.duration(to: .now)
            samples.withLock { $0.append(Double(took.components.seconds) * 1e3 + Double(took.components.attoseconds) / 1e15) }
            completed(result)
        }
    }

    struct Latencies {
        var sorted: [Double]
        var p99: Double? { sorted.isEmpty ? nil : sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * 0.99).rounded()))] }
        var summary: Any {
            guard !sorted.isEmpty else { return NSNull() }
            func at(_ p: Double) -> Double { BenchE2E.round(sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))], 2) }
            return ["count": sorted.count, "p50": at(0.5), "p99": at(0.99), "max": at(1)] as [String: Any]
        }
    }

    /// Submit → completion latencies so far.
    func latencies() -> Latencies { Latencies(sorted: samples.withLock { $0 }.sorted()) }

    private func completed(_ result: Result<HTTPResponse, HTTPTransportError>) {
        let last = state.withLock { tally -> Bool in
            switch result {
            case .success(let response): tally.statuses[(1..<600).contains(response.status) ? response.status : 0] += 1
            case .failure(let error): tally.errors["\(error)", default: 0] += 1
            }
            tally.completed += 1
            return tally.completed == total
        }
        if last { done.signal() } else { submitNext() }
    }
}
