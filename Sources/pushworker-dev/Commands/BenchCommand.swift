import Foundation
import PushRuntime
import PushCLI
import PushCore
import PushWorker
import PushEvents
import PushDevTools

/// `pushworker-dev bench`: benchmarks. `bench e2e` measures the whole pipeline on this machine
/// beside `h2load`, `bench http` the HTTP/2 client alone (docs/performance.md).
enum BenchCommand {
    static let usage = """
    usage: pushworker-dev bench e2e [options]
           pushworker-dev bench http [options]   (see `pushworker-dev bench http --help`)
           pushworker-dev bench redis [options]  (see `pushworker-dev bench redis --help`)
           pushworker-dev bench decode [options] (see `pushworker-dev bench decode --help`)

    Starts Kafka (in-process mock, or --brokers), Redis and the provider sandbox, runs
    --workers separate `pushworker run` processes in one consumer group until every recipient
    has a result, then runs h2load and pushworker-curl-floor (libcurl alone, in C: the tuned
    floor, the reference line, and the plain one for the record) against the same sandbox with
    the same request and connections x streams (PUSHWORKER_HTTP_CONNECTIONS x
    PUSHWORKER_HTTP_STREAMS, default 2 x 100). Reports notifications/s, worker CPU µs per
    notification (and its HTTP I/O thread's), p50/p99 enqueue->result latency, peak RSS, the
    references' CPU µs per request and the ratios. Build with `swift build -c release` first.

    options:
      --notifications N     recipients in all (default 50000)
      --job-size N          recipients per job (default 500)
      --mix ios:W,android:W,web:W   platform weights (default ios:50,android:35,web:15)
      --dead-share F        share of dead tokens/subscriptions, 0...1 (default 0.05)
      --lean-recipients     recipients with only subscriptionId, platform and token (no userId,
                            language or properties): the most recipients per byte, the worst
                            case for a job's memory (e.g. one 4 MiB job: --notifications 32800
                            --job-size 32800 --mix ios:100 --lean-recipients)
      --partitions N        partitions per topic of the in-process broker (default: sized for N)
      --workers N           worker processes in one group (default 1)
      --worker-cpus LIST    run workers (and h2load) under `taskset -c LIST`
      --worker-wrapper CMD  run each worker under CMD (absolute path, then arguments), e.g.
                            "/usr/bin/valgrind --tool=callgrind" (profiling; timings are then
                            the wrapper's)
      --compare-binary PATH run every second worker from this pushworker binary instead: an A/B
                            of two builds in ONE run (same core, broker, Redis, sandbox, minutes);
                            reports each variant's CPU µs/notification and B/A (--workers 2 by default)
      --compare-wrapper CMD every second worker under CMD instead of --worker-wrapper (A/B of a
                            setting, e.g. "/usr/bin/env MALLOC_ARENA_MAX=1")
      --sandbox-cpus LIST   pin the sandbox with `taskset -a -p -c LIST`
      --sandbox-threads N   sandbox event loops (default 1)
      --sandbox-arg=ARG     pass ARG to `pushworker-dev sandbox` (repeatable), e.g.
                            --sandbox-arg=--throttle-share=0.05 to exercise retries
      --brokers HOST:PORT   use this Kafka (e.g. `pushworker-dev dev-broker`; topics must exist)
      --redis-url URL       use this Redis instead of starting redis-server (any PUSHWORKER_REDIS_URL form;
                            PUSHWORKER_REDIS_CA_FILE & co. from the environment reach the workers)
      --redis-tls           the redis-server started speaks TLS (a CA made for the run): the
                            workers use rediss:// and PUSHWORKER_REDIS_CA_FILE
      --compare-plain       with --redis-tls: the server listens on a plain port too and every
                            second worker uses it: TLS (A) against plain (B) in ONE run, the
                            TLS/plain worker CPU ratio (no target; --workers 2 by default)
      --redis-cluster       start a Redis Cluster of 3 masters (redis-cli --cluster create) instead
      --cluster-replicas N  replicas per master of that cluster (default 0)
      --compare-standalone  with the cluster: --rounds pairs of runs, standalone and cluster
                            alternating (the same workload each), medians and the cluster/standalone
                            worker CPU ratio (target <= 1.10); h2load skipped unless --h2load-requests
      --rounds N            pairs of runs for --compare-standalone (default 3)
      --backlog             enqueue everything before starting the workers (default: start the
                            workers, wait until ready, then enqueue as fast as possible)
      --h2load-requests N   requests for the h2load and libcurl-floor runs (default min(N, 200000); 0 skips)
      --peer BINARY         also run BINARY with h2load's arguments (repeatable; `make bench-peers`)
      --report FILE         JSON report (default bench-report.json)
      --svg FILE            SVG chart of results per 100 ms
      --timeout SECONDS     give up waiting for results (default 600)
      --allow-debug         run on a debug build (figures are meaningless; for tests)
      --keep                keep the temporary folder (logs, credentials)
      --quiet               no progress on stderr
    """

    static func main(_ arguments: [String]) -> Int32 {
        guard let sub = arguments.first, !sub.hasPrefix("-") else {
            if arguments.contains("--help") || arguments.contains("-h") { print(usage); return ExitCode.ok }
            return CommandSupport.usageError("expected a benchmark: e2e, http, redis, decode or events", usage: usage)
        }
        let rest = Array(arguments.dropFirst())
        switch sub {
        case "e2e": return e2e(rest)
        case "http": return http(rest)
        case "redis": return redis(rest)
        case "decode": return decode(rest)
        case "idle-spinner": return IdleSpinner.spin() // started by `bench http --busy-core`
        case "events": return BenchEventsCommand.main(rest)
        default:
            if let suggestion = Suggestion.closest(to: sub, in: ["e2e", "http", "redis", "decode", "events"]) {
                return CommandSupport.usageError("unknown benchmark '\(sub)' (did you mean '\(suggestion)'?)", usage: usage)
            }
            return CommandSupport.usageError("unknown benchmark '\(sub)' (expected e2e, http, redis, decode or events)", usage: usage)
        }
    }

    static var isDebugBuild: Bool {
        #if DEBUG
        return true
        #else
        return false
        #endif
    }

    static func e2e(_ arguments: [String]) -> Int32 {
        run("e2e", arguments, usage: usage, values: runValues.union([
            "notifications", "job-size", "mix", "dead-share", "partitions", "workers", "worker-cpus",
            "sandbox-threads", "brokers", "redis-url", "svg", "cluster-replicas", "rounds", "worker-wrapper",
            "compare-binary", "compare-wrapper",
        ]), flags: runFlags.union(["backlog", "redis-cluster", "compare-standalone", "lean-recipients", "redis-tls", "compare-plain"]), options: BenchE2E.Options(), summary: e2eSummary) { parsed, options in
            try readRunOptions(parsed, into: &options, timeout: (600, 5...86_400))
            options.notifications = try parsed.integer("notifications", default: 50_000, in: 1...10_000_000)
            options.jobSize = try parsed.integer("job-size", default: 500, in: 1...100_000)
            if let mix = parsed.value("mix") { options.mix = try BenchWorkload.Mix(parsing: mix) }
            options.deadShare = try parsed.double("dead-share", default: 0.05)
            guard (0...1).contains(options.deadShare) else { throw PushCore.UsageError("--dead-share must be in 0...1") }
            options.leanRecipients = parsed.flag("lean-recipients")
            if parsed.value("partitions") != nil { options.partitions = try parsed.integer("partitions", default: 4, in: 1...4096) }
            options.compareBinary = parsed.value("compare-binary")
            if let binary = options.compareBinary, !binary.hasPrefix("/") || !FileManager.default.isExecutableFile(atPath: binary) {
                throw PushCore.UsageError("--compare-binary needs the absolute path of an executable pushworker (got '\(binary)')")
            }
            options.compareWrapper = parsed.value("compare-wrapper").map { $0.split(separator: " ").map(String.init) }
            if let tool = options.compareWrapper?.first, !tool.hasPrefix("/") {
                throw PushCore.UsageError("--compare-wrapper needs an absolute path first (e.g. /usr/bin/env NAME=VALUE)")
            }
            options.redisTLS = parsed.flag("redis-tls")
            options.comparePlain = parsed.flag("compare-plain")
            options.workers = try parsed.integer("workers", default: options.isComparing ? 2 : 1, in: 1...16)
            if options.isComparing && options.workers % 2 != 0 {
                throw PushCore.UsageError("--compare-binary/--compare-wrapper/--compare-plain need an even --workers (A and B alternate)")
            }
            options.workerCPUs = parsed.value("worker-cpus")
            options.workerWrapper = parsed.value("worker-wrapper").map { $0.split(separator: " ").map(String.init) } ?? []
            if let tool = options.workerWrapper.first, !tool.hasPrefix("/") {
                throw PushCore.UsageError("--worker-wrapper needs an absolute path first (e.g. /usr/bin/valgrind --tool=callgrind)")
            }
            options.sandboxThreads = try parsed.integer("sandbox-threads", default: 1, in: 1...64)
            options.brokers = parsed.value("brokers")
            options.redisURL = parsed.value("redis-url")
            options.svg = parsed.value("svg")
            options.backlog = parsed.flag("backlog")
            options.redisCluster = parsed.flag("redis-cluster")
            options.clusterReplicas = try parsed.integer("cluster-replicas", default: 0, in: 0...2)
            options.compareStandalone = parsed.flag("compare-standalone")
            options.rounds = try parsed.integer("rounds", default: 3, in: 1...50)
            if options.compareStandalone { options.redisCluster = true }
            if options.redisCluster && options.redisURL != nil { throw PushCore.UsageError("--redis-cluster starts its own cluster: drop --redis-url") }
            if options.comparePlain && !options.redisTLS { throw PushCore.UsageError("--compare-plain compares with --redis-tls: add it") }
            if options.redisTLS && (options.redisCluster || options.redisURL != nil) {
                throw PushCore.UsageError("--redis-tls starts one TLS redis-server: drop --redis-cluster, --compare-standalone and --redis-url")
            }
        } bench: { options in
            options.compareStandalone ? try BenchE2ECompare(options: options).run() : try BenchE2E(options: options).run()
        } extra: { options, report in
            if let svg = options.svg, let throughput = report["throughput"] as? [String: Any], let buckets = throughput["resultsPerBucket"] as? [Int] {
                let title = "pushworker-dev bench e2e — \(options.notifications) notifications, \(options.workers) worker(s)"
                try BenchReport.svg(buckets: buckets, bucketMs: 100, title: title).write(toFile: svg, atomically: true, encoding: .utf8)
            }
        }
    }

    static let httpUsage = """
    usage: pushworker-dev bench http [options]

    The HTTP/2 client alone: starts the provider sandbox (or uses --url), builds one APNs request
    (POST /3/device/<token>, the worker's headers and payload, a provider JWT) and sends it N
    times through one client with PUSHWORKER_HTTP_CONNECTIONS x PUSHWORKER_HTTP_STREAMS (default
    2 x 100) always in flight, after a warm-up that opens the connections. Reports requests/s and
    this process's CPU µs per request (getrusage, measured phase only; the sandbox's CPU apart)
    and the client's I/O thread's (pw-http-io, its own CPU clock), submit → completion latency
    p50/p99 under load and for lone requests, then runs h2load and pushworker-curl-floor
    (libcurl alone: --mode tuned, the reference line, and --mode plain, for the record) with the
    same request and connections x streams for the ratios. Build with `swift build -c release` first.

    options:
      --requests N          requests measured (default 100000)
      --warmup N            requests before measuring (default min(N, 2 x connections x streams))
      --url ORIGIN          send to this origin (https://host:port, or http:// for h2c) instead of
                            the sandbox; the JWT is signed with a throwaway key
      --ca-file FILE        extra CA certificates to trust (with --url)
      --h2load-requests N   requests for the h2load and libcurl-floor runs (default N; 0 skips)
      --lone-requests N     requests sent one at a time after the measured phase (default 200)
      --rounds N            repeat client, h2load and tuned floor N times, alternately (default 1): per-round
                            figures and medians in the report
      --sandbox-arg=ARG     pass ARG to `pushworker-dev sandbox` (repeatable), e.g. --sandbox-arg=--latency-ms=50
      --client-cpus LIST    pin this process (the client) and the references with taskset -c LIST
      --sandbox-cpus LIST   pin the sandbox with taskset -a -p -c LIST
      --busy-core           keep the --client-cpus from halting while the senders wait: a SCHED_IDLE
                            spinner there for the whole run (its CPU is nobody's; on a virtual
                            machine each wake from a halt is dear: docs/performance.md)
      --peer BINARY         also run BINARY with h2load's arguments (repeatable; `make bench-peers`)
      --report FILE         JSON report (default bench-http-report.json)
      --timeout SECONDS     give up on a phase after this long (default 300)
      --allow-debug         run on a debug build (figures are meaningless; for tests)
      --keep                keep the temporary folder (sandbox log, h2load output)
      --quiet               no progress on stderr
    """

    static func http(_ arguments: [String]) -> Int32 {
        run("http", arguments, usage: httpUsage, values: runValues.union([
            "requests", "warmup", "url", "ca-file", "lone-requests", "client-cpus", "rounds",
        ]), flags: runFlags.union(["busy-core"]), options: BenchHTTP.Options(), summary: httpSummary) { parsed, options in
            try readRunOptions(parsed, into: &options, timeout: (300, 1...86_400))
            options.loneRequests = try parsed.integer("lone-requests", default: 200, in: 0...1_000_000)
            options.rounds = try parsed.integer("rounds", default: 1, in: 1...100)
            options.clientCPUs = parsed.value("client-cpus")
            options.busyCore = parsed.flag("busy-core")
            if options.busyCore && options.clientCPUs == nil { throw PushCore.UsageError("--busy-core needs --client-cpus (the core to keep busy)") }
            options.requests = try parsed.integer("requests", default: 100_000, in: 1...100_000_000)
            if parsed.value("warmup") != nil { options.warmup = try parsed.integer("warmup", default: 0, in: 0...100_000_000) }
            if let url = parsed.value("url") {
                guard url.hasPrefix("https://") || url.hasPrefix("http://") else { throw PushCore.UsageError("--url expects https://host:port or http://host:port") }
                options.url = url.hasSuffix("/") ? String(url.dropLast()) : url
            }
            options.caFile = parsed.value("ca-file")
        } bench: { options in
            try BenchHTTP(options: options).run()
        }
    }

    /// The options every bench reads: `--report`, `--allow-debug`, `--quiet`.
    static let commonValues: Set<String> = ["report"]
    static let commonFlags: Set<String> = ["allow-debug", "quiet"]
    /// Those of the benches that start the sandbox and run the references (`e2e`, `http`):
    /// `--h2load-requests`, `--peer`, `--sandbox-arg`, `--sandbox-cpus`, `--timeout`, `--keep`
    /// besides the common ones.
    static let runValues = commonValues.union(["h2load-requests", "peer", "sandbox-arg", "sandbox-cpus", "timeout"])
    static let runFlags = commonFlags.union(["keep"])

    /// Reads the options of ``runValues`` and ``runFlags`` (`timeout`: default and range, seconds).
    static func readRunOptions<Options: BenchRunOptions>(_ parsed: CommandArguments, into options: inout Options,
                                                         timeout: (default: Int, range: ClosedRange<Int>)) throws {
        if parsed.value("h2load-requests") != nil { options.h2loadRequests = try parsed.integer("h2load-requests", default: 0, in: 0...100_000_000) }
        options.peers = parsed.allValues("peer")
        options.sandboxArguments = parsed.allValues("sandbox-arg")
        options.sandboxCPUs = parsed.value("sandbox-cpus")
        options.timeout = Double(try parsed.integer("timeout", default: timeout.default, in: timeout.range))
        options.common.keep = parsed.flag("keep")
    }

    /// What every bench shares: parse the arguments (no positionals; `values` and `flags` name
    /// every option), fill `options` with `parse` and the common options (a usage error exits 64
    /// after the usage), refuse a debug build unless `--allow-debug`, run `bench`, write the JSON
    /// report (and `extra` files from it), print `summary`. Exits 0 when the run says ok, 70
    /// otherwise.
    static func run<Options: BenchOptions>(
        _ command: String, _ arguments: [String], usage: String, values: Set<String>, flags: Set<String>, options defaults: Options,
        summary: ([String: Any]) -> String, parse: (CommandArguments, inout Options) throws -> Void,
        bench: (Options) throws -> (report: [String: Any], ok: Bool), extra: (Options, [String: Any]) throws -> Void = { _, _ in }
    ) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage, values: values.union(commonValues),
                                                flags: flags.union(commonFlags), exitCode: &code) else { return code }
        var options = defaults
        do {
            guard parsed.positionals.isEmpty else { throw PushCore.UsageError("unexpected argument \(parsed.positionals[0])") }
            try parse(parsed, &options)
            options.common.report = parsed.value("report") ?? options.common.report
            options.common.quiet = parsed.flag("quiet")
            options.common.isDebugBuild = isDebugBuild
        } catch {
            return CommandSupport.usageError("\(error)", usage: usage)
        }
        guard allowBuild(parsed, command: command) else { return ExitCode.usage }
        let report: [String: Any]
        let ok: Bool
        do {
            (report, ok) = try bench(options)
        } catch {
            printError("bench failed: \(error)")
            return ExitCode.software
        }
        do {
            try BenchReport.writeJSON(report, to: options.common.report)
            try extra(options, report)
        } catch {
            printError("cannot write the report: \(error)")
            return ExitCode.software
        }
        print(summary(report))
        return ok ? ExitCode.ok : ExitCode.software
    }

    static let redisUsage = """
    usage: pushworker-dev bench redis [options]

    The Redis clients alone: starts a redis-server and a Redis Cluster of 3 masters (redis-cli
    --cluster create, ports below 55535), then in alternating rounds runs the store's hot path on
    each (check of N recipients spread over --apps apps, then record of them as sent and 5 % as
    invalid tokens): wall µs per batch, this process's CPU µs per recipient, round trips per
    batch. Then: one GET per master in one cluster pipeline vs three pipelines one after another
    (a batch over several nodes costs one round trip), the same with each node holding its reply
    (BLPOP 0.05 s: emulated latency), and RedisClient called directly vs through
    `any RedisPipelining`. Medians over the rounds. Build with `swift build -c release` first.

    options:
      --recipients N        recipients per batch (default 500)
      --batches N           batches per round and target (default 200)
      --apps N              apps per batch; each app's keys share one slot (default 24)
      --rounds N            alternating rounds (default 5)
      --fan-out-calls N     calls for the fan-out and existential figures (default 3000)
      --latency-calls N     calls with emulated node latency (default 10; each takes 0.1 to 0.3 s)
      --replicas N          replicas per master (default 0)
      --client-cpus LIST    pin this process (not the servers) with `taskset -a -p -c LIST`
      --report FILE         JSON report (default bench-redis-report.json)
      --allow-debug         run on a debug build (figures are meaningless; for tests)
      --keep                keep the temporary folder (server logs)
      --quiet               no progress on stderr
    """

    static func redis(_ arguments: [String]) -> Int32 {
        run("redis", arguments, usage: redisUsage, values: [
            "recipients", "batches", "apps", "rounds", "fan-out-calls", "latency-calls", "replicas", "client-cpus",
        ], flags: ["keep"], options: BenchRedis.Options(), summary: redisSummary) { parsed, options in
            options.recipients = try parsed.integer("recipients", default: 500, in: 1...100_000)
            options.batches = try parsed.integer("batches", default: 200, in: 1...10_000_000)
            options.apps = try parsed.integer("apps", default: 24, in: 1...100_000)
            options.rounds = try parsed.integer("rounds", default: 5, in: 1...1000)
            options.fanOutCalls = try parsed.integer("fan-out-calls", default: 3000, in: 1...100_000_000)
            options.latencyCalls = try parsed.integer("latency-calls", default: 10, in: 1...10_000)
            options.replicas = try parsed.integer("replicas", default: 0, in: 0...3)
            options.clientCPUs = parsed.value("client-cpus")
            options.common.keep = parsed.flag("keep")
        } bench: { options in
            (try BenchRedis(options: options).run(), true)
        }
    }

    static let decodeUsage = """
    usage: pushworker-dev bench decode [options]

    A fan-out job's decoding alone, in this process, on one thread: bench e2e's campaign jobs
    (same generator and mix, Web Push subscriptions as the sandbox issues them). Reports the
    thread's CPU µs per recipient over --rounds passes over --jobs messages (each decoded job
    freed at once), and the bytes a decoded job keeps live while it is held (jemalloc's
    per-thread counters around decoding a fresh copy of each of --jobs messages into jobs kept
    together, the copies dropped: a job that still references its message counts the message)
    beside the message's size.
    Build with `swift build -c release` first.

    options:
      --recipients N        recipients per job (default 500)
      --jobs N              jobs decoded and held (default 40)
      --rounds N            passes over the jobs for the CPU figure (default 20)
      --mix ios:W,android:W,web:W   platform weights (default ios:50,android:35,web:15)
      --report FILE         JSON report (default bench-decode-report.json)
      --allow-debug         run on a debug build (figures are meaningless; for tests)
      --quiet               no progress on stderr
    """

    static func decode(_ arguments: [String]) -> Int32 {
        run("decode", arguments, usage: decodeUsage, values: ["recipients", "jobs", "rounds", "mix"], flags: [],
            options: BenchDecode.Options(), summary: decodeSummary) { parsed, options in
            options.recipients = try parsed.integer("recipients", default: 500, in: 1...100_000)
            options.jobs = try parsed.integer("jobs", default: 40, in: 1...10_000)
            options.rounds = try parsed.integer("rounds", default: 20, in: 1...100_000)
            if let mix = parsed.value("mix") { options.mix = try BenchWorkload.Mix(parsing: mix) }
        } bench: { options in
            (try BenchDecode(options: options).run(), true)
        }
    }

    static func decodeSummary(_ report: [String: Any]) -> String {
        func dict(_ key: String) -> [String: Any] { report[key] as? [String: Any] ?? [:] }
        let config = dict("config"), decode = dict("decode"), held = dict("held")
        return """
        pushworker-dev bench decode (\(text(report["build"])) build, \(text(config["jobs"])) jobs of \(text(config["recipientsPerJob"])) recipients, \(text(config["mix"])))
          decode             \(text(decode["cpuMicrosPerRecipient"])) µs CPU/recipient (\(text(decode["cpuMicrosPerJob"])) µs/job)
          held job           \(text(held["bytesPerRecipient"])) bytes/recipient (\(text(held["bytesPerJob"])) bytes/job), message \(text(held["messageBytesPerRecipient"])) bytes/recipient, held/message \(text(held["heldToMessage"]))
        """
    }

    static func redisSummary(_ report: [String: Any]) -> String {
        func dict(_ key: String, _ from: [String: Any]? = nil) -> [String: Any] { (from ?? report)[key] as? [String: Any] ?? [:] }
        let store = dict("store"), standalone = dict("standalone", store), cluster = dict("cluster", store)
        let fanOut = dict("fanOut"), existential = dict("existential"), ratio = dict("ratio"), config = dict("config")
        return """
        pushworker-dev bench redis (\(text(report["build"])) build, \(text(config["recipientsPerBatch"])) recipients over \(text(config["apps"])) apps per batch, client CPUs \(text(config["clientCPUs"])))
          standalone store   \(text(standalone["batchMicrosP50"])) µs/batch p50 (p99 \(text(standalone["batchMicrosP99"]))), \(text(standalone["cpuMicrosPerRecipient"])) µs CPU/recipient (kernel \(text(standalone["systemCPUMicrosPerRecipient"]))), \(text(standalone["roundTripsPerBatch"])) round trips/batch
          cluster store      \(text(cluster["batchMicrosP50"])) µs/batch p50 (p99 \(text(cluster["batchMicrosP99"]))), \(text(cluster["cpuMicrosPerRecipient"])) µs CPU/recipient (kernel \(text(cluster["systemCPUMicrosPerRecipient"]))), \(text(cluster["roundTripsPerBatch"])) round trips/batch (\(text(cluster["nodePipelinesPerBatch"])) node pipelines)
          ratio cluster/standalone CPU \(text(ratio["clusterToStandaloneCPUPerRecipient"])), batch time \(text(ratio["clusterToStandaloneBatchMicros"]))
          fan-out            one GET per master: one pipeline \(text(fanOut["oneGetPerMasterOnePipelineMicros"])) µs (\(text(fanOut["clusterRoundTripsPerCall"])) round trips), three pipelines \(text(fanOut["oneGetPerMasterThreePipelinesMicros"])) µs (ratio \(text(ratio["threePipelinesToOne"])))
          fan-out CPU        one pipeline \(text(fanOut["oneGetPerMasterOnePipelineCPUMicros"])) µs/call, three pipelines \(text(fanOut["oneGetPerMasterThreePipelinesCPUMicros"])) µs/call
          emulated latency   one BLPOP 0.05 s per master: one pipeline \(text(fanOut["emulatedLatencyOnePipelineMicros"])) µs, three pipelines \(text(fanOut["emulatedLatencyThreePipelinesMicros"])) µs (ratio \(text(ratio["threePipelinesToOneEmulatedLatency"])))
          one GET, one node  cluster client \(text(fanOut["clusterOneGetOneNodeMicros"])) µs, plain client to the same master \(text(fanOut["plainClientSameNodeOneGetMicros"])) µs, standalone \(text(fanOut["standaloneOneGetMicros"])) µs
          one GET CPU        cluster client \(text(fanOut["clusterOneGetOneNodeCPUMicros"])) µs, plain client to the same master \(text(fanOut["plainClientSameNodeOneGetCPUMicros"])) µs, standalone \(text(fanOut["standaloneOneGetCPUMicros"])) µs
          existential        RedisClient \(text(existential["directCPUMicrosPerCall"])) µs CPU/call, any RedisPipelining \(text(existential["protocolCPUMicrosPerCall"])) µs (ratio \(text(ratio["protocolToDirect"])))
        """
    }

    /// Refuses a debug build unless `--allow-debug` (then warns loudly).
    static func allowBuild(_ parsed: CommandArguments, command: String) -> Bool {
        guard isDebugBuild else { return true }
        guard parsed.flag("allow-debug") else {
            printError("""
            pushworker-dev bench: this is a DEBUG build; its figures would be meaningless.
            Build for measurement with `swift build -c release` and run .build/release/pushworker-dev bench \(command)
            (or pass --allow-debug to exercise the bench itself).
            """)
            return false
        }
        printError("!!! WARNING: DEBUG BUILD — every figure below is meaningless (--allow-debug) !!!")
        return true
    }

    static func httpSummary(_ report: [String: Any]) -> String {
        func dict(_ key: String) -> [String: Any] { report[key] as? [String: Any] ?? [:] }
        let client = dict("client"), h2load = dict("h2load"), sandbox = dict("sandbox"), ratio = dict("ratio"), config = dict("config")
        let curlFloor = dict("curlFloor"), plainFloor = dict("curlFloorPlain")
        let latency = client["latencyMs"] as? [String: Any] ?? [:], lone = client["loneRequestLatencyMs"] as? [String: Any] ?? [:]
        let peers = peerLines(report)
        let rounds = dict("rounds"), medians = rounds["median"] as? [String: Any] ?? [:]
        let roundsLine = (rounds["count"] as? Int ?? 1) > 1 ? """

          \(text(rounds["count"])) rounds, medians: I/O thread \(text(medians["ioThreadCPUMicrosPerRequest"])) µs, libcurl floor \(text(medians["curlFloorCPUMicrosPerRequest"])) µs, h2load \(text(medians["h2loadCPUMicrosPerRequest"])) µs, I/O thread/libcurl floor \(text(medians["ioThreadToCurlFloor"])) (per round \(rounds["ioThreadToCurlFloor"].map { "\($0)" } ?? "-")), loaded p99 \(text(medians["loadedP99Ms"])) ms
        """ : ""
        return """
        pushworker-dev bench http (\(text(report["build"])) build, \(text(config["httpConnections"])) x \(text(config["httpStreams"])), \(text(config["bodyBytes"]))-byte body, libcurl \(text(config["libcurl"]))\(config["busyCore"] is [String: Any] ? ", busy core: SCHED_IDLE spinner" : ""))
          responses          \(text(client["completed"]))/\(text(config["requests"]))  \(client["byStatus"].map { "\($0)" } ?? "")  errors \(client["transportErrors"].map { "\($0)" } ?? "")
          client             \(text(client["requestsPerSecond"])) req/s, \(text(client["cpuMicrosPerRequest"])) µs CPU/request (user \(text(client["userSeconds"])) s, sys \(text(client["systemSeconds"])) s)
          client I/O thread  \(text(client["ioThreadCPUMicrosPerRequest"])) µs CPU/request (pw-http-io)
          latency            p50 \(text(latency["p50"])) ms, p99 \(text(latency["p99"])) ms under load; lone requests p50 \(text(lone["p50"])) ms, p99 \(text(lone["p99"])) ms
          sandbox CPU        \(text(sandbox["cpuMicrosPerRequest"])) µs/request
          h2load             \(text(h2load["requestsPerSecond"])) req/s, \(text(h2load["cpuMicrosPerRequest"])) µs CPU/request
          libcurl floor      \(text(curlFloor["requestsPerSecond"])) req/s, \(text(curlFloor["cpuMicrosPerRequest"])) µs CPU/request (pushworker-curl-floor --mode tuned, same request)
          plain floor        \(text(plainFloor["requestsPerSecond"])) req/s, \(text(plainFloor["cpuMicrosPerRequest"])) µs CPU/request (--mode plain, for the record)\(peers)
          ratio I/O thread/libcurl floor \(text(ratio["ioThreadToCurlFloor"])) (target ≤ 1.1), I/O thread/h2load \(text(ratio["ioThreadToH2load"])), libcurl floor/h2load \(text(ratio["curlFloorToH2load"])), plain/tuned floor \(text(ratio["curlFloorPlainToTuned"]))
          ratio client/h2load \(text(ratio["clientCPUPerRequestToH2loadCPUPerRequest"])), client/libcurl floor \(text(ratio["clientToCurlFloor"]))\(roundsLine)
        """
    }

    /// One line per peer sender (`--peer`) of a report.
    static func peerLines(_ report: [String: Any]) -> String {
        (report["peers"] as? [[String: Any]] ?? []).map {
            "\n  peer               \(text($0["requestsPerSecond"])) req/s, \(text($0["cpuMicrosPerRequest"])) µs CPU/request (\(text($0["binary"])), \(text($0["version"])))"
        }.joined()
    }

    /// "met", "NOT met", or "-" when the report could not tell (no reference ran).
    static func verdict(_ value: Any?) -> String {
        guard let met = value as? Bool else { return "-" }
        return met ? "met" : "NOT met"
    }

    static func text(_ value: Any?) -> String {
        switch value {
        case let number as Double: return number == number.rounded() && abs(number) < 1e12 ? String(Int(number)) : String(number)
        case let number as Int: return String(number)
        case nil, is NSNull: return "-"
        default: return "\(value!)"
        }
    }

    static func e2eSummary(_ report: [String: Any]) -> String {
        (report["schema"] as? String)?.hasPrefix("pushworker-bench-e2e-compare") == true ? BenchE2ECompare.summary(report) : summary(report)
    }

    static func summary(_ report: [String: Any]) -> String {
        func dict(_ key: String) -> [String: Any] { report[key] as? [String: Any] ?? [:] }
        let worker = dict("worker"), h2load = dict("h2load"), latency = dict("latencyMs"), results = dict("results")
        let sandbox = dict("sandbox"), ratio = dict("ratio"), config = dict("config"), curlFloor = dict("curlFloor")
        let delay = dict("resultDelayMs"), redisState = dict("redisState"), plainFloor = dict("curlFloorPlain")
        let redis = dict("redis"), targets = dict("targets")
        let peers = peerLines(report)
        let rss = (worker["peakRSSBytes"] as? Int).map { String(format: "%.1f MB", Double($0) / 1e6) } ?? "-"
        // The reference line is the mean of a floor run before the worker(s) and one after them.
        let bracket = curlFloor["cpuMicrosPerRequestBefore"].map {
            "; mean of \(text($0)) before the worker(s) and \(text(curlFloor["cpuMicrosPerRequestAfter"])) after"
        } ?? ""
        return """
        pushworker-dev bench e2e (\(text(report["build"])) build, \(text(config["workers"])) worker(s), \(text(config["mode"])) mode)
          results            \(text(results["distinct"]))/\(text(results["expected"]))  \(results["byStatus"].map { "\($0)" } ?? "")
          throughput         \(text(worker["notificationsPerSecond"])) notifications/s over \(text(worker["activeSeconds"])) s
          worker CPU         \(text(worker["cpuMicrosPerNotification"])) µs/notification (\(text(worker["cpuMicrosPerNotificationInclStartup"])) incl. startup)
          worker peak RSS    \(rss)
          latency            p50 \(text(latency["p50"])) ms, p99 \(text(latency["p99"])) ms (enqueue → result)
          result delay       p50 \(text(delay["p50"])) ms, p99 \(text(delay["p99"])) ms (provider answer → result on push.results.v1)
          Redis state        \(text(redisState["bytesPerDeliveredRecipient"])) bytes per delivered recipient (used_memory delta)
          Redis (\(text(redis["mode"])))  \(text(redis["roundTripsPerJob"])) round trips/job, \(text(redis["nodePipelinesPerRoundTrip"])) node pipelines/round trip, server CPU \(text(redis["cpuMicrosPerNotification"])) µs/notification
          sandbox CPU        \(text(sandbox["cpuMicrosPerNotification"])) µs/notification
          h2load             \(text(h2load["requestsPerSecond"])) req/s, \(text(h2load["cpuMicrosPerRequest"])) µs CPU/request (sandbox \(text(h2load["sandboxCPUMicrosPerRequest"])) µs/request)
          libcurl floor      \(text(curlFloor["requestsPerSecond"])) req/s, \(text(curlFloor["cpuMicrosPerRequest"])) µs CPU/request (pushworker-curl-floor --mode tuned, same request\(bracket))
          plain floor        \(text(plainFloor["requestsPerSecond"])) req/s, \(text(plainFloor["cpuMicrosPerRequest"])) µs CPU/request (--mode plain, for the record)\(peers)
          worker I/O thread  \(text(worker["ioThreadCPUMicrosPerNotification"])) µs/notification (libcurl + adapter)
          rest of the worker \(text(worker["restCPUMicrosPerNotification"])) µs/notification (decode, plan, msgId, payloads, Redis, results, Kafka)
          Web Push encryption \(text(worker["webPushEncryptionCPUMicrosPerNotification"])) µs/notification, \(text(worker["webPushEncryptionCPUMicrosPerMessage"])) µs per Web Push message (part of the rest)
          ratio worker/h2load \(text(ratio["workerCPUPerNotificationToH2loadCPUPerRequest"])) (earlier target ≤ 2.0, for the record), libcurl floor/h2load \(text(ratio["curlFloorToH2load"]))
          ratio worker/libcurl floor \(text(ratio["workerToCurlFloor"])) (target ≤ 1.4: \(verdict(targets["workerToCurlFloorMet"])))
          ratio I/O thread/libcurl floor \(text(ratio["ioThreadToCurlFloor"])) (target ≤ 1.1: \(verdict(targets["ioThreadToCurlFloorMet"])))
          ratio rest/libcurl floor \(text(ratio["restToCurlFloor"])) (target ≤ 0.4: \(verdict(targets["restToCurlFloorMet"]))), without Web Push encryption \(text(ratio["restExclWebPushEncryptionToCurlFloor"]))\(comparisonLines(report))
        """
    }

    /// The A/B lines of a `--compare-binary` / `--compare-wrapper` run ("" otherwise).
    /// `--compare-plain`'s line: which worker used which URL, and TLS / plain.
    static func tlsLine(_ comparison: [String: Any]) -> String {
        guard let tls = comparison["redisA"] as? String, let plain = comparison["redisB"] as? String else { return "" }
        return "\n  A: \(tls), B: \(plain); worker CPU TLS / plain \(text(comparison["tlsToPlainWorkerCPU"]))"
    }

    static func comparisonLines(_ report: [String: Any]) -> String {
        guard let comparison = report["comparison"] as? [String: Any] else { return "" }
        return """

          A/B in one run     A \(text(comparison["aCPUMicrosPerNotification"])) µs/notification (I/O thread \(text(comparison["aIOThreadMicrosPerNotification"]))), B \(text(comparison["bCPUMicrosPerNotification"])) (I/O thread \(text(comparison["bIOThreadMicrosPerNotification"])))
          B/A                \(text(comparison["bToA"])) (I/O thread \(text(comparison["ioThreadBToA"])), rest \(text(comparison["restBToA"])))\(tlsLine(comparison))
        """
    }
}
