import Foundation
@testable import PushKafka
import PushKafkaMock
import PushTestSupport
import Testing

@Suite("KafkaAdmin against librdkafka 2.0.2's mock cluster")
struct KafkaAdminTests {
    @Test("metadata lists brokers and topics with partition counts, without auto-creating")
    func metadata() throws {
        let cluster = try KafkaMockCluster(brokers: 2)
        defer { cluster.close() }
        try cluster.createTopic("admin.a", partitions: 3, replicationFactor: 2)
        try cluster.createTopic("admin.b", partitions: 1)
        let admin = try KafkaAdmin(properties: ["bootstrap.servers": cluster.bootstrapServers], timeout: .seconds(5))
        defer { admin.close() }
        let metadata = try admin.metadata()
        #expect(metadata.brokers.count == 2)
        #expect(metadata.topic("admin.a") == KafkaTopicMetadata(name: "admin.a", partitions: 3, replicationFactor: 2))
        #expect(metadata.topic("admin.b")?.partitions == 1)
        #expect(metadata.topic("admin.missing") == nil)
        #expect(try admin.metadata().topic("admin.missing") == nil)
    }

    @Test("DescribeConfigs: the mock refuses at once with _UNSUPPORTED_FEATURE")
    func describeUnsupported() throws {
        let cluster = try KafkaMockCluster()
        defer { cluster.close() }
        try cluster.createTopic("admin.c", partitions: 1)
        let admin = try KafkaAdmin(properties: ["bootstrap.servers": cluster.bootstrapServers], timeout: .seconds(5))
        defer { admin.close() }
        let started = ContinuousClock.now
        #expect { _ = try admin.describeTopicConfigs(["admin.c"]) } throws: { ($0 as? KafkaError)?.code == KafkaError.unsupportedFeature }
        #expect { _ = try admin.alterTopicConfigs([(topic: "admin.c", config: [("retention.ms", "1000")])]) } throws: {
            ($0 as? KafkaError)?.code == KafkaError.unsupportedFeature
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(try admin.describeTopicConfigs([]).isEmpty)
    }

    @Test("CreateTopics and CreatePartitions: no controller on the mock, typed timeout within the request timeout")
    func createTimesOut() throws {
        let cluster = try KafkaMockCluster()
        defer { cluster.close() }
        try cluster.createTopic("admin.d", partitions: 1)
        let admin = try KafkaAdmin(properties: ["bootstrap.servers": cluster.bootstrapServers], timeout: .seconds(1))
        defer { admin.close() }
        let started = ContinuousClock.now
        #expect { _ = try admin.createTopics([KafkaNewTopic(name: "admin.new", partitions: 2, replicationFactor: 1, config: [("retention.ms", "1000")])]) } throws: {
            ($0 as? KafkaError)?.code == KafkaError.timedOut
        }
        #expect { _ = try admin.createPartitions([(topic: "admin.d", totalCount: 3)]) } throws: { ($0 as? KafkaError)?.code == KafkaError.timedOut }
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(try admin.createTopics([]).isEmpty)
        #expect(try admin.metadata().topic("admin.new") == nil)
    }

    @Test("invalid requests are rejected locally with typed errors")
    func invalidRequests() throws {
        let cluster = try KafkaMockCluster()
        defer { cluster.close() }
        let admin = try KafkaAdmin(properties: ["bootstrap.servers": cluster.bootstrapServers], timeout: .seconds(2))
        defer { admin.close() }
        #expect { _ = try admin.createTopics([KafkaNewTopic(name: "bad", partitions: -5, replicationFactor: 1)]) } throws: {
            ($0 as? KafkaError)?.code == KafkaError.invalidArgument
        }
    }

    @Test("a broker that is down: metadata fails within the timeout; a closed admin fails with _DESTROY")
    func brokerDown() throws {
        let admin = try KafkaAdmin(properties: ["bootstrap.servers": "127.0.0.1:\(freeLoopbackPort())"], timeout: .seconds(2))
        let started = ContinuousClock.now
        #expect(throws: KafkaError.self) { _ = try admin.metadata() }
        #expect(ContinuousClock.now - started < .seconds(6))
        admin.close()
        #expect { _ = try admin.metadata() } throws: { ($0 as? KafkaError)?.code == KafkaError.destroyed }
    }
}
