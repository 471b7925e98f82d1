import Foundation
import PushRuntime
import PushCore
import PushKafkaMock
import PushSandbox
import PushKafka
import PushRedis
#if canImport(Glibc)
import Glibc
import PushWorker
import PushEvents
import PushEncoding
#endif

/// `pushworker-dev bench e2e`: the whole pipeline under load on this machine, beside `h2load`.
///
/// Starts (or uses) a Kafka broker, Redis and the provider sandbox, runs `workers` separate
/// `pushworker run` processes in one consumer group, enqueues `notifications` recipients in jobs
/// of `jobSize`, waits for every result on the results topic, and measures the workers' own CPU
/// time (`/proc/<pid>/stat`), peak RSS (`VmHWM`), enqueue→result latency and throughput; then
/// runs `h2load` against the same sandbox with the same connections × streams and an APNs
/// request of the same size, measuring its CPU per request the same way (rusage of the reaped
/// child). Writes a JSON report and an SVG chart of results per 100 ms.
package struct BenchE2E: Benchmark {
    package struct Options {
        package var notifications = 50_000
        package var jobSize = 500
        package var partitions: Int?
        package var mix = BenchWorkload.Mix()
        package var deadShare = 0.05
        /// `--lean-recipients`: recipients without userId, language or properties.
        package var leanRecipients = false
        package var workers = 1
        package var workerCPUs: String?
        package var sandboxCPUs: String?
        /// `--worker-wrapper`: a command (absolute path, then its arguments) the worker runs
        /// under, e.g. `/usr/bin/valgrind --tool=callgrind` (docs/performance.md "Profiling a
        /// running worker"). Inside `taskset` when `--worker-cpus` is given.
        package var workerWrapper: [String] = []
        /// `--compare-binary` / `--compare-wrapper`: every second worker (odd index) runs this
        /// `pushworker` binary and/or under this wrapper instead — an A/B of two builds or two
        /// settings in ONE run, the two variants sharing the same core, broker, Redis, sandbox
        /// and minutes (``Comparison``; docs/performance.md "Benchmarks").
        package var compareBinary: String?
        package var compareWrapper: [String]?
        package var isComparing: Bool { compareBinary != nil || compareWrapper != nil || comparePlain }
        package var sandboxThreads = 1
        package var sandboxArguments: [String] = []
        package var brokers: String?
        package var redisURL: String?
        /// Start a Redis Cluster (3 masters, `clusterReplicas` replicas each) instead of redis-server.
        package var redisCluster = false
        package var clusterReplicas = 0
        /// `--compare-standalone`: `rounds` × (standalone, cluster) alternating (``BenchE2ECompare``).
        package var compareStandalone = false
        /// `--redis-tls`: the redis-server started speaks TLS (a CA made for the run), the
        /// workers reach it with `rediss://` and `PUSHWORKER_REDIS_CA_FILE`.
        package var redisTLS = false
        /// `--compare-plain` (with `--redis-tls`): the redis-server listens on a plain port too,
        /// and every second worker (B) uses that one: TLS (A) against plain (B) in ONE run, on
        /// the same server, core and minutes (``Comparison``).
        package var comparePlain = false
        package var rounds = 3
        package var h2loadRequests: Int?
        /// Extra senders run with h2load's arguments (`make bench-peers`).
        package var peers: [String] = []
        package var backlog = false
        package var svg: String?
        package var timeout = 600.0
        /// `--report` (default bench-report.json), `--quiet`, `--keep`, the build.
        package var common = BenchCommonOptions(report: "bench-report.json")

        package init() {}
    }

    static let appID = "app_bench"
    static let topics = ["push.jobs.v1", "push.jobs.transactional.v1", "push.retry.v1", "push.results.v1", "push.tokens.v1", "push.dlq.v1"]

    let options: Options
    /// A cluster started by the caller (``BenchE2ECompare`` shares one across rounds); flushed
    /// before the run.
    let sharedCluster: LocalRedisCluster?

    package init(options: Options) { self.init(options: options, cluster: nil) }

    init(options: Options, cluster: LocalRedisCluster?) {
        self.options = options
        self.sharedCluster = cluster
    }

    /// Partitions per topic: the mock keeps ~5 MiB / 100k messages per partition, so size for the
    /// run; with several workers, a multiple of their number, so each is assigned as many
    /// (the jobs are spread over the partitions in turn: every worker gets the same share).
    static func autoPartitions(notifications: Int, jobSize: Int, workers: Int) -> Int {
        let sized = autoPartitions(notifications: notifications, jobSize: jobSize)
        let multiple = max(1, workers)
        return min(512 / multiple * multiple, (sized + multiple - 1) / multiple * multiple)
    }

    static func autoPartitions(notifications: Int, jobSize: Int) -> Int {
        let budget = 3.5 * 1_048_576
        let resultBytes = Double(notifications) * 520
        let jobBytes = Double(notifications) * 420 + Double((notifications + jobSize - 1) / jobSize) * 3000
        let bySize = Int((max(resultBytes, jobBytes) / budget).rounded(.up))
        let byCount = (notifications + 79_999) / 80_000
        return min(512, max(4, bySize, byCount))
    }

    /// `INFO memory` `used_memory` in bytes, nil if Redis does not answer.
    static func usedMemory(_ client: any RedisPipelining) -> Int64? {
        guard let reply = try? client.pipeline([["INFO", "memory"]]).first, let text = reply.text else { return nil }
        for line in text.components(separatedBy: "\r\n") where line.hasPrefix("used_memory:") {
            return Int64(line.dropFirst("used_memory:".count))
        }
        return nil
    }

    /// `used_memory` of the Redis `url` names: the server's, or the sum over a cluster's
    /// masters (each asked directly; nil if one does not answer). `caFile` verifies a `rediss://` server.
    static func usedMemory(url: String, caFile: String? = nil) -> Int64? {
        guard var target = try? RedisTarget(url: url) else { return nil }
        if target.usesTLS { target.tls = RedisTLS(caFile: caFile) }
        switch target {
        case .standalone(let endpoint):
            guard let client = try? RedisClient(endpoint: endpoint) else { return nil }
            defer { client.close() }
            return usedMemory(client)
        case .sentinel(let endpoint):
            guard let client = try? RedisSentinelClient(endpoint: endpoint) else { return nil }
            defer { client.close() }
            return usedMemory(client)
        case .cluster(let endpoint):
            guard let cluster = try? RedisClusterClient(endpoint: endpoint) else { return nil }
            defer { cluster.close() }
            guard (try? cluster.refreshSlotMap()) != nil, let masters = cluster.slotMap()?.masters, !masters.isEmpty else { return nil }
            var total: Int64 = 0
            for master in masters {
                guard let client = try? RedisClient(url: "redis://\(master.host.contains(":") ? "[\(master.host)]" : master.host):\(master.port)") else { return nil }
                defer { client.close() }
                guard let used = usedMemory(client) else { return nil }
                total += used
            }
            return total
        }
    }

    // MARK: - Run

    package func run() throws -> (report: [String: Any], ok: Bool) {
        let options = self.options
        let scratch = try makeScratch(prefix: "pushworker-bench")
        defer { scratch.close() }
        let runID = scratch.runID, folder = scratch.folder
        let partitions = options.partitions ?? Self.autoPartitions(notifications: options.notifications, jobSize: options.jobSize, workers: options.workers)

        // Services.
        var cluster: KafkaMockCluster?
        let bootstrap: String
        if let brokers = options.brokers {
            step("using Kafka at \(brokers) (topics must exist with enough partitions)")
            bootstrap = brokers
        } else {
            step("starting Kafka (librdkafka mock cluster, in-process, \(partitions) partitions per topic)")
            KafkaLogging.setLogHandler { _, _, _ in }
            let mock = try KafkaMockCluster(brokers: 1)
            for topic in Self.topics { try mock.createTopic(topic, partitions: Int32(partitions)) }
            cluster = mock
            bootstrap = mock.bootstrapServers
        }
        defer { cluster?.close() }
        var redis: LocalRedis?
        var redisCluster: LocalRedisCluster?
        let redisURL: String
        if let url = options.redisURL { redisURL = url } else if let shared = sharedCluster {
            try shared.flushAll()
            redisCluster = shared
            redisURL = shared.url
        } else if options.redisCluster {
            step("starting a Redis Cluster (3 masters, \(options.clusterReplicas) replica(s) each)")
            let started = try LocalRedisCluster(folder: folder, masters: 3, replicasPerMaster: options.clusterReplicas)
            redisCluster = started
            redisURL = started.url
        } else {
            step(options.redisTLS ? "starting Redis (TLS, a CA made for the run\(options.comparePlain ? "; a plain port too" : ""))" : "starting Redis")
            let local = try LocalRedis(folder: folder, tls: options.redisTLS, plainPortToo: options.comparePlain)
            redis = local
            redisURL = local.url
        }
        let redisCAFile = redis?.tls?.caFile
        /// `--compare-plain`: the B workers' URL, the same server's plain port.
        let plainRedisURL = options.comparePlain ? redis?.plainURL : nil
        defer {
            redis?.child.stop()
            if sharedCluster == nil { redisCluster?.stop() }
        }
        let isCluster = redisURL.hasPrefix(RedisClusterEndpoint.scheme)
        step("starting the provider sandbox (\(options.sandboxThreads) thread(s))")
        let sandbox = try Sandbox(folder: folder, apps: [Self.appID], seed: "bench-\(runID)", extra: ["--threads", "\(options.sandboxThreads)"] + options.sandboxArguments)
        defer { sandbox.child.stop() }
        let sandboxPID = sandbox.child.process.processIdentifier
        if let cpus = options.sandboxCPUs { try Self.pin(pid: sandboxPID, cpus: cpus) }

        // Workload.
        let webCount = BenchWorkload.webCount(notifications: options.notifications, mix: options.mix)
        let liveWeb = webCount > 0 ? try sandbox.subscriptions(min(webCount, 256)) : []
        let deadWeb = webCount > 0 && options.deadShare > 0 ? try sandbox.subscriptions(min(webCount, 64), prefix: "dead") : []
        let workload = BenchWorkload(appID: Self.appID, runID: runID, notifications: options.notifications, jobSize: options.jobSize,
                                     mix: options.mix, deadShare: options.deadShare, liveWeb: liveWeb, deadWeb: deadWeb,
                                     lean: options.leanRecipients)
        step("generating \(workload.jobCount) jobs of up to \(options.jobSize) recipients (\(options.mix.description), dead share \(options.deadShare))")
        let jobs = (0..<workload.jobCount).map { workload.job($0) }
        let jobBytes = jobs.reduce(0) { $0 + $1.json.count }
        // The h2load request is modelled on the first job's iOS recipients (none: no h2load).
        let sample: BenchSampleRequest?
        do { sample = try sampleRequest(jobs[0].json, sandbox: sandbox) } catch {
            step("no h2load comparison: \(error)")
            sample = nil
        }

        var keyBytes = [UInt8](repeating: 0, count: 32)
        for index in keyBytes.indices { keyBytes[index] = UInt8.random(in: 0...255) }
        let connections = Int(ProcessInfo.processInfo.environment["PUSHWORKER_HTTP_CONNECTIONS"] ?? "") ?? 2
        let streams = Int(ProcessInfo.processInfo.environment["PUSHWORKER_HTTP_STREAMS"] ?? "") ?? 100
        // The tuned floor once before the workers as well as after them: the reference line is
        // the mean of the two (``BenchReferences/bracketFloor(before:)``).
        let h2loadRequests = options.h2loadRequests ?? min(options.notifications, 200_000)
        var floorBefore: CurlFloorReference.Outcome?
        if let sample, h2loadRequests > 0, CurlFloorReference.binaryPath != nil {
            step("libcurl floor (tuned) before the worker(s): the reference is its mean with the run after them")
            let arguments = BenchH2load.requestArguments(requests: h2loadRequests, connections: connections, streams: streams,
                                                         sample: sample, folder: folder)
            floorBefore = try CurlFloorReference.run(mode: "tuned", requestArguments: arguments, requests: h2loadRequests,
                                                     cpus: options.workerCPUs, output: folder.appendingPathComponent("curl-floor-tuned-before.out").path,
                                                     sandboxPID: sandboxPID)
        }
        var environment = ProcessInfo.processInfo.environment
        let overrides = [
            "PUSHWORKER_KAFKA_BROKERS": bootstrap,
            "PUSHWORKER_KAFKA_GROUP": "pushworker-bench-\(runID)",
            "PUSHWORKER_REDIS_URL": redisURL,
            "PUSHWORKER_CREDENTIALS_DIR": sandbox.credentialsDir,
            "PUSHWORKER_MSGID_KEYS": "bench1:" + Data(keyBytes).base64EncodedString(),
            "PUSHWORKER_CA_FILE": sandbox.certificate,
            "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS": "127.0.0.1",
            "PUSHWORKER_HTTP_CONNECTIONS": "\(connections)",
            "PUSHWORKER_HTTP_STREAMS": "\(streams)",
            // The drain budget under its older name, which every build reads, so that
            // --compare-binary runs against builds that predate PUSHWORKER_DRAIN_SECONDS.
            "PUSHWORKER_SHUTDOWN_GRACE_SECONDS": "10",
            "PUSHWORKER_RDKAFKA_SESSION_TIMEOUT_MS": "6000",
            "PUSHWORKER_RDKAFKA_HEARTBEAT_INTERVAL_MS": "500",
        ]
        for (key, value) in overrides { environment[key] = value }
        if let redisCAFile { environment["PUSHWORKER_REDIS_CA_FILE"] = redisCAFile }
        if environment["PUSHWORKER_LOG_LEVEL"] == nil { environment["PUSHWORKER_LOG_LEVEL"] = "warning" }

        // The results reader joins first (it reads from the earliest offset anyway).
        let reader = try KafkaConsumer(properties: ["bootstrap.servers": bootstrap, "group.id": "bench-results-\(runID)",
                                                    "auto.offset.reset": "earliest", "session.timeout.ms": "6000",
                                                    "fetch.max.bytes": "52428800",
                                                    // The mock broker holds an empty fetch for the whole wait even when data arrives
                                                    // meanwhile: a short wait keeps its 0–500 ms out of the result delay.
                                                    "fetch.wait.max.ms": "10"], topics: ["push.results.v1"])
        defer { reader.close() }
        let producer = try KafkaProducer(properties: ["bootstrap.servers": bootstrap, "linger.ms": "5", "message.max.bytes": "16777216"])
        var enqueuedAtMs = [Int64](repeating: 0, count: jobs.count)
        func enqueue() throws {
            step("enqueueing \(jobs.count) jobs (\(options.notifications) recipients, \(jobBytes / 1024) KiB)")
            for (index, job) in jobs.enumerated() {
                enqueuedAtMs[index] = Self.nowMs()
                // The in-process broker's topics are ours: the jobs go to its partitions in turn, so
                // several workers get equal shares (a worker's cost per notification depends on its
                // load under provider latency: an uneven share biased `--compare-*` runs).
                let partition = cluster == nil ? nil : Int32(index % partitions)
                producer.produce(topic: "push.jobs.v1", partition: partition, key: Array(job.id.utf8), value: job.json) { _ in }
            }
            try producer.flush(timeout: .seconds(120))
        }
        // De-duplication state: Redis memory before the campaign and after it (docs/reference/redis.md).
        let redisMemoryBefore = Self.usedMemory(url: redisURL, caFile: redisCAFile)
        if options.backlog { try enqueue() }

        // Workers.
        var workers: [(child: ChildProcess, port: UInt16)] = []
        /// Each worker's resident memory once ready, before the first job (`VmRSS`).
        var idleRSS: [Int] = []
        let spawnedAt = Date()
        for index in 0..<options.workers {
            var env = environment
            let port = ChildProcess.freePort()
            env["PUSHWORKER_HTTP_ADDR"] = "127.0.0.1:\(port)"
            let log = folder.appendingPathComponent("worker-\(index).log")
            let child: ChildProcess
            let isB = options.isComparing && index % 2 == 1
            // The bench's jobs are all bulk: against another build (which may predate lanes and
            // subscribe to fewer topics, which one consumer group cannot split fairly), A
            // consumes the bulk lane only, like B.
            if options.compareBinary != nil && !isB { env["PUSHWORKER_LANES"] = "bulk" }
            if isB, let plainRedisURL {
                env["PUSHWORKER_REDIS_URL"] = plainRedisURL
                env["PUSHWORKER_REDIS_CA_FILE"] = nil
            }
            let command = (isB ? options.compareWrapper ?? options.workerWrapper : options.workerWrapper)
                + [isB ? options.compareBinary ?? ChildProcess.workerPath : ChildProcess.workerPath, "run"]
            if let cpus = options.workerCPUs {
                child = try ChildProcess("/usr/bin/taskset", ["-c", cpus] + command, log: log, environment: env)
            } else {
                child = try ChildProcess(command[0], Array(command.dropFirst()), log: log, environment: env)
            }
            workers.append((child, port))
        }
        defer { for worker in workers { worker.child.stop(grace: 15) } }
        let workerPIDs = workers.map { $0.child.process.processIdentifier }
        step("started \(options.workers) worker(s) (pid \(workerPIDs.map(String.init).joined(separator: ",")))")
        if !options.backlog {
            let ready = ChildProcess.waitFor(timeout: 60) { workers.allSatisfy { Self.isReady(port: $0.port) } || workers.contains { !$0.child.isRunning } }
            guard ready, workers.allSatisfy({ $0.child.isRunning }) else {
                throw DemoError("the workers did not become ready: \(workers.first?.child.log().suffix(1500) ?? "")")
            }
            idleRSS = workerPIDs.map { ProcessStats.memoryBytes(pid: $0, field: "VmRSS") ?? 0 }
            try enqueue()
        }
        // The workers' Redis round trips (read at scrape time) from here to the last result.
        let roundTripsAtStart = options.backlog ? 0 : Self.redisRoundTrips(workers.map(\.port))
        let sandboxCPUAtStart = ProcessStats.cpuSeconds(pid: sandboxPID) ?? 0
        let redisPIDs = redisCluster?.pids ?? redis.map { [$0.child.process.processIdentifier] } ?? []
        let redisCPUAtStart = redisPIDs.isEmpty ? nil : redisPIDs.compactMap { ProcessStats.cpuSeconds(pid: $0) }.reduce(0, +)
        let benchCPUAtStart = ProcessStats.selfCPUSeconds()

        // Read results until every recipient has one.
        step("waiting for \(options.notifications) results")
        var seen = [Bool](repeating: false, count: options.notifications)
        var distinct = 0, received = 0, foreign = 0
        var byStatus: [String: Int] = [:], byPlatform: [String: Int] = [:]
        var latencies: [Double] = []
        latencies.reserveCapacity(options.notifications)
        var resultTimes: [Int64] = []
        resultTimes.reserveCapacity(options.notifications)
        // From a recipient's outcome (`at`: the provider's answer for a send) to its result read
        // from push.results.v1 here (results stream: docs/reference/records.md).
        var resultDelays: [Double] = []
        resultDelays.reserveCapacity(options.notifications)
        var samples: [(count: Int, cpu: Double)] = []
        // Per worker, at 10 % and 90 % of the results: CPU, I/O thread CPU and results counted
        // by the worker itself (several workers: each one's steady-state cost).
        var windowStart: [WorkerSnapshot]?, windowEnd: [WorkerSnapshot]?
        let perWorkerWindow = options.workers > 1
        let snapshotAll = { workers.map { WorkerSnapshot.take(pid: $0.child.process.processIdentifier, port: $0.port) } }
        // A run too short for the window (both marks in one 100 ms sample) falls back on these.
        let firstSnapshot = perWorkerWindow ? snapshotAll() : nil
        var lastSampleAt = Date.distantPast
        let deadline = Date().addingTimeInterval(options.timeout)
        let subscriptionPrefix = Array("s\(runID)-".utf8)
        var lastProgress = Date()
        while distinct < options.notifications && Date() < deadline {
            if workers.allSatisfy({ !$0.child.isRunning }) { break }
            for result in reader.pollBatch(max: 2000, timeout: .milliseconds(50)) {
                guard case .success(let message) = result else { continue }
                received += 1
                let fields = BenchResultFields(message.value)
                guard let number = fields.subscriptionNumber(prefix: subscriptionPrefix), number < seen.count else { foreign += 1; continue }
                if seen[number] { continue }
                seen[number] = true
                distinct += 1
                byStatus[fields.string("status") ?? "?", default: 0] += 1
                byPlatform[fields.string("platform") ?? "?", default: 0] += 1
                if let at = fields.string("at").flatMap(RFC3339Timestamp.parse) {
                    let atMs = Int64((at.timeIntervalSince1970 * 1000).rounded())
                    resultTimes.append(atMs)
                    resultDelays.append(Double(Self.nowMs() - atMs))
                    if let job = fields.jobIndex(), job < enqueuedAtMs.count { latencies.append(Double(atMs - enqueuedAtMs[job])) }
                }
            }
            if Date().timeIntervalSince(lastSampleAt) >= 0.1 {
                lastSampleAt = Date()
                samples.append((distinct, workerPIDs.compactMap { ProcessStats.cpuSeconds(pid: $0) }.reduce(0, +)))
                if perWorkerWindow {
                    if windowStart == nil, distinct >= options.notifications / 10 { windowStart = snapshotAll() }
                    if windowEnd == nil, distinct >= options.notifications * 9 / 10 { windowEnd = snapshotAll() }
                }
            }
            if Date().timeIntervalSince(lastProgress) >= 2 {
                lastProgress = Date()
                step("  \(distinct)/\(options.notifications) results")
            }
        }
        let finishedAt = Date()
        // The workers' own counters, once every result is in (Web Push encryption).
        let finalSnapshots = snapshotAll()
        var windowKind = "10 % to 90 % of the results"
        if perWorkerWindow, WorkerSnapshot.counted(from: windowStart, to: windowEnd) < Double(max(1, options.notifications / 4)) {
            (windowStart, windowEnd, windowKind) = (firstSnapshot, snapshotAll(), "whole run (too few samples for the 10-90 % window)")
        }
        let roundTrips = Self.redisRoundTrips(workers.map(\.port)).map { $0 - (roundTripsAtStart ?? 0) }
        let workerCPU = workerPIDs.map { ProcessStats.cpuSeconds(pid: $0) ?? 0 }
        let workerHWM = workerPIDs.map { ProcessStats.memoryBytes(pid: $0) ?? 0 }
        let workerThreads = workerPIDs.first.map { ProcessStats.threadCPU(pid: $0) } ?? []
        let sandboxCPUWorkerPhase = (ProcessStats.cpuSeconds(pid: sandboxPID) ?? 0) - sandboxCPUAtStart
        let redisCPU = redisCPUAtStart.map { redisPIDs.compactMap { ProcessStats.cpuSeconds(pid: $0) }.reduce(0, +) - $0 }
        let benchCPU = ProcessStats.selfCPUSeconds() - benchCPUAtStart
        // Recorded outcomes are in Redis before their results are produced: the state is complete.
        let redisMemoryAfter = Self.usedMemory(url: redisURL, caFile: redisCAFile)
        // A cluster's per-node pipelines are published after each readiness probe (every 2 s).
        var nodePipelines: Double?
        if isCluster {
            usleep(2_200_000)
            nodePipelines = workers.compactMap { Self.metricsText(port: $0.port) }
                .map { text in text.split(separator: "\n").filter { $0.hasPrefix("pushworker_redis_node_round_trips_total{") }
                    .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +) }
                .reduce(0, +)
        }
        let workersAlive = workers.allSatisfy { $0.child.isRunning }
        step("\(distinct)/\(options.notifications) results in \(String(format: "%.2f", finishedAt.timeIntervalSince(spawnedAt))) s; stopping the worker(s)")
        for worker in workers { worker.child.stop(grace: 15) }

        // h2load against the same sandbox.
        var references = try sample.map {
            try measureReferences(requests: h2loadRequests, connections: connections, streams: streams, sample: $0,
                                  folder: folder, cpus: options.workerCPUs, sandboxPID: sandboxPID, peers: options.peers)
        } ?? BenchReferences()
        references.bracketFloor(before: floorBefore)

        // Figures.
        let expected = options.notifications
        let times = resultTimes.sorted()
        let activeSeconds = times.count > 1 ? Double(times[times.count - 1] - times[0]) / 1000 : 0
        let totalCPU = workerCPU.reduce(0, +)
        // Steady state: CPU between the samples where 10 % and 90 % of the results were in
        // (startup, connection set-up and the tail are outside the window).
        var steadyPerNotification: Double?
        if let low = samples.first(where: { $0.count >= expected / 10 }),
           let high = samples.first(where: { $0.count >= expected * 9 / 10 }), high.count - low.count >= max(1, expected / 4) {
            steadyPerNotification = (high.cpu - low.cpu) / Double(high.count - low.count) * 1e6
        }
        let perNotification = steadyPerNotification ?? (distinct > 0 ? totalCPU / Double(distinct) * 1e6 : 0)
        let sortedLatency = latencies.sorted()
        func percentile(_ p: Double) -> Any {
            guard !sortedLatency.isEmpty else { return NSNull() }
            return sortedLatency[min(sortedLatency.count - 1, Int((Double(sortedLatency.count - 1) * p).rounded()))]
        }
        let sortedDelays = resultDelays.sorted()
        func delayPercentile(_ p: Double) -> Any {
            guard !sortedDelays.isEmpty else { return NSNull() }
            return sortedDelays[min(sortedDelays.count - 1, Int((Double(sortedDelays.count - 1) * p).rounded()))]
        }
        let sentCount = byStatus["sent"] ?? 0
        var redisState: [String: Any] = ["usedMemoryBefore": redisMemoryBefore ?? NSNull(), "usedMemoryAfter": redisMemoryAfter ?? NSNull()]
        if let before = redisMemoryBefore, let after = redisMemoryAfter, sentCount > 0 {
            redisState["bytesPerDeliveredRecipient"] = Self.round(Double(after - before) / Double(sentCount), 1)
        }
        let peakRSS = workerHWM.max() ?? 0
        let ratio = references.h2loadCPUPerRequest.map { perNotification / $0 }
        // The worker's HTTP I/O thread (named by PushHTTP), whole run ÷ notifications.
        let ioThreadCPU = workerThreads.first { $0.name == "pw-http-io" }.map { $0.cpuSeconds }
        let ioThreadPerNotification = ioThreadCPU.flatMap { distinct > 0 && options.workers == 1 ? $0 / Double(distinct) * 1e6 : nil }
        // Everything but the I/O thread, and of it the Web Push encryption (issue 14: on its own line).
        let restPerNotification = ioThreadPerNotification.map { perNotification - $0 }
        let encryption = WorkerSnapshot.webPushEncryption(finalSnapshots, results: distinct)
        let ratios = references.ratios(perNotification, toH2load: "workerCPUPerNotificationToH2loadCPUPerRequest", toCurlFloor: "workerToCurlFloor")
            .merging(["ioThreadToCurlFloor": Self.ratio(ioThreadPerNotification, references.curlFloorCPUPerRequest),
                      "ioThreadToCurlFloorPlain": Self.ratio(ioThreadPerNotification, references.curlFloorPlainCPUPerRequest),
                      "restToCurlFloor": Self.ratio(restPerNotification, references.curlFloorCPUPerRequest),
                      "restExclWebPushEncryptionToCurlFloor": Self.ratio(restPerNotification.map { $0 - (encryption?.perNotification ?? 0) },
                                                                         references.curlFloorCPUPerRequest)]) { _, new in new }
        let origin = options.backlog ? Int64(spawnedAt.timeIntervalSince1970 * 1000) : (enqueuedAtMs.first ?? 0)
        let buckets = Self.buckets(times, origin: origin, widthMs: 100)
        let ok = distinct == expected && workersAlive

        var report = scratch.reportHeader(schema: "pushworker-bench-e2e/1")
        report.merge([
            "startedAt": RFC3339Timestamp.format(spawnedAt, milliseconds: true),
            "config": [
                "notifications": expected, "jobSize": options.jobSize, "jobs": jobs.count, "partitions": partitions,
                "mix": options.mix.description, "deadShare": options.deadShare, "leanRecipients": options.leanRecipients, "workers": options.workers,
                "workerCPUs": options.workerCPUs ?? NSNull(), "sandboxCPUs": options.sandboxCPUs ?? NSNull(),
                "sandboxThreads": options.sandboxThreads, "sandboxArguments": options.sandboxArguments, "httpConnections": connections, "httpStreams": streams,
                "mode": options.backlog ? "backlog" : "live", "broker": options.brokers == nil ? "in-process mock" : "external",
                "averageJobBytes": jobs.isEmpty ? 0 : jobBytes / jobs.count, "sampleAPNsBodyBytes": sample?.body.count ?? NSNull(),
                "averageAPNsBodyBytes": sample?.averageAPNsBody ?? NSNull(),
            ] as [String: Any],
            "results": [
                "expected": expected, "distinct": distinct, "received": received, "foreign": foreign,
                "byStatus": byStatus, "byPlatform": byPlatform, "complete": distinct == expected,
            ] as [String: Any],
            "worker": [
                "wallSeconds": Self.round(finishedAt.timeIntervalSince(spawnedAt), 3),
                "activeSeconds": Self.round(activeSeconds, 3),
                "notificationsPerSecond": activeSeconds > 0 ? Self.round(Double(distinct) / activeSeconds, 0) : NSNull(),
                "cpuSeconds": Self.round(totalCPU, 3),
                "cpuMicrosPerNotification": Self.round(perNotification, 2),
                "cpuWindow": steadyPerNotification == nil ? "whole run (too few samples for the 10-90 % window)" : "10 % to 90 % of the results",
                "cpuMicrosPerNotificationInclStartup": distinct > 0 ? Self.round(totalCPU / Double(distinct) * 1e6, 2) : NSNull(),
                "peakRSSBytes": peakRSS,
                // Peak over idle: what the workload added to the resident memory (`VmHWM` − `VmRSS`
                // when ready; not measured with --backlog).
                "peakRSSOverIdleBytes": idleRSS.isEmpty ? NSNull() : workerHWM.indices.map { workerHWM[$0] - (idleRSS.indices.contains($0) ? idleRSS[$0] : 0) }.max() ?? 0,
                "idleRSSBytes": idleRSS.isEmpty ? NSNull() : idleRSS.max() ?? 0,
                "perWorker": workerCPU.indices.map { index -> [String: Any] in
                    var entry: [String: Any] = ["cpuSeconds": Self.round(workerCPU[index], 3), "peakRSSBytes": workerHWM[index]]
                    if options.isComparing { entry["variant"] = index % 2 == 1 ? "B" : "A" }
                    if let start = windowStart?[index], let end = windowEnd?[index] {
                        entry.merge(end.window(since: start)) { _, new in new }
                        entry["window"] = windowKind
                    }
                    return entry
                },
                "exitedEarly": !workersAlive,
                "ioThreadCPUMicrosPerNotification": ioThreadPerNotification.map { Self.round($0, 2) } ?? NSNull(),
                "restCPUMicrosPerNotification": restPerNotification.map { Self.round($0, 2) } ?? NSNull(),
                "webPushEncryptionCPUMicrosPerNotification": encryption.map { Self.round($0.perNotification, 2) } ?? NSNull(),
                "webPushEncryptionCPUMicrosPerMessage": encryption?.perMessage.map { Self.round($0, 2) } ?? NSNull(),
                "threadsOfFirstWorker": workerThreads.prefix(8).map { ["name": $0.name, "tid": Int($0.tid), "cpuSeconds": Self.round($0.cpuSeconds, 2)] as [String: Any] },
            ] as [String: Any],
            "resultDelayMs": ["p50": delayPercentile(0.5), "p99": delayPercentile(0.99), "max": sortedDelays.last ?? NSNull(),
                              "what": "from a recipient's outcome (the provider's answer) to its result read from push.results.v1"] as [String: Any],
            "redisState": redisState,
            "latencyMs": ["p50": percentile(0.5), "p99": percentile(0.99), "max": sortedLatency.last ?? NSNull(),
                          "from": "job produce call to the result's `at`"] as [String: Any],
            "sandbox": ["cpuSecondsWorkerPhase": Self.round(sandboxCPUWorkerPhase, 3),
                        "cpuMicrosPerNotification": distinct > 0 ? Self.round(sandboxCPUWorkerPhase / Double(distinct) * 1e6, 2) : NSNull()] as [String: Any],
            "redis": [
                "mode": isCluster ? "cluster" : "standalone",
                "tls": (try? RedisTarget(url: redisURL))?.usesTLS ?? false,
                "clusterStartedByBench": redisCluster != nil,
                "cpuSecondsWorkerPhase": redisCPU.map { Self.round($0, 3) } ?? NSNull(),
                "cpuMicrosPerNotification": redisCPU.map { distinct > 0 ? Self.round($0 / Double(distinct) * 1e6, 2) : 0 } ?? NSNull(),
                "roundTrips": roundTrips ?? NSNull(),
                "roundTripsPerJob": roundTrips.map { Self.round($0 / Double(max(1, jobs.count)), 2) } ?? NSNull(),
                "nodePipelinesPerRoundTrip": nodePipelines.flatMap { pipelines in roundTrips.map { $0 > 0 ? Self.round(pipelines / $0, 2) : 0 } } ?? NSNull(),
                "what": "worker's Redis round trips (pushworker_redis_round_trips_total, readiness probes included) from ready to the last result; node pipelines: every pipeline sent to a cluster node over the whole run ÷ those round trips; CPU: every redis-server process started by the bench",
            ] as [String: Any],
            "benchProcess": ["cpuSecondsWorkerPhase": Self.round(benchCPU, 3),
                             "what": options.brokers == nil ? "in-process Kafka mock broker + results reader" : "results reader"] as [String: Any],
            "ratio": ratios,
            "targets": Self.targets(workerToCurlFloor: Self.exactRatio(perNotification, references.curlFloorCPUPerRequest),
                                    ioThreadToCurlFloor: Self.exactRatio(ioThreadPerNotification, references.curlFloorCPUPerRequest),
                                    restToCurlFloor: Self.exactRatio(restPerNotification, references.curlFloorCPUPerRequest),
                                    workerToH2load: ratio, peakRSS: peakRSS),
            "throughput": ["bucketMs": 100, "originMs": origin, "resultsPerBucket": buckets] as [String: Any],
        ].merging(references.reportMembers) { _, new in new }) { _, new in new }
        if options.isComparing {
            var comparison = Comparison(start: windowStart, end: windowEnd, binaryB: options.compareBinary ?? ChildProcess.workerPath,
                                        wrapperA: options.workerWrapper, wrapperB: options.compareWrapper ?? options.workerWrapper).report
            if let plainRedisURL {
                comparison["redisA"] = redisURL
                comparison["redisB"] = plainRedisURL
                // B/A is plain / TLS: its inverse is what TLS costs.
                comparison["tlsToPlainWorkerCPU"] = (comparison["bToA"] as? Double).map { $0 > 0 ? Self.round(1 / $0, 3) : 0 } ?? NSNull()
            }
            report["comparison"] = comparison
        }
        if !ok, let log = workers.first?.child.log() { report["workerLogTail"] = String(log.suffix(2000)) }
        return (report, ok)
    }

    // MARK: - Per-worker windows and the A/B comparison

    /// One worker at one moment: its CPU, its HTTP I/O thread's CPU, and the final results it
    /// counted itself (`pushworker_notifications_total`, scraped from its `/metrics`).
    struct WorkerSnapshot {
        var cpuSeconds: Double?
        var ioThreadSeconds: Double?
        var notifications: Double?
        /// `pushworker_webpush_encryption_cpu_seconds_total` and `pushworker_webpush_encryptions_total`.
        var webPushEncryptionSeconds: Double? = nil
        var webPushEncryptions: Double? = nil

        static func take(pid: Int32, port: UInt16) -> WorkerSnapshot {
            let metrics = metricsText(port: port)
            return WorkerSnapshot(cpuSeconds: ProcessStats.cpuSeconds(pid: pid),
                                  ioThreadSeconds: ProcessStats.threadCPU(pid: pid).first { $0.name == "pw-http-io" }?.cpuSeconds,
                                  notifications: metrics.map(notificationsTotal),
                                  webPushEncryptionSeconds: metrics.map { total("pushworker_webpush_encryption_cpu_seconds_total", in: $0) },
                                  webPushEncryptions: metrics.map { total("pushworker_webpush_encryptions_total", in: $0) })
        }

        /// The sum of `pushworker_notifications_total` over its label sets.
        static func notificationsTotal(_ metrics: String) -> Double { total("pushworker_notifications_total", in: metrics) }

        /// The sum of metric `name` over its label sets (0 when absent).
        static func total(_ name: String, in metrics: String) -> Double {
            metrics.split(separator: "\n").filter { $0.hasPrefix(name + "{") || $0.hasPrefix(name + " ") }
                .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +)
        }

        /// Web Push encryption over the whole run (like the I/O thread's figure): CPU µs per
        /// notification (all of them) and per encrypted message; nil when no worker answered or
        /// there were no results.
        static func webPushEncryption(_ snapshots: [WorkerSnapshot], results: Int) -> (perNotification: Double, perMessage: Double?)? {
            let answered = snapshots.filter { $0.webPushEncryptionSeconds != nil }
            guard !answered.isEmpty, results > 0 else { return nil }
            let seconds = answered.compactMap(\.webPushEncryptionSeconds).reduce(0, +)
            let messages = answered.compactMap(\.webPushEncryptions).reduce(0, +)
            return (seconds / Double(results) * 1e6, messages > 0 ? seconds / messages * 1e6 : nil)
        }

        /// Results the workers counted between two sets of snapshots (0 when either is missing).
        static func counted(from start: [WorkerSnapshot]?, to end: [WorkerSnapshot]?) -> Double {
            guard let start, let end else { return 0 }
            return zip(start, end).map { ($1.notifications ?? 0) - ($0.notifications ?? 0) }.reduce(0, +)
        }

        /// Report members for the window from `start` to this snapshot.
        func window(since start: WorkerSnapshot) -> [String: Any] {
            guard let delta = delta(since: start), delta.results > 0 else { return ["windowNotifications": NSNull()] }
            var members: [String: Any] = ["windowNotifications": Int(delta.results),
                                          "windowCPUMicrosPerNotification": BenchE2E.round(delta.cpu / delta.results * 1e6, 2)]
            if let io = delta.io { members["windowIOThreadMicrosPerNotification"] = BenchE2E.round(io / delta.results * 1e6, 2) }
            return members
        }

        /// CPU seconds, I/O-thread seconds (nil if either snapshot lacks it) and results counted
        /// from `start` to this snapshot; nil when the CPU or a count is missing.
        func delta(since start: WorkerSnapshot) -> (cpu: Double, io: Double?, results: Double)? {
            guard let cpu = cpuSeconds, let startCPU = start.cpuSeconds, let count = notifications, let startCount = start.notifications else { return nil }
            let io = ioThreadSeconds.flatMap { end in start.ioThreadSeconds.map { end - $0 } }
            return (cpu - startCPU, io, count - startCount)
        }
    }

    /// `--compare-binary` / `--compare-wrapper`: workers at even indexes are A, odd ones B, all
    /// in one group on the same CPUs; each variant's CPU per notification is its workers' CPU
    /// between 10 % and 90 % of the results ÷ the results they counted in that window. Both see
    /// the same machine at the same moments, so `bToA` holds when the machine's speed drifts
    /// during or between runs — the way to tell a small change from noise.
    struct Comparison {
        let start: [WorkerSnapshot]?, end: [WorkerSnapshot]?
        let binaryB: String
        let wrapperA: [String], wrapperB: [String]

        /// (CPU µs, I/O thread µs) per notification of the workers with `parity`, nil without a window.
        func figures(parity: Int) -> (cpu: Double, io: Double?)? {
            guard let start, let end else { return nil }
            var cpu = 0.0, io: Double? = 0, results = 0.0
            for index in start.indices where index % 2 == parity && index < end.count {
                guard let delta = end[index].delta(since: start[index]) else { return nil }
                cpu += delta.cpu
                results += delta.results
                io = io.flatMap { sum in delta.io.map { sum + $0 } }
            }
            guard results > 0 else { return nil }
            return (cpu / results * 1e6, io.map { $0 / results * 1e6 })
        }

        var report: [String: Any] {
            let a = figures(parity: 0), b = figures(parity: 1)
            return [
                "binaryA": ChildProcess.workerPath, "binaryB": binaryB,
                "wrapperA": wrapperA.joined(separator: " "), "wrapperB": wrapperB.joined(separator: " "),
                "aCPUMicrosPerNotification": a.map { BenchE2E.round($0.cpu, 2) } ?? NSNull(),
                "bCPUMicrosPerNotification": b.map { BenchE2E.round($0.cpu, 2) } ?? NSNull(),
                "aIOThreadMicrosPerNotification": a?.io.map { BenchE2E.round($0, 2) } ?? NSNull(),
                "bIOThreadMicrosPerNotification": b?.io.map { BenchE2E.round($0, 2) } ?? NSNull(),
                "bToA": BenchE2E.ratio(b?.cpu, a?.cpu),
                "ioThreadBToA": BenchE2E.ratio(b?.io, a?.io),
                "restBToA": BenchE2E.ratio(b.flatMap { f in f.io.map { f.cpu - $0 } }, a.flatMap { f in f.io.map { f.cpu - $0 } }),
                "what": "even-index workers run A (this binary, --worker-wrapper), odd ones B (--compare-binary, --compare-wrapper), in one group on the same CPUs; CPU between 10 % and 90 % of the results ÷ the results each counted (pushworker_notifications_total)",
            ]
        }
    }

    // MARK: - Helpers

    static func nowMs() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }

    /// The report's `targets`: issue 14's bounds against the tuned libcurl floor (worker ≤ 1.4 ×,
    /// its I/O thread ≤ 1.1 ×, the rest of the worker ≤ 0.4 ×, same run, same sandbox and
    /// connections × streams; docs/performance.md), peak RSS ≤ 150 MB, and the earlier
    /// worker ≤ 2.0 × h2load kept for the record. A `…Met` is null when its ratio is unknown
    /// (no floor or h2load run: `--h2load-requests 0`).
    /// Ratios are compared unrounded (the report's `ratio` values are rounded to two decimals).
    static func targets(workerToCurlFloor: Double?, ioThreadToCurlFloor: Double?, restToCurlFloor: Double?,
                        workerToH2load: Double?, peakRSS: Int) -> [String: Any] {
        func met(_ ratio: Double?, _ bound: Double) -> Any { ratio.map { $0 <= bound } ?? NSNull() }
        return [
            "maxWorkerToCurlFloor": 1.4, "workerToCurlFloorMet": met(workerToCurlFloor, 1.4),
            "maxIOThreadToCurlFloor": 1.1, "ioThreadToCurlFloorMet": met(ioThreadToCurlFloor, 1.1),
            "maxRestToCurlFloor": 0.4, "restToCurlFloorMet": met(restToCurlFloor, 0.4),
            "maxPeakRSSBytes": 150_000_000, "rssMet": peakRSS > 0 && peakRSS <= 150_000_000,
            "maxCPURatio": 2.0, "cpuRatioMet": workerToH2load.map { $0 <= 2.0 } ?? NSNull(),
        ]
    }

    /// `a ÷ b` unrounded, nil when either is missing or b is 0.
    static func exactRatio(_ a: Double?, _ b: Double?) -> Double? {
        guard let a, let b, b > 0 else { return nil }
        return a / b
    }

    /// `a ÷ b` rounded to 2 digits for a report, JSON null when either is missing or b is 0.
    static func ratio(_ a: Double?, _ b: Double?) -> Any {
        exactRatio(a, b).map { round($0, 2) } ?? NSNull()
    }

    static func round(_ value: Double, _ digits: Int) -> Double {
        let scale = pow(10, Double(digits))
        return (value * scale).rounded() / scale
    }

    static func buckets(_ sortedTimes: [Int64], origin: Int64, widthMs: Int64) -> [Int] {
        guard let last = sortedTimes.last else { return [] }
        var counts = [Int](repeating: 0, count: Int(max(0, last - origin) / widthMs) + 1)
        for time in sortedTimes { counts[min(counts.count - 1, Int(max(0, time - origin) / widthMs))] += 1 }
        return counts
    }

    /// `taskset -a -p -c CPUS PID` (every existing thread of a running process).
    static func pin(pid: Int32, cpus: String) throws {
        let finished = try ProcessStats.runMeasured(["taskset", "-a", "-p", "-c", cpus, "\(pid)"], output: "/dev/null")
        guard finished.status == 0 else { throw DemoError("taskset -a -p -c \(cpus) \(pid) failed") }
    }

    /// `pushworker_redis_round_trips_total` summed over the workers' `/metrics`; nil if one does not answer.
    static func redisRoundTrips(_ ports: [UInt16]) -> Double? {
        var total = 0.0
        for port in ports {
            guard let text = metricsText(port: port),
                  let line = text.split(separator: "\n").first(where: { $0.hasPrefix("pushworker_redis_round_trips_total ") }),
                  let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { return nil }
            total += value
        }
        return total
    }

    /// `GET /metrics` on a worker's listener (HTTP/1.0), nil if it does not answer.
    static func metricsText(port: UInt16) -> String? {
        guard let response = httpGet(port: port, path: "/metrics", timeoutSeconds: 2),
              response.hasPrefix("HTTP/1.1 200") || response.hasPrefix("HTTP/1.0 200"),
              let body = response.range(of: "\r\n\r\n") else { return nil }
        return String(response[body.upperBound...])
    }

    /// `GET /readyz` on the worker's listener answers 200.
    static func isReady(port: UInt16) -> Bool {
        guard let response = httpGet(port: port, path: "/readyz", timeoutSeconds: 1, limit: 64) else { return false }
        return response.hasPrefix("HTTP/1.1 200") || response.hasPrefix("HTTP/1.0 200")
    }

    /// One HTTP/1.0 GET to 127.0.0.1:`port`: the whole response (status line, headers, body),
    /// at most `limit` bytes; nil if nothing answers.
    static func httpGet(port: UInt16, path: String, timeoutSeconds: Int, limit: Int = .max) -> String? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == request.count else { return nil }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: min(65_536, limit))
        while response.count < limit {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            response.append(contentsOf: buffer[0..<count])
        }
        return response.isEmpty ? nil : String(decoding: response, as: UTF8.self)
    }

    /// The h2load request: a live iOS recipient of the first job, planned exactly as the worker
    /// plans it, with a valid provider JWT minted from the sandbox-generated `apns.json`.
    func sampleRequest(_ job: [UInt8], sandbox: Sandbox) throws -> BenchSampleRequest {
        let credentials = AppCredentials.load(appID: Self.appID, folder: URL(fileURLWithPath: sandbox.credentialsDir).appendingPathComponent(Self.appID))
        return try BenchSampleRequest.apns(job: job, credentials: credentials)
    }
}

/// Cheap field extraction from a result line (keys in the contract's order, no escapes in the
/// values we read): the reader must not compete with the worker for CPU.
struct BenchResultFields {
    let bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The string value of `"name":"…"`, or nil.
    func string(_ name: String) -> String? {
        guard let range = valueRange(name) else { return nil }
        return String(decoding: bytes[range], as: UTF8.self)
    }

    func valueRange(_ name: String) -> Range<Int>? {
        let pattern = Array("\"\(name)\":\"".utf8)
        guard bytes.count > pattern.count else { return nil }
        var index = 0
        outer: while index + pattern.count <= bytes.count {
            for offset in 0..<pattern.count where bytes[index + offset] != pattern[offset] {
                index += 1
                continue outer
            }
            let start = index + pattern.count
            var end = start
            while end < bytes.count && bytes[end] != 0x22 { end += 1 }
            return start..<end
        }
        return nil
    }

    /// `N` of a subscriptionId `s<run>-N`.
    func subscriptionNumber(prefix: [UInt8]) -> Int? {
        guard let range = valueRange("subscriptionId"), range.count > prefix.count,
              bytes[range.lowerBound..<range.lowerBound + prefix.count].elementsEqual(prefix) else { return nil }
        return Self.number(bytes[(range.lowerBound + prefix.count)..<range.upperBound])
    }

    /// `N` of a jobId `bench_<run>:N`.
    func jobIndex() -> Int? {
        guard let range = valueRange("jobId"), let colon = bytes[range].lastIndex(of: 0x3A) else { return nil }
        return Self.number(bytes[(colon + 1)..<range.upperBound])
    }

    static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        guard !digits.isEmpty, digits.count < 18 else { return nil }
        var value = 0
        for digit in digits {
            guard digit >= 0x30 && digit <= 0x39 else { return nil }
            value = value * 10 + Int(digit - 0x30)
        }
        return value
    }
}
