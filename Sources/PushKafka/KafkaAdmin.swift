/// A Kafka broker as listed in cluster metadata.
public struct KafkaBrokerMetadata: Sendable, Equatable {
    public var id: Int32
    public var host: String
    public var port: Int
    public init(id: Int32, host: String, port: Int) { self.id = id; self.host = host; self.port = port }
}

/// A topic as listed in cluster metadata. `replicationFactor` is partition 0's replica count
/// (0 when the topic has no partitions); `error` is the broker's per-topic error, if any.
public struct KafkaTopicMetadata: Sendable, Equatable {
    public var name: String
    public var partitions: Int
    public var replicationFactor: Int
    public var error: KafkaError?
    public init(name: String, partitions: Int, replicationFactor: Int, error: KafkaError? = nil) {
        self.name = name; self.partitions = partitions; self.replicationFactor = replicationFactor; self.error = error
    }
}

/// Brokers and topics of a cluster (`rd_kafka_metadata` for all topics: never auto-creates).
public struct KafkaClusterMetadata: Sendable, Equatable {
    public var brokers: [KafkaBrokerMetadata]
    public var topics: [KafkaTopicMetadata]
    public init(brokers: [KafkaBrokerMetadata], topics: [KafkaTopicMetadata]) { self.brokers = brokers; self.topics = topics }

    /// The topic named `name`, if the cluster has it (without error).
    public func topic(_ name: String) -> KafkaTopicMetadata? { topics.first { $0.name == name && $0.error == nil } }
}

/// A topic to create: name, partition count, replication factor and topic-level config.
public struct KafkaNewTopic: Sendable, Equatable {
    public var name: String
    public var partitions: Int
    public var replicationFactor: Int
    /// Topic configs (`retention.ms`, `cleanup.policy`, …), applied in this order.
    public var config: [(String, String)]

    public init(name: String, partitions: Int, replicationFactor: Int, config: [(String, String)] = []) {
        self.name = name; self.partitions = partitions; self.replicationFactor = replicationFactor; self.config = config
    }

    public static func == (a: KafkaNewTopic, b: KafkaNewTopic) -> Bool {
        a.name == b.name && a.partitions == b.partitions && a.replicationFactor == b.replicationFactor
            && a.config.map(\.0) == b.config.map(\.0) && a.config.map(\.1) == b.config.map(\.1)
    }
}

/// One topic-level config value as described by the broker.
public struct KafkaConfigEntry: Sendable, Equatable {
    public var name: String
    /// Nil for sensitive or unset values.
    public var value: String?
    /// Whether the value is the broker/cluster default (not set on the topic).
    public var isDefault: Bool
    public var isReadOnly: Bool
    /// librdkafka's `rd_kafka_ConfigSource_t` name: `DYNAMIC_TOPIC_CONFIG` (set on the topic),
    /// `DYNAMIC_BROKER_CONFIG`, `STATIC_BROKER_CONFIG`, `DEFAULT_CONFIG`, …
    public var source: String

    public init(name: String, value: String?, isDefault: Bool, isReadOnly: Bool, source: String) {
        self.name = name; self.value = value; self.isDefault = isDefault; self.isReadOnly = isReadOnly; self.source = source
    }

    /// Whether the value was set on the topic itself (what AlterConfigs replaces).
    public var isTopicOverride: Bool { source == "DYNAMIC_TOPIC_CONFIG" }
}

/// The outcome for one topic of a multi-topic admin request: nil `error` means done.
public struct KafkaTopicOperationResult: Sendable, Equatable {
    public var topic: String
    public var error: KafkaError?
    public init(topic: String, error: KafkaError?) { self.topic = topic; self.error = error }
}

/// The Kafka Admin API over librdkafka: cluster metadata, CreateTopics, CreatePartitions,
/// DescribeConfigs and AlterConfigs (KIP-4, KIP-133, KIP-195).
///
/// Every call blocks until the cluster answers or `timeout` passes (default 15 s): call it from
/// a thread of your own, not the cooperative pool. Results arrive on a queue created for the
/// call (`rd_kafka_queue_new` + `rd_kafka_queue_poll`), never through callbacks. A whole
/// request that fails throws a ``KafkaError`` (`_TIMED_OUT` -185 when no controller answered,
/// `_UNSUPPORTED_FEATURE` -165 when the broker does not implement the API); per-topic
/// failures come back in ``KafkaTopicOperationResult``.
///
/// CreateTopics and CreatePartitions go to the controller. DescribeConfigs and AlterConfigs of
/// topics may be answered by any broker, so they go to the first broker in metadata.
///
/// librdkafka 2.0.2's mock cluster (`dev-broker`) answers metadata but implements none of these
/// four APIs: creations time out waiting for a controller, config calls fail with
/// `_UNSUPPORTED_FEATURE`. AlterConfigs (not the incremental variant, which needs librdkafka
/// ≥ 2.2) replaces every topic-level override: pass the full set you want to keep.
public final class KafkaAdmin: Sendable {
    private let client: RDKafkaEventClient
    /// Per-request timeout. Default: 15 s.
    public let timeout: Duration

    public init(properties: [String: String], timeout: Duration = .seconds(15)) throws(KafkaError) {
        var merged = properties
        merged["log.queue"] = "true"
        client = try RDKafkaEventClient.makeClient(properties: merged, name: "admin")
        self.timeout = timeout
    }

    deinit { client.close(timeout: .zero) }

    private func withHandle<T>(_ body: (OpaquePointer) throws(KafkaError) -> T) throws(KafkaError) -> T {
        guard client.handleGuard.enter() else {
            throw KafkaError(code: KafkaError.destroyed, message: "admin client is closed")
        }
        defer { client.handleGuard.leave() }
        return try body(client.handle)
    }

    /// Brokers and every topic of the cluster.
    public func metadata() throws(KafkaError) -> KafkaClusterMetadata {
        try withHandle { (handle) throws(KafkaError) in try RDKafkaAdmin.metadata(handle, timeout: timeout) }
    }

    /// Creates `topics`; one result per topic (`TOPIC_ALREADY_EXISTS` 36 when it exists).
    public func createTopics(_ topics: [KafkaNewTopic]) throws(KafkaError) -> [KafkaTopicOperationResult] {
        try withHandle { (handle) throws(KafkaError) in
            try RDKafkaAdmin.createTopics(handle, topics, timeout: timeout).map { KafkaTopicOperationResult(topic: $0.topic, error: $0.error) }
        }
    }

    /// Raises each topic's partition count to `totalCount` (Kafka never lowers it).
    public func createPartitions(_ requests: [(topic: String, totalCount: Int)]) throws(KafkaError) -> [KafkaTopicOperationResult] {
        try withHandle { (handle) throws(KafkaError) in
            try RDKafkaAdmin.createPartitions(handle, requests, timeout: timeout).map { KafkaTopicOperationResult(topic: $0.topic, error: $0.error) }
        }
    }

    /// The config entries of each topic, by topic name. A per-topic failure throws.
    public func describeTopicConfigs(_ topics: [String]) throws(KafkaError) -> [String: [KafkaConfigEntry]] {
        guard !topics.isEmpty else { return [:] }
        let broker = try metadata().brokers.first?.id
        let results = try withHandle { (handle) throws(KafkaError) in
            try RDKafkaAdmin.describeTopicConfigs(handle, topics, broker: broker, timeout: timeout)
        }
        var configs: [String: [KafkaConfigEntry]] = [:]
        for result in results {
            if let error = result.error { throw KafkaError(code: error.code, message: "DescribeConfigs \(result.topic): \(error.message)") }
            configs[result.topic] = result.entries.map {
                KafkaConfigEntry(name: $0.name, value: $0.value, isDefault: $0.isDefault, isReadOnly: $0.isReadOnly, source: $0.source)
            }
        }
        return configs
    }

    /// Replaces each topic's topic-level config overrides with `config` (AlterConfigs).
    public func alterTopicConfigs(_ items: [(topic: String, config: [(String, String)])]) throws(KafkaError) -> [KafkaTopicOperationResult] {
        guard !items.isEmpty else { return [] }
        let broker = try metadata().brokers.first?.id
        return try withHandle { (handle) throws(KafkaError) in
            try RDKafkaAdmin.alterTopicConfigs(handle, items, broker: broker, timeout: timeout).map { KafkaTopicOperationResult(topic: $0.topic, error: $0.error) }
        }
    }

    /// Releases the client (idempotent).
    public func close() { client.close(timeout: .zero) }
}

extension KafkaError {
    /// Local: operation timed out (`RD_KAFKA_RESP_ERR__TIMED_OUT`).
    public static let timedOut: Int32 = -185
    /// Local: the broker does not support the API (`RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE`).
    public static let unsupportedFeature: Int32 = -165
    /// Local: the local producer queue is full (`RD_KAFKA_RESP_ERR__QUEUE_FULL`).
    public static let queueFull: Int32 = -184
    /// Broker: the topic already exists (`RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS`).
    public static let topicAlreadyExists: Int32 = 36
}
