import Dispatch
import PushRuntime
import Foundation
import PushCore
import PushKafka
import PushEncoding

/// Produces the worker's output (results, token invalidations, retry jobs, dead letters) so that
/// every message ends exactly once in `acked`: after Kafka acknowledged it, or after a permanent
/// failure was dealt with. Transient failures (brokers away, timeouts, a full queue) are retried
/// after a pause for as long as they last — librdkafka already retries within
/// `message.timeout.ms`; this covers longer outages. A permanent one (too large, not authorized,
/// no such topic; docs/pipeline.md "Nothing wedges") is never retried: it is logged loudly,
/// counted in `pushworker_kafka_produce_failures_total{topic,error}`, and the message is copied
/// to the dead-letter topic with its error (cut to fit); if that copy fails for good too, the
/// message is given up. Either way its job's offset can move on.
final class ReliableProducer: Sendable {
    let producer: KafkaProducer
    let dlqTopic: String
    let metrics: Metrics
    let logger: Logger
    /// The largest value a DLQ copy may have (``Worker/deadLetterMaxBytes(_:)``).
    let deadLetterMaxBytes: Int
    private let retryQueue = DispatchQueue(label: "pushworker.produce-retry")

    init(producer: KafkaProducer, dlqTopic: String, metrics: Metrics, logger: Logger, deadLetterMaxBytes: Int) {
        self.producer = producer
        self.dlqTopic = dlqTopic
        self.metrics = metrics
        self.logger = logger
        self.deadLetterMaxBytes = deadLetterMaxBytes
    }

    /// librdkafka error codes that no retry can cure.
    static let permanentCodes: Set<Int32> = [
        2,    // CORRUPT_MESSAGE (INVALID_MSG)
        10,   // MSG_SIZE_TOO_LARGE (also raised locally above message.max.bytes)
        17,   // INVALID_TOPIC_EXCEPTION
        18,   // RECORD_LIST_TOO_LARGE
        29,   // TOPIC_AUTHORIZATION_FAILED
        31,   // CLUSTER_AUTHORIZATION_FAILED
        87,   // INVALID_RECORD
        -186, // _INVALID_ARG
        -188, // _UNKNOWN_TOPIC: the topic is not in the cluster's metadata
        -190, // _UNKNOWN_PARTITION
        -150, // _FATAL (idempotent producer fenced)
    ]

    static func isPermanent(_ error: KafkaError) -> Bool { error.isFatal || permanentCodes.contains(error.code) }

    /// Produces until acknowledged or permanently failed and dead-lettered; `acked` runs once.
    func produceReliably(topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader] = [],
                         acked: @escaping @Sendable () -> Void) {
        producer.produce(topic: topic, key: key, value: value, headers: headers) { [self] result in
            switch result {
            case .success: acked()
            case .failure(let error): failed(KafkaRecord(topic: topic, key: key, value: value, headers: headers), error, acked: acked)
            }
        }
    }

    /// The same guarantee for one of many messages sharing `acknowledgement`
    /// (``acknowledgement(_:)``): nothing is kept per message (a failed one comes back from its
    /// delivery report), so the results path allocates nothing here per result.
    func produceReliably(topic: String, key: UnsafeRawBufferPointer?, value: UnsafeRawBufferPointer,
                         acknowledgement: KafkaDeliveryHandler) {
        producer.produce(topic: topic, key: key, value: value, handler: acknowledgement)
    }

    /// A handler for ``produceReliably(topic:key:value:acknowledgement:)``: `acked` runs once per
    /// message, after Kafka acknowledged it or after its permanent failure was dealt with.
    func deliveryHandler(_ acked: @escaping @Sendable () -> Void) -> KafkaDeliveryHandler {
        KafkaDeliveryHandler { [self] delivery in
            switch delivery {
            case .delivered: acked()
            case .failed(let error, let record): failed(record, error, acked: acked)
            }
        }
    }

    /// A message that failed for good within librdkafka's retries: dead-lettered when no retry
    /// can cure it, produced again after a pause otherwise.
    private func failed(_ record: KafkaRecord, _ error: KafkaError, acked: @escaping @Sendable () -> Void) {
        let topic = record.topic
        if Self.isPermanent(error) {
            metrics.increment("pushworker_kafka_produce_failures_total", [("topic", Self.topicLabel(topic, dlq: dlqTopic)), ("error", Self.errorLabel(error))])
            logger.error("produce failed permanently: not retried", [
                "kafka.topic": topic, "kafka.error": error.description, "kafka.value_bytes": "\(record.value.count)",
                "action": topic == dlqTopic ? "given up" : "copied to the dead-letter topic",
            ])
            if topic == dlqTopic {
                acked()
            } else {
                deadLetter(topic: topic, key: record.key, value: record.value, headers: record.headers, error: error, acked: acked)
            }
        } else {
            metrics.increment("pushworker_kafka_errors_total")
            logger.warning("produce failed, retrying", ["kafka.topic": topic, "kafka.error": error.description])
            retryQueue.asyncAfter(deadline: .now() + 1) { [self] in
                produceReliably(topic: topic, key: record.key, value: record.value, headers: record.headers, acked: acked)
            }
        }
    }

    /// A copy of a message that could not be produced to `topic`, on the DLQ with the error.
    private func deadLetter(topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader], error: KafkaError,
                            acked: @escaping @Sendable () -> Void) {
        var copyHeaders = headers
        copyHeaders.append(KafkaHeader(name: "error", value: Array("produce to \(topic) failed: \(error.description)".prefix(1000).utf8)))
        copyHeaders.append(KafkaHeader(name: "target-topic", value: Array(topic.utf8)))
        copyHeaders.append(KafkaHeader(name: "failed-at", value: Array(RFC3339Timestamp.format(Date(), milliseconds: true).utf8)))
        var copy = value
        if copy.count > deadLetterMaxBytes {
            copyHeaders.append(KafkaHeader(name: "truncated-from", value: Array("\(copy.count)".utf8)))
            copy = Array(copy.prefix(deadLetterMaxBytes))
        }
        produceReliably(topic: dlqTopic, key: key, value: copy, headers: copyHeaders, acked: acked)
    }

    /// The topic as a metric label: one of the worker's own topics (a small fixed set).
    static func topicLabel(_ topic: String, dlq: String) -> String { topic == dlq ? "dlq" : topic }

    /// The error as a metric label: the name of one of ``permanentCodes``; any other fatal
    /// error is `_FATAL` (librdkafka's name for a fatal error), so the set is fixed.
    static func errorLabel(_ error: KafkaError) -> String {
        permanentCodes.contains(error.code) ? error.name : KafkaError(code: fatalCode, message: "").name
    }

    static let fatalCode: Int32 = -150

    /// Declares `pushworker_kafka_produce_failures_total` at 0 for every label set it can take
    /// (the worker's produced topics × the permanent errors), so `increase()` in the
    /// PushworkerKafkaProduceFailures alert sees the first failure (docs/reference/metrics.md).
    static func declareFailures(in metrics: Metrics, topics: [String], dlq: String) {
        let labels = Set(topics.map { topicLabel($0, dlq: dlq) } + ["dlq"]).sorted()
        let errors = Set(permanentCodes.union([fatalCode]).map { KafkaError(code: $0, message: "").name }).sorted()
        for topic in labels {
            for error in errors { metrics.declare("pushworker_kafka_produce_failures_total", [("topic", topic), ("error", error)]) }
        }
    }
}

/// The Kafka sink's acknowledgement: one delivery handler shared by the messages of a run.
final class KafkaAcknowledgement: MessageAcknowledgement, @unchecked Sendable {
    // Thread safety: immutable.
    let handler: KafkaDeliveryHandler
    init(_ handler: KafkaDeliveryHandler) { self.handler = handler }
}

extension ReliableProducer: MessageSink {
    func acknowledgement(_ acked: @escaping @Sendable () -> Void) -> MessageAcknowledgement {
        KafkaAcknowledgement(deliveryHandler(acked))
    }

    func produce(topic: String, key: UnsafeRawBufferPointer?, value: UnsafeRawBufferPointer, acknowledgement: MessageAcknowledgement) {
        // Only this sink makes its acknowledgements (``acknowledgement(_:)``).
        produceReliably(topic: topic, key: key, value: value, acknowledgement: unsafeDowncast(acknowledgement, to: KafkaAcknowledgement.self).handler)
    }

    func produce(topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader], acked: @escaping @Sendable () -> Void) {
        produceReliably(topic: topic, key: key, value: value, headers: headers, acked: acked)
    }

    func flush(timeout: Duration) { try? producer.flush(timeout: timeout) }
}
