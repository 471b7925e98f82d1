import Dispatch
import PushRuntime
import Foundation
import PushCore
import PushRedis
import PushWorker
import Synchronization
import PushDevTools

/// The Redis Cluster drills (docs/reference/redis.md, docs/redis.md "Cluster"): the real
/// `pushworker run`, dev-broker and sandbox processes against a real 3-master + 3-replica
/// cluster (`redis+cluster://`), which the drill starts itself (or a shared one, in the tests).
/// What each one does to the cluster and what it checks is in docs/reliability.md.
extension ChaosDrills {
    /// The cluster drills, in the order `--drill all` runs them.
    static let clusterDrillNames = ["cluster-campaign", "cluster-reshard", "cluster-failover"]

    /// Runs `body` with `given`, or with a 3 + 3 cluster started for it (node timeout 2 s, so a
    /// failover takes ≈ 4 s) and stopped afterwards.
    static func withCluster(_ given: LocalRedisCluster?, _ options: ChaosOptions, _ body: (LocalRedisCluster) throws -> Void) throws {
        if let given { return try body(given) }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-chaos-cluster-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { if options.keep { printError("kept \(folder.path)") } else { try? FileManager.default.removeItem(at: folder) } }
        let cluster = try LocalRedisCluster(folder: folder, masters: 3, replicasPerMaster: 1, nodeTimeoutMs: 2000)
        defer { cluster.stop() }
        try body(cluster)
    }

    /// Values of a per-node series (`name{node="host:port"} value`) in Prometheus text.
    static func nodeSeries(_ text: String, _ name: String) -> [String: Double] {
        var values: [String: Double] = [:]
        let prefix = name + "{node=\""
        for line in text.split(separator: "\n") where line.hasPrefix(prefix) {
            let rest = line.dropFirst(prefix.count)
            guard let quote = rest.firstIndex(of: "\""), let value = rest.split(separator: " ").last.flatMap({ Double($0) }) else { continue }
            values[String(rest[..<quote])] = value
        }
        return values
    }

    /// The value of an exact series (`name` or `name{labels}`) in Prometheus text.
    static func series(_ text: String, _ nameAndLabels: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(nameAndLabels + " ") {
            return line.split(separator: " ").last.flatMap { Double($0) }
        }
        return nil
    }

    /// The slots of the 4,096 buckets of campaign `cmp_chaos` of the drills' app (DedupKey: the
    /// top 12 bits of a fingerprint pick the bucket).
    static func campaignBucketSlots() -> Set<Int> {
        Set((0..<DedupKey.bucketCount).map { bucket in
            RedisClusterSlot.of(RedisKeys.dedupSent(appID: ChaosHarness.app, campaignID: "cmp_chaos", bucket: DedupKey(fingerprint: UInt64(bucket) << 52)))
        })
    }

    /// Enqueues `campaign`'s jobs again once every recipient has its result, and waits for the
    /// second result of each: every one must be `duplicate`, answered by the claims in the
    /// cluster (`pushworker_claims_total{verdict="duplicate"}` grows by as many), nothing sent again.
    static func redelivery(_ campaign: ChaosCampaign, _ watcher: ResultWatcher, _ harness: ChaosHarness, _ worker: ChaosHarness.Worker,
                           label: String, _ report: inout DrillReport) throws {
        let before = harness.sandboxStats()
        let duplicatesBefore = before["duplicateMsgIds"] as? Int ?? -1
        let verdictsBefore = series(worker.metricsText(), #"pushworker_claims_total{verdict="duplicate"}"#) ?? 0
        let resultsBefore = watcher.results
        try harness.produce(campaign.jobs.map { (key: $0.key + "#again", value: $0.value) })
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline && watcher.results < resultsBefore + campaign.recipientCount { watcher.update(0.2) }
        var answeredDuplicate = 0
        for (_, results) in watcher.byPair where results.count >= 2 && results.dropFirst().allSatisfy({ $0.status == "duplicate" }) {
            answeredDuplicate += 1
        }
        let verdicts = (series(worker.metricsText(), #"pushworker_claims_total{verdict="duplicate"}"#) ?? 0) - verdictsBefore
        let duplicatesAfter = sandboxDuplicates(harness)
        report.check("\(label): redelivered jobs answered duplicate for every recipient", "\(answeredDuplicate)/\(campaign.recipientCount)",
                     answeredDuplicate == campaign.recipientCount)
        report.check("\(label): the duplicates came from the claims in Redis (claims_total{verdict=duplicate})",
                     "+\(Int(verdicts))", Int(verdicts) >= campaign.recipientCount)
        report.check("\(label): nothing sent again (duplicate sends at the sandbox unchanged)", "\(duplicatesBefore) → \(duplicatesAfter)",
                     duplicatesAfter == duplicatesBefore && duplicatesAfter >= 0)
    }

    /// Reads the worker's metrics until `condition` holds on them (node stats are published
    /// after each readiness probe, every 2 s) or `timeout`; returns the last text.
    static func metrics(of worker: ChaosHarness.Worker, timeout: Double, until condition: (String) -> Bool) -> String {
        var text = worker.metricsText()
        let deadline = Date().addingTimeInterval(timeout)
        while !condition(text) && Date() < deadline {
            usleep(200_000)
            text = worker.metricsText()
        }
        return text
    }

    // MARK: cluster-campaign — a campaign over the cluster, its keys per master, a redelivery

    static func clusterCampaign(_ options: ChaosOptions, cluster: LocalRedisCluster, _ report: inout DrillReport) throws {
        try cluster.flushAll()
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "20"], cluster: cluster)
        let campaign = ChaosCampaign.make(prefix: "ccmp", jobs: options.scaled(40, minimum: 8), perJob: 50, seed: options.seed)
        let watcher = try ResultWatcher(harness, expected: campaign.expected)
        let worker = try harness.startWorker()
        guard ChildProcess.waitFor(timeout: 40, { worker.readyz() == 200 }) else {
            report.check("worker ready on the cluster", "/readyz \(worker.readyz())", false)
            return
        }
        let started = Date()
        try harness.produce(campaign.jobs)
        watcher.wait(timeout: 120)
        report.figure("time to complete", format(Date().timeIntervalSince(started)))
        nothingLost(watcher, &report)
        let sent = watcher.statuses["sent"] ?? 0
        report.check("every recipient sent", "\(sent)/\(campaign.recipientCount); \(watcher.statusSummary)", sent == campaign.recipientCount)

        // One campaign's state on several masters.
        let counts = try cluster.keyCounts(matching: "pw:{\(ChaosHarness.app):cmp_chaos:*")
        let total = counts.values.reduce(0, +)
        let masters = counts.keys.sorted()
        report.figure("keys of the campaign per master (SCAN pw:{app_chaos:cmp_chaos:*)",
                      masters.map { "\($0): \(counts[$0] ?? 0)" }.joined(separator: ", ") + " (\(total) in all)")
        let holding = counts.values.filter { $0 > 0 }.count
        report.check("one campaign's state lands on several masters", "\(holding) of \(counts.count) masters", holding >= 2)

        // Per-node metrics in /metrics (published after each readiness probe, every 2 s: wait
        // until they cover the campaign's round trips, which a scrape reads exactly).
        let roundTripsAtEnd = series(worker.metricsText(), "pushworker_redis_round_trips_total") ?? 0
        let text = metrics(of: worker, timeout: 5) { text in
            nodeSeries(text, "pushworker_redis_node_slots").values.reduce(0, +) == 16384
                && nodeSeries(text, "pushworker_redis_node_round_trips_total").values.reduce(0, +) >= roundTripsAtEnd
        }
        let trips = nodeSeries(text, "pushworker_redis_node_round_trips_total")
        let slots = nodeSeries(text, "pushworker_redis_node_slots")
        let everyMaster = masters.allSatisfy { (trips["127.0.0.1:\($0)"] ?? 0) > 0 && (slots["127.0.0.1:\($0)"] ?? 0) > 0 }
        report.check("/metrics: round trips and slots per master (pushworker_redis_node_*)",
                     masters.map { "\($0): \(Int(trips["127.0.0.1:\($0)"] ?? 0)) trips, \(Int(slots["127.0.0.1:\($0)"] ?? 0)) slots" }.joined(separator: "; "),
                     everyMaster && slots.values.reduce(0, +) == 16384)
        let nodePipelines = trips.values.reduce(0, +)
        report.figure("Redis round trips per job (claims, records, probes) / node pipelines per round trip",
                      String(format: "%.1f / %.2f", roundTripsAtEnd / Double(campaign.jobs.count), nodePipelines / max(1, roundTripsAtEnd)))

        try redelivery(campaign, watcher, harness, worker, label: "redelivery", &report)
        stop(worker, &report)
    }

    /// The stage of a drill that harms the cluster mid-campaign: an empty, healthy cluster, a
    /// sandbox answering after 300 ms and one worker with at most `maxInFlight` sends (with 50:
    /// ≈ 160 recipients/s, so the campaign of 60 jobs × 50 lasts through the harm), ready.
    /// Nil, with a failed check, when the worker never gets ready.
    static func slowCampaign(_ options: ChaosOptions, cluster: LocalRedisCluster, prefix: String, minimumJobs: Int, maxInFlight: Int,
                             _ report: inout DrillReport) throws -> (ChaosHarness, ChaosCampaign, ResultWatcher, ChaosHarness.Worker)? {
        try cluster.flushAll()
        try cluster.waitUntilHealthy(timeout: 30)
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "300"], cluster: cluster)
        let campaign = ChaosCampaign.make(prefix: prefix, jobs: options.scaled(60, minimum: minimumJobs), perJob: 50, seed: options.seed)
        let watcher = try ResultWatcher(harness, expected: campaign.expected)
        let worker = try harness.startWorker(extra: ["PUSHWORKER_MAX_IN_FLIGHT": "\(maxInFlight)"])
        guard ChildProcess.waitFor(timeout: 40, { worker.readyz() == 200 }) else {
            report.check("worker ready on the cluster", "/readyz \(worker.readyz())", false)
            return nil
        }
        return (harness, campaign, watcher, worker)
    }

    // MARK: cluster-reshard — slots migrated mid-campaign: ASK, MOVED, redis-cli --cluster reshard

    static func clusterReshard(_ options: ChaosOptions, cluster: LocalRedisCluster, _ report: inout DrillReport) throws {
        // The worker is claiming and recording all through the migrations.
        guard let (harness, campaign, watcher, worker) = try slowCampaign(options, cluster: cluster, prefix: "cslot", minimumJobs: 15,
                                                                           maxInFlight: 50, &report) else { return }
        // Two thirds of the jobs first (migrated by hand while they run), the last third during
        // `redis-cli --cluster reshard`.
        let split = campaign.jobs.count * 2 / 3
        let masters = try cluster.masterPorts()
        guard masters.count >= 3 else {
            report.check("three masters", "\(masters)", false)
            return
        }
        let (source, target, other) = (masters[0], masters[1], masters[2])
        try harness.produce(Array(campaign.jobs.prefix(split)))
        guard watcher.wait(fraction: 0.1, timeout: 120) else {
            report.check("campaign started", "\(watcher.covered.count) results", false)
            return
        }

        let sourceSlots = try cluster.nodes().first { $0.port == source }?.slots ?? []
        let moving = Array(campaignBucketSlots().filter { slot in sourceSlots.contains { $0.contains(slot) } }.sorted().prefix(512))
        let migrationStart = Date()
        try cluster.beginMigration(slots: moving, from: source, to: target)
        let movedKeys = try cluster.migrateKeys(slots: moving, from: source, to: target)
        var readyzDuringMigration: Set<Int> = []
        while Date().timeIntervalSince(migrationStart) < 1.0 {
            watcher.update(0.1)
            readyzDuringMigration.insert(worker.readyz())
        }
        try cluster.finishMigration(slots: moving, to: target)
        report.figure("migrated by hand (SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE)",
                      "\(moving.count) slots, \(movedKeys) keys, \(source) → \(target), \(format(Date().timeIntervalSince(migrationStart))) with ASK")
        report.figure("results when the migration ended", "\(watcher.covered.count)/\(campaign.recipientCount)")

        // 2. As an operator does: `redis-cli --cluster reshard` of 300 slots while the last third runs.
        let status = Mutex<Int32?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let exit = (try? cluster.reshard(slots: 300, from: target, to: other)) ?? -1
            status.withLock { $0 = exit }
            done.signal()
        }
        try harness.produce(Array(campaign.jobs.suffix(from: split)))
        while done.wait(timeout: .now() + 0.1) == .timedOut { watcher.update(0.05); readyzDuringMigration.insert(worker.readyz()) }
        let reshardStatus = status.withLock { $0 } ?? -1
        report.check("redis-cli --cluster reshard of 300 slots (\(target) → \(other)) mid-campaign", "exit \(reshardStatus)", reshardStatus == 0)
        watcher.wait(timeout: 120)
        nothingLost(watcher, &report)
        let sent = watcher.statuses["sent"] ?? 0
        report.check("every recipient sent", "\(sent)/\(campaign.recipientCount); \(watcher.statusSummary)", sent == campaign.recipientCount)
        let duplicates = sandboxDuplicates(harness)
        report.check("zero duplicate sends at the sandbox", "\(duplicates)", duplicates == 0)
        report.figure("/readyz answers seen during the migrations", readyzDuringMigration.sorted().map(String.init).joined(separator: ", "))

        let text = metrics(of: worker, timeout: 5) { text in
            nodeSeries(text, "pushworker_redis_node_ask_total").values.reduce(0, +) > 0 && nodeSeries(text, "pushworker_redis_node_moved_total").values.reduce(0, +) > 0
        }
        let ask = nodeSeries(text, "pushworker_redis_node_ask_total"), moved = nodeSeries(text, "pushworker_redis_node_moved_total")
        func describe(_ values: [String: Double]) -> String {
            values.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map { "\($0.key): \(Int($0.value))" }.joined(separator: ", ")
        }
        report.check("ASK replies counted at the migrating master (pushworker_redis_node_ask_total)", describe(ask), (ask["127.0.0.1:\(source)"] ?? 0) > 0)
        report.check("MOVED replies counted (pushworker_redis_node_moved_total)", describe(moved), moved.values.reduce(0, +) > 0)
        let checked = try cluster.check()
        report.check("redis-cli --cluster check after the drill", "exit \(checked)", checked == 0)
        stop(worker, &report)
    }

    // MARK: cluster-failover — a master killed mid-campaign, its replica promoted

    static func clusterFailover(_ options: ChaosOptions, cluster: LocalRedisCluster, _ report: inout DrillReport) throws {
        // The kill lands mid-campaign with sends in flight.
        let maxInFlight = 50
        guard let (harness, campaign, watcher, worker) = try slowCampaign(options, cluster: cluster, prefix: "cfail", minimumJobs: 12,
                                                                           maxInFlight: maxInFlight, &report) else { return }
        try harness.produce(campaign.jobs)
        guard campaignStarted(watcher, fraction: 0.25, &report) else { return }

        let masters = try cluster.masterPorts()
        guard let victim = masters.first, let replica = try cluster.replica(of: victim) else {
            report.check("a master with a replica", "\(masters)", false)
            return
        }
        // The replica waits (cluster-replica-no-failover) so the drill sees the slot range
        // without a master for a few seconds, then takes over by itself.
        try cluster.holdFailover(of: replica, true)
        // Hit while sends are in flight.
        let inFlight = inFlightReading(worker, watcher, atLeast: maxInFlight / 2)
        var lagBytes: Int64?
        if let master = cluster.replicationOffset(victim), let copy = cluster.replicationOffset(replica) { lagBytes = master - copy }
        let before = watcher.covered.count
        cluster.kill(victim)
        let killedAt = Date()
        harness.log("killed master \(victim) at \(before) results (\(inFlight.map(String.init) ?? "?") in flight); replica \(replica) held")
        report.figure("sends in flight at the kill (pushworker_in_flight)", inFlight.map(String.init) ?? "unreadable")
        report.figure("replication lag at the kill (master_repl_offset master − replica)", lagBytes.map { "\($0) bytes" } ?? "unreadable")

        var notReadyAfter: Double?
        var slotsWithMaster: Int?
        // The hold: at least 3 s (the live masters mark the dead one FAIL after the node timeout,
        // 2 s) and 0.5 s past the first 503; at most 15 s.
        while true {
            let elapsed = Date().timeIntervalSince(killedAt)
            if let first = notReadyAfter, elapsed >= max(3, first + 0.5) { break }
            if elapsed >= 15 { break }
            watcher.update(0.1)
            if notReadyAfter == nil && worker.readyz() == 503 { notReadyAfter = Date().timeIntervalSince(killedAt) }
            if let ok = cluster.slotsOK(asking: replica), ok < RedisClusterSlot.count { slotsWithMaster = ok }
        }
        let readyzAtEndOfHold = worker.readyz()
        let heldResults = watcher.covered.count
        report.check("/readyz 503 while a slot range has no master (replica held back)",
                     "503 after \(notReadyAfter.map(format) ?? "never"); \(readyzAtEndOfHold) at the end of the hold; cluster_slots_ok \(slotsWithMaster.map(String.init) ?? "16384")",
                     notReadyAfter != nil && readyzAtEndOfHold == 503)
        report.figure("results at the kill / at the end of the hold", "\(before) / \(heldResults) of \(campaign.recipientCount)")

        try cluster.holdFailover(of: replica, false)
        let releasedAt = Date()
        var promoted = cluster.waitForPromotion(of: replica, timeout: 15)
        var how = "by itself"
        if !promoted {
            how = "after CLUSTER FAILOVER FORCE"
            _ = try? cluster.command(replica, ["CLUSTER", "FAILOVER", "FORCE"])
            promoted = cluster.waitForPromotion(of: replica, timeout: 15)
        }
        report.check("replica \(replica) promoted", promoted ? "\(how), \(format(Date().timeIntervalSince(releasedAt))) after the release" : "not promoted", promoted)
        let promotedAt = Date()
        var readyAfter: Double?
        while Date().timeIntervalSince(promotedAt) < 30 {
            if worker.readyz() == 200 { readyAfter = Date().timeIntervalSince(promotedAt); break }
            watcher.update(0.1)
        }
        report.check("/readyz 200 again, by itself", readyAfter.map { "\(format($0)) after the promotion" } ?? "still not ready", readyAfter != nil)
        let duplicates = completion(watcher, harness, after: "promotion", at: promotedAt, timeout: 120, &report)
        // docs/pipeline.md: a lost shard can repeat what was in flight and what it had not replicated;
        // the worker writes both back when the cluster answers again (Worker.reRecordSent).
        report.check("duplicate sends ≤ sends in flight at the kill (+ unreplicated writes, written back)",
                     "\(duplicates) ≤ \(inFlight.map(String.init) ?? "?")", duplicates >= 0 && duplicates <= (inFlight ?? maxInFlight))
        if let line = worker.child.log().split(separator: "\n").last(where: { $0.contains("re-recorded after a Redis loss") }) {
            report.figure("worker log", String(line.suffix(200)))
        }

        // Per-node metrics: the dead master's errors, the promoted replica's slots.
        let victimName = "127.0.0.1:\(victim)", replicaName = "127.0.0.1:\(replica)"
        let text = metrics(of: worker, timeout: 5) { (nodeSeries($0, "pushworker_redis_node_slots")[replicaName] ?? 0) > 0 }
        let errors = nodeSeries(text, "pushworker_redis_node_errors_total"), slots = nodeSeries(text, "pushworker_redis_node_slots")
        report.check("/metrics: errors at the dead master, slots at the promoted replica",
                     "\(victimName): \(Int(errors[victimName] ?? 0)) errors, \(Int(slots[victimName] ?? 0)) slots; \(replicaName): \(Int(slots[replicaName] ?? 0)) slots",
                     (errors[victimName] ?? 0) > 0 && (slots[victimName] ?? 0) == 0 && (slots[replicaName] ?? 0) > 0)

        // The killed node comes back (empty) and rejoins as the new master's replica.
        try cluster.restart(victim)
        try cluster.waitUntilHealthy(timeout: 30)
        try redelivery(campaign, watcher, harness, worker, label: "redelivery after the failover", &report)
        stop(worker, &report)
    }
}
