import Dispatch
import Foundation
import PushCore
import PushTestSupport
import Synchronization
import Testing
@testable import PushRedis

private let day: Int64 = 86_400_000
private let hour: Int64 = 3_600_000

private func target(_ user: String, _ rules: [CapRule], app: String = "app", category: String = "marketing") -> DeliveryStateStore.CapTarget {
    DeliveryStateStore.CapTarget(appID: app, userID: user, category: category, rules: rules)
}

/// User `user`'s device `device` in `campaign`, counted against `rules` (nil: not counted).
private func item(_ user: String, _ campaign: String, device: Int = 0, owner: String = "o1", rules: [CapRule]? = [CapRule(count: 2, windowMs: day)])
    -> DeliveryStateStore.ClaimItem {
    DeliveryStateStore.ClaimItem(appID: "app", campaignID: campaign, key: DedupKey(msgID: "\(campaign)/\(user)/\(device)"), owner: owner,
                                 platform: "ios", tokenHash: "h-\(user)-\(device)", cap: rules.map { target(user, $0) })
}

private func entry(_ item: DeliveryStateStore.ClaimItem, sent: Bool, cap confirm: Bool?) -> DeliveryStateStore.RecordEntry {
    DeliveryStateStore.RecordEntry(appID: item.appID, campaignID: item.campaignID, key: item.key, owner: item.owner,
                                   sentRetentionMs: sent ? 3_600_000 : nil,
                                   cap: confirm.flatMap { confirm in item.cap.map { DeliveryStateStore.CapChange(target: $0, confirm: confirm) } })
}

@Suite("Frequency caps in a real redis-server (docs/caps.md)")
struct FrequencyCapStoreTests {
    let server: RedisServer
    let client: RedisClient
    let store: DeliveryStateStore

    init() throws {
        server = try RedisServer()
        client = try RedisClient(url: server.url)
        store = DeliveryStateStore(client: client)
    }

    private func members(_ key: String, _ client: any RedisPipelining) throws -> Int {
        try client.pipeline([["ZCARD", .string(key)]])[0].integerValue.map(Int.init) ?? -1
    }

    @Test("a sliding window: the third campaign within the day is capped, and passes once the first slides out")
    func slidingWindow() throws {
        let t0: Int64 = 1_800_000_000_000
        #expect(try store.claim([item("u1", "c1")], nowMs: t0, leaseMs: 30_000).replies == [.claimed])
        #expect(try store.claim([item("u1", "c2")], nowMs: t0 + hour, leaseMs: 30_000).replies == [.claimed])
        let third = try store.claim([item("u1", "c3")], nowMs: t0 + 2 * hour, leaseMs: 30_000)
        #expect(third.replies == [.capped])
        // Capped claims nothing: another owner may claim it at once.
        #expect(try store.claim([item("u1", "c3", owner: "o2", rules: nil)], nowMs: t0 + 2 * hour, leaseMs: 30_000).replies == [.claimed])
        // One millisecond before c1's send leaves the window it is still counted; at the day it is not.
        #expect(try store.claim([item("u1", "c4")], nowMs: t0 + day - 1, leaseMs: 30_000).replies == [.capped])
        #expect(try store.claim([item("u1", "c4")], nowMs: t0 + day, leaseMs: 30_000).replies == [.claimed])
        #expect(try members(target("u1", []).key, client) == 2, "c1 was dropped; c2 and c4 are kept")
        // Another user is counted apart.
        #expect(try store.claim([item("u2", "c3")], nowMs: t0 + 2 * hour, leaseMs: 30_000).replies == [.claimed])
    }

    @Test("several caps per category: 1/1h and 3/1d; all of a user's devices in one campaign count once; a resend never counts twice")
    func severalCapsAndDevices() throws {
        let rules = [CapRule(count: 1, windowMs: hour), CapRule(count: 3, windowMs: day)]
        let t0: Int64 = 1_800_000_000_000
        let devices = (0..<3).map { item("u1", "c1", device: $0, rules: rules) }
        #expect(try store.claim(devices, nowMs: t0, leaseMs: 30_000).replies == [.claimed, .claimed, .claimed])
        #expect(try store.claim([item("u1", "c2", rules: rules)], nowMs: t0 + hour - 1, leaseMs: 30_000).replies == [.capped], "1 per hour")
        #expect(try store.claim([item("u1", "c2", rules: rules)], nowMs: t0 + hour, leaseMs: 30_000).replies == [.claimed])
        // The same msgId claimed again (a resend, another worker after a lease ran out) is there already.
        #expect(try store.claim([item("u1", "c2", owner: "o9", rules: rules)], nowMs: t0 + hour + 40_000, leaseMs: 30_000).replies == [.claimed])
        #expect(try store.claim([item("u1", "c3", rules: rules)], nowMs: t0 + 2 * hour, leaseMs: 30_000).replies == [.claimed])
        #expect(try store.claim([item("u1", "c4", rules: rules)], nowMs: t0 + 3 * hour, leaseMs: 30_000).replies == [.capped], "3 per day")
        #expect(try members(target("u1", rules).key, client) == 5, "3 devices of c1, c2, c3")
    }

    @Test("counted and uncounted items mix in one call; the set lives for the longest window")
    func mixedAndTTL() throws {
        let items = [item("u1", "c1"), item("u1", "c1", device: 1, rules: nil), item("u2", "c1"), item("u1", "c2"), item("u1", "c3")]
        let answers = try store.claim(items, nowMs: nil, leaseMs: 30_000)
        #expect(answers.replies == [.claimed, .claimed, .claimed, .claimed, .capped])
        let ttl = try client.command("PTTL", .string(target("u1", []).key)).integerValue ?? -1
        #expect(ttl > day - 60_000 && ttl <= day)
        // A renewal (no cap named) of a claim whose user is at the cap is still ours.
        #expect(try store.claim([item("u1", "c1", rules: nil)], nowMs: nil, leaseMs: 30_000).replies == [.alreadyOurs])
    }

    @Test("a reservation given back frees the cap; a confirmation adds a lost one; neither counts twice")
    func giveBackAndConfirm() throws {
        let first = item("u1", "c1"), second = item("u1", "c2"), third = item("u1", "c3")
        _ = try store.claim([first, second], nowMs: nil, leaseMs: 30_000)
        #expect(try store.claim([third], nowMs: nil, leaseMs: 30_000).replies == [.capped])
        try store.record([entry(first, sent: false, cap: false)])
        #expect(try store.claim([third], nowMs: nil, leaseMs: 30_000).replies == [.claimed])
        // Redis lost the reservation of `second`: its sent record confirms it again, once.
        try client.command("ZREM", .string(target("u1", []).key), .string(RedisKeys.capMember(campaignID: "c2", key: second.key)))
        try store.record([entry(second, sent: true, cap: true), entry(third, sent: true, cap: true)])
        try store.record([entry(second, sent: true, cap: true)])
        #expect(try members(target("u1", []).key, client) == 2)
        #expect(try store.claim([item("u1", "c4")], nowMs: nil, leaseMs: 30_000).replies == [.capped])
    }

    @Test("two owners racing two campaigns to the same 300 users under 1/1d: exactly one send per user")
    func racingOwners() throws {
        let rules = [CapRule(count: 1, windowMs: day)]
        let other = DeliveryStateStore(client: try RedisClient(url: server.url))
        let stores = [store, other]
        let outcomes = Mutex<[String: Int]>([:])
        let errors = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            for batch in stride(from: 0, to: 300, by: 20) {
                let items = (batch..<batch + 20).map { item("u\($0)", "c\(worker)", owner: "w\(worker)", rules: rules) }
                do {
                    let replies = try stores[worker].claim(items, nowMs: nil, leaseMs: 30_000).replies
                    outcomes.withLock { counts in
                        for (claimed, reply) in zip(items, replies) where reply == .claimed { counts[claimed.cap?.key ?? "", default: 0] += 1 }
                    }
                } catch {
                    errors.add(1, ordering: .relaxed)
                }
            }
        }
        #expect(errors.load(ordering: .relaxed) == 0)
        let counts = outcomes.withLock { $0 }
        #expect(counts.count == 300 && counts.values.allSatisfy { $0 == 1 }, "every user exactly once")
    }

    @Test("jobs without a cap pass no cap argument: the claim call is as before")
    func noCapNoArguments() throws {
        let plain = (0..<3).map { item("u\($0)", "c1", rules: nil) }
        let answers = try store.claim(plain, nowMs: nil, leaseMs: 30_000)
        #expect(answers.replies == [.claimed, .claimed, .claimed])
        #expect(try client.command("KEYS", "*:cap:*") == .array([]), "no cap set was written")
    }

    @Test("memory: one user's set with 3 sends of typical campaign ids, measured with MEMORY USAGE")
    func memory() throws {
        let rules = [CapRule(count: 3, windowMs: day)]
        for campaign in ["spring-sale-2026-04", "weekly-digest-0417", "cart-reminder-0418"] {
            _ = try store.claim([item("user-000123456", campaign, rules: rules)], nowMs: nil, leaseMs: 30_000)
        }
        let bytes = try client.command("MEMORY", "USAGE", .string(target("user-000123456", rules).key)).integerValue ?? 0
        print("frequency cap set, 3 sends: MEMORY USAGE \(bytes) bytes")
        #expect(bytes > 0 && bytes < 400, "docs/caps.md states the figure")
    }

    @Test("on a Redis Cluster: reservations ride in the claim's round trip, a capped claim is given back, a race keeps the cap")
    func cluster() throws {
        let cluster = try RedisClusterServer(masters: 3, replicasPerMaster: 0)
        let clusterClient = try RedisClusterClient(url: cluster.url)
        let clusterStore = DeliveryStateStore(client: clusterClient)
        try clusterStore.preloadScripts()
        let users = (0..<40).map { "u\($0)" }
        let first = try clusterStore.claim(users.map { item($0, "c1") } + users.map { item($0, "c2") }, nowMs: nil, leaseMs: 30_000)
        #expect(first.replies.allSatisfy { $0 == .claimed })
        let trips = clusterClient.roundTripCount
        let third = try clusterStore.claim(users.map { item($0, "c3") }, nowMs: nil, leaseMs: 30_000)
        #expect(third.replies.allSatisfy { $0 == .capped })
        #expect(clusterClient.roundTripCount == trips + 2, "one round trip, and one to give back the claims it took")
        // The claims taken in the cap's slot were given back: another owner claims them at once.
        let after = try clusterStore.claim(users.map { item($0, "c3", owner: "o2", rules: nil) }, nowMs: nil, leaseMs: 30_000)
        #expect(after.replies.allSatisfy { $0 == .claimed })
        // Claimed elsewhere (o2 holds c3) under a new rule of 5/1d: the reservation is given back.
        let rules = [CapRule(count: 5, windowMs: day)]
        let elsewhere = try clusterStore.claim([item("u0", "c3", rules: rules)], nowMs: nil, leaseMs: 30_000)
        #expect(elsewhere.replies == [.claimedElsewhere])
        #expect(try members(target("u0", rules).key, clusterClient) == 2, "c1 and c2 only")
        // Two owners racing two new campaigns for fresh users under 1/1d.
        let one = [CapRule(count: 1, windowMs: day)]
        let other = DeliveryStateStore(client: try RedisClusterClient(url: cluster.url))
        let stores = [clusterStore, other]
        let claimed = Mutex<[String: Int]>([:])
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            for batch in stride(from: 0, to: 100, by: 10) {
                let items = (batch..<batch + 10).map { item("r\($0)", "x\(worker)", owner: "w\(worker)", rules: one) }
                guard let replies = try? stores[worker].claim(items, nowMs: nil, leaseMs: 30_000).replies else { continue }
                claimed.withLock { counts in for (i, reply) in zip(items, replies) where reply == .claimed { counts[i.cap?.key ?? "", default: 0] += 1 } }
            }
        }
        let counts = claimed.withLock { $0 }
        #expect(counts.values.allSatisfy { $0 == 1 }, "never two sends for one user")
        #expect(counts.count == 100, "and every user one")
    }
}
