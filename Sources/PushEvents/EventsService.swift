import Dispatch
import PushRuntime
import Foundation
import PushCore
import PushHTTPServer
import PushKafka
import PushRedis
import Synchronization

/// The tracking endpoint's request handling (`pushworker events`, docs/reference/tracking-api.md):
/// route → method → per-IP rate limit → msgId verification (no database) →
/// event on the events topic (keyed by msgId), batched campaign counters in Redis, webhook
/// queue. Every step on the request path is non-blocking: Kafka `produce` only enqueues,
/// counters and webhooks are handed to their own threads.
///
/// Answers: 204 accepted · 400 malformed or badly signed msgId (one body for both: nothing is
/// revealed) · 404 unknown path or event type · 405 other methods (`Allow`) · 429 past
/// `EVENT_RATE_LIMIT` (`Retry-After`, whole seconds). A repeated ping is accepted again: it
/// only moves analytics counters (uniques are HyperLogLogs of msgIds), it grants nothing.
public final class EventsService: Sendable {
    public struct Dependencies: Sendable {
        public var keyring: MsgIDKeyring
        public var producer: KafkaProducer
        public var topic: String
        public var counters: EventCounterFlusher
        public var webhooks: WebhookDispatcher?
        public var limiter: EventRateLimiter
        public var proxies: TrustedProxies
        public var hasher: ClientAddressHasher
        public var metrics: Metrics
        /// Whether Redis answers (called by `/readyz`; the service caches it for a second).
        public var redisPing: @Sendable () -> Bool

        public init(keyring: MsgIDKeyring, producer: KafkaProducer, topic: String, counters: EventCounterFlusher,
                    webhooks: WebhookDispatcher?, limiter: EventRateLimiter, proxies: TrustedProxies,
                    hasher: ClientAddressHasher, metrics: Metrics, redisPing: @escaping @Sendable () -> Bool) {
            self.keyring = keyring; self.producer = producer; self.topic = topic; self.counters = counters
            self.webhooks = webhooks; self.limiter = limiter; self.proxies = proxies; self.hasher = hasher
            self.metrics = metrics; self.redisPing = redisPing
        }
    }

    private let dependencies: Dependencies
    /// Hot-path counts (atomics, no allocation), moved into ``Metrics`` by ``syncMetrics()``
    /// (every counter-flusher tick and before `/metrics` renders): `Metrics.increment` renders
    /// and escapes its labels on every call, too slow for 20k pings/s on one core.
    private let hot = HotCounters()
    private let kafkaHealthy = Atomic<Bool>(true)
    private let readinessCheck = Mutex<(checkedAt: Double, redis: Bool)>((-1e9, false))
    static let badMsgIDBody = "bad msgId\n"

    public init(_ dependencies: Dependencies) { self.dependencies = dependencies }

    /// Monotonic seconds.
    public static func monotonicSeconds() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// Handles one request (called on the listener's threads).
    public func handle(_ request: HTTPListener.Request, now: Double = EventsService.monotonicSeconds()) -> HTTPListener.Response {
        let metrics = dependencies.metrics
        switch EventRoute(method: request.method, path: request.path) {
        case .health:
            return .init(status: 200, body: "ok\n")
        case .ready:
            return OperationsEndpoints.readyz(readiness(now: now))
        case .metrics:
            syncMetrics()
            return .init(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metrics.render())
        case .notFound:
            return .init(status: 404, body: "not found\n")
        case .methodNotAllowed(let allow):
            return .init(status: 405, body: "method not allowed\n", headers: [("Allow", allow)])
        case .track(let type, let msgID):
            let client = dependencies.proxies.clientAddress(peer: request.clientAddress, forwardedFor: request.headers["x-forwarded-for"])
            if case .limited(let seconds) = dependencies.limiter.take(client: client, now: now) {
                hot.rateLimited.add(1, ordering: .relaxed)
                return .init(status: 429, body: "too many requests\n", headers: [("Retry-After", String(seconds))])
            }
            guard let fields = MsgID.verify(msgID, keyring: dependencies.keyring) else {
                hot.badMsgID[type.index].add(1, ordering: .relaxed)
                return .init(status: 400, body: Self.badMsgIDBody)
            }
            let event = TrackingEvent(type: type, msgID: msgID, fields: fields,
                                      atMilliseconds: Int64(Date().timeIntervalSince1970 * 1000),
                                      ipHash: client.isEmpty ? nil : dependencies.hasher.hash(client))
            accept(event)
            hot.accepted[type.index].add(1, ordering: .relaxed)
            return .init(status: 204)
        }
    }

    private func accept(_ event: TrackingEvent) {
        let json = event.json()
        dependencies.producer.produce(topic: dependencies.topic, key: Array(event.msgID.utf8), value: json) { [self] result in
            switch result {
            case .success:
                kafkaHealthy.store(true, ordering: .relaxed)
                hot.publishedOK.add(1, ordering: .relaxed)
            case .failure:
                hot.publishedError.add(1, ordering: .relaxed)
            }
        }
        dependencies.counters.record(event)
        dependencies.webhooks?.enqueue(appID: event.fields.appID, event: json)
    }

    /// Moves the hot-path counts into ``Metrics`` (idempotent; any thread).
    public func syncMetrics() {
        let metrics = dependencies.metrics
        for type in TrackingEventType.allCases {
            let accepted = hot.accepted[type.index].exchange(0, ordering: .relaxed)
            if accepted > 0 { metrics.increment("pushworker_events_total", [("type", type.rawValue), ("outcome", "accepted")], by: Double(accepted)) }
            let bad = hot.badMsgID[type.index].exchange(0, ordering: .relaxed)
            if bad > 0 { metrics.increment("pushworker_events_total", [("type", type.rawValue), ("outcome", "bad_msgid")], by: Double(bad)) }
        }
        let limited = hot.rateLimited.exchange(0, ordering: .relaxed)
        if limited > 0 { metrics.increment("pushworker_events_rate_limited_total", by: Double(limited)) }
        let evictions = dependencies.limiter.evictions
        let reported = hot.reportedEvictions.exchange(evictions, ordering: .relaxed)
        if evictions > reported { metrics.increment("pushworker_events_rate_limit_evictions_total", by: Double(evictions - reported)) }
        let published = hot.publishedOK.exchange(0, ordering: .relaxed)
        if published > 0 { metrics.increment("pushworker_events_published_total", [("outcome", "ok")], by: Double(published)) }
        let failed = hot.publishedError.exchange(0, ordering: .relaxed)
        if failed > 0 {
            metrics.increment("pushworker_events_published_total", [("outcome", "error")], by: Double(failed))
            metrics.increment("pushworker_kafka_errors_total", by: Double(failed))
        }
    }

    /// Drains the producer's client errors (run on the counter flusher's thread): all brokers
    /// down or a fatal error make the service unready until a record is delivered again.
    public func checkProducer() {
        for error in dependencies.producer.drainErrors() {
            dependencies.metrics.increment("pushworker_kafka_errors_total")
            if error.isFatal || error.code == KafkaError.allBrokersDown { kafkaHealthy.store(false, ordering: .relaxed) }
        }
    }

    /// Redis answers (checked at most once a second) and the Kafka producer is healthy.
    public func isReady(now: Double = EventsService.monotonicSeconds()) -> Bool { readiness(now: now).isReady }

    /// What `/readyz` says: Redis (checked at most once a second) and the Kafka producer, each
    /// named with why when it fails.
    public func readiness(now: Double = EventsService.monotonicSeconds()) -> Readiness {
        let cached = readinessCheck.withLock { $0 }
        var redis = cached.redis
        if now - cached.checkedAt >= 1 {
            redis = dependencies.redisPing()
            readinessCheck.withLock { $0 = (now, redis) }
        }
        var failing: [Readiness.Failure] = []
        if !redis { failing.append(.init(dependency: "redis", detail: "unreachable: no answer to PING")) }
        if !kafkaHealthy.load(ordering: .relaxed) {
            failing.append(.init(dependency: "kafka_producer", detail: "all brokers down or a fatal producer error: events are not published until a record is delivered again"))
        }
        dependencies.metrics.set("pushworker_ready", [], failing.isEmpty ? 1 : 0)
        return Readiness(failing: failing)
    }
}

/// Lock-free counters of the request path.
final class HotCounters: Sendable {
    final class Cell: Sendable {
        let value = Atomic<Int>(0)
        func add(_ amount: Int, ordering: AtomicUpdateOrdering) { value.add(amount, ordering: .relaxed) }
        func exchange(_ newValue: Int, ordering: AtomicUpdateOrdering) -> Int { value.exchange(newValue, ordering: .relaxed) }
    }
    let accepted = (0..<4).map { _ in Cell() }
    let badMsgID = (0..<4).map { _ in Cell() }
    let rateLimited = Cell()
    /// ``EventRateLimiter/evictions`` as last moved into the metrics.
    let reportedEvictions = Cell()
    let publishedOK = Cell()
    let publishedError = Cell()
}

