import Foundation
@testable import PushRuntime
import PushCore
import PushHTTP
import PushRedis
@testable import PushEvents
import Testing
@testable import PushWorker

@Suite("Events: routes, rate limit, proxies, event JSON, webhook signing (pure)")
struct EventsUnitTests {
    @Test("routes: method and path decide the answer", arguments: [
        ("POST", "/v1/e/d/abc", "track delivered abc"),
        ("POST", "/v1/e/o/abc", "track opened abc"),
        ("POST", "/v1/e/c/abc", "track clicked abc"),
        ("POST", "/v1/e/x/abc", "track dismissed abc"),
        ("POST", "/v1/e/o/", "track opened "),
        ("GET", "/v1/e/o/abc", "405 POST"),
        ("PUT", "/v1/e/x/abc", "405 POST"),
        ("DELETE", "/v1/e/d/abc", "405 POST"),
        ("POST", "/v1/e/z/abc", "404"),
        ("GET", "/v1/e/z/abc", "404"),
        ("POST", "/v1/e/oo/abc", "404"),
        ("POST", "/v1/e/o/abc/def", "404"),
        ("POST", "/v1/e/o", "404"),
        ("POST", "/v2/e/o/abc", "404"),
        ("POST", "/", "404"),
        ("GET", "/healthz", "health"),
        ("HEAD", "/readyz", "ready"),
        ("GET", "/metrics", "metrics"),
        ("POST", "/metrics", "405 GET, HEAD"),
    ])
    func routes(method: String, path: String, expected: String) {
        let described: String
        switch EventRoute(method: method, path: path) {
        case .track(let type, let msgID): described = "track \(type.rawValue) \(msgID)"
        case .methodNotAllowed(let allow): described = "405 \(allow)"
        case .notFound: described = "404"
        case .health: described = "health"
        case .ready: described = "ready"
        case .metrics: described = "metrics"
        }
        #expect(described == expected)
    }

    @Test("EVENT_RATE_LIMIT parses N/s and N/m, refuses the rest", arguments: [
        ("20/s", 20.0, 20.0), ("600/m", 600.0, 10.0), (" 5 / second ", 5.0, 5.0), ("1/min", 1.0, 1.0 / 60),
    ])
    func rateLimitParsing(text: String, capacity: Double, perSecond: Double) throws {
        let limit = try #require(EventRateLimit(text))
        #expect(limit.capacity == capacity)
        #expect(abs(limit.perSecond - perSecond) < 1e-9)
    }

    @Test("EVENT_RATE_LIMIT refuses malformed values", arguments: ["", "20", "0/s", "-1/s", "20/h", "x/s", "20/s/s"])
    func rateLimitRefused(text: String) {
        #expect(EventRateLimit(text) == nil)
    }

    @Test("a bucket holds N: burst of N, then 429 with Retry-After, then refill")
    func bucket() {
        let limiter = EventRateLimiter(limit: EventRateLimit(capacity: 3, perSecond: 3))
        for _ in 0..<3 { #expect(limiter.take(client: "10.0.0.1", now: 100) == .allowed) }
        #expect(limiter.take(client: "10.0.0.1", now: 100) == .limited(retryAfterSeconds: 1))
        #expect(limiter.take(client: "10.0.0.2", now: 100) == .allowed, "another client has its own bucket")
        #expect(limiter.take(client: "10.0.0.1", now: 100.34) == .allowed, "one token back after 1/3 s")
        #expect(limiter.take(client: "10.0.0.1", now: 100.34) == .limited(retryAfterSeconds: 1))
    }

    @Test("per-minute limits announce a Retry-After of whole seconds")
    func perMinuteRetryAfter() {
        let limiter = EventRateLimiter(limit: EventRateLimit("2/m")!)
        #expect(limiter.take(client: "a", now: 0) == .allowed)
        #expect(limiter.take(client: "a", now: 0) == .allowed)
        #expect(limiter.take(client: "a", now: 0) == .limited(retryAfterSeconds: 30))
        #expect(limiter.take(client: "a", now: 10) == .limited(retryAfterSeconds: 20))
    }

    @Test("a full bucket table evicts its oldest buckets: a new client past the bound is still limited")
    func boundedWithoutFailingOpen() {
        let limiter = EventRateLimiter(limit: EventRateLimit(capacity: 5, perSecond: 5.0 / 60), maximumClients: 64, shardCount: 4)
        // Fill the table (and more) with clients that stay active, none of them idle long enough to be swept.
        for index in 0..<10_000 { _ = limiter.take(client: "10.1.\(index / 256).\(index % 256)", now: 1000 + Double(index) * 0.001) }
        #expect(limiter.bucketCount <= 64)
        #expect(limiter.evictions >= 10_000 - 64)
        // A new client gets a bucket like everyone else: 5, then 429.
        for _ in 0..<5 { #expect(limiter.take(client: "192.0.2.1", now: 1011) == .allowed) }
        #expect(limiter.take(client: "192.0.2.1", now: 1011) == .limited(retryAfterSeconds: 12))
        #expect(limiter.take(client: "192.0.2.1", now: 1012) == .limited(retryAfterSeconds: 11))
        #expect(limiter.bucketCount <= 64)
    }

    @Test("idle buckets (refilled completely) are forgotten once a minute, so memory follows the active clients")
    func sweepsIdleBuckets() {
        let limiter = EventRateLimiter(limit: EventRateLimit(capacity: 2, perSecond: 2), maximumClients: 1000, shardCount: 1)
        for index in 0..<500 { _ = limiter.take(client: "10.2.\(index / 256).\(index % 256)", now: 100) }
        #expect(limiter.bucketCount == 500)
        _ = limiter.take(client: "192.0.2.9", now: 200)
        #expect(limiter.bucketCount == 1)
        #expect(limiter.evictions == 0)
    }

    @Test("IPv6 clients share one bucket per /64 (configurable); IPv4 clients have one each", arguments: [
        // client, key with /64, key with /56
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64", "2001:db8:1::/56"),
        ("2001:DB8:1:2::ffff", "2001:db8:1:2::/64", "2001:db8:1::/56"),
        ("2001:db8:1:2ff::1", "2001:db8:1:2ff::/64", "2001:db8:1:200::/56"),
        ("192.0.2.1", "192.0.2.1", "192.0.2.1"),
        ("::ffff:192.0.2.1", "192.0.2.1", "192.0.2.1"),
        ("not-an-address", "not-an-address", "not-an-address"),
    ])
    func bucketKeys(client: String, key64: String, key56: String) {
        let limit = EventRateLimit(capacity: 1, perSecond: 1)
        #expect(EventRateLimiter(limit: limit).bucketKey(client: client) == key64)
        #expect(EventRateLimiter(limit: limit, ipv6PrefixLength: 56).bucketKey(client: client) == key56)
    }

    @Test("forty addresses of one /64 spend one bucket")
    func fortyIPv6Clients() {
        let limiter = EventRateLimiter(limit: EventRateLimit(capacity: 5, perSecond: 5.0 / 60))
        let answers = (1...40).map { limiter.take(client: "2001:db8:aa:bb:\(String($0, radix: 16))::1", now: 10) }
        #expect(answers.filter { $0 == .allowed }.count == 5)
        #expect(limiter.take(client: "2001:db8:aa:bc::1", now: 10) == .allowed, "the next /64 is another client")
        #expect((1...6).map { limiter.take(client: "198.51.100.\($0)", now: 10) }.allSatisfy { $0 == .allowed })
    }

    @Test("EVENT_* settings: defaults, values, and every bad value or unknown name refused by name", arguments: [
        ("EVENT_RATE_LIMIT", "fast"), ("EVENT_RATE_LIMIT", "20/h"), ("EVENT_RATE_LIMIT", "0/s"),
        ("EVENT_TRUSTED_PROXIES", "10.0.0.0/8, proxy.internal"), ("EVENT_TRUSTED_PROXIES", "10.0.0.0/33"),
        ("EVENT_HTTP_THREADS", "0"), ("EVENT_HTTP_THREADS", "many"), ("EVENT_HTTP_THREADS", "+4"),
        ("EVENT_IPV6_PREFIX", "0"), ("EVENT_IPV6_PREFIX", "129"), ("EVENT_IPV6_PREFIX", "/64"),
        ("EVENT_RATE_LIMIT_BUCKETS", "10"), ("EVENT_RATE_LIMIT_BUCKETS", "1e6"),
        ("EVENT_IDLE_TIMEOUT_SECONDS", "0"), ("EVENT_IDLE_TIMEOUT_SECONDS", "30s"),
        ("EVENT_CONNECTIONS_PER_IP", "-1"), ("EVENT_CONNECTIONS_PER_IP", "lots"),
        ("EVENT_RATE_LIMT", "20/s"), ("EVENT_PREFIX", "64"),
    ])
    func settingsRefused(name: String, value: String) {
        guard case .failure(let problems) = EventsProcess.Settings.load([name: value, "PATH": "/usr/bin"]) else {
            Issue.record("\(name)=\(value) accepted")
            return
        }
        #expect(problems.messages.count == 1)
        #expect(problems.messages.first?.hasPrefix(name) == true, "\(problems)")
    }

    @Test("EVENT_* settings: defaults and values")
    func settingsValues() throws {
        guard case .success(let defaults) = EventsProcess.Settings.load([:]) else { Issue.record("defaults refused"); return }
        #expect(defaults.rateLimit == .default && defaults.ipv6PrefixLength == 64 && defaults.rateLimitBuckets == 1_000_000)
        #expect(defaults.idleTimeoutSeconds == 30 && defaults.connectionsPerIP == 64)
        #expect(defaults.listenerLimits.idleTimeoutSeconds == 30 && defaults.listenerLimits.connectionsPerAddress == 64)
        #expect(defaults.listenerLimits.maximumBodyBytes == 4096)
        guard case .success(let behindProxy) = EventsProcess.Settings.load(["EVENT_TRUSTED_PROXIES": "10.0.0.0/8"]) else {
            Issue.record("proxies refused"); return
        }
        #expect(behindProxy.connectionsPerIP == 1024)
        guard case .success(let set) = EventsProcess.Settings.load([
            "EVENT_RATE_LIMIT": "5/m", "EVENT_IPV6_PREFIX": "56", "EVENT_RATE_LIMIT_BUCKETS": "5000", "EVENT_IDLE_TIMEOUT_SECONDS": " 2 ",
            "EVENT_CONNECTIONS_PER_IP": "0", "EVENT_TRUSTED_PROXIES": "127.0.0.1", "EVENT_HTTP_THREADS": "3",
        ]) else { Issue.record("values refused"); return }
        #expect(set.rateLimit == EventRateLimit("5/m") && set.ipv6PrefixLength == 56 && set.rateLimitBuckets == 5000)
        #expect(set.idleTimeoutSeconds == 2 && set.connectionsPerIP == 0 && set.threads == 3 && !set.proxies.isEmpty)
    }

    @Test("X-Forwarded-For is honoured only from trusted proxies", arguments: [
        // peer, header, expected client
        ("203.0.113.9", "198.51.100.7", "203.0.113.9"),            // untrusted peer: header ignored
        ("10.0.0.5", "198.51.100.7", "198.51.100.7"),              // trusted peer
        ("10.0.0.5", "1.2.3.4, 198.51.100.7", "198.51.100.7"),     // a client-supplied prefix is ignored
        ("10.0.0.5", "198.51.100.7, 10.0.0.9", "198.51.100.7"),    // trusted hops skipped
        ("10.0.0.5", "10.0.0.8, 10.0.0.9", "10.0.0.8"),            // all trusted: the leftmost
        ("10.0.0.5", "garbage, 10.0.0.9", "10.0.0.9"),             // malformed: stop at the last good hop
        ("10.0.0.5", "2001:db8::1", "2001:db8::1"),
        ("127.0.0.1", "198.51.100.7", "198.51.100.7"),
        ("10.0.0.5", "", "10.0.0.5"),
    ])
    func forwardedFor(peer: String, header: String, expected: String) throws {
        let proxies = try TrustedProxies(parsing: "10.0.0.0/8, 127.0.0.1 ,fd00::/8")
        #expect(proxies.clientAddress(peer: peer, forwardedFor: header) == expected)
        #expect(TrustedProxies.none.clientAddress(peer: peer, forwardedFor: header) == peer)
    }

    @Test("trusted proxy lists: CIDRs of both families; bad entries refused", arguments: [
        "10.0.0.0/33", "nope", "10.0.0.1/x", "::1/129", "10.0.0.0/+8", "10.0.0.0/", "::ffff:10.0.0.0/95", "::ffff:10.0.0.0/129",
    ])
    func badProxies(text: String) {
        #expect(throws: TrustedProxiesError.self) { try TrustedProxies(parsing: text) }
    }

    @Test("CIDR membership")
    func cidr() throws {
        let proxies = try TrustedProxies(parsing: "192.168.4.0/22,fd00::/8,::ffff:172.16.0.1,::ffff:10.0.0.0/104")
        #expect(proxies.contains(try #require(IPAddress("10.200.0.1"))), "a mapped /104 is the IPv4 /8")
        #expect(!proxies.contains(try #require(IPAddress("11.0.0.1"))))
        #expect(proxies.contains(try #require(IPAddress("192.168.7.255"))))
        #expect(!proxies.contains(try #require(IPAddress("192.168.8.0"))))
        #expect(proxies.contains(try #require(IPAddress("fd12:3456::1"))))
        #expect(!proxies.contains(try #require(IPAddress("fe80::1"))))
        #expect(proxies.contains(try #require(IPAddress("172.16.0.1"))), "IPv4-mapped IPv6 is IPv4")
        #expect(IPAddress("2001:0db8:0000:0000:0000:0000:0000:0001")?.description == "2001:db8::1")
    }

    @Test("the event JSON has every schema field, nulls for absent optionals, RFC 3339 ms UTC")
    func eventJSON() throws {
        let fields = MsgIDFields(appID: "app_1", campaignID: "cmp_1", userID: nil, subscriptionID: "s1", platform: "web", variant: nil)
        let event = TrackingEvent(type: .clicked, msgID: "m1", fields: fields, atMilliseconds: 1_796_032_800_250, ipHash: "h")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(event.json())) as? [String: Any])
        #expect(Set(object.keys) == ["schemaVersion", "type", "msgId", "appId", "campaignId", "variant", "userId",
                                     "subscriptionId", "platform", "at", "ipHash"])
        #expect(object["schemaVersion"] as? Int == 1)
        #expect(object["type"] as? String == "clicked")
        #expect(object["at"] as? String == "2026-11-30T10:00:00.250Z")
        #expect(object["variant"] is NSNull)
        #expect(object["userId"] is NSNull)
    }

    @Test("ipHash is keyed, stable, and never the address")
    func ipHash() {
        let a = ClientAddressHasher(secret: Array("k1:secret".utf8))
        let b = ClientAddressHasher(secret: Array("k2:other".utf8))
        #expect(a.hash("198.51.100.7") == a.hash("198.51.100.7"))
        #expect(a.hash("198.51.100.7") != a.hash("198.51.100.8"))
        #expect(a.hash("198.51.100.7") != b.hash("198.51.100.7"))
        #expect(!a.hash("198.51.100.7").contains("198"))
        #expect(a.hash("198.51.100.7").count == 22)
    }

    @Test("webhook signature: sha256= hex HMAC-SHA256 of the body (RFC 4231 case 2)")
    func signature() {
        let signature = WebhookDispatcher.signature(secret: Array("Jefe".utf8), body: Array("what do ya want for nothing?".utf8))
        #expect(signature == "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(WebhookDispatcher.body([Array("{\"a\":1}".utf8), Array("{\"b\":2}".utf8)]) == Array("[{\"a\":1},{\"b\":2}]".utf8))
    }

    @Test("webhook backoff doubles, is capped, and honours Retry-After", arguments: [
        (1, nil as Double?, 0.5), (2, nil, 1.0), (4, nil, 4.0), (10, nil, 30.0), (1, 5.0, 5.0), (1, 100.0, 30.0),
    ])
    func backoff(attempt: Int, retryAfter: Double?, expected: Double) {
        #expect(WebhookDispatcher.delay(attempt: attempt, base: 0.5, maximum: 30, retryAfter: retryAfter, jitter: 1) == expected)
    }

    @Test("one flush is one pipeline: HINCRBY per counter, PFADD per unique set, one EXPIRE per key")
    func counterCommands() {
        var batch = EventCounterFlusher.Batch()
        let campaign = EventCounterFlusher.CounterKey(appID: "a", campaignID: "c", variant: nil, type: .opened)
        let variant = EventCounterFlusher.CounterKey(appID: "a", campaignID: "c", variant: "B", type: .opened)
        batch.counts = [campaign: 3, variant: 3]
        batch.uniques = [campaign: ["m1", "m2"], variant: ["m1", "m2"]]
        batch.events = 3
        let commands = EventCounterFlusher.commands(for: batch, ttlSeconds: 60)
        let texts = commands.map { $0.map { argument -> String in
            switch argument {
            case .string(let text): text
            case .int(let value): String(value)
            case .bytes(let bytes): String(decoding: bytes, as: UTF8.self)
            case .dedupKey(let name): name.text
            }
        }.joined(separator: " ") }
        #expect(texts.contains("HINCRBY pw:{a}:ev:cmp:c opened 3"))
        #expect(texts.contains("HINCRBY pw:{a}:ev:cmp:c:v:B opened 3"))
        #expect(texts.contains("PFADD pw:{a}:ev:uq:c:opened m1 m2"))
        #expect(texts.contains("PFADD pw:{a}:ev:uq:c:v:B:opened m1 m2"))
        #expect(texts.filter { $0.hasPrefix("EXPIRE ") }.count == 4)
        #expect(texts.allSatisfy { !$0.hasPrefix("EXPIRE ") || $0.hasSuffix(" 60") })
    }

    @Test("event keys escape their components and keep the app's hash tag")
    func keys() {
        #expect(RedisKeys.eventCounters(appID: "a", campaignID: "c:1") == "pw:{a}:ev:cmp:c%3A1")
        #expect(RedisKeys.eventVariantUniques(appID: "a", campaignID: "c", variant: "{x}", type: "opened") == "pw:{a}:ev:uq:c:v:%7Bx%7D:opened")
    }

    @Test("app.json webhook: https url and secret; anything else is a problem, not a crash")
    func webhookCredentials() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("events-creds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("app.json")
        try #"{"webhook": {"url": "https://hooks.example/pw", "secret": "s3cr3t"}}"#.write(to: file, atomically: true, encoding: .utf8)
        let good = AppCredentials.load(appID: "a", folder: folder)
        #expect(good.webhook?.url == "https://hooks.example/pw")
        #expect(good.webhook?.secret == Array("s3cr3t".utf8))
        #expect(good.problems.isEmpty)
        try #"{"webhook": {"url": "http://hooks.example/pw", "secret": "s"}}"#.write(to: file, atomically: true, encoding: .utf8)
        let bad = AppCredentials.load(appID: "a", folder: folder)
        #expect(bad.webhook == nil)
        #expect(bad.problems.count == 1)
        #expect(!bad.problems[0].contains("\"s\""))
    }
}

@Suite("Events: webhook queue bounds")
struct EventsWebhookQueueTests {
    @Test("the webhook queue is bounded: overflow is dropped and counted, ingestion never waits")
    func overflow() throws {
        let metrics = Metrics()
        var settings = WebhookDispatcher.Settings()
        settings.capacity = 3
        let client = try HTTP2Client(configuration: HTTPClientConfiguration())
        defer { client.shutdown(drainTimeout: .milliseconds(100)) }
        // Not started: nothing drains the queue.
        let dispatcher = WebhookDispatcher(client: client, lookup: { _ in nil }, metrics: metrics, logger: Logger(level: .critical),
                                           settings: settings)
        let started = ContinuousClock.now
        for _ in 0..<10 { dispatcher.enqueue(appID: "a", event: Array("{}".utf8)) }
        #expect(ContinuousClock.now - started < .milliseconds(100))
        #expect(dispatcher.held == 3)
        #expect(metrics.counter("pushworker_webhook_dropped_total") == 7)
    }
}
