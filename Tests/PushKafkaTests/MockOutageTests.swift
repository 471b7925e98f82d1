import Foundation
import PushKafka
import PushKafkaMock
import Testing

/// `KafkaMockCluster.setBrokersDown` — the broker outage of the chaos drills (docs/reliability.md).
@Suite("Mock cluster outage")
struct MockOutageTests {
    @Test("while every broker is down a produce times out; once they are up the same producer delivers again")
    func downAndUp() async throws {
        let cluster = try KafkaMockCluster(brokers: 2)
        try cluster.createTopic("outage", partitions: 1)
        #expect(cluster.brokerCount == 2)
        let producer = try KafkaProducer(properties: ["bootstrap.servers": cluster.bootstrapServers, "message.timeout.ms": "1500",
                                                         "reconnect.backoff.ms": "50", "reconnect.backoff.max.ms": "300"])
        defer { producer.close(timeout: .seconds(1)) }
        _ = try await producer.produce(topic: "outage", key: nil, value: Array("before".utf8))

        try cluster.setBrokersDown(true)
        await #expect(throws: KafkaError.self) {
            _ = try await producer.produce(topic: "outage", key: nil, value: Array("during".utf8))
        }

        try cluster.setBrokersDown(false)
        var delivered = false
        for _ in 0..<20 where !delivered {  // reconnecting takes a moment (backoff)
            delivered = (try? await producer.produce(topic: "outage", key: nil, value: Array("after".utf8))) != nil
        }
        #expect(delivered)
        cluster.close()
    }
}
