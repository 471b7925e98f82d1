/// A Kafka consumer-group member over librdkafka, with manual commits (at-least-once).
///
/// Settings it enforces: `enable.auto.commit=false`, `enable.auto.offset.store=false`,
/// `partition.assignment.strategy=cooperative-sticky` (incremental assign/unassign, done
/// inside `poll`), `log.queue=true`. Defaults the caller may override:
/// `auto.offset.reset=earliest`. `group.id` is required; `session.timeout.ms` keeps
/// librdkafka's default (45000) unless given (the mock cluster needs ≥ 3000).
///
/// `poll`, `pollBatch`, `commit` and `lag` block: call them from a dedicated thread, never from
/// the cooperative pool. Callbacks (rebalance, errors, logs) are served inside `poll` on that
/// thread; poll at least every `max.poll.interval.ms` (default 300000) or the member is
/// dropped from the group. Rebalance events are drained with `drainRebalanceEvents`: the
/// partitions are already (un)assigned when an event is seen, so work of revoked partitions
/// may be redelivered to their new owner (de-duplicate downstream).
public final class KafkaConsumer: Sendable {
    private let client: RDKafkaConsumerClient

    public init(properties: [String: String], topics: [String]) throws(KafkaError) {
        guard let group = properties["group.id"], !group.isEmpty else {
            throw KafkaError(code: KafkaError.invalidArgument, message: "a consumer needs group.id")
        }
        guard !topics.isEmpty else {
            throw KafkaError(code: KafkaError.invalidArgument, message: "a consumer needs at least one topic")
        }
        var merged: [String: String] = ["auto.offset.reset": "earliest"]
        for (key, value) in properties { merged[key] = value }
        merged["enable.auto.commit"] = "false"
        merged["enable.auto.offset.store"] = "false"
        merged["partition.assignment.strategy"] = "cooperative-sticky"
        merged["log.queue"] = "true"
        client = try RDKafkaConsumerClient.makeClient(properties: merged, topics: topics)
    }

    deinit { client.close() }

    /// Waits up to `timeout` for one record or error; nil on timeout or after `close`.
    /// Errors are client-level conditions (e.g. `_ALL_BROKERS_DOWN`, `_TRANSPORT`, unknown
    /// topic): librdkafka keeps retrying, so they are informational unless `isFatal`.
    public func poll(timeout: Duration) -> Result<KafkaMessage, KafkaError>? {
        client.poll(timeoutMs: timeout.rdkafkaMilliseconds)
    }

    /// Up to `max` results: waits up to `timeout` for the first, then takes what is already
    /// fetched without waiting.
    public func pollBatch(max: Int, timeout: Duration) -> [Result<KafkaMessage, KafkaError>] {
        guard max > 0, let first = client.poll(timeoutMs: timeout.rdkafkaMilliseconds) else { return [] }
        var results = [first]
        while results.count < max, let next = client.poll(timeoutMs: 0) {
            results.append(next)
        }
        return results
    }

    /// Commits exactly these next offsets (offset = last processed + 1) synchronously.
    /// Fails (e.g. `ILLEGAL_GENERATION`, `REBALANCE_IN_PROGRESS`, `UNKNOWN_MEMBER_ID`) for
    /// partitions this member no longer owns: their records will be redelivered elsewhere.
    public func commit(_ offsets: [TopicPartition: Int64]) throws(KafkaError) {
        try client.commit(offsets)
    }

    /// Stops fetching from `partitions` (records already fetched for them are dropped and
    /// re-fetched after `resume`). Pausing survives until resumed or the partition is revoked:
    /// a partition assigned again later starts unpaused (librdkafka alone would keep the pause).
    public func pause(_ partitions: [TopicPartition]) {
        client.setPaused(partitions, paused: true)
    }

    /// Resumes fetching from `partitions`.
    public func resume(_ partitions: [TopicPartition]) {
        client.setPaused(partitions, paused: false)
    }

    /// The current assignment.
    public var assignment: [TopicPartition] { client.assignment }

    /// True once the consumer has joined its group (first assignment seen, even an empty one).
    /// Stays true afterwards. Rebalances are served inside `poll`, so this needs polling.
    public var hasJoinedGroup: Bool { client.context.state.withLock { $0.hasJoinedGroup } }

    /// The group member id given by the coordinator, if joined.
    public var memberID: String? { client.memberID }

    /// Rebalance events since the last call, oldest first.
    public func drainRebalanceEvents() -> [KafkaRebalanceEvent] {
        client.context.state.withLock { s in
            defer { s.rebalanceEvents.removeAll() }
            return s.rebalanceEvents
        }
    }

    /// Lag per assigned partition: high watermark − committed offset (the low watermark when
    /// nothing is committed). Blocks up to `timeout` (default 5 s) for a coordinator round trip.
    public func lag(timeout: Duration = .seconds(5)) -> [TopicPartition: Int64] {
        client.lag(timeoutMs: timeout.rdkafkaMilliseconds)
    }

    /// Leaves the group cleanly (`rd_kafka_consumer_close`: final revoke, no further commits)
    /// and releases the client. Blocks up to about `session.timeout.ms`; idempotent. Waits for
    /// a `poll` running on another thread to return first.
    public func close() {
        client.close()
    }
}
