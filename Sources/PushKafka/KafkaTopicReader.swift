import Foundation

/// Reads whole topics from the beginning (or given offsets) to their end as it was when the read
/// started: `pushworker inspect`. It assigns partitions itself, so it never joins a consumer
/// group, never commits and never disturbs the fleet (its `group.id` is a throwaway name:
/// librdkafka's consumer needs one, and nothing is ever stored under it).
///
/// Blocking: call from a thread of your own.
public final class KafkaTopicReader: Sendable {
    private let client: RDKafkaReaderClient
    /// Per broker request (metadata, watermarks) and the longest wait for the next record.
    public let timeout: Duration

    /// `properties`: bootstrap servers and security settings. Overridden: `group.id` (a
    /// throwaway), `enable.auto.commit=false`, `enable.auto.offset.store=false`,
    /// `enable.partition.eof=false`, `log.queue=true`.
    public init(properties: [String: String], timeout: Duration = .seconds(15)) throws(KafkaError) {
        var merged = properties
        merged["group.id"] = "pushworker-inspect-\(UUID().uuidString.prefix(8).lowercased())"
        merged["enable.auto.commit"] = "false"
        merged["enable.auto.offset.store"] = "false"
        merged["enable.partition.eof"] = "false"
        merged["log.queue"] = "true"
        client = try RDKafkaReaderClient.makeClient(properties: merged)
        self.timeout = timeout
    }

    deinit { client.close() }

    /// What a read covers: per partition, from `start` up to (not including) `end`.
    public struct Span: Sendable, Equatable {
        public var partition: Int32
        public var start: Int64
        public var end: Int64
        public var count: Int64 { max(0, end - start) }
        public init(partition: Int32, start: Int64, end: Int64) { self.partition = partition; self.start = start; self.end = end }
    }

    /// The partitions of `topic` and what is in them now (low and high watermarks). Throws
    /// `UNKNOWN_TOPIC_OR_PART` (3) when the topic does not exist.
    public func spans(_ topic: String) throws(KafkaError) -> [Span] {
        let metadata = try client.metadata(timeoutMs: timeout)
        guard let found = metadata.topics.first(where: { $0.name == topic }), found.error == nil, found.partitions > 0 else {
            throw KafkaError(code: KafkaError.unknownTopicOrPartition, message: "topic \(topic) does not exist")
        }
        var spans: [Span] = []
        for partition in 0..<Int32(found.partitions) {
            let marks = try client.watermarks(TopicPartition(topic: topic, partition: partition), timeoutMs: timeout.rdkafkaMilliseconds)
            spans.append(Span(partition: partition, start: max(0, marks.low), end: max(0, marks.high)))
        }
        return spans
    }

    /// Reads `spans` of `topic`, in offset order within each partition, calling `each` for every
    /// record (return false to stop early) and `progress` with (records read, records in the
    /// spans) about once a second while the read lasts (never for a read under a second). Returns the records read. Throws when a broker error ends the
    /// read, or when no record arrives within `timeout` while some are still due.
    @discardableResult
    public func read(_ topic: String, spans: [Span], progress: (Int64, Int64) -> Void = { _, _ in },
                     each: (KafkaMessage) -> Bool) throws(KafkaError) -> Int64 {
        var remaining: [Int32: Int64] = [:]  // partition → end offset
        for span in spans where span.count > 0 { remaining[span.partition] = span.end }
        let total = spans.reduce(0) { $0 + $1.count }
        guard !remaining.isEmpty else { return 0 }
        try client.assign(Dictionary(uniqueKeysWithValues: spans.filter { $0.count > 0 }.map {
            (TopicPartition(topic: topic, partition: $0.partition), $0.start)
        }))
        var read: Int64 = 0
        var lastProgress = ContinuousClock.now
        var lastRecord = ContinuousClock.now
        while !remaining.isEmpty {
            let now = ContinuousClock.now
            if now - lastProgress >= .seconds(1) {
                progress(read, total)
                lastProgress = now
            }
            guard let result = client.poll(timeoutMs: 200) else {
                // Offsets may have gaps at the end (compaction, transaction markers): a partition
                // whose fetch position passed its end is done even without a record there.
                let positions = client.positions(remaining.keys.map { TopicPartition(topic: topic, partition: $0) })
                for (partition, position) in positions where position >= 0 {
                    if let end = remaining[partition.partition], position >= end { remaining[partition.partition] = nil }
                }
                if remaining.isEmpty { break }
                if ContinuousClock.now - lastRecord > timeout {
                    throw KafkaError(code: KafkaError.timedOut,
                                     message: "no record from \(topic) for \(timeout) with \(total - read) still to read (partitions \(remaining.keys.sorted()))")
                }
                continue
            }
            lastRecord = ContinuousClock.now
            switch result {
            case .failure(let error):
                // Transport hiccups are retried by librdkafka; anything else ends the read.
                if error.code == KafkaError.transport || error.code == KafkaError.allBrokersDown { continue }
                throw error
            case .success(let message):
                guard message.topic == topic, let end = remaining[message.partition], message.offset < end else { continue }
                read += 1
                if message.offset + 1 >= end { remaining[message.partition] = nil }
                if !each(message) { return read }
            }
        }
        return read
    }

    /// Releases the client (idempotent).
    public func close() { client.close() }
}
