import Foundation
@testable import PushRuntime
@testable import PushWorker
import PushKafka
import PushKafkaMock
import PushTestSupport
import Synchronization
import Testing

/// The results path's produce (``ReliableProducer/produceReliably(topic:key:value:acknowledgement:)``):
/// one handler shared by many records, nothing kept per record, and the same guarantee as the
/// per-record path — each record acknowledged once, after Kafka took it or its permanent failure
/// was dead-lettered.
@Suite("ReliableProducer with a shared acknowledgement", .serialized)
struct ReliableProducerTests {
    private static func consume(_ bootstrap: String, topic: String, count: Int) -> [KafkaMessage] {
        guard let consumer = try? KafkaConsumer(properties: ["bootstrap.servers": bootstrap, "group.id": "t-\(UUID().uuidString.prefix(8))",
                                                             "auto.offset.reset": "earliest"], topics: [topic]) else { return [] }
        defer { consumer.close() }
        var messages: [KafkaMessage] = []
        let deadline = Date().addingTimeInterval(40)
        while messages.count < count && Date() < deadline {
            for case .success(let message) in consumer.pollBatch(max: 100, timeout: .milliseconds(100)) { messages.append(message) }
        }
        return messages
    }

    private static func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in Thread { continuation.resume(returning: body()) }.start() }
    }

    @Test("delivered records are acknowledged once each; one too large for Kafka is dead-lettered, cut, with its error, then acknowledged once")
    func acknowledgesAndDeadLetters() async throws {
        let cluster = try KafkaMockCluster()
        try cluster.createTopic("results", partitions: 2)
        try cluster.createTopic("dlq", partitions: 1)
        let kafka = try KafkaProducer(properties: ["bootstrap.servers": cluster.bootstrapServers, "message.max.bytes": "4000"])
        let metrics = Metrics()
        let producer = ReliableProducer(producer: kafka, dlqTopic: "dlq", metrics: metrics, logger: Logger(level: .critical),
                                        deadLetterMaxBytes: 1000)
        let acks = Mutex(0)
        let acknowledgement = producer.deliveryHandler { acks.withLock { $0 += 1 } }
        for index in 0..<20 {
            let value = Array("{\"n\":\(index)}".utf8)
            Array("sub-\(index)".utf8).withUnsafeBytes { key in
                value.withUnsafeBytes { value in producer.produceReliably(topic: "results", key: key, value: value, acknowledgement: acknowledgement) }
            }
        }
        let large = [UInt8](repeating: UInt8(ascii: "x"), count: 6000)
        Array("sub-large".utf8).withUnsafeBytes { key in
            large.withUnsafeBytes { value in producer.produceReliably(topic: "results", key: key, value: value, acknowledgement: acknowledgement) }
        }
        try kafka.flush(timeout: .seconds(10))
        #expect(acks.withLock { $0 } == 21)

        let bootstrap = cluster.bootstrapServers
        let results = await Self.onThread { Self.consume(bootstrap, topic: "results", count: 20) }
        #expect(Set(results.map { String(decoding: $0.key ?? [], as: UTF8.self) }) == Set((0..<20).map { "sub-\($0)" }))
        let dead = await Self.onThread { Self.consume(bootstrap, topic: "dlq", count: 1) }
        try #require(dead.count == 1)
        #expect(dead[0].key == Array("sub-large".utf8))
        #expect(dead[0].value == Array(large.prefix(1000)))
        #expect(dead[0].header("target-topic")?.value == Array("results".utf8))
        #expect(dead[0].header("truncated-from")?.value == Array("6000".utf8))
        #expect(dead[0].header("error").map { String(decoding: $0.value ?? [], as: UTF8.self).contains("produce to results failed") } == true)
        #expect(metrics.render().contains("pushworker_kafka_produce_failures_total{topic=\"results\""))
        kafka.close(timeout: .seconds(1))
    }

    @Test("a record that times out while the broker is away is produced again when it is back, and acknowledged once")
    func retriesTransientFailures() async throws {
        KafkaLogging.setLogHandler { _, _, _ in }
        defer { KafkaLogging.resetLogHandler() }
        let cluster = try KafkaMockCluster()
        try cluster.createTopic("results", partitions: 1)
        // librdkafka gives up on the record after message.timeout.ms (_MSG_TIMED_OUT, transient):
        // the ReliableProducer's own retry (1 s later) takes it from there.
        let kafka = try KafkaProducer(properties: ["bootstrap.servers": cluster.bootstrapServers, "message.timeout.ms": "300"])
        try await Task.sleep(for: .milliseconds(300))
        let metrics = Metrics()
        let producer = ReliableProducer(producer: kafka, dlqTopic: "dlq", metrics: metrics, logger: Logger(level: .critical),
                                        deadLetterMaxBytes: 1000)
        try cluster.setBrokersDown(true)
        let acks = Mutex(0)
        let acknowledgement = producer.deliveryHandler { acks.withLock { $0 += 1 } }
        Array("sub-1".utf8).withUnsafeBytes { key in
            Array("{}".utf8).withUnsafeBytes { value in producer.produceReliably(topic: "results", key: key, value: value, acknowledgement: acknowledgement) }
        }
        let failedBy = Date().addingTimeInterval(10)
        while !metrics.render().contains("pushworker_kafka_errors_total") && Date() < failedBy { try await Task.sleep(for: .milliseconds(20)) }
        #expect(metrics.render().contains("pushworker_kafka_errors_total"), "the first attempt should have failed")
        #expect(acks.withLock { $0 } == 0)
        try cluster.setBrokersDown(false)
        let deadline = Date().addingTimeInterval(30)
        while acks.withLock({ $0 }) == 0 && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(acks.withLock { $0 } == 1)
        let bootstrap = cluster.bootstrapServers
        let results = await Self.onThread { Self.consume(bootstrap, topic: "results", count: 1) }
        #expect(results.map(\.key) == [Array("sub-1".utf8)])
        #expect(results.map(\.value) == [Array("{}".utf8)])
        try await Task.sleep(for: .milliseconds(300))
        #expect(acks.withLock { $0 } == 1)
        kafka.close(timeout: .seconds(1))
    }
}
