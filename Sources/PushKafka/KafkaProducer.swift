/// A Kafka producer over librdkafka (`rd_kafka_produceva`).
///
/// One dedicated thread drains the handle's main queue (delivery reports, errors, logs) with
/// the event API; completions run on that thread, so they must be cheap (resume a
/// continuation, push into a lock-protected buffer). Thread-safe: `produce` may be called from
/// any thread or task; it never blocks (a full local queue fails with `_QUEUE_FULL`, code -184).
///
/// Defaults (overridable by `properties`): `enable.idempotence=true`, `acks=all`,
/// `compression.type=lz4`, `linger.ms=5`. Any librdkafka property may be passed
/// (`bootstrap.servers`, `security.protocol`, `sasl.*`, `ssl.*`, …): see librdkafka's
/// CONFIGURATION.md.
public final class KafkaProducer: Sendable {
    private let client: RDKafkaEventClient

    /// The properties applied before the caller's.
    public static let defaultProperties: [String: String] = [
        "enable.idempotence": "true",
        "acks": "all",
        "compression.type": "lz4",
        "linger.ms": "5",
    ]

    public init(properties: [String: String]) throws(KafkaError) {
        var merged = Self.defaultProperties
        for (key, value) in properties { merged[key] = value }
        merged["log.queue"] = "true"
        client = try RDKafkaEventClient.makeClient(properties: merged, name: "producer")
    }

    deinit {
        client.close(timeout: .seconds(5))
    }

    /// Enqueues one record. `completion` runs exactly once: on the delivery-report thread after
    /// the broker acknowledged (or definitively failed) the record, or synchronously here if
    /// librdkafka refused it (unknown topic in a known cluster, queue full, closed producer).
    /// `partition`: this partition instead of the partitioner's choice for the key (the
    /// benchmarks spread jobs evenly over the partitions: docs/performance.md).
    public func produce(topic: String, partition: Int32? = nil, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader] = [],
                        completion: @escaping @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void) {
        client.produce(topic: topic, partition: partition, key: key, value: value, headers: headers, completion: completion)
    }

    /// Enqueues one record whose outcome goes to `handler`, which many records share: each
    /// record only retains it, where ``produce(topic:partition:key:value:headers:completion:)``
    /// keeps a closure (and the caller its bytes) per record. `handler` runs exactly once per
    /// record, as that method's completion does; a failed record comes back with a copy of what
    /// was produced (read from its delivery report), so nothing needs to be kept to retry it.
    public func produce(topic: String, key: UnsafeRawBufferPointer?, value: UnsafeRawBufferPointer, handler: KafkaDeliveryHandler) {
        client.produce(topic: topic, key: key, value: value, handler: handler)
    }

    /// Produces one record and waits for its delivery report.
    public func produce(topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader] = []) async throws(KafkaError) -> KafkaDeliveryReport {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<KafkaDeliveryReport, KafkaError>, Never>) in
            client.produce(topic: topic, key: key, value: value, headers: headers) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Waits up to `timeout` for every queued record to be delivered (or to fail). Blocking:
    /// call it from a thread of your own, not the cooperative pool. Throws `_TIMED_OUT` (-185)
    /// if records remain.
    public func flush(timeout: Duration) throws(KafkaError) {
        try client.flush(timeout: timeout)
    }

    /// Flushes up to `timeout`, fails what is still queued (`_PURGE_QUEUE` / `_PURGE_INFLIGHT`),
    /// and releases the client. Idempotent; later `produce` calls fail with `_DESTROY`.
    public func close(timeout: Duration) {
        client.close(timeout: timeout)
    }

    /// Client-level errors reported since the last call (e.g. `_ALL_BROKERS_DOWN`, `_TRANSPORT`,
    /// fatal idempotence errors), oldest first. They are also logged through `KafkaLogging`.
    public func drainErrors() -> [KafkaError] {
        client.drainErrors()
    }
}
