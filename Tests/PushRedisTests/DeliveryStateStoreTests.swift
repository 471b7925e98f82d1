import Foundation
import PushCore
import PushTestSupport
import Testing
@testable import PushRedis

private typealias Item = DeliveryStateStore.ClaimItem
private typealias Entry = DeliveryStateStore.RecordEntry

/// An item of app `app`, campaign `cmp`, the msgId `m<n>`.
private func item(_ n: Int, owner: String = "o1", app: String = "app", campaign: String = "cmp", platform: String = "ios", token: String? = nil) -> Item {
    Item(appID: app, campaignID: campaign, key: DedupKey(msgID: "m\(n)"), owner: owner, platform: platform, tokenHash: token ?? "h\(n)")
}

private func sent(_ item: Item, retentionMs: Int64 = 3_600_000) -> Entry {
    Entry(appID: item.appID, campaignID: item.campaignID, key: item.key, owner: item.owner, sentRetentionMs: retentionMs)
}

private func unanswered(_ item: Item, retentionMs: Int64 = 3_600_000) -> Entry {
    Entry(appID: item.appID, campaignID: item.campaignID, key: item.key, owner: item.owner, sentRetentionMs: nil,
          unansweredRetentionMs: retentionMs)
}

private func release(_ item: Item) -> Entry {
    Entry(appID: item.appID, campaignID: item.campaignID, key: item.key, owner: item.owner, sentRetentionMs: nil)
}

@Suite("DeliveryStateStore against a real redis-server")
struct DeliveryStateStoreTests {
    let server: RedisServer
    let client: RedisClient
    let store: DeliveryStateStore

    init() throws {
        server = try RedisServer()
        client = try RedisClient(url: server.url)
        store = DeliveryStateStore(client: client)
    }

    // MARK: claims / record (docs/reference/redis.md)

    @Test("a batch is claimed in one round trip; another owner waits; the same owner renews; once sent, everyone gets alreadySent")
    func claimProtocol() throws {
        try store.preloadScripts()
        let mine = (0..<500).map { item($0) }
        var trips = client.roundTripCount
        let first = try store.claim(mine, nowMs: 1_000, leaseMs: 30_000)
        #expect(client.roundTripCount == trips + 1)
        #expect(first.replies == Array(repeating: .claimed, count: 500))
        #expect(first.invalidSinceMs == Array(repeating: nil, count: 500))

        let theirs = (0..<500).map { item($0, owner: "o2") }
        #expect(try store.claim(theirs, nowMs: 2_000, leaseMs: 30_000).replies == Array(repeating: .claimedElsewhere, count: 500))
        #expect(try store.claim(Array(mine.prefix(3)), nowMs: 2_000, leaseMs: 30_000).replies == [.alreadyOurs, .alreadyOurs, .alreadyOurs])

        trips = client.roundTripCount
        try store.record(mine.prefix(250).map { sent($0) } + mine.suffix(250).map { release($0) })
        #expect(client.roundTripCount == trips + 1)
        let after = try store.claim(theirs, nowMs: 3_000, leaseMs: 30_000)
        #expect(after.replies.prefix(250).allSatisfy { $0 == .alreadySent })
        #expect(after.replies.suffix(250).allSatisfy { $0 == .claimed })  // released: taken at once
        // The same msgId in another campaign or app is another message.
        #expect(try store.claim([item(0, campaign: "other"), item(0, app: "other")], nowMs: 3_000, leaseMs: 30_000).replies == [.claimed, .claimed])
    }

    @Test("claims and records of more campaigns than the key cache keeps, interleaved, land in each campaign's own buckets")
    func manyCampaigns() throws {
        let campaigns = (0..<(DedupKeyCache.maxCampaigns * 2)).map { "cmp\($0)" }
        // One batch mixing every campaign, then one batch per campaign, both recorded as sent.
        let mixed = (0..<200).map { item($0, campaign: campaigns[$0 % campaigns.count]) }
        #expect(try store.claim(mixed, nowMs: 1_000, leaseMs: 30_000).replies == Array(repeating: .claimed, count: 200))
        for campaign in campaigns {
            let batch = (200..<260).map { item($0, campaign: campaign) }
            #expect(try store.claim(batch, nowMs: 1_000, leaseMs: 30_000).replies == Array(repeating: .claimed, count: 60))
            try store.record(batch.map { sent($0) })
        }
        try store.record(mixed.map { sent($0) })
        let again = try store.claim(mixed + campaigns.map { item(200, owner: "o2", campaign: $0) }, nowMs: 2_000, leaseMs: 30_000)
        #expect(again.replies == Array(repeating: .alreadySent, count: 200 + campaigns.count))
        // The same msgIds in a campaign none of them used are new messages.
        #expect(try store.claim((0..<5).map { item($0, campaign: "fresh") }, nowMs: 2_000, leaseMs: 30_000).replies == Array(repeating: .claimed, count: 5))
        // Each sent record sits in the key RedisKeys names.
        let first = mixed[0]
        #expect(try client.command("SISMEMBER", .string(RedisKeys.dedupSent(appID: "app", campaignID: first.campaignID, bucket: first.key)),
                                   .int(first.key.memberValue)).integerValue == 1)
    }

    @Test("a lease that ran out (a dead worker) is taken over; a live one is not")
    func leaseExpiry() throws {
        let dead = item(7, owner: "dead")
        #expect(try store.claim([dead], nowMs: 10_000, leaseMs: 5_000).replies == [.claimed])
        #expect(try store.claim([item(7, owner: "next")], nowMs: 14_999, leaseMs: 5_000).replies == [.claimedElsewhere])
        #expect(try store.claim([item(7, owner: "next")], nowMs: 15_001, leaseMs: 5_000).replies == [.claimed])
        // The late owner's release or record does not remove its successor's claim.
        try store.record([release(dead)])
        #expect(try store.claim([item(7, owner: "third")], nowMs: 16_000, leaseMs: 5_000).replies == [.claimedElsewhere])
        // Its sent record still counts: the message was sent.
        try store.record([sent(dead)])
        #expect(try store.claim([item(7, owner: "third")], nowMs: 16_000, leaseMs: 5_000).replies == [.alreadySent])
    }

    @Test("standalone: one script call per 1,000 items whatever the buckets; cluster mode: one per bucket, same answers")
    func scriptGroups() throws {
        let many = (0..<2_500).map { item($0) }
        let standalone = DeliveryStateStore.groups(many.count) { (many[$0].appID, many[$0].campaignID, many[$0].key.bucket) }
        #expect(standalone.map(\.count) == [1000, 1000, 500])
        let cluster = DeliveryStateStore.groups(many.count, keysMustShareSlot: true) { (many[$0].appID, many[$0].campaignID, many[$0].key.bucket) }
        #expect(cluster.count == Set(many.map(\.key.bucket)).count)
        #expect(cluster.allSatisfy { group in Set(group.map { many[$0].key.bucket }).count == 1 })
        #expect(cluster.flatMap { $0 }.sorted() == Array(0..<2_500))

        let clusterStore = DeliveryStateStore(client: client, keysMustShareSlot: true)
        try clusterStore.preloadScripts()
        let trips = client.roundTripCount
        #expect(try clusterStore.claim(Array(many.prefix(100)), nowMs: 0, leaseMs: 1_000).replies == Array(repeating: .claimed, count: 100))
        #expect(client.roundTripCount == trips + 1)
        try clusterStore.record(many.prefix(100).map { sent($0) })
        #expect(try store.claim(Array(many.prefix(100)), nowMs: 0, leaseMs: 1_000).replies == Array(repeating: .alreadySent, count: 100))
    }

    @Test("dead-token records and provider backoffs ride along in the claim's round trip")
    func claimReadsInvalidAndBackoffs() throws {
        try store.preloadScripts()
        try store.record([], invalid: [(appID: "app", platform: "ios", tokenHash: "h5", invalidSinceMs: 1_000)])
        try store.setBackoff(appID: "app", provider: "fcm", milliseconds: 60_000)
        let trips = client.roundTripCount
        let answers = try store.claim((0..<10).map { item($0) }, nowMs: 0, leaseMs: 1_000,
                                      backoffs: [(appID: "app", provider: "fcm"), (appID: "app", provider: "apns")])
        #expect(client.roundTripCount == trips + 1)
        #expect(answers.invalidSinceMs[5] == 1_000)
        #expect(answers.invalidSinceMs.enumerated().allSatisfy { $0.offset == 5 || $0.element == nil })
        #expect((55_000...60_000) ~= (answers.backoffRemainingMs[0] ?? 0))
        #expect(answers.backoffRemainingMs[1] == nil)
        // Invalid tokens are per platform.
        #expect(try store.claim([item(99, platform: "android", token: "h5")], nowMs: 0, leaseMs: 1_000).invalidSinceMs == [nil])
        // More than one MGET's worth keeps item order.
        let big = (0..<2_300).map { item($0, campaign: "big", token: $0 == 2_299 ? "h5" : "x\($0)") }
        #expect(try store.claim(big, nowMs: 0, leaseMs: 1_000).invalidSinceMs.last == 1_000)
    }

    @Test("a sent bucket stays a compact intset and lives as long as the longest retention recorded into it")
    func compactSentState() throws {
        let items = (0..<2_000).map { item($0, campaign: "compact") }
        _ = try store.claim(items, nowMs: 0, leaseMs: 60_000)
        try store.record(items.map { sent($0, retentionMs: 3_600_000) })
        let key = RedisKeys.dedupSent(appID: "app", campaignID: "compact", bucket: items[0].key)
        #expect(try client.command("OBJECT", "ENCODING", .string(key)).text == "intset")
        #expect((3_590_000...3_600_000) ~= (try client.command("PTTL", .string(key)).integerValue ?? 0))
        // A longer retention lengthens it; a shorter one never shortens it.
        try store.record([sent(items[0], retentionMs: 7_200_000)])
        try store.record([sent(items[0], retentionMs: 60_000)])
        #expect((7_190_000...7_200_000) ~= (try client.command("PTTL", .string(key)).integerValue ?? 0))
        // Claims are gone once recorded: the claims hashes are empty (so deleted).
        let claims = RedisKeys.dedupClaims(appID: "app", campaignID: "compact", bucket: items[0].key)
        #expect(try client.command("EXISTS", .string(claims)).integerValue == 0)
    }

    @Test("a reply that is not one code per item is an error, not a guess")
    func claimRefusesMalformedReplies() throws {
        // A key of the wrong type makes the script fail: an error reply, thrown.
        let victim = item(1, campaign: "wrongtype")
        try client.command("SET", .string(RedisKeys.dedupSent(appID: "app", campaignID: "wrongtype", bucket: victim.key)), "x")
        #expect(throws: RedisError.self) { try store.claim([victim], nowMs: 0, leaseMs: 1_000) }
    }

    @Test("recording an invalid token again keeps the larger invalidSince")
    func keepLargerInvalidSince() throws {
        let key = RedisKeys.invalidToken(appID: "app", platform: "web", tokenHash: "t")
        try store.record([], invalid: [(appID: "app", platform: "web", tokenHash: "t", invalidSinceMs: 2_000)])
        try store.record([], invalid: [(appID: "app", platform: "web", tokenHash: "t", invalidSinceMs: 1_000)])
        #expect(try client.command("GET", .string(key)).integerValue == 2_000)
        #expect(try store.claim([item(1, platform: "web", token: "t")], nowMs: 0, leaseMs: 1_000).invalidSinceMs == [2_000])
        try store.record([], invalid: [(appID: "app", platform: "web", tokenHash: "t", invalidSinceMs: 3_000)])
        #expect(try client.command("GET", .string(key)).integerValue == 3_000)
        // Both in one batch: still the larger.
        try store.record([], invalid: [
            (appID: "app", platform: "web", tokenHash: "u", invalidSinceMs: 7_000),
            (appID: "app", platform: "web", tokenHash: "u", invalidSinceMs: 5_000),
        ])
        #expect(try client.command("GET", .string(RedisKeys.invalidToken(appID: "app", platform: "web", tokenHash: "u"))).integerValue == 7_000)
    }

    @Test("the async variants agree with the blocking ones")
    func asyncVariants() async throws {
        let bucket = DeliveryStateStore.Bucket(key: RedisKeys.providerBucket(appID: "a", provider: "fcm"), ratePerSecond: 1, burst: 2)
        #expect(try await store.acquire(count: 3, from: [bucket], nowMs: 0) == (granted: 2, retryAfterMs: 1_000))
        try await store.setBackoff(appID: "a", provider: "fcm", milliseconds: 10_000)
        #expect((9_000...10_000) ~= (try await store.backoffsRemaining([(appID: "a", provider: "fcm")]).first.flatMap { $0 } ?? 0))
    }

    // MARK: token buckets

    @Test("a token bucket grants its burst, then refills at its rate (injected clock)")
    func rateAndBurst() throws {
        let bucket = DeliveryStateStore.Bucket(key: RedisKeys.providerBucket(appID: "app", provider: "apns"), ratePerSecond: 10, burst: 5)
        #expect(try store.acquire(count: 10, from: [bucket], nowMs: 100_000) == (granted: 5, retryAfterMs: 500))
        #expect(try store.acquire(count: 1, from: [bucket], nowMs: 100_000) == (granted: 0, retryAfterMs: 100))
        // 250 ms later: 2.5 tokens, 2 whole ones; 5 more need (5 - 0.5) / 10 s.
        #expect(try store.acquire(count: 10, from: [bucket], nowMs: 100_250) == (granted: 2, retryAfterMs: 450))
        // Long idle: capped at the burst.
        #expect(try store.acquire(count: 100, from: [bucket], nowMs: 200_000) == (granted: 5, retryAfterMs: 500))
        #expect(try store.acquire(count: 3, from: [bucket], nowMs: 200_300) == (granted: 3, retryAfterMs: 0))
    }

    @Test("a clock behind the bucket's last refill gets no refill and waits for it")
    func clockBehind() throws {
        let bucket = DeliveryStateStore.Bucket(key: "pw:{app}:tb:test", ratePerSecond: 10, burst: 2)
        #expect(try store.acquire(count: 2, from: [bucket], nowMs: 5_000) == (granted: 2, retryAfterMs: 0))
        #expect(try store.acquire(count: 1, from: [bucket], nowMs: 4_000) == (granted: 0, retryAfterMs: 1_100))
    }

    @Test("several buckets grant the minimum and each loses only what was granted")
    func multiBucket() throws {
        let provider = DeliveryStateStore.Bucket(key: RedisKeys.providerBucket(appID: "app", provider: "fcm"), ratePerSecond: 100, burst: 10)
        let campaign = DeliveryStateStore.Bucket(key: RedisKeys.campaignBucket(appID: "app", campaignID: "cmp_42"), ratePerSecond: 1, burst: 3)
        try store.preloadScripts()
        let trips = client.roundTripCount
        let first = try store.acquire(count: 5, from: [provider, campaign], nowMs: 0)
        #expect(client.roundTripCount == trips + 1)
        #expect(first.granted == 3)
        #expect(first.retryAfterMs == 2_000) // the campaign needs 2 more tokens at 1/s
        #expect(try client.command("HGET", .string(provider.key), "t").text.flatMap(Double.init) == 7)
        #expect(try store.acquire(count: 1, from: [provider, campaign], nowMs: 0) == (granted: 0, retryAfterMs: 1_000))
        #expect(try client.command("HGET", .string(provider.key), "t").text.flatMap(Double.init) == 7)
        #expect(try client.command("HGET", .string(campaign.key), "t").text.flatMap(Double.init) == 0)
    }

    @Test("no over-grant when two clients drain one bucket concurrently")
    func concurrentClients() async throws {
        let other = DeliveryStateStore(client: try RedisClient(url: server.url))
        let bucket = DeliveryStateStore.Bucket(key: RedisKeys.campaignBucket(appID: "app", campaignID: "race"), ratePerSecond: 0.001, burst: 300)
        let stores = [store, other]
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<4 {
                let store = stores[worker % 2]
                group.addTask {
                    var granted = 0
                    for round in 0..<100 {
                        granted += try await store.acquire(count: 1 + (round + worker) % 4, from: [bucket], nowMs: 1_000).granted
                    }
                    return granted
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(total == 300)
    }

    @Test("invalid buckets are refused; nothing asked or no bucket needs no round trip")
    func bucketEdges() throws {
        let trips = client.roundTripCount
        #expect(try store.acquire(count: 0, from: [.init(key: "k", ratePerSecond: 1, burst: 1)], nowMs: 0) == (granted: 0, retryAfterMs: 0))
        #expect(try store.acquire(count: 7, from: [], nowMs: 0) == (granted: 7, retryAfterMs: 0))
        #expect(client.roundTripCount == trips)
        for bad in [DeliveryStateStore.Bucket(key: "k", ratePerSecond: 0, burst: 5), .init(key: "k", ratePerSecond: 1, burst: 0.5),
                    .init(key: "k", ratePerSecond: .nan, burst: 5), .init(key: "k", ratePerSecond: 1, burst: .infinity)] {
            #expect(throws: RedisError.self) { try store.acquire(count: 1, from: [bad], nowMs: 0) }
        }
    }

    @Test("scripts run again after SCRIPT FLUSH (NOSCRIPT ⇒ EVAL), and EVAL caches them again")
    func noscriptFallback() throws {
        let bucket = DeliveryStateStore.Bucket(key: RedisKeys.providerBucket(appID: "app", provider: "webpush"), ratePerSecond: 1, burst: 4)
        #expect(try store.acquire(count: 1, from: [bucket], nowMs: 0).granted == 1)
        try client.command("SCRIPT", "FLUSH")
        #expect(try client.command("SCRIPT", "EXISTS", .string(DeliveryStateStore.tokenBucket.sha1)) == .array([.integer(0)]))
        var trips = client.roundTripCount
        #expect(try store.acquire(count: 1, from: [bucket], nowMs: 0).granted == 1)
        #expect(client.roundTripCount == trips + 2)
        #expect(try client.command("SCRIPT", "EXISTS", .string(DeliveryStateStore.tokenBucket.sha1)) == .array([.integer(1)]))

        try client.command("SCRIPT", "FLUSH")
        trips = client.roundTripCount
        let s = item(1, token: "u")
        #expect(try store.claim([s], nowMs: 0, leaseMs: 1_000).replies == [.claimed])
        #expect(client.roundTripCount == trips + 2)
        try client.command("SCRIPT", "FLUSH")
        trips = client.roundTripCount
        try store.record([sent(s)], invalid: [(appID: "app", platform: "ios", tokenHash: "t", invalidSinceMs: 9)])
        #expect(client.roundTripCount == trips + 2)
        #expect(try store.claim([item(2, token: "t"), s], nowMs: 0, leaseMs: 1_000) == .init(
            replies: [.claimed, .alreadySent], invalidSinceMs: [9, nil], backoffRemainingMs: []))
        try client.command("SCRIPT", "FLUSH")
        try store.setBackoff(appID: "app", provider: "fcm", milliseconds: 5_000)
        #expect((4_000...5_000) ~= (try store.backoffRemaining(appID: "app", provider: "fcm") ?? 0))
        trips = client.roundTripCount
        try store.setBackoff(appID: "app", provider: "fcm", milliseconds: 5_000)
        #expect(client.roundTripCount == trips + 1)
    }

    @Test("script names are the SHA-1 Redis computes", arguments: DeliveryStateStore.scripts)
    func scriptSHA(script: RedisScript) throws {
        #expect(try client.command("SCRIPT", "LOAD", .string(script.source)).text == script.sha1)
    }

    // MARK: backoff

    @Test("backoff keeps the later end, judged by Redis's clock; unknown pairs have none; many in one round trip")
    func backoffKeepLater() throws {
        #expect(try store.backoffRemaining(appID: "app", provider: "fcm") == nil)
        #expect((4_000...5_000) ~= (try store.setBackoff(appID: "app", provider: "fcm", milliseconds: 5_000)))
        // A shorter backoff keeps the longer one and says so.
        #expect((4_000...5_000) ~= (try store.setBackoff(appID: "app", provider: "fcm", milliseconds: 1_000)))
        #expect((4_000...5_000) ~= (try store.backoffRemaining(appID: "app", provider: "fcm") ?? 0))
        try store.setBackoff(appID: "app", provider: "fcm", milliseconds: 9_000)
        #expect((8_000...9_000) ~= (try store.backoffRemaining(appID: "app", provider: "fcm") ?? 0))
        try store.setBackoff(appID: "other", provider: "apns", milliseconds: 2_000)
        let trips = client.roundTripCount
        let remaining = try store.backoffsRemaining([(appID: "app", provider: "fcm"), (appID: "app", provider: "apns"), (appID: "other", provider: "apns")])
        #expect(client.roundTripCount == trips + 1)
        #expect((8_000...9_000) ~= (remaining[0] ?? 0))
        #expect(remaining[1] == nil)
        #expect((1_000...2_000) ~= (remaining[2] ?? 0))
        // The key lives until the kept end plus the grace, on the server's clock.
        let ttl = try client.command("PTTL", .string(RedisKeys.backoff(appID: "app", provider: "fcm"))).integerValue ?? -1
        #expect((8_000 + DeliveryStateStore.backoffGraceMs)...(9_000 + DeliveryStateStore.backoffGraceMs) ~= ttl)
    }

    @Test("a backoff of zero is no backoff")
    func zeroBackoff() throws {
        try store.setBackoff(appID: "app", provider: "fcm", milliseconds: 0)
        #expect(try store.backoffRemaining(appID: "app", provider: "fcm") == nil)
    }

    // MARK: leases on Redis's clock, unanswered attempts

    @Test("leases are judged by Redis's clock: a claim made without a caller's clock holds against every other owner until it ends")
    func leasesOnRedisClock() throws {
        let mine = item(1, owner: "w1")
        #expect(try store.claim([mine], leaseMs: 1_000).replies == [.claimed])
        // Another owner, whatever its own clock says, meets the live lease.
        #expect(try store.claim([item(1, owner: "w2")], leaseMs: 1_000).replies == [.claimedElsewhere])
        // The lease end is written in Redis's time (the script read TIME).
        let raw = try client.command("HGET", .string(RedisKeys.dedupClaims(appID: "app", campaignID: "cmp", bucket: mine.key)),
                                     .int(mine.key.memberValue)).text ?? ""
        let end = Int64(raw.split(separator: ":").last ?? "") ?? 0
        guard case .array(let time) = try client.command("TIME"), time.count == 2,
              let seconds = time[0].text.flatMap({ Int64($0) }), let micros = time[1].text.flatMap({ Int64($0) }) else {
            Issue.record("TIME did not answer two integers"); return
        }
        let redisNow = seconds * 1000 + micros / 1000
        #expect((redisNow...(redisNow + 1_000)) ~= end)
        // Renewal by the holder extends it; once it ends, another owner takes it.
        #expect(try store.claim([mine], leaseMs: 300).replies == [.alreadyOurs])
        Thread.sleep(forTimeInterval: 0.4)
        #expect(try store.claim([item(1, owner: "w2")], leaseMs: 1_000).replies == [.claimed])
    }

    @Test("an unanswered attempt allows one resend under the default limit and none under limit 1; the marker outlives the lease")
    func unansweredAttempts() throws {
        try store.preloadScripts()
        let first = item(1, owner: "w1")
        #expect(try store.claim([first], leaseMs: 30_000).replies == [.claimed])
        try store.record([unanswered(first, retentionMs: 3_600_000)])
        // The claim is released; the next claim is the resend, by anyone.
        #expect(try store.claim([item(1, owner: "w2")], leaseMs: 30_000, unansweredLimit: 1).replies == [.unansweredFinal])
        #expect(try store.claim([item(1, owner: "w2")], leaseMs: 30_000).replies == [.claimedResend])
        #expect(try store.claim([item(1, owner: "w3")], leaseMs: 30_000).replies == [.claimedElsewhere])
        // The resend unanswered too: final for everyone, nothing claimed.
        try store.record([unanswered(item(1, owner: "w2"), retentionMs: 3_600_000)])
        #expect(try store.claim([item(1, owner: "w3")], leaseMs: 30_000).replies == [.unansweredFinal])
        let claims = RedisKeys.dedupClaims(appID: "app", campaignID: "cmp", bucket: first.key)
        #expect(try client.command("HGET", .string(claims), .int(first.key.memberValue)) == .null)
        // The marker lives as long as the retention, not two leases.
        #expect((3_590_000...3_600_000) ~= (try client.command("PTTL", .string(claims)).integerValue ?? 0))
        // A resend that was accepted ends as sent: everyone else gets alreadySent.
        let other = item(2, owner: "w1")
        _ = try store.claim([other], leaseMs: 30_000)
        try store.record([unanswered(other)])
        #expect(try store.claim([item(2, owner: "w2")], leaseMs: 30_000).replies == [.claimedResend])
        try store.record([sent(item(2, owner: "w2"))])
        #expect(try store.claim([item(2, owner: "w3")], leaseMs: 30_000).replies == [.alreadySent])
        // Recipients of a bucket with no marker are claimed as before.
        #expect(try store.claim([item(3, owner: "w1")], leaseMs: 30_000).replies == [.claimed])
    }

    // MARK: TTLs and keys

    @Test("every key written has a TTL")
    func everyKeyHasTTL() throws {
        let one = item(1), two = item(2, app: "b")
        _ = try store.claim([one, two, item(3)], nowMs: nowMs(), leaseMs: 30_000)  // item 3 stays claimed
        try store.record(
            [sent(one, retentionMs: 7 * 86_400_000), sent(two)],
            invalid: [(appID: "app", platform: "ios", tokenHash: "t", invalidSinceMs: 1), (appID: "app", platform: "ios", tokenHash: "t", invalidSinceMs: 0)]
        )
        _ = try store.acquire(count: 2, from: [
            .init(key: RedisKeys.providerBucket(appID: "app", provider: "apns"), ratePerSecond: 50, burst: 100),
            .init(key: RedisKeys.campaignBucket(appID: "app", campaignID: "c"), ratePerSecond: 1000.0 / 60, burst: 1000.0 / 60),
        ], nowMs: nowMs())
        try store.setBackoff(appID: "app", provider: "fcm", milliseconds: 30_000)
        try store.setBackoff(appID: "app", provider: "fcm", milliseconds: 0)

        guard case .array(let keys) = try client.command("KEYS", "*") else {
            Issue.record("KEYS did not answer an array")
            return
        }
        #expect(keys.count == 7)
        var ttls: [String: Int64] = [:]
        for key in keys.compactMap(\.text) {
            ttls[key] = try client.command("PTTL", .string(key)).integerValue
        }
        #expect(ttls.values.allSatisfy { $0 > 0 }, "keys without TTL: \(ttls.filter { $0.value <= 0 })")
        let day: Int64 = 86_400_000
        #expect((7 * day - 60_000)...(7 * day) ~= ttls[RedisKeys.dedupSent(appID: "app", campaignID: "cmp", bucket: one.key)] ?? 0)
        #expect((50_000...60_000) ~= ttls[RedisKeys.dedupClaims(appID: "app", campaignID: "cmp", bucket: item(3).key)] ?? 0)
        #expect((90 * day - 60_000)...(90 * day) ~= ttls[RedisKeys.invalidToken(appID: "app", platform: "ios", tokenHash: "t")] ?? 0)
        #expect((1_000...3_000) ~= ttls[RedisKeys.providerBucket(appID: "app", provider: "apns")] ?? 0)
    }

    @Test("custom TTLs are used")
    func customTTLs() throws {
        let short = DeliveryStateStore(client: client, invalidTTL: .milliseconds(1_500))
        try short.record([], invalid: [(appID: "a", platform: "ios", tokenHash: "t", invalidSinceMs: 1)])
        #expect((1...1_500) ~= (try client.command("PTTL", .string(RedisKeys.invalidToken(appID: "a", platform: "ios", tokenHash: "t"))).integerValue ?? 0))
    }

    @Test("Redis down surfaces as a connection error from the store, and it works again after a restart")
    func storeRedisDown() throws {
        let one = item(1)
        _ = try store.claim([one], nowMs: 0, leaseMs: 1_000)
        try store.record([sent(one)])
        crash(server.process)
        let claimError = #expect(throws: RedisError.self) { try store.claim([one], nowMs: 0, leaseMs: 1_000) }
        #expect(claimError?.isConnectionError == true)
        let recordError = #expect(throws: RedisError.self) { try store.record([sent(one)]) }
        #expect(recordError?.isConnectionError == true)
        let acquireError = #expect(throws: RedisError.self) {
            try store.acquire(count: 1, from: [.init(key: "k", ratePerSecond: 1, burst: 1)], nowMs: 0)
        }
        #expect(acquireError?.isConnectionError == true)
        let restarted = try startRedis(port: server.port)
        defer { crash(restarted) }
        // A fresh server lost the data (no persistence in tests): the state is advisory, nothing hangs.
        #expect(try store.claim([one], nowMs: 0, leaseMs: 1_000).replies == [.claimed])
    }
}

@Suite("RedisKeys")
struct RedisKeysTests {
    @Test("key layout: de-duplication tagged by campaign bucket, dead tokens untagged, the rest by app", arguments: [
        (RedisKeys.dedupSent(appID: "app_demo", campaignID: "cmp_42", bucket: DedupKey(fingerprint: 0xABC0_0000_0000_0001)), "pw:{app_demo:cmp_42:abc}:s"),
        (RedisKeys.dedupClaims(appID: "app_demo", campaignID: "cmp_42", bucket: DedupKey(fingerprint: 0x0010_0000_0000_0000)), "pw:{app_demo:cmp_42:001}:c"),
        (RedisKeys.invalidToken(appID: "app_demo", platform: "ios", tokenHash: "9f86d081"), "pw:inv:app_demo:ios:9f86d081"),
        (RedisKeys.providerBucket(appID: "app_demo", provider: "apns"), "pw:{app_demo}:tb:apns"),
        (RedisKeys.campaignBucket(appID: "app_demo", campaignID: "cmp_42"), "pw:{app_demo}:tb:cmp:cmp_42"),
        (RedisKeys.backoff(appID: "app_demo", provider: "fcm"), "pw:{app_demo}:backoff:fcm"),
    ])
    func layout(key: String, expected: String) {
        #expect(key == expected)
    }

    @Test("structural characters in components are escaped, so keys cannot collide or change slot")
    func escaping() {
        let key = DedupKey(fingerprint: 0)
        #expect(RedisKeys.dedupSent(appID: "a}b", campaignID: "x:y", bucket: key) == "pw:{a%7Db:x%3Ay:000}:s")
        #expect(RedisKeys.dedupSent(appID: "a{b", campaignID: "100%", bucket: key) == "pw:{a%7Bb:100%25:000}:s")
        #expect(RedisKeys.dedupSent(appID: "a:b", campaignID: "c", bucket: key) != RedisKeys.dedupSent(appID: "a", campaignID: "b:c", bucket: key))
        #expect(RedisKeys.invalidToken(appID: "a", platform: "i:os", tokenHash: "h") != RedisKeys.invalidToken(appID: "a", platform: "i", tokenHash: "os:h"))
    }

    @Test("a component needs escaping exactly when it holds % : { or }, wherever it is", arguments: [
        ("", false), ("abc", false), ("ça-va_é", false), (String(repeating: "x", count: 70), false),
        ("%", true), (":x", true), ("x{", true), ("a}b", true),
        (String(repeating: "x", count: 70) + ":", true), ("9f86d081" + String(repeating: "0", count: 56) + "}", true),
    ])
    func needsEscape(component: String, expected: Bool) {
        #expect(RedisKeys.needsEscape(component) == expected)
        #expect((RedisKeys.escape(component) != component) == expected)
    }

    @Test("every bucket's key names it with its three hex digits; non-ASCII components pass through")
    func everyBucket() {
        for bucket in 0..<DedupKey.bucketCount {
            let key = DedupKey(fingerprint: UInt64(bucket) << 52 | 0x1234)
            #expect(RedisKeys.dedupSent(appID: "app", campaignID: "çmp", bucket: key) == "pw:{app:çmp:\(key.bucketHex)}:s")
            #expect(RedisKeys.dedupClaims(appID: "app", campaignID: "çmp", bucket: key) == "pw:{app:çmp:\(key.bucketHex)}:c")
        }
        #expect(RedisKeys.invalidToken(appID: "", platform: "web", tokenHash: "ö") == "pw:inv::web:ö")
    }

    @Test("dead-token keys built with a reused prefix are RedisKeys' keys, whatever the app, platform and hash hold")
    func invalidTokenKeys() {
        let parts = [("app", "ios", "9f86d081"), ("app", "ios", "ab"), ("app", "android", "ab"), ("a:p}p", "i{os", "h%1"),
                     ("a:p}p", "i{os", "h:2"), ("app", "ios", ""), ("", "", "x}")]
        let keys = DeliveryStateStore.invalidTokenKeys(parts)
        #expect(keys == parts.map { RedisKeys.invalidToken(appID: $0.0, platform: $0.1, tokenHash: $0.2) })
        #expect(keys[3] == "pw:inv:a%3Ap%7Dp:i%7Bos:h%251")
    }

    @Test("the key cache answers RedisKeys' strings for every bucket, across campaigns interleaved past its capacity")
    func keyCache() {
        let cache = DedupKeyCache()
        // More campaigns than it keeps, used in turn and again: evicted ones are rebuilt the same.
        let campaigns = (0..<(DedupKeyCache.maxCampaigns + 2)).map { ("a}p\($0 % 2)", "c:\($0)") }
        for round in 0..<2 {
            for (app, campaign) in campaigns {
                for bucket in stride(from: round, to: DedupKey.bucketCount, by: 97) {
                    let key = DedupKey(fingerprint: UInt64(bucket) << 52)
                    let pair = cache.keys(app: app, campaign: campaign, bucket: bucket)
                    #expect(pair.sent.text == RedisKeys.dedupSent(appID: app, campaignID: campaign, bucket: key))
                    #expect(pair.claims.text == RedisKeys.dedupClaims(appID: app, campaignID: campaign, bucket: key))
                }
                #expect(cache.campaignCount <= DedupKeyCache.maxCampaigns)
            }
        }
        #expect(cache.campaignCount == DedupKeyCache.maxCampaigns)
        let last = cache.keys(app: "app", campaign: "cmp", bucket: DedupKey.bucketCount - 1)
        #expect(last.sent.text == "pw:{app:cmp:fff}:s" && last.claims.text == "pw:{app:cmp:fff}:c")
    }

    @Test("a dedup key name is formatted, hashed to its slot and read as the very string RedisKeys builds, for every bucket of every kind of name")
    func dedupKeyNames() {
        let scopes = [("app", "cmp"), ("a}p{:%", "c:{x}%"), ("", ""), ("é✓", "kampanya-ü"), (String(repeating: "a", count: 300), "c")]
        var mismatches: [String] = []
        for (app, campaign) in scopes {
            let keys = DedupKeyCache().campaign(app: app, campaign: campaign)
            for bucket in 0..<DedupKey.bucketCount {
                let key = DedupKey(fingerprint: UInt64(bucket) << 52 | 0x1234)
                let (sent, claims) = keys.keys(bucket: key.bucket)
                let expected = (RedisKeys.dedupSent(appID: app, campaignID: campaign, bucket: key),
                                RedisKeys.dedupClaims(appID: app, campaignID: campaign, bucket: key))
                let formatted = HiredisContext.format([["EVALSHA", .dedupKey(sent), .dedupKey(claims), 7]])
                let reference = HiredisContext.format([["EVALSHA", .string(expected.0), .string(expected.1), 7]])
                if sent.text != expected.0 || claims.text != expected.1 || formatted != reference
                    || RedisClusterSlot.of(argument: .dedupKey(sent)) != RedisClusterSlot.of(expected.0)
                    || RedisClusterSlot.of(argument: .dedupKey(claims)) != RedisClusterSlot.of(expected.0) {
                    mismatches.append("\(app)/\(campaign) bucket \(bucket): \(sent.text) \(claims.text)")
                }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
        // Names of equal text are equal whichever cache built their prefix; others are not.
        let one = DedupKeyCache().keys(app: "app", campaign: "cmp", bucket: 7)
        let other = DedupKeyCache().keys(app: "app", campaign: "cmp", bucket: 7)
        #expect(one.sent == other.sent && one.claims == other.claims)
        #expect(one.sent != one.claims)
        #expect(one.sent != DedupKeyCache().keys(app: "app", campaign: "cmp", bucket: 8).sent)
        #expect(one.sent != DedupKeyCache().keys(app: "app", campaign: "cmq", bucket: 7).sent)
        // A bucket past the range is taken modulo the bucket count, as DedupKey does.
        #expect(DedupKeyCache().keys(app: "app", campaign: "cmp", bucket: DedupKey.bucketCount + 7).sent == one.sent)
    }

    @Test("SHA-1 test vectors (FIPS 180-4)", arguments: [
        ("", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        ("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
    ])
    func sha1(input: String, expected: String) {
        #expect(SHA1.hex(Array(input.utf8)) == expected)
    }
}
