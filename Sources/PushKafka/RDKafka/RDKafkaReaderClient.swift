import CRdKafka
import Foundation

/// An `rd_kafka_t` of consumer type that reads assigned partitions from given offsets: no
/// subscription, so it never joins a group, never rebalances and never commits (its `group.id`
/// only exists because librdkafka's consumer queue needs one).
///
/// Built by ``makeClient(properties:)`` (the handle first, then this owner, whose `init` cannot
/// fail); `close` is the one cleanup path, run once, by `close()` or `deinit`.
///
/// Thread safety: `handle` never changes after init; every use goes through `handleGuard`, and
/// `close` destroys the handle only after the guard has shut out new users and waited for
/// current ones. Meant for one reading thread.
final class RDKafkaReaderClient: @unchecked Sendable {
    private let handle: OpaquePointer
    private let handleGuard = RDKafkaHandleGuard()

    static func makeClient(properties: [String: String]) throws(KafkaError) -> RDKafkaReaderClient {
        let config = try RDKafkaConfig.make(properties)
        return RDKafkaReaderClient(handle: try config.makeHandle(RD_KAFKA_CONSUMER))
    }

    private init(handle: OpaquePointer) {
        self.handle = handle
        _ = rd_kafka_set_log_queue(handle, nil)
        _ = rd_kafka_poll_set_consumer(handle)
    }

    deinit { close() }

    private func with<T>(_ body: (OpaquePointer) throws(KafkaError) -> T) throws(KafkaError) -> T {
        guard handleGuard.enter() else { throw KafkaError(code: KafkaError.destroyed, message: "reader is closed") }
        defer { handleGuard.leave() }
        return try body(handle)
    }

    func metadata(timeoutMs: Duration) throws(KafkaError) -> KafkaClusterMetadata {
        try with { (handle) throws(KafkaError) in try RDKafkaAdmin.metadata(handle, timeout: timeoutMs) }
    }

    /// Low and high watermarks of one partition, asked of its leader.
    func watermarks(_ partition: TopicPartition, timeoutMs: Int32) throws(KafkaError) -> (low: Int64, high: Int64) {
        try with { (handle) throws(KafkaError) in
            var low: Int64 = -1, high: Int64 = -1
            let err = rd_kafka_query_watermark_offsets(handle, partition.topic, partition.partition, &low, &high, timeoutMs)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw RDKafkaErrors.error(err, "watermarks of \(partition)") }
            return (low, high)
        }
    }

    /// Reads exactly these partitions from these offsets (replacing any earlier assignment).
    func assign(_ offsets: [TopicPartition: Int64]) throws(KafkaError) {
        try with { (handle) throws(KafkaError) in
            let list = RDKafkaTopicPartitionList.make(offsets.map { ($0.key, $0.value) })
            defer { rd_kafka_topic_partition_list_destroy(list) }
            let err = rd_kafka_assign(handle, list)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw RDKafkaErrors.error(err, "assign") }
        }
    }

    /// The next offset the reader will return per partition (`rd_kafka_position`), -1001 when unknown.
    func positions(_ partitions: [TopicPartition]) -> [TopicPartition: Int64] {
        handleGuard.with {
            let list = RDKafkaTopicPartitionList.make(partitions.map { ($0, nil) })
            defer { rd_kafka_topic_partition_list_destroy(list) }
            guard rd_kafka_position(handle, list) == RD_KAFKA_RESP_ERR_NO_ERROR else { return [:] }
            var positions: [TopicPartition: Int64] = [:]
            for element in RDKafkaTopicPartitionList.read(list) where element.error == 0 { positions[element.topicPartition] = element.offset }
            return positions
        } ?? [:]
    }

    /// One record or error; nil on timeout (or when closed).
    func poll(timeoutMs: Int32) -> Result<KafkaMessage, KafkaError>? {
        let result: Result<KafkaMessage, KafkaError>?? = handleGuard.with {
            guard let message = rd_kafka_consumer_poll(handle, timeoutMs) else { return nil }
            defer { rd_kafka_message_destroy(message) }
            return RDKafkaMessageReader.result(message)
        }
        return result ?? nil
    }

    /// Stops reading and destroys the handle (no group to leave, nothing to commit).
    func close() {
        guard handleGuard.closeAndWait() else { return }
        _ = rd_kafka_assign(handle, nil)
        rd_kafka_destroy(handle)
    }
}
