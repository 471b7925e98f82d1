import Foundation
import PushTestSupport
import Testing
@testable import PushRedis

private typealias Item = DeliveryStateStore.CheckItem

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

    // MARK: check / record

    @Test("unknown recipients are fresh; recorded msgIDs are duplicates; one round trip per batch")
    func duplicates() throws {
        let items = (0..<500).map { Item(appID: "app", msgID: "m\($0)", platform: "ios", tokenHash: "h\($0)") }
        try store.preloadScripts() // recording runs a script: loaded, it is one round trip
        var trips = client.roundTripCount
        #expect(try store.check(items) == Array(repeating: .fresh, count: 500))
        #expect(client.roundTripCount == trips + 1)

        trips = client.roundTripCount
        try store.record(sent: items.prefix(250).map { (appID: $0.appID, msgID: $0.msgID) })
        #expect(client.roundTripCount == trips + 1)

        let results = try store.check(items)
        #expect(results.prefix(250).allSatisfy { $0 == .duplicate })
        #expect(results.suffix(250).allSatisfy { $0 == .fresh })
        // Same msgID in another app is another message.
        #expect(try store.check([Item(appID: "other", msgID: "m0", platform: "ios", tokenHash: "h0")]) == [.fresh])
    }

    @Test("check uses MGET: one command per app and per 1,000 keys, answers in item order, still one round trip")
    func checkBatchesWithMGET() throws {
        // 1,300 items over two apps, interleaved in runs: app a (700), app b (300), app a (300).
        let items = (0..<700).map { Item(appID: "a", msgID: "m\($0)", platform: "ios", tokenHash: "h\($0)") }
            + (0..<300).map { Item(appID: "b", msgID: "m\($0)", platform: "web", tokenHash: "h\($0)") }
            + (700..<1000).map { Item(appID: "a", msgID: "m\($0)", platform: "ios", tokenHash: "h\($0)") }
        let commands = DeliveryStateStore.checkCommands(items)
        #expect(commands.allSatisfy { $0.first == "MGET" && $0.count - 1 <= DeliveryStateStore.checkKeysPerCommand })
        #expect(commands.map { $0.count - 1 }.reduce(0, +) == 2 * items.count)
        #expect(commands.map { $0.count - 1 } == [1000, 400, 600, 600]) // a, a, b, a

        try store.record(sent: [(appID: "a", msgID: "m699"), (appID: "b", msgID: "m0"), (appID: "a", msgID: "m999")])
        try store.record(invalid: [(appID: "b", platform: "web", tokenHash: "h5", invalidSinceMs: 1_000)])
        let trips = client.roundTripCount
        let results = try store.check(items)
        #expect(client.roundTripCount == trips + 1)
        #expect(results.count == items.count)
        #expect(results[699] == .duplicate)
        #expect(results[700] == .duplicate)          // b/m0
        #expect(results[705] == .knownInvalid(invalidSinceMs: 1_000)) // b/h5
        #expect(results[999] == .fresh)              // b/m299
        #expect(results[1299] == .duplicate)         // a/m999
        #expect(results.filter { $0 == .fresh }.count == items.count - 4)
    }

    @Test("record: sent msgIDs of several apps, more than one script call's worth, in one round trip, each with its TTL")
    func recordManySent() throws {
        let sent = (0..<1_500).map { (appID: "a", msgID: "m\($0)") } + (0..<20).map { (appID: "b", msgID: "m\($0)") }
        try store.preloadScripts() // as the worker does at start-up (else NOSCRIPT ⇒ EVAL: a second trip)
        let trips = client.roundTripCount
        try store.record(sent: sent)
        #expect(client.roundTripCount == trips + 1)
        let items = sent.map { Item(appID: $0.appID, msgID: $0.msgID, platform: "ios", tokenHash: "h") }
        #expect(try store.check(items).allSatisfy { $0 == .duplicate })
        #expect(try store.check([Item(appID: "b", msgID: "m20", platform: "ios", tokenHash: "h")]) == [.fresh])
        let ttl = try client.command("PTTL", .string(RedisKeys.sent(appID: "a", msgID: "m1499"))).integerValue ?? -1
        #expect(ttl > 0 && ttl <= 7 * 86_400_000)
        #expect(try client.command("GET", .string(RedisKeys.sent(appID: "b", msgID: "m0"))).text == "1")
    }

    @Test("a reply that is not an array, or one with the wrong count, is an error, not a guess")
    func checkRefusesMalformedReplies() {
        let items = [Item(appID: "a", msgID: "m", platform: "ios", tokenHash: "h")]
        #expect(throws: RedisError.self) { try DeliveryStateStore.checkResults(items, [.integer(1)]) }
        #expect(throws: RedisError.self) { try DeliveryStateStore.checkResults(items, [.array([.null])]) }
        #expect(throws: RedisError.self) { try DeliveryStateStore.checkResults(items, [.error("WRONGTYPE")]) }
        #expect(throws: RedisError.self) { try DeliveryStateStore.checkResults(items, [.array([.null, .error("ERR")])]) }
        #expect((try? DeliveryStateStore.checkResults(items, [.array([.null, .integer(5)])])) == [.knownInvalid(invalidSinceMs: 5)])
    }

    @Test("re-registration: a dead token is skipped only if invalidSince ≥ tokenUpdatedAt", arguments: [
        (Int64?.none, DeliveryStateStore.CheckResult.knownInvalid(invalidSinceMs: 1_000)),
        (Int64?.some(500), .knownInvalid(invalidSinceMs: 1_000)),
        (Int64?.some(1_000), .knownInvalid(invalidSinceMs: 1_000)),
        (Int64?.some(1_001), .fresh),
        (Int64?.some(9_999), .fresh),
    ])
    func reRegistration(tokenUpdatedAt: Int64?, expected: DeliveryStateStore.CheckResult) throws {
        try store.record(invalid: [(appID: "app", platform: "android", tokenHash: "dead", invalidSinceMs: 1_000)])
        let item = Item(appID: "app", msgID: "m", platform: "android", tokenHash: "dead", tokenUpdatedAtMs: tokenUpdatedAt)
        #expect(try store.check([item]) == [expected])
        // Invalid tokens are per platform.
        #expect(try store.check([Item(appID: "app", msgID: "m", platform: "ios", tokenHash: "dead")]) == [.fresh])
    }

    @Test("recording an invalid token again keeps the larger invalidSince")
    func keepLargerInvalidSince() throws {
        let key = RedisKeys.invalidToken(appID: "app", platform: "web", tokenHash: "t")
        try store.record(invalid: [(appID: "app", platform: "web", tokenHash: "t", invalidSinceMs: 2_000)])
        try store.record(invalid: [(appID: "app", platform: "web", tokenHash: "t", invalidSinceMs: 1_000)])
        #expect(try client.command("GET", .string(key)).integerValue == 2_000)
        #expect(try store.check([Item(appID: "app", msgID: "m", platform: "web", tokenHash: "t", tokenUpdatedAtMs: 1_500)])
            == [.knownInvalid(invalidSinceMs: 2_000)])
        try store.record(invalid: [(appID: "app", platform: "web", tokenHash: "t", invalidSinceMs: 3_000)])
        #expect(try client.command("GET", .string(key)).integerValue == 3_000)
        // Both in one batch: still the larger.
        try store.record(invalid: [
            (appID: "app", platform: "web", tokenHash: "u", invalidSinceMs: 7_000),
            (appID: "app", platform: "web", tokenHash: "u", invalidSinceMs: 5_000),
        ])
        #expect(try client.command("GET", .string(RedisKeys.invalidToken(appID: "app", platform: "web", tokenHash: "u"))).integerValue == 7_000)
    }

    @Test("a duplicate wins over a dead token, and sent + invalid are recorded in one round trip")
    func duplicateBeforeInvalid() throws {
        try store.preloadScripts()
        let trips = client.roundTripCount
        try store.record(
            sent: [(appID: "app", msgID: "m1")],
            invalid: [(appID: "app", platform: "ios", tokenHash: "x", invalidSinceMs: 10)]
        )
        #expect(client.roundTripCount == trips + 1)
        let results = try store.check([
            Item(appID: "app", msgID: "m1", platform: "ios", tokenHash: "x"),
            Item(appID: "app", msgID: "m2", platform: "ios", tokenHash: "x"),
            Item(appID: "app", msgID: "m3", platform: "ios", tokenHash: "y"),
        ])
        #expect(results == [.duplicate, .knownInvalid(invalidSinceMs: 10), .fresh])
    }

    @Test("the async variants agree with the blocking ones")
    func asyncVariants() async throws {
        try await store.record(sent: [(appID: "a", msgID: "m")], invalid: [(appID: "a", platform: "ios", tokenHash: "t", invalidSinceMs: 5)])
        #expect(try await store.check([
            Item(appID: "a", msgID: "m", platform: "ios", tokenHash: "z"),
            Item(appID: "a", msgID: "n", platform: "ios", tokenHash: "t"),
        ]) == [.duplicate, .knownInvalid(invalidSinceMs: 5)])
        let bucket = DeliveryStateStore.Bucket(key: RedisKeys.providerBucket(appID: "a", provider: "fcm"), ratePerSecond: 1, burst: 2)
        #expect(try await store.acquire(count: 3, from: [bucket], nowMs: 0) == (granted: 2, retryAfterMs: 1_000))
        let until = nowMs() + 10_000
        try await store.setBackoff(appID: "a", provider: "fcm", untilMs: until)
        #expect(try await store.backoffs([(appID: "a", provider: "fcm")]) == [until])
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
        try store.record(sent: [(appID: "app", msgID: "s")], invalid: [(appID: "app", platform: "ios", tokenHash: "t", invalidSinceMs: 9)])
        #expect(client.roundTripCount == trips + 2)
        #expect(try store.check([Item(appID: "app", msgID: "x", platform: "ios", tokenHash: "t")]) == [.knownInvalid(invalidSinceMs: 9)])
        #expect(try store.check([Item(appID: "app", msgID: "s", platform: "ios", tokenHash: "u")]) == [.duplicate])
        try client.command("SCRIPT", "FLUSH")
        let until = nowMs() + 5_000
        try store.setBackoff(appID: "app", provider: "fcm", untilMs: until)
        #expect(try store.backoffUntil(appID: "app", provider: "fcm") == until)
        trips = client.roundTripCount
        try store.setBackoff(appID: "app", provider: "fcm", untilMs: until)
        #expect(client.roundTripCount == trips + 1)
    }

    @Test("script names are the SHA-1 Redis computes", arguments: [DeliveryStateStore.keepMax, DeliveryStateStore.tokenBucket, DeliveryStateStore.setAll])
    func scriptSHA(script: RedisScript) throws {
        #expect(try client.command("SCRIPT", "LOAD", .string(script.source)).text == script.sha1)
    }

    // MARK: backoff

    @Test("backoff keeps the later deadline; unknown pairs have none; many in one round trip")
    func backoffKeepLater() throws {
        let now = nowMs()
        #expect(try store.backoffUntil(appID: "app", provider: "fcm") == nil)
        try store.setBackoff(appID: "app", provider: "fcm", untilMs: now + 5_000)
        try store.setBackoff(appID: "app", provider: "fcm", untilMs: now + 1_000)
        #expect(try store.backoffUntil(appID: "app", provider: "fcm") == now + 5_000)
        try store.setBackoff(appID: "app", provider: "fcm", untilMs: now + 9_000)
        #expect(try store.backoffUntil(appID: "app", provider: "fcm") == now + 9_000)
        try store.setBackoff(appID: "other", provider: "apns", untilMs: now + 2_000)
        let trips = client.roundTripCount
        let deadlines = try store.backoffs([(appID: "app", provider: "fcm"), (appID: "app", provider: "apns"), (appID: "other", provider: "apns")])
        #expect(client.roundTripCount == trips + 1)
        #expect(deadlines == [now + 9_000, nil, now + 2_000])
        // The key lives until the kept deadline plus the grace.
        let ttl = try client.command("PTTL", .string(RedisKeys.backoff(appID: "app", provider: "fcm"))).integerValue ?? -1
        #expect((9_000 + 50_000)...(9_000 + DeliveryStateStore.backoffGraceMs) ~= ttl)
    }

    @Test("a deadline long past expires at once")
    func oldBackoff() throws {
        try store.setBackoff(appID: "app", provider: "fcm", untilMs: nowMs() - 3_600_000)
        #expect(try store.backoffUntil(appID: "app", provider: "fcm") == nil)
    }

    // MARK: TTLs and keys

    @Test("every key written has a TTL")
    func everyKeyHasTTL() throws {
        try store.record(
            sent: [(appID: "app", msgID: "m1"), (appID: "b", msgID: "m2")],
            invalid: [(appID: "app", platform: "ios", tokenHash: "t", invalidSinceMs: 1), (appID: "app", platform: "ios", tokenHash: "t", invalidSinceMs: 0)]
        )
        _ = try store.acquire(count: 2, from: [
            .init(key: RedisKeys.providerBucket(appID: "app", provider: "apns"), ratePerSecond: 50, burst: 100),
            .init(key: RedisKeys.campaignBucket(appID: "app", campaignID: "c"), ratePerSecond: 1000.0 / 60, burst: 1000.0 / 60),
        ], nowMs: nowMs())
        try store.setBackoff(appID: "app", provider: "fcm", untilMs: nowMs() + 30_000)
        try store.setBackoff(appID: "app", provider: "fcm", untilMs: nowMs())

        guard case .array(let keys) = try client.command("KEYS", "*") else {
            Issue.record("KEYS did not answer an array")
            return
        }
        #expect(keys.count == 6)
        var ttls: [String: Int64] = [:]
        for key in keys.compactMap(\.text) {
            ttls[key] = try client.command("PTTL", .string(key)).integerValue
        }
        #expect(ttls.values.allSatisfy { $0 > 0 }, "keys without TTL: \(ttls.filter { $0.value <= 0 })")
        let day: Int64 = 86_400_000
        #expect((7 * day - 60_000)...(7 * day) ~= ttls[RedisKeys.sent(appID: "app", msgID: "m1")] ?? 0)
        #expect((90 * day - 60_000)...(90 * day) ~= ttls[RedisKeys.invalidToken(appID: "app", platform: "ios", tokenHash: "t")] ?? 0)
        #expect((1_000...3_000) ~= ttls[RedisKeys.providerBucket(appID: "app", provider: "apns")] ?? 0)
    }

    @Test("custom TTLs are used")
    func customTTLs() throws {
        let short = DeliveryStateStore(client: client, sentTTL: .seconds(60), invalidTTL: .milliseconds(1_500))
        try short.record(sent: [(appID: "a", msgID: "m")], invalid: [(appID: "a", platform: "ios", tokenHash: "t", invalidSinceMs: 1)])
        #expect((59_000...60_000) ~= (try client.command("PTTL", .string(RedisKeys.sent(appID: "a", msgID: "m"))).integerValue ?? 0))
        #expect((1...1_500) ~= (try client.command("PTTL", .string(RedisKeys.invalidToken(appID: "a", platform: "ios", tokenHash: "t"))).integerValue ?? 0))
    }

    @Test("Redis down surfaces as a connection error from the store, and it works again after a restart")
    func storeRedisDown() throws {
        let item = Item(appID: "app", msgID: "m", platform: "ios", tokenHash: "t")
        try store.record(sent: [(appID: "app", msgID: "m")])
        crash(server.process)
        let checkError = #expect(throws: RedisError.self) { try store.check([item]) }
        #expect(checkError?.isConnectionError == true)
        let acquireError = #expect(throws: RedisError.self) {
            try store.acquire(count: 1, from: [.init(key: "k", ratePerSecond: 1, burst: 1)], nowMs: 0)
        }
        #expect(acquireError?.isConnectionError == true)
        let restarted = try startRedis(port: server.port)
        defer { crash(restarted) }
        // A fresh server lost the data (no persistence in tests): the state is advisory, nothing hangs.
        #expect(try store.check([item]) == [.fresh])
    }
}

@Suite("RedisKeys")
struct RedisKeysTests {
    @Test("key layout with the app as hash tag", arguments: [
        (RedisKeys.sent(appID: "app_demo", msgID: "AbC-_1"), "pw:{app_demo}:sent:AbC-_1"),
        (RedisKeys.invalidToken(appID: "app_demo", platform: "ios", tokenHash: "9f86d081"), "pw:{app_demo}:inv:ios:9f86d081"),
        (RedisKeys.providerBucket(appID: "app_demo", provider: "apns"), "pw:{app_demo}:tb:apns"),
        (RedisKeys.campaignBucket(appID: "app_demo", campaignID: "cmp_42"), "pw:{app_demo}:tb:cmp:cmp_42"),
        (RedisKeys.backoff(appID: "app_demo", provider: "fcm"), "pw:{app_demo}:backoff:fcm"),
    ])
    func layout(key: String, expected: String) {
        #expect(key == expected)
    }

    @Test("structural characters in components are escaped, so keys cannot collide or change slot")
    func escaping() {
        #expect(RedisKeys.sent(appID: "a}b", msgID: "x:y") == "pw:{a%7Db}:sent:x%3Ay")
        #expect(RedisKeys.sent(appID: "a{b", msgID: "100%") == "pw:{a%7Bb}:sent:100%25")
        #expect(RedisKeys.invalidToken(appID: "a", platform: "i:os", tokenHash: "h") != RedisKeys.invalidToken(appID: "a", platform: "i", tokenHash: "os:h"))
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
