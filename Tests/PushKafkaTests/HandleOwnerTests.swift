import CRdKafka
import Testing
@testable import PushKafka
import PushKafkaMock

/// The failure paths of the librdkafka handle owners (`RDKafkaConfig`, `RDKafkaConsumerClient`,
/// `RDKafkaEventClient`): each throws a `KafkaError` and the process carries on. Before the
/// factories, a refused subscription destroyed the consumer's handle in `init` and again in
/// `deinit` (librdkafka then aborted the process). No broker is needed: the failures happen
/// before any connection (bootstrap 127.0.0.1:1, a closed loopback port).
@Suite("librdkafka handle owners: failure paths")
struct HandleOwnerTests {
    static let base = ["bootstrap.servers": "127.0.0.1:1", "group.id": "owner-tests", "log.queue": "true"]

    @Test("a subscription librdkafka refuses (the invalid regex `^[`) throws, and the next consumer works", arguments: [
        ["^["], ["ok", "^[("], ["^(unclosed"],
    ])
    func refusedSubscription(topics: [String]) throws {
        let error = #expect(throws: KafkaError.self) { _ = try KafkaConsumer(properties: Self.base, topics: topics) }
        #expect(error?.message.hasPrefix("subscribe to ") == true)
        // The same again, straight on the raw owner: its deinit destroys the handle once.
        #expect(throws: KafkaError.self) { _ = try RDKafkaConsumerClient.makeClient(properties: Self.base, topics: topics) }
        let consumer = try KafkaConsumer(properties: Self.base, topics: ["fine"])
        consumer.close()
    }

    @Test("a property librdkafka refuses throws before any handle exists, for every client type", arguments: [
        ["no.such.property": "1"], ["session.timeout.ms": "not a number"], ["acks": "sometimes"],
    ])
    func refusedProperty(extra: [String: String]) {
        var properties = Self.base
        for (key, value) in extra { properties[key] = value }
        let consumerError = #expect(throws: KafkaError.self) { _ = try RDKafkaConsumerClient.makeClient(properties: properties, topics: ["t"]) }
        #expect(consumerError?.message.hasPrefix("property ") == true)
        #expect(throws: KafkaError.self) { _ = try RDKafkaEventClient.makeClient(properties: properties, name: "owner-test") }
        #expect(throws: KafkaError.self) { _ = try KafkaProducer(properties: properties) }
        #expect(throws: KafkaError.self) { _ = try KafkaAdmin(properties: properties) }
    }

    @Test("a configuration rd_kafka_new refuses throws and stays with its owner, which destroys it once")
    func refusedHandle() throws {
        // Accepted by rd_kafka_conf_set, refused by rd_kafka_new (idempotence needs acks=all).
        let config = try RDKafkaConfig.make(["enable.idempotence": "true", "acks": "1"])
        let error = #expect(throws: KafkaError.self) { _ = try config.makeHandle(RD_KAFKA_PRODUCER) }
        #expect(error?.message.hasPrefix("rd_kafka_new: ") == true)
        #expect(throws: KafkaError.self) { _ = try KafkaProducer(properties: ["enable.idempotence": "true", "acks": "1"]) }
    }

    @Test("a configuration handed to rd_kafka_new is not used twice")
    func usedConfiguration() throws {
        let config = try RDKafkaConfig.make(Self.base)
        let handle = try config.makeHandle(RD_KAFKA_PRODUCER)
        defer { rd_kafka_destroy(handle) }
        let error = #expect(throws: KafkaError.self) { _ = try config.makeHandle(RD_KAFKA_PRODUCER) }
        #expect(error?.message == "rd_kafka_new: configuration already used")
    }

    @Test("closing a mock cluster twice, and using it after, throws instead of touching a freed handle")
    func mockClusterClosed() throws {
        let cluster = try KafkaMockCluster()
        cluster.close()
        cluster.close()
        #expect(throws: KafkaError.self) { try cluster.createTopic("t", partitions: 1) }
        #expect(throws: KafkaError.self) { try cluster.setBrokersDown(true) }
        #expect(throws: KafkaError.self) { _ = try KafkaMockCluster(brokers: 0) }
    }
}
