import Foundation
import PushRuntime
import PushCore
import PushRedis
import PushWorker
#if canImport(Glibc)
import Glibc
#endif

/// `pushworker-dev bench redis`: the Redis clients alone, a standalone `redis-server` beside a
/// 3-master Redis Cluster, in one run, alternating A/B rounds (medians reported).
///
/// Per round and target: `batches` batches of the store's hot path (`claim` of `recipients`
/// recipients spread over `apps` apps, then `record` of them as sent plus 5 % invalid tokens):
/// wall time per batch, this process's CPU per recipient (getrusage), round trips per batch (and
/// per master). Then the fan-out check: one `GET` per master in one cluster pipeline versus the
/// same three `GET`s as three pipelines one after another (a cluster batch should cost one round
/// trip time, not one per node). And the cost of the `any RedisPipelining` existential: the same
/// `GET` through `RedisClient` directly and through the protocol.
package struct BenchRedis: Benchmark {
    package struct Options {
        package var recipients = 500
        package var batches = 200
        package var apps = 24
        package var rounds = 5
        package var fanOutCalls = 3000
        package var latencyCalls = 10
        package var replicas = 0
        package var clientCPUs: String?
        /// `--report` (default bench-redis-report.json), `--quiet`, `--keep`, the build.
        package var common = BenchCommonOptions(report: "bench-redis-report.json")

        package init() {}
    }

    let options: Options

    package init(options: Options) { self.options = options }


    package func run() throws -> [String: Any] {
        let options = self.options
        let loadBefore = ProcessStats.loadAverage()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-bench-redis-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { if options.common.keep { printError("kept \(folder.path)") } else { try? FileManager.default.removeItem(at: folder) } }

        step("starting redis-server and a Redis Cluster (3 masters, \(options.replicas) replica(s) each)")
        let standaloneServer = try LocalRedis(folder: folder)
        defer { standaloneServer.child.stop() }
        let clusterServer = try LocalRedisCluster(folder: folder, masters: 3, replicasPerMaster: options.replicas)
        defer { clusterServer.stop() }
        if let cpus = options.clientCPUs {
            try BenchE2E.pin(pid: getpid(), cpus: cpus)
            step("this process pinned to CPUs \(cpus) (the servers are not)")
        }
        let standalone = try RedisClient(url: standaloneServer.url)
        let cluster = try RedisClusterClient(url: clusterServer.url)
        let targets: [(name: String, client: any RedisPipelining)] = [("standalone", standalone), ("cluster", cluster)]
        for target in targets { try DeliveryStateStore(client: target.client).preloadScripts() }

        // The store's hot path.
        var store: [String: [[String: Double]]] = ["standalone": [], "cluster": []]
        for round in 0..<options.rounds {
            for target in round % 2 == 0 ? targets : targets.reversed() {
                step("round \(round + 1)/\(options.rounds): \(target.name) store batches")
                store[target.name, default: []].append(try storeRound(target.client, round: round))
            }
        }

        // Fan-out: one round trip for three masters, or three?
        step("fan-out: one GET per master in one pipeline vs three pipelines")
        let masters = cluster.slotMap()?.masters ?? []
        let keysPerMaster = masters.map { master in
            (0..<100_000).lazy.map { "{fan:\($0)}" }.first { cluster.slotMap()?.master(forSlot: RedisClusterSlot.of($0)) == master } ?? "{fan:0}"
        }
        guard masters.count == 3, Set(keysPerMaster.compactMap { cluster.slotMap()?.master(forSlot: RedisClusterSlot.of($0)) }).count == 3 else {
            throw DemoError("expected one key on each of 3 masters")
        }
        // The same node through a plain client: what the cluster layer adds to one call.
        let firstMaster = try RedisClient(url: "redis://\(masters.first?.description ?? "127.0.0.1:1")")
        // Per block: median wall µs per call and this process's CPU µs per call.
        var wall = [[Double]](repeating: [], count: 5), cpu = [[Double]](repeating: [], count: 5)
        var fanOutTrips = 0
        let calls = max(1, options.fanOutCalls / options.rounds)
        for round in 0..<options.rounds {
            let blocks: [() throws -> Void] = [
                { _ = try cluster.pipeline(keysPerMaster.map { ["GET", .string($0)] }) },
                { for key in keysPerMaster { _ = try cluster.pipeline([["GET", .string(key)]]) } },
                { _ = try standalone.pipeline([["GET", "fan:0"]]) },
                { _ = try cluster.pipeline([["GET", .string(keysPerMaster[0])]]) },
                { _ = try firstMaster.pipeline([["GET", .string(keysPerMaster[0])]]) },
            ]
            for index in round % 2 == 0 ? Array(blocks.indices) : blocks.indices.reversed() {
                let trips = cluster.roundTripCount, before = ProcessStats.selfCPUSeconds()
                wall[index].append(try Self.medianMicros(calls, blocks[index]))
                cpu[index].append((ProcessStats.selfCPUSeconds() - before) * 1e6 / Double(calls))
                if index == 0 { fanOutTrips += cluster.roundTripCount - trips }
            }
        }
        let together = wall[0], oneByOne = wall[1], single = wall[2], clusterOneNode = wall[3], plainOneNode = wall[4]

        // Emulated node latency (each node holds its reply: BLPOP with a timeout, ≤ 100 ms at
        // Redis's default hz): concurrent parts cost one wait, sequential ones three.
        step("fan-out with emulated node latency (BLPOP 0.05 s per node)")
        var slowTogether: [Double] = [], slowOneByOne: [Double] = []
        for round in 0..<options.rounds {
            let slowCalls = max(1, options.latencyCalls / options.rounds)
            let a = { try Self.medianMicros(slowCalls) { _ = try cluster.pipeline(keysPerMaster.map { ["BLPOP", .string($0 + ":none"), "0.05"] }) } }
            let b = { try Self.medianMicros(slowCalls) { for key in keysPerMaster { _ = try cluster.pipeline([["BLPOP", .string(key + ":none"), "0.05"]]) } } }
            if round % 2 == 0 { slowTogether.append(try a()); slowOneByOne.append(try b()) } else { slowOneByOne.append(try b()); slowTogether.append(try a()) }
        }

        // The existential's cost: the same client, called directly and through the protocol.
        step("any RedisPipelining vs RedisClient, same calls")
        var direct: [Double] = [], throughProtocol: [Double] = []
        let erased: any RedisPipelining = standalone
        for round in 0..<options.rounds {
            let calls = max(1, options.fanOutCalls)
            let a = { try Self.cpuMicrosPerCall(calls) { _ = try standalone.pipeline([["GET", "fan:0"]]) } }
            let b = { try Self.cpuMicrosPerCall(calls) { _ = try erased.pipeline([["GET", "fan:0"]]) } }
            if round % 2 == 0 { direct.append(try a()); throughProtocol.append(try b()) } else { throughProtocol.append(try b()); direct.append(try a()) }
        }

        func medians(_ rounds: [[String: Double]]) -> [String: Double] {
            var result: [String: Double] = [:]
            for key in rounds.first?.keys ?? [:].keys { result[key] = BenchE2E.round(Self.median(rounds.compactMap { $0[key] }), 2) }
            return result
        }
        let standaloneFigures = medians(store["standalone"] ?? []), clusterFigures = medians(store["cluster"] ?? [])
        let perNode = cluster.nodeStats().filter(\.isMaster).map { ["node": $0.node.description, "slots": $0.slots, "roundTrips": $0.roundTrips,
                                                                   "moved": $0.moved, "ask": $0.ask, "connectionErrors": $0.connectionErrors] as [String: Any] }
        return [
            "build": options.common.isDebugBuild ? "debug" : "release",
            "config": [
                "recipientsPerBatch": options.recipients, "batchesPerRound": options.batches, "apps": options.apps,
                "rounds": options.rounds, "replicasPerMaster": options.replicas, "clientCPUs": options.clientCPUs ?? "any",
                "fanOutCalls": options.fanOutCalls,
            ],
            "machine": [
                "nproc": ProcessInfo.processInfo.activeProcessorCount, "cpuModel": ProcessStats.cpuModel(),
                "loadAverageBefore": loadBefore, "loadAverageAfter": ProcessStats.loadAverage(),
            ],
            "store": ["standalone": standaloneFigures, "cluster": clusterFigures, "roundsStandalone": store["standalone"] ?? [], "roundsCluster": store["cluster"] ?? []],
            "fanOut": [
                "masters": masters.count,
                "oneGetPerMasterOnePipelineMicros": BenchE2E.round(Self.median(together), 1),
                "oneGetPerMasterThreePipelinesMicros": BenchE2E.round(Self.median(oneByOne), 1),
                "standaloneOneGetMicros": BenchE2E.round(Self.median(single), 1),
                "clusterRoundTripsPerCall": BenchE2E.round(Double(fanOutTrips) / Double(calls * options.rounds), 2),
                "emulatedLatencyOnePipelineMicros": BenchE2E.round(Self.median(slowTogether), 0),
                "emulatedLatencyThreePipelinesMicros": BenchE2E.round(Self.median(slowOneByOne), 0),
                "oneGetPerMasterOnePipelineCPUMicros": BenchE2E.round(Self.median(cpu[0]), 1),
                "oneGetPerMasterThreePipelinesCPUMicros": BenchE2E.round(Self.median(cpu[1]), 1),
                "standaloneOneGetCPUMicros": BenchE2E.round(Self.median(cpu[2]), 1),
                "clusterOneGetOneNodeCPUMicros": BenchE2E.round(Self.median(cpu[3]), 1),
                "plainClientSameNodeOneGetCPUMicros": BenchE2E.round(Self.median(cpu[4]), 1),
                "clusterOneGetOneNodeMicros": BenchE2E.round(Self.median(clusterOneNode), 1),
                "plainClientSameNodeOneGetMicros": BenchE2E.round(Self.median(plainOneNode), 1),
            ],
            "existential": [
                "directCPUMicrosPerCall": BenchE2E.round(Self.median(direct), 3),
                "protocolCPUMicrosPerCall": BenchE2E.round(Self.median(throughProtocol), 3),
                "directRounds": direct.map { BenchE2E.round($0, 3) }, "protocolRounds": throughProtocol.map { BenchE2E.round($0, 3) },
            ],
            "clusterNodes": perNode,
            "ratio": [
                "clusterToStandaloneCPUPerRecipient": BenchE2E.ratio(clusterFigures["cpuMicrosPerRecipient"], standaloneFigures["cpuMicrosPerRecipient"]),
                "clusterToStandaloneBatchMicros": BenchE2E.ratio(clusterFigures["batchMicrosP50"], standaloneFigures["batchMicrosP50"]),
                "threePipelinesToOne": BenchE2E.ratio(Self.median(oneByOne), Self.median(together)),
                "threePipelinesToOneEmulatedLatency": BenchE2E.ratio(Self.median(slowOneByOne), Self.median(slowTogether)),
                "protocolToDirect": BenchE2E.ratio(Self.median(throughProtocol), Self.median(direct)),
            ],
        ]
    }

    /// One round of store batches on one target: medians and per-recipient CPU.
    private func storeRound(_ client: any RedisPipelining, round: Int) throws -> [String: Double] {
        let store = DeliveryStateStore(client: client)
        let recipients = options.recipients, apps = max(1, options.apps)
        // A job's recipients grouped by app (as jobs are), msgIds from a bounded pool so memory stays
        // flat; each batch is one processing (its own claim owner), as in the worker.
        func items(_ batch: Int) -> [DeliveryStateStore.ClaimItem] {
            (0..<recipients).map { index in
                let app = index * apps / recipients
                return DeliveryStateStore.ClaimItem(appID: "app\(app)", campaignID: "cmp", key: DedupKey(msgID: "m\(batch % 16)-\(index)"),
                                                    owner: "bench-\(round)-\(batch)", platform: "ios", tokenHash: "t\(index)")
            }
        }
        let leaseMs: Int64 = 30_000
        for batch in 0..<5 { _ = try store.claim(items(batch), nowMs: BenchE2E.nowMs(), leaseMs: leaseMs) } // warm connections and caches
        let nodeTripsBefore = (client as? RedisClusterClient)?.nodeStats().map(\.roundTrips).reduce(0, +)
        let tripsBefore = client.roundTripCount
        var micros: [Double] = []
        micros.reserveCapacity(options.batches)
        let cpuBefore = ProcessStats.selfCPUSeconds(), systemBefore = Self.systemCPUSeconds()
        let clock = ContinuousClock()
        for batch in 0..<options.batches {
            let batchItems = items(batch + round * options.batches)
            let started = clock.now
            _ = try store.claim(batchItems, nowMs: BenchE2E.nowMs(), leaseMs: leaseMs)
            try store.record(
                batchItems.map { .init(appID: $0.appID, campaignID: $0.campaignID, key: $0.key, owner: $0.owner, sentRetentionMs: 600_000) },
                invalid: batchItems.enumerated().filter { $0.offset % 20 == 0 }.map { (appID: $0.element.appID, platform: "ios", tokenHash: $0.element.tokenHash, invalidSinceMs: 1) }
            )
            micros.append(Self.micros(clock.now - started))
        }
        let cpu = ProcessStats.selfCPUSeconds() - cpuBefore, system = Self.systemCPUSeconds() - systemBefore
        micros.sort()
        var figures: [String: Double] = [
            "batchMicrosP50": micros[micros.count / 2],
            "batchMicrosP99": micros[min(micros.count - 1, micros.count * 99 / 100)],
            "cpuMicrosPerRecipient": cpu * 1e6 / Double(options.batches * recipients),
            "systemCPUMicrosPerRecipient": system * 1e6 / Double(options.batches * recipients),
            "roundTripsPerBatch": Double(client.roundTripCount - tripsBefore) / Double(options.batches),
        ]
        if let cluster = client as? RedisClusterClient, let nodeTripsBefore {
            figures["nodePipelinesPerBatch"] = Double(cluster.nodeStats().map(\.roundTrips).reduce(0, +) - nodeTripsBefore) / Double(options.batches)
        }
        return figures
    }

    /// This process's system (kernel) CPU seconds so far.
    static func systemCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return ProcessStats.seconds(usage.ru_stime)
    }

    static func micros(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    /// The median wall time of `calls` calls of `body`, µs.
    static func medianMicros(_ calls: Int, _ body: () throws -> Void) throws -> Double {
        let clock = ContinuousClock()
        var times: [Double] = []
        times.reserveCapacity(calls)
        for _ in 0..<calls {
            let started = clock.now
            try body()
            times.append(micros(clock.now - started))
        }
        return median(times)
    }

    /// This process's CPU per call of `body`, µs.
    static func cpuMicrosPerCall(_ calls: Int, _ body: () throws -> Void) throws -> Double {
        let before = ProcessStats.selfCPUSeconds()
        for _ in 0..<calls { try body() }
        return (ProcessStats.selfCPUSeconds() - before) * 1e6 / Double(calls)
    }
}
