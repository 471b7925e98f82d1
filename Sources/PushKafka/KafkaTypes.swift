/// An error reported by librdkafka or by the PushKafka wrapper.
///
/// `code` is librdkafka's `rd_kafka_resp_err_t`: negative values are client-side conditions
/// (`-187` all brokers down, `-192` message timed out), positive ones are Kafka protocol
/// error codes. `isFatal` marks errors after which the client instance cannot continue
/// (e.g. a fenced idempotent producer): the process should restart the client.
public struct KafkaError: Error, Sendable, CustomStringConvertible, Equatable {
    /// librdkafka error code (`rd_kafka_resp_err_t`).
    public let code: Int32
    /// Human-readable detail (librdkafka's error string plus context).
    public let message: String
    /// Whether the client instance is unusable after this error.
    public let isFatal: Bool

    public init(code: Int32, message: String, isFatal: Bool = false) {
        self.code = code
        self.message = message
        self.isFatal = isFatal
    }

    /// The librdkafka error name, e.g. `_ALL_BROKERS_DOWN`, `UNKNOWN_TOPIC_OR_PART`.
    public var name: String { RDKafkaErrors.name(code) }

    public var description: String {
        "KafkaError(\(name) \(code)\(isFatal ? " fatal" : ""): \(message))"
    }

    /// Local: all broker connections are down (`RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN`).
    public static let allBrokersDown: Int32 = -187
    /// Local: broker transport failure (`RD_KAFKA_RESP_ERR__TRANSPORT`).
    public static let transport: Int32 = -195
    /// Local: message timed out before delivery (`RD_KAFKA_RESP_ERR__MSG_TIMED_OUT`).
    public static let messageTimedOut: Int32 = -192
    /// Local: invalid argument or configuration (`RD_KAFKA_RESP_ERR__INVALID_ARG`).
    public static let invalidArgument: Int32 = -186
    /// Local: the client was closed (`RD_KAFKA_RESP_ERR__DESTROY`).
    public static let destroyed: Int32 = -197
    /// Local: queued message purged on close (`RD_KAFKA_RESP_ERR__PURGE_QUEUE`).
    public static let purgedQueue: Int32 = -152
    /// Local: unknown topic (`RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC`).
    public static let unknownTopic: Int32 = -188
    /// Broker: unknown topic or partition (`RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART`).
    public static let unknownTopicOrPartition: Int32 = 3
}

/// One Kafka record header. `value == nil` is a null header value (distinct from empty).
public struct KafkaHeader: Sendable, Equatable {
    public var name: String
    public var value: [UInt8]?

    public init(name: String, value: [UInt8]?) {
        self.name = name
        self.value = value
    }

    /// A header whose value is the UTF-8 bytes of `value`.
    public init(name: String, string value: String) {
        self.name = name
        self.value = Array(value.utf8)
    }
}

/// A topic partition.
public struct TopicPartition: Sendable, Hashable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)[\(partition)]" }
}

/// A record read by `KafkaConsumer`. Bytes are copied out of librdkafka's buffers.
public struct KafkaMessage: Sendable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [KafkaHeader]
    /// Record timestamp in milliseconds since the Unix epoch (create or log-append time), if any.
    public var timestampMs: Int64?

    public init(topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader], timestampMs: Int64?) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
        self.timestampMs = timestampMs
    }

    /// The topic partition this record came from.
    public var topicPartition: TopicPartition { TopicPartition(topic: topic, partition: partition) }

    /// The first header named `name`, if any.
    public func header(_ name: String) -> KafkaHeader? { headers.first { $0.name == name } }
}

/// Where a produced record was stored (acknowledged per the producer's `acks`).
public struct KafkaDeliveryReport: Sendable, Equatable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64

    public init(topic: String, partition: Int32, offset: Int64) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
    }
}

/// A change of a consumer's assignment, in the order librdkafka reported it
/// (cooperative-sticky protocol: incremental).
public enum KafkaRebalanceEvent: Sendable, Equatable {
    /// Partitions added to this consumer's assignment.
    case assigned([TopicPartition])
    /// Partitions taken away in an orderly rebalance: commit what is done for them.
    case revoked([TopicPartition])
    /// Partitions lost without an orderly revoke (session timeout, fenced): another member may
    /// already own them, so commits for them will fail; in-flight work will be redelivered.
    case lost([TopicPartition])
}

/// A record as produced: what a failed delivery hands back (``KafkaDelivery/failed(_:_:)``).
public struct KafkaRecord: Sendable, Equatable {
    public var topic: String
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [KafkaHeader]

    public init(topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader] = []) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
    }
}

/// The outcome of one record produced with a ``KafkaDeliveryHandler``.
public enum KafkaDelivery: Sendable, Equatable {
    /// The broker acknowledged it.
    case delivered
    /// It failed for good within librdkafka's retries (or was refused at once); the record is a
    /// copy of what was produced.
    case failed(KafkaError, KafkaRecord)
}

/// Receives the outcomes of many produced records (``KafkaProducer/produce(topic:key:value:handler:)``),
/// on the delivery-report thread: it must be cheap. One handler serves any number of records, so
/// the per-record path allocates nothing of its own.
public final class KafkaDeliveryHandler: Sendable {
    let body: @Sendable (KafkaDelivery) -> Void

    public init(_ body: @escaping @Sendable (KafkaDelivery) -> Void) {
        self.body = body
    }
}
