import Foundation
@testable import PushRuntime
import PushCore
import PushHTTPServer
import PushKafka
import PushKafkaMock
import PushRedis
import PushTestSupport
import Testing
@testable import PushWorker
@testable import PushEvents
import PushEncoding

/// The tracking endpoint's handling in-process, against a real `redis-server` and librdkafka's
/// mock cluster (the HTTP layer is covered by EventsProcessTests on the real binary).
final class EventsHarness: @unchecked Sendable {
    // Thread safety: built in init, then only read; the service and its parts are Sendable.
    let redisServer: RedisServer
    let redis: RedisClient
    let cluster: KafkaMockCluster
    let producer: KafkaProducer
    let metrics = Metrics()
    let counters: EventCounterFlusher
    let service: EventsService
    let hasher = ClientAddressHasher(secret: Array("test".utf8))
    /// The key that signs today (k2) and the previous one (k1), which still verifies.
    static let k1 = [UInt8](repeating: 1, count: 32)
    static let k2 = [UInt8](repeating: 2, count: 32)
    static let previous = try! MsgIDKeyring(keys: [(keyID: "k1", key: k1)])
    static let current = try! MsgIDKeyring(keys: [(keyID: "k2", key: k2), (keyID: "k1", key: k1)])
    static let stranger = try! MsgIDKeyring(keys: [(keyID: "k3", key: [UInt8](repeating: 3, count: 32))])
    static let forged = try! MsgIDKeyring(keys: [(keyID: "k2", key: [UInt8](repeating: 9, count: 32))])

    init(limit: EventRateLimit = EventRateLimit(capacity: 1000, perSecond: 1000), proxies: String = "") throws {
        redisServer = try RedisServer()
        redis = try RedisClient(url: redisServer.url)
        cluster = try KafkaMockCluster()
        try cluster.createTopic("push.events.v1", partitions: 2)
        producer = try KafkaProducer(properties: ["bootstrap.servers": cluster.bootstrapServers, "linger.ms": "1"])
        counters = EventCounterFlusher(redis: redis, metrics: metrics, logger: Logger(level: .critical), interval: .milliseconds(20))
        counters.start()
        let ping = redis
        service = EventsService(.init(
            keyring: Self.current, producer: producer, topic: "push.events.v1", counters: counters, webhooks: nil,
            limiter: EventRateLimiter(limit: limit), proxies: try TrustedProxies(parsing: proxies), hasher: hasher,
            metrics: metrics, redisPing: { ping.ping() }))
    }

    deinit {
        counters.stop()
        producer.close(timeout: .seconds(2))
        cluster.close()
    }

    static func msgID(_ keyring: MsgIDKeyring = current, subscription: String = "s1", variant: String? = "A") -> String {
        MsgID.sign(MsgIDFields(appID: "app_ev", campaignID: "cmp_ev", userID: "u1", subscriptionID: subscription,
                               platform: "android", variant: variant), keyring: keyring)
    }

    func call(_ method: String, _ path: String, peer: String = "203.0.113.1", forwardedFor: String? = nil,
              now: Double = 1000) -> HTTPListener.Response {
        var headers: [String: String] = [:]
        if let forwardedFor { headers["x-forwarded-for"] = forwardedFor }
        return service.handle(.init(method: method, path: path, clientAddress: peer, headers: headers), now: now)
    }

    func readEvents(count: Int, timeout: Double = 20) throws -> [KafkaMessage] {
        let consumer = try KafkaConsumer(properties: ["bootstrap.servers": cluster.bootstrapServers, "group.id": "reader-\(UUID().uuidString)",
                                                      "auto.offset.reset": "earliest"], topics: ["push.events.v1"])
        defer { consumer.close() }
        var messages: [KafkaMessage] = []
        let deadline = Date().addingTimeInterval(timeout)
        while messages.count < count && Date() < deadline {
            for case .success(let message) in consumer.pollBatch(max: 100, timeout: .milliseconds(200)) { messages.append(message) }
        }
        return messages
    }
}

@Suite("Events: the tracking endpoint against real Redis and a Kafka mock cluster", .serialized)
struct EventsServiceTests {
    @Test("signed, rotated-key, unsigned, tampered and foreign msgIds: 204 for valid ones, one 400 body for the rest")
    func msgIDs() throws {
        let harness = try EventsHarness()
        let valid = EventsHarness.msgID()
        let rotated = EventsHarness.msgID(EventsHarness.previous)
        #expect(harness.call("POST", "/v1/e/o/\(valid)").status == 204)
        #expect(harness.call("POST", "/v1/e/o/\(rotated)").status == 204, "ids signed with an older key still verify")

        var tampered = Array(valid.utf8)
        let middle = tampered.count / 2
        tampered[middle] = tampered[middle] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let bad = [
            "", "x", "not-a-msgid", String(decoding: tampered, as: UTF8.self), String(valid.dropLast()), valid + "A",
            EventsHarness.msgID(EventsHarness.stranger), EventsHarness.msgID(EventsHarness.forged),
            String(repeating: "A", count: 5000), "%00%FF", "AAAA====",
        ]
        var bodies: Set<[UInt8]> = []
        for id in bad {
            let response = harness.call("POST", "/v1/e/c/\(id)")
            #expect(response.status == 400, "\(id.prefix(40))")
            bodies.insert(response.body)
        }
        #expect(bodies.count == 1, "malformed and badly signed ids get the same answer")
        harness.service.syncMetrics()
        #expect(harness.metrics.counter("pushworker_events_total", [("type", "clicked"), ("outcome", "bad_msgid")]) == Double(bad.count))
        #expect(harness.metrics.counter("pushworker_events_total", [("type", "opened"), ("outcome", "accepted")]) == 2)
    }

    @Test("every route and method")
    func routes() throws {
        let harness = try EventsHarness()
        let id = EventsHarness.msgID()
        for letter in ["d", "o", "c", "x"] { #expect(harness.call("POST", "/v1/e/\(letter)/\(id)").status == 204) }
        for method in ["GET", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"] {
            let response = harness.call(method, "/v1/e/o/\(id)")
            #expect(response.status == 405)
            #expect(response.headers.contains { $0.0 == "Allow" && $0.1 == "POST" })
        }
        #expect(harness.call("POST", "/v1/e/q/\(id)").status == 404)
        #expect(harness.call("POST", "/v1/e/o/\(id)/more").status == 404)
        #expect(harness.call("POST", "/somewhere").status == 404)
        #expect(harness.call("GET", "/healthz").status == 200)
        #expect(harness.call("GET", "/readyz").status == 200)
        let metrics = harness.call("GET", "/metrics")
        #expect(metrics.status == 200)
        let text = String(decoding: metrics.body, as: UTF8.self)
        #expect(text.contains("# TYPE pushworker_events_total counter"))
        #expect(text.contains(#"pushworker_events_total{type="dismissed",outcome="accepted"} 1"#))
        #expect(harness.call("POST", "/metrics").status == 405)
    }

    @Test("per-IP rate limit: a burst of N, then 429 with Retry-After; X-Forwarded-For only from trusted proxies")
    func rateLimit() throws {
        let harness = try EventsHarness(limit: EventRateLimit("3/s")!, proxies: "127.0.0.1, 10.0.0.0/8")
        let id = EventsHarness.msgID()
        // Through a trusted proxy: each forwarded client has its own bucket.
        for _ in 0..<3 { #expect(harness.call("POST", "/v1/e/o/\(id)", peer: "127.0.0.1", forwardedFor: "198.51.100.1").status == 204) }
        let limited = harness.call("POST", "/v1/e/o/\(id)", peer: "127.0.0.1", forwardedFor: "198.51.100.1")
        #expect(limited.status == 429)
        #expect(limited.headers.contains { $0.0 == "Retry-After" && $0.1 == "1" })
        #expect(harness.call("POST", "/v1/e/o/\(id)", peer: "10.1.2.3", forwardedFor: "198.51.100.2").status == 204)
        // From an untrusted peer, the header is ignored: rotating it does not escape the limit.
        for index in 0..<3 {
            #expect(harness.call("POST", "/v1/e/o/\(id)", peer: "203.0.113.7", forwardedFor: "192.0.2.\(index)").status == 204)
        }
        #expect(harness.call("POST", "/v1/e/o/\(id)", peer: "203.0.113.7", forwardedFor: "192.0.2.99").status == 429)
        // Bad ids count against the limit too (no free HMAC work).
        #expect(harness.call("POST", "/v1/e/o/garbage", peer: "203.0.113.7").status == 429)
        // The bucket refills.
        #expect(harness.call("POST", "/v1/e/o/\(id)", peer: "203.0.113.7", now: 1001).status == 204)
        harness.service.syncMetrics()
        #expect(harness.metrics.counter("pushworker_events_rate_limited_total") == 3)
    }

    @Test("accepted pings become events on the topic, keyed by msgId, with the msgId's fields")
    func topic() throws {
        let harness = try EventsHarness(proxies: "127.0.0.1")
        let withVariant = EventsHarness.msgID()
        let withoutVariant = EventsHarness.msgID(subscription: "s2", variant: nil)
        #expect(harness.call("POST", "/v1/e/d/\(withVariant)", peer: "127.0.0.1", forwardedFor: "198.51.100.4").status == 204)
        #expect(harness.call("POST", "/v1/e/x/\(withoutVariant)").status == 204)
        let messages = try harness.readEvents(count: 2)
        #expect(messages.count == 2)
        let byKey = Dictionary(uniqueKeysWithValues: messages.map { (String(decoding: $0.key ?? [], as: UTF8.self), $0) })
        let first = try #require(byKey[withVariant])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(first.value)) as? [String: Any])
        #expect(object["schemaVersion"] as? Int == 1)
        #expect(object["type"] as? String == "delivered")
        #expect(object["msgId"] as? String == withVariant)
        #expect(object["appId"] as? String == "app_ev")
        #expect(object["campaignId"] as? String == "cmp_ev")
        #expect(object["variant"] as? String == "A")
        #expect(object["userId"] as? String == "u1")
        #expect(object["subscriptionId"] as? String == "s1")
        #expect(object["platform"] as? String == "android")
        #expect(object["ipHash"] as? String == harness.hasher.hash("198.51.100.4"))
        let at = try #require(object["at"] as? String)
        #expect(at.hasSuffix("Z") && at.count == 24)
        #expect(abs((RFC3339Timestamp.parse(at)?.timeIntervalSinceNow ?? 999)) < 60)
        let second = try #require(byKey[withoutVariant])
        let other = try #require(try JSONSerialization.jsonObject(with: Data(second.value)) as? [String: Any])
        #expect(other["type"] as? String == "dismissed")
        #expect(other["variant"] is NSNull)
    }

    @Test("campaign and variant counters in Redis, batched; repeated pings do not inflate uniques")
    func counters() throws {
        let harness = try EventsHarness()
        let a = EventsHarness.msgID(subscription: "sa")
        let b = EventsHarness.msgID(subscription: "sb")
        let roundTripsBefore = harness.redis.roundTripCount
        for _ in 0..<50 { #expect(harness.call("POST", "/v1/e/o/\(a)").status == 204) }
        #expect(harness.call("POST", "/v1/e/o/\(b)").status == 204)
        #expect(harness.call("POST", "/v1/e/c/\(b)").status == 204)
        let campaign = RedisKeys.eventCounters(appID: "app_ev", campaignID: "cmp_ev")
        let variant = RedisKeys.eventVariantCounters(appID: "app_ev", campaignID: "cmp_ev", variant: "A")
        #expect(eventually(timeout: 10) {
            (try? harness.redis.pipeline([["HGET", .string(campaign), "opened"]]))?.first?.integerValue == 51
        })
        let replies = try harness.redis.pipeline([
            ["HGET", .string(campaign), "clicked"], ["HGET", .string(variant), "opened"],
            ["PFCOUNT", .string(RedisKeys.eventUniques(appID: "app_ev", campaignID: "cmp_ev", type: "opened"))],
            ["PFCOUNT", .string(RedisKeys.eventUniques(appID: "app_ev", campaignID: "cmp_ev", type: "clicked"))],
            ["PFCOUNT", .string(RedisKeys.eventVariantUniques(appID: "app_ev", campaignID: "cmp_ev", variant: "A", type: "opened"))],
            ["TTL", .string(campaign)],
        ])
        #expect(replies[0].integerValue == 1)
        #expect(replies[1].integerValue == 51)
        #expect(replies[2].integerValue == 2, "50 pings of one msgId count once")
        #expect(replies[3].integerValue == 1)
        #expect(replies[4].integerValue == 2)
        #expect((replies[5].integerValue ?? 0) > 80 * 86_400, "every key has a TTL")
        // Flushes are pipelines, not a round trip per ping (the checks above add a few).
        #expect(harness.redis.roundTripCount - roundTripsBefore < 30)
    }

    @Test("readiness follows Redis; /readyz names the failing dependency")
    func readiness() throws {
        let harness = try EventsHarness()
        #expect(harness.service.isReady(now: 10))
        #expect(String(decoding: harness.call("GET", "/readyz", now: 11).body, as: UTF8.self) == #"{"ready":true}"# + "\n")
        harness.redisServer.process.stop()
        #expect(!harness.service.isReady(now: 20))
        let notReady = harness.call("GET", "/readyz", now: 30)
        #expect(notReady.status == 503)
        #expect(notReady.contentType == "application/json")
        #expect(String(decoding: notReady.body, as: UTF8.self)
                == #"{"ready":false,"failing":[{"dependency":"redis","detail":"unreachable: no answer to PING"}]}"# + "\n")
        #expect(harness.call("GET", "/healthz").status == 200)
    }
}
