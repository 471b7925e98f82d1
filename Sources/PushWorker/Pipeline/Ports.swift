import Dispatch
import PushRuntime
import Foundation
import PushCore
import PushDelivery
import PushKafka
import PushProviders
import PushRedis

/// Time as the pipeline reads it, and only through this (tests inject a ``ManualClock``-like fake).
public protocol PipelineClock: Sendable {
    /// Unix seconds: results' timestamps, job expiry, retry `notBefore`.
    var wallSeconds: Double { get }
    /// Seconds on a clock that never goes back (leases, waits, holds, breakers).
    var monotonicSeconds: Double { get }
}

/// The process's clocks: `Date()` and the uptime clock.
public struct SystemClock: PipelineClock {
    public init() {}
    public var wallSeconds: Double { Date().timeIntervalSince1970 }
    public var monotonicSeconds: Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}

/// Where jobs come from: the consumer group's messages, its rebalances and its committed
/// offsets. Implemented by ``KafkaConsumer`` (librdkafka) and, in tests, by an in-memory fake.
/// Used from the worker's loop thread, `lag` from a background queue.
public protocol JobSource: AnyObject, Sendable {
    /// The next message or consumer error, nil when none came within `timeout`. Rebalances are
    /// served inside the call and reported by ``drainRebalanceEvents()``.
    func poll(timeout: Duration) -> Result<KafkaMessage, KafkaError>?
    /// The assignments, revocations and losses served since the last call, in order.
    func drainRebalanceEvents() -> [KafkaRebalanceEvent]
    func pause(_ partitions: [TopicPartition])
    func resume(_ partitions: [TopicPartition])
    /// Commits, per partition, the offset of the next message to read.
    func commit(_ offsets: [TopicPartition: Int64]) throws(KafkaError)
    /// Messages behind the end of each assigned partition.
    func lag(timeout: Duration) -> [TopicPartition: Int64]
    /// True once the group assigned this member its partitions (readiness).
    var hasJoinedGroup: Bool { get }
    /// Leaves the group; idempotent.
    func close()
}

extension KafkaConsumer: JobSource {}

/// The fleet's shared delivery state (docs/redis.md): claims with leases on Redis's clock, sent
/// markers, unanswered attempts, dead tokens, provider backoffs, token buckets. Implemented by
/// ``DeliveryStateStore`` (Redis, standalone or Cluster) and, in tests, by an in-memory fake.
/// Blocking calls: never on the cooperative pool.
public protocol DeliveryStatePort: AnyObject, Sendable {
    /// Claims, with the controls of `controls`' campaigns read in the same round trip
    /// (``DeliveryStateStore/claim(_:nowMs:leaseMs:unansweredLimit:backoffs:controls:)``).
    func claim(_ items: [DeliveryStateStore.ClaimItem], leaseMs: Int64, unansweredLimit: Int,
               backoffs: [(appID: String, provider: String)],
               controls: [(appID: String, campaignID: String)]) throws(RedisError) -> DeliveryStateStore.ClaimAnswers
    /// Records outcomes and counts final results per campaign (the guardrail); answers the
    /// counted campaigns that are paused or cancelled.
    func record(_ entries: [DeliveryStateStore.RecordEntry],
                invalid: [(appID: String, platform: String, tokenHash: String, invalidSinceMs: Int64)],
                counts: [DeliveryStateStore.CampaignCount]) throws(RedisError) -> [(appID: String, campaignID: String, state: CampaignState)]
    /// The campaigns' controls, in order, in one round trip.
    func controls(_ campaigns: [(appID: String, campaignID: String)]) throws(RedisError) -> [CampaignControl]
    func acquire(count: Int, from buckets: [DeliveryStateStore.Bucket]) throws(RedisError) -> (granted: Int, retryAfterMs: Int64)
    @discardableResult
    func setBackoff(appID: String, provider: String, milliseconds: Int64) throws(RedisError) -> Int64
    /// Whether the state answers now (readiness).
    func isReachable() -> Bool
    /// Loads what later calls need (Redis: the Lua scripts); optional.
    func prepare() throws(RedisError)
}

extension DeliveryStatePort {
    /// A claim that reads no campaign control (lease renewals, re-records).
    func claim(_ items: [DeliveryStateStore.ClaimItem], leaseMs: Int64, unansweredLimit: Int,
               backoffs: [(appID: String, provider: String)]) throws(RedisError) -> DeliveryStateStore.ClaimAnswers {
        try claim(items, leaseMs: leaseMs, unansweredLimit: unansweredLimit, backoffs: backoffs, controls: [])
    }

    /// A record that counts no result (releases, re-records).
    func record(_ entries: [DeliveryStateStore.RecordEntry],
                invalid: [(appID: String, platform: String, tokenHash: String, invalidSinceMs: Int64)]) throws(RedisError) {
        _ = try record(entries, invalid: invalid, counts: [])
    }
}

extension DeliveryStateStore: DeliveryStatePort {
    public func claim(_ items: [ClaimItem], leaseMs: Int64, unansweredLimit: Int,
                      backoffs: [(appID: String, provider: String)],
                      controls: [(appID: String, campaignID: String)]) throws(RedisError) -> ClaimAnswers {
        try claim(items, nowMs: nil, leaseMs: leaseMs, unansweredLimit: unansweredLimit, backoffs: backoffs, controls: controls)
    }

    public func acquire(count: Int, from buckets: [Bucket]) throws(RedisError) -> (granted: Int, retryAfterMs: Int64) {
        try acquire(count: count, from: buckets, nowMs: nil)
    }

    public func isReachable() -> Bool { client.ping() }

    public func prepare() throws(RedisError) { try preloadScripts() }
}

/// Where the pipeline's messages go: results, token invalidations, retry jobs, dead letters.
/// Every message ends acknowledged exactly once (``acknowledgement(_:)``'s closure or `acked`),
/// after the broker took it or after a permanent failure was dealt with. Implemented by
/// ``ReliableProducer`` (Kafka) and, in tests, by an in-memory fake.
public protocol MessageSink: Sendable {
    /// A handler shared by many messages (one per job processing): `acked` runs once per message
    /// produced with it (``produce(topic:key:value:acknowledgement:)``). The object is the sink's
    /// own subclass; the sink gets it back.
    func acknowledgement(_ acked: @escaping @Sendable () -> Void) -> MessageAcknowledgement
    /// The bytes are copied before the call returns.
    func produce(topic: String, key: UnsafeRawBufferPointer?, value: UnsafeRawBufferPointer, acknowledgement: MessageAcknowledgement)
    func produce(topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader], acked: @escaping @Sendable () -> Void)
    /// The largest dead-letter copy: longer values are cut to it.
    var deadLetterMaxBytes: Int { get }
    /// Waits up to `timeout` for what was produced to be acknowledged.
    func flush(timeout: Duration)
}

/// A message sink's acknowledgement handler (``MessageSink/acknowledgement(_:)``): opaque to the
/// pipeline, subclassed by each sink.
open class MessageAcknowledgement: @unchecked Sendable {
    // Thread safety: no state of its own; subclasses keep only immutable, Sendable state.
    public init() {}
}

/// How the pipeline reaches the providers: one request (or one Huawei batch) at a time, each
/// completed once on the transport's thread. `shouldWrite` is asked right before the request is
/// handed to the connection: false ⇒ nothing is written and the completion says
/// ``PushProviders/AttemptCertainty/withheld``. Implemented by ``Deliverer`` (libcurl HTTP/2) and, in
/// tests, by a fake.
public protocol ProviderTransport: Sendable {
    func deliver(_ item: SendItem, credentials: AppCredentials, shouldWrite: @escaping @Sendable () -> Bool,
                 completion: @escaping Deliverer.Completion)
    /// One attempt per token, in order.
    func deliverHMSBatch(_ request: ProviderRequest, tokens: [String], credentials: AppCredentials,
                         shouldWrite: @escaping @Sendable () -> Bool, completion: @escaping @Sendable ([Deliverer.Attempt]) -> Void)
    /// Requests submitted between the two leave together (one I/O turn).
    func holdWakeUps()
    func releaseWakeUps()
    /// Requests waiting to be written are withheld at once (each completes `.withheld`).
    func withdrawQueued()
    /// Stops: in-flight requests get up to `drainTimeout`, then complete as aborted.
    func shutdown(drainTimeout: Duration)
}

extension Deliverer: ProviderTransport {}
