import Foundation
import PushCore
import PushTestSupport
import Synchronization
import Testing
@testable import PushRedis

/// Starts one 3 + 3 cluster for the whole suite and stops it (by PID) when the suite ends.
struct SharedRedisCluster: SuiteTrait, TestScoping {
    @TaskLocal static var current: RedisClusterServer?

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let cluster = try RedisClusterServer(masters: 3, replicasPerMaster: 1, nodeTimeoutMs: 2000)
        defer { cluster.stop() }
        try await Self.$current.withValue(cluster) { try await function() }
    }
}

private typealias Item = DeliveryStateStore.ClaimItem

/// An item of campaign `campaign` of `app`, msgId `m<n>`.
private func item(_ n: Int, app: String = "app", campaign: String = "cmp", owner: String = "o1", token: String? = nil) -> Item {
    Item(appID: app, campaignID: campaign, key: DedupKey(msgID: "m\(n)"), owner: owner, platform: "ios", tokenHash: token ?? "h\(n)")
}

private func sent(_ item: Item) -> DeliveryStateStore.RecordEntry {
    .init(appID: item.appID, campaignID: item.campaignID, key: item.key, owner: item.owner, sentRetentionMs: 3_600_000)
}

private func release(_ item: Item) -> DeliveryStateStore.RecordEntry {
    .init(appID: item.appID, campaignID: item.campaignID, key: item.key, owner: item.owner, sentRetentionMs: nil)
}

@Suite("RedisClusterClient against a real 3 + 3 Redis Cluster", .serialized, SharedRedisCluster())
struct RedisClusterClientTests {
    let cluster: RedisClusterServer
    let client: RedisClusterClient

    init() throws {
        guard let cluster = SharedRedisCluster.current else { throw TestSupportError("no cluster") }
        self.cluster = cluster
        client = try RedisClusterClient(url: cluster.url)
    }

    /// A hash tag whose slot `port` serves, and that slot.
    private func tag(on port: UInt16, not excluded: Set<String> = []) throws -> (tag: String, slot: Int) {
        let ranges = try cluster.nodes().first { $0.port == port }?.slots ?? []
        for number in 0..<100_000 where !excluded.contains("t\(number)") {
            let slot = RedisClusterSlot.of("t\(number)")
            if ranges.contains(where: { $0.contains(slot) }) { return ("t\(number)", slot) }
        }
        throw TestSupportError("no tag found on \(port)")
    }

    private func stats(_ port: UInt16) -> RedisClusterNodeStats? {
        client.nodeStats().first { $0.node.port == Int(port) }
    }

    private func bulk(_ text: String) -> RedisReply { .string(Array(text.utf8)) }

    // MARK: slot map and routing

    @Test("reads the slot map: every slot, served by the masters the cluster names")
    func slotMap() throws {
        try client.refreshSlotMap()
        let map = try #require(client.slotMap())
        #expect(map.uncoveredSlotCount == 0)
        #expect(map.masters.map { UInt16($0.port) } == (try cluster.masterPorts()))
        for slot in [0, 1, 5460, 5461, 8000, 10922, 10923, 16383] {
            #expect(map.master(forSlot: slot)?.port == Int(try cluster.owner(ofSlot: slot)))
        }
        #expect(client.checkHealth() == RedisClusterHealth(masters: map.masters, unreachableMasters: [], uncoveredSlots: 0, problem: nil))
        #expect(client.ping())
        let stats = client.nodeStats().filter(\.isMaster)
        #expect(stats.count == 3)
        #expect(stats.map(\.slots).reduce(0, +) == 16384)
    }

    @Test("key slots agree with CLUSTER KEYSLOT, hash tags included")
    func keySlotsAgree() throws {
        let keys = (0..<200).map { "key:\($0)" } + ["{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "pw:{app}:sent:1", "ü{é}"]
        let replies = try client.pipeline(keys.map { ["CLUSTER", "KEYSLOT", .string($0)] })
        #expect(replies == keys.map { .integer(Int64(RedisClusterSlot.of($0))) })
    }

    @Test("a pipeline over every master: one round trip, one pipeline per master, replies in the caller's order")
    func pipelineAcrossNodes() throws {
        let keys = (0..<300).map { "spread:\($0)" }
        _ = try client.pipeline([["PING"]])
        let before = client.roundTripCount
        let masters = try cluster.masterPorts()
        let perNodeBefore = masters.map { stats($0)?.roundTrips ?? 0 }
        let replies = try client.pipeline(keys.enumerated().flatMap { index, key -> [[RedisArgument]] in
            [["SET", .string(key), .int(Int64(index))], ["INCR", .string(key)], ["GET", .string(key)]]
        })
        #expect(client.roundTripCount == before + 1)
        #expect(masters.map { stats($0)?.roundTrips ?? 0 } == perNodeBefore.map { $0 + 1 })
        #expect(replies == keys.indices.flatMap { index in [.status("OK"), .integer(Int64(index + 1)), bulk("\(index + 1)")] })
        // The keys really sit on every master.
        for port in masters { #expect(Int(try cluster.cli(port, ["DBSIZE"])) ?? 0 > 0) }
    }

    @Test("requests and replies larger than the socket buffers cross every master intact (partial writes, many reads)")
    func largeValues() throws {
        let masters = try cluster.masterPorts()
        let tags = try masters.map { try tag(on: $0).tag }
        let size = 8 << 20 // 3 × 8 MiB in one pipeline: more than loopback takes in one send
        let values = tags.indices.map { index in
            var value = [UInt8](repeating: UInt8(index + 1), count: size)
            for position in stride(from: 0, to: value.count, by: 4093) { value[position] = UInt8(truncatingIfNeeded: position / 4093) }
            return value
        }
        _ = try client.pipeline([["PING"]]) // reads the slot map
        let trips = client.roundTripCount
        let set = try client.pipeline(zip(tags, values).map { ["SET", .string("{\($0)}big"), .bytes($1)] })
        #expect(set == Array(repeating: .status("OK"), count: tags.count))
        let get = try client.pipeline(tags.flatMap { tag -> [[RedisArgument]] in [["GET", .string("{\(tag)}big")], ["STRLEN", .string("{\(tag)}big")]] })
        #expect(client.roundTripCount == trips + 2)
        for index in tags.indices {
            #expect(get[2 * index] == .string(values[index]))
            #expect(get[2 * index + 1] == .integer(Int64(size)))
        }
        _ = try client.pipeline(tags.map { ["DEL", .string("{\($0)}big")] })
    }

    @Test("the masters' parts wait at the same time: three 0.6 s BLPOPs on three masters take ~0.6 s, not 1.8 s")
    func partsAreConcurrent() throws {
        let masters = try cluster.masterPorts()
        let tags = try masters.map { try tag(on: $0).tag }
        _ = try client.pipeline([["PING"]])
        let started = ContinuousClock.now
        let replies = try client.pipeline(tags.map { ["BLPOP", .string("{\($0)}empty"), "0.6"] })
        let elapsed = ContinuousClock.now - started
        #expect(replies == [.null, .null, .null])
        #expect(elapsed >= .milliseconds(550))
        #expect(elapsed < .milliseconds(1_500), "\(elapsed): the nodes were waited for one after another")
    }

    @Test("MGET, MSET, DEL, EXISTS over several slots are split and rejoined in key order")
    func multiKeyAcrossSlots() throws {
        let keys = (0..<50).map { "multi:\($0)" }
        #expect(Set(keys.map { try? cluster.owner(ofSlot: RedisClusterSlot.of($0)) }).count == 3)
        var mset: [RedisArgument] = ["MSET"]
        for key in keys { mset += [.string(key), .string("v-\(key)")] }
        let replies = try client.pipeline([
            mset,
            ["MGET"] + (keys + ["multi:missing"]).map { .string($0) },
            ["EXISTS"] + keys.prefix(10).map { .string($0) } + ["multi:missing"],
            ["DEL"] + keys.suffix(20).map { .string($0) },
            ["MGET"] + keys.suffix(21).map { .string($0) },
        ])
        #expect(replies[0] == .status("OK"))
        #expect(replies[1] == .array(keys.map { bulk("v-\($0)") } + [.null]))
        #expect(replies[2] == .integer(10))
        #expect(replies[3] == .integer(20))
        #expect(replies[4] == .array([bulk("v-multi:29")] + Array(repeating: .null, count: 20)))
    }

    @Test("a script whose keys span slots is refused before anything is sent; keyless and cross-slot errors stay values")
    func crossSlotScript() throws {
        _ = try client.pipeline([["PING"]])
        let before = client.roundTripCount
        let error = #expect(throws: RedisError.self) { try client.pipeline([["GET", "a"], ["EVAL", "return 1", 2, "a", "b"]]) }
        #expect(error?.isConnectionError == false)
        #expect(client.roundTripCount == before)
        // A command Redis itself refuses as cross-slot is an error value, like on one server.
        let replies = try client.pipeline([["SUNION", "a", "b"], ["EVAL", "return 7", 0], ["NOSUCHCOMMAND"]])
        #expect(replies[0].errorMessage?.hasPrefix("CROSSSLOT") == true)
        #expect(replies[1] == .integer(7))
        #expect(replies[2].errorMessage?.hasPrefix("ERR unknown command") == true)
    }

    // MARK: redirections

    @Test("MOVED after a slot moved: the command is answered by the new owner, the map is read again, later batches go direct")
    func movedAfterReshard() throws {
        let masters = try cluster.masterPorts()
        let (tag, slot) = try tag(on: masters[0])
        let key = "{\(tag)}moved"
        _ = try client.pipeline([["SET", .string(key), "before"]])
        let source = masters[0], target = masters[1]
        try cluster.moveSlot(slot, to: target)
        let movedBefore = stats(source)?.moved ?? 0
        let reads = client.slotMapReadCount
        #expect(try client.pipeline([["GET", .string(key)], ["SET", .string(key + "2"), "x"]]) == [bulk("before"), .status("OK")])
        #expect((stats(source)?.moved ?? 0) == movedBefore + 2)
        #expect(client.slotMapReadCount == reads + 1)
        #expect(client.slotMap()?.master(forSlot: slot)?.port == Int(target))
        // Direct now: no further MOVED.
        #expect(try client.pipeline([["GET", .string(key + "2")]]) == [bulk("x")])
        #expect((stats(source)?.moved ?? 0) == movedBefore + 2)
        #expect(try cluster.cli(target, ["GET", key]) == "before")
    }

    @Test("ASK during a migration: ASKING + the command on the importing node, the map unchanged; MOVED once it is done")
    func askDuringMigration() throws {
        let masters = try cluster.masterPorts()
        let (tag, slot) = try tag(on: masters[1], not: ["t0"])
        let moved = "{\(tag)}a", stays = "{\(tag)}b", fresh = "{\(tag)}c"
        _ = try client.pipeline([["SET", .string(moved), "1"], ["SET", .string(stays), "2"]])
        let source = masters[1], target = masters[2]
        try cluster.beginMigration(slot: slot, to: target)
        try cluster.migrateKeys(slot: slot, from: source, to: target, keys: [moved])
        let askBefore = stats(source)?.ask ?? 0, reads = client.slotMapReadCount
        let replies = try client.pipeline([["GET", .string(moved)], ["GET", .string(stays)], ["SET", .string(fresh), "3"], ["PING"]])
        #expect(replies == [bulk("1"), bulk("2"), .status("OK"), .status("PONG")])
        #expect(stats(source)?.ask == askBefore + 2) // the moved key, and the new key (not on the source)
        #expect(client.slotMapReadCount == reads)
        #expect(client.slotMap()?.master(forSlot: slot)?.port == Int(source))
        // The new key was written where the slot is going.
        let keysOn = { (port: UInt16) in Set(try self.cluster.cli(port, ["CLUSTER", "GETKEYSINSLOT", "\(slot)", "1000"]).split(separator: "\n").map(String.init)) }
        #expect(try keysOn(target).isSuperset(of: [moved, fresh]))
        #expect(try keysOn(source).intersection([moved, stays, fresh]) == [stays])
        // Done: the source now answers MOVED.
        try cluster.migrateKeys(slot: slot, from: source, to: target)
        try cluster.finishMigration(slot: slot, to: target)
        let movedBefore = stats(source)?.moved ?? 0
        #expect(try client.pipeline([["MGET", .string(moved), .string(stays), .string(fresh)]]) == [.array([bulk("1"), bulk("2"), bulk("3")])])
        #expect(stats(source)?.moved == movedBefore + 1)
        #expect(client.slotMap()?.master(forSlot: slot)?.port == Int(target))
    }

    // MARK: scripts and the store

    @Test("scripts: preloading reaches every master; after SCRIPT FLUSH on one, only that node pays the EVAL round trip")
    func scriptsPerNode() throws {
        let store = DeliveryStateStore(client: client)
        #expect(store.keysMustShareSlot)
        try store.preloadScripts()
        let masters = try cluster.masterPorts()
        for port in masters {
            for script in DeliveryStateStore.scripts {
                #expect(try cluster.cli(port, ["SCRIPT", "EXISTS", script.sha1]) == "1")
            }
        }
        // 200 msgIds of one campaign: ~200 buckets, so every master holds some.
        let items = (0..<200).map { item($0, campaign: "scripts") }
        let flushed = masters[0]
        try cluster.cli(flushed, ["SCRIPT", "FLUSH"])
        #expect(try client.pipeline([["SCRIPT", "EXISTS", .string(DeliveryStateStore.claimScript.sha1)]]) == [.array([.integer(0)])])
        let trips = client.roundTripCount
        let perNode = masters.map { stats($0)?.roundTrips ?? 0 }
        #expect(try store.claim(items, nowMs: 0, leaseMs: 60_000).replies == Array(repeating: .claimed, count: 200))
        #expect(client.roundTripCount == trips + 2)
        #expect(masters.map { stats($0)?.roundTrips ?? 0 } == zip(masters, perNode).map { $0 == flushed ? $1 + 2 : $1 + 1 })
        #expect(try cluster.cli(flushed, ["SCRIPT", "EXISTS", DeliveryStateStore.claimScript.sha1]) == "1") // EVAL cached it again
        try store.record(items.prefix(100).map { sent($0) } + items.suffix(100).map { release($0) })
        let again = try store.claim(items.map { var other = $0; other.owner = "o2"; return other }, nowMs: 1, leaseMs: 60_000).replies
        #expect(again == Array(repeating: .alreadySent, count: 100) + Array(repeating: .claimed, count: 100))
    }

    @Test("DeliveryStateStore over the cluster: claims, records, acquire, backoff; one round trip each; one campaign on every master")
    func storeOverCluster() throws {
        #expect(try client.pipeline([["FLUSHALL"]]) == [.status("OK")])
        let store = DeliveryStateStore(client: client)
        try store.preloadScripts()
        let apps = (0..<12).map { "app\($0)" }
        let items = apps.flatMap { app in (0..<40).map { item($0, app: app, token: $0 == 2 ? "h2" : nil) } }
        var trips = client.roundTripCount
        #expect(try store.claim(items, nowMs: 0, leaseMs: 60_000).replies == Array(repeating: .claimed, count: items.count))
        #expect(client.roundTripCount == trips + 1)
        trips = client.roundTripCount
        let isSent = { (item: Item) in item.key == DedupKey(msgID: "m1") || item.key == DedupKey(msgID: "m11") }
        try store.record(items.map { isSent($0) ? sent($0) : release($0) },
                         invalid: apps.map { (appID: $0, platform: "ios", tokenHash: "h2", invalidSinceMs: 1_000) })
        #expect(client.roundTripCount == trips + 1)
        let answers = try store.claim(items.map { var other = $0; other.owner = "o2"; return other }, nowMs: 1, leaseMs: 60_000)
        for (index, item) in items.enumerated() {
            #expect(answers.replies[index] == (isSent(item) ? .alreadySent : .claimed), "\(item.appID)/\(item.key.member)")
            #expect(answers.invalidSinceMs[index] == (item.tokenHash == "h2" ? 1_000 : nil))
        }
        // One campaign's de-duplication state sits on every master.
        for port in try cluster.masterPorts() { #expect(Int(try cluster.cli(port, ["DBSIZE"])) ?? 0 > 0) }

        let buckets = apps.prefix(2).map { DeliveryStateStore.Bucket(key: RedisKeys.providerBucket(appID: $0, provider: "apns"), ratePerSecond: 10, burst: 5) }
        #expect(try store.acquire(count: 10, from: [buckets[0]], nowMs: 100_000) == (granted: 5, retryAfterMs: 500))
        #expect(try store.acquire(count: 3, from: [buckets[1]], nowMs: 100_000) == (granted: 3, retryAfterMs: 0))
        // A bucket pair of one app shares its slot.
        let campaign = DeliveryStateStore.Bucket(key: RedisKeys.campaignBucket(appID: apps[0], campaignID: "c"), ratePerSecond: 1, burst: 2)
        #expect(try store.acquire(count: 3, from: [buckets[0], campaign], nowMs: 100_500).granted == 2)

        for app in apps { try store.setBackoff(appID: app, provider: "fcm", milliseconds: 10_000) }
        trips = client.roundTripCount
        let remaining = try store.backoffsRemaining(apps.map { (appID: $0, provider: "fcm") })
        #expect(remaining.allSatisfy { (8_000...10_000) ~= ($0 ?? 0) } && remaining.count == apps.count)
        #expect(client.roundTripCount == trips + 1)
        #expect(try store.backoffRemaining(appID: "nobody", provider: "fcm") == nil)
    }

    @Test("the async pipeline and ping agree with the blocking ones; a closed client refuses")
    func asyncAndClose() async throws {
        let replies = try await client.pipeline([["SET", "async:a", "1"], ["GET", "async:a"], ["PING"]])
        #expect(replies == [.status("OK"), bulk("1"), .status("PONG")])
        #expect(await client.ping())
        #expect(await client.checkHealth().isHealthy)
        let store = DeliveryStateStore(client: client)
        let bucket = DeliveryStateStore.Bucket(key: RedisKeys.providerBucket(appID: "async", provider: "fcm"), ratePerSecond: 1, burst: 2)
        #expect(try await store.acquire(count: 3, from: [bucket], nowMs: 0) == (granted: 2, retryAfterMs: 1_000))
        client.close()
        client.close()
        #expect(!client.ping())
        await #expect(throws: RedisError.self) { try await client.pipeline([["PING"]]) }
    }

    @Test("password from the URL: AUTH on every node; a wrong one is a connection error")
    func authentication() throws {
        let ports = cluster.livePorts
        for port in ports { try cluster.cli(port, ["CONFIG", "SET", "requirepass", "s3cr:t"]) }
        defer { for port in ports { _ = try? cluster.cli(port, ["-a", "s3cr:t", "--no-auth-warning", "CONFIG", "SET", "requirepass", ""]) } }
        let right = try RedisClusterClient(url: "redis+cluster://:s3cr%3At@127.0.0.1:\(ports[0])")
        let keys = (0..<30).map { "auth:\($0)" }
        #expect(try right.pipeline(keys.map { ["SET", .string($0), "1"] }) == Array(repeating: .status("OK"), count: 30))
        #expect(right.ping())
        let wrong = try RedisClusterClient(url: "redis+cluster://:nope@127.0.0.1:\(ports[0])")
        let error = #expect(throws: RedisError.self) { try wrong.pipeline([["GET", "k"]]) }
        #expect(error?.isConnectionError == true)
        #expect(!wrong.description.contains("nope"))
    }

    // MARK: failover (last: it changes the cluster)

    @Test("a master killed mid-batch: the batch succeeds once its replica is promoted; health says so meanwhile")
    func failoverMidBatch() throws {
        let masters = try cluster.masterPorts()
        let victim = masters[2]
        let replica = try cluster.syncedReplica(of: victim)
        let (victimTag, _) = try tag(on: victim)
        let (otherTag, _) = try tag(on: masters[0])
        let patient = try RedisClusterClient(url: cluster.url, options: .init(
            timeout: .seconds(5), maxRetries: 40, retryBackoff: .milliseconds(100), maxRetryBackoff: .milliseconds(400)
        ))
        let health = try RedisClusterClient(url: cluster.url, options: .init(timeout: .milliseconds(500)))
        #expect(try patient.pipeline([["SET", .string("{\(victimTag)}warm"), "1"], ["SET", .string("{\(otherTag)}warm"), "1"]]).count == 2)
        #expect(health.ping())

        // The victim's part blocks in BLPOP, so the batch is in flight on it when it dies.
        let batch: [[RedisArgument]] = [
            ["SET", .string("{\(otherTag)}k"), "a"],
            ["BLPOP", .string("{\(victimTag)}queue"), "2"],
            ["SET", .string("{\(victimTag)}k"), "b"],
            ["INCR", .string("{\(otherTag)}n")],
        ]
        let outcome = Mutex<Result<[RedisReply], RedisError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let result = Result { () throws(RedisError) -> [RedisReply] in try patient.pipeline(batch) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        #expect(eventually(timeout: 10) { (try? cluster.cli(victim, ["CLIENT", "LIST"]))?.contains("cmd=blpop") == true })
        cluster.kill(victim)
        let during = health.checkHealth()
        #expect(!during.isHealthy)
        #expect(during.unreachableMasters.map(\.port) == [Int(victim)])

        #expect(done.wait(timeout: .now() + 30) == .success)
        let replies = try #require(outcome.withLock { $0 }).get()
        #expect(replies == [.status("OK"), .null, .status("OK"), .integer(1)])
        #expect(patient.connectionErrorCount == 0)
        #expect((patient.nodeStats().first { $0.node.port == Int(victim) }?.connectionErrors ?? 0) >= 1)
        #expect(patient.slotMap()?.masters.contains { $0.port == Int(replica) } == true)
        #expect(try cluster.cli(replica, ["GET", "{\(victimTag)}k"]) == "b")

        try cluster.waitForPromotion(of: replica)
        #expect(eventually(timeout: 10) { health.ping() })
        #expect(health.checkHealth().masters.map(\.port).sorted() == (try cluster.masterPorts()).map(Int.init))
    }
}
