import CRdKafka
import PushKafka

/// librdkafka's in-process mock Kafka cluster (`rdkafka_mock.h`) for development and tests.
///
/// It speaks the Kafka protocol on random loopback ports: producers, consumer groups
/// (rebalances), offset commits and headers work; there is no Admin API (create topics with
/// `createTopic`), it keeps about 5 MiB / 100k messages per partition, and consumers need
/// `session.timeout.ms` ≥ 3000. The first group join takes about 3 s (the mock's initial
/// rebalance delay). Point clients at `bootstrapServers`.
public final class KafkaMockCluster: Sendable {
    private let client: RDKafkaEventClient
    /// Thread safety: the mock cluster pointer is owned by `client`'s handle and valid until it
    /// is destroyed in `deinit`; it is only used under `client.handleGuard`.
    private let cluster: MockClusterPointer
    /// The `host:port,…` list of the mock brokers.
    public let bootstrapServers: String
    /// The number of mock brokers (ids 1…`brokerCount`).
    public let brokerCount: Int

    private struct MockClusterPointer: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    /// Starts a mock cluster of `brokers` brokers (1…).
    public init(brokers: Int = 1) throws(KafkaError) {
        guard brokers >= 1 else {
            throw KafkaError(code: KafkaError.invalidArgument, message: "a mock cluster needs at least one broker")
        }
        client = try RDKafkaEventClient.makeClient(properties: [
            "test.mock.num.brokers": "\(brokers)",
            "log.queue": "true",
        ], name: "mock-cluster")
        guard let cluster = rd_kafka_handle_mock_cluster(client.handle),
              let bootstraps = rd_kafka_mock_cluster_bootstraps(cluster) else {
            client.close(timeout: .zero)
            throw KafkaError(code: KafkaError.invalidArgument, message: "librdkafka did not create a mock cluster")
        }
        self.cluster = MockClusterPointer(pointer: cluster)
        bootstrapServers = String(cString: bootstraps)
        brokerCount = brokers
    }

    deinit {
        client.close(timeout: .zero)
    }

    /// Creates topic `name` with `partitions` partitions.
    public func createTopic(_ name: String, partitions: Int32, replicationFactor: Int32 = 1) throws(KafkaError) {
        guard partitions >= 1, replicationFactor >= 1 else {
            throw KafkaError(code: KafkaError.invalidArgument, message: "partitions and replication factor must be ≥ 1")
        }
        guard let err = client.handleGuard.with({ rd_kafka_mock_topic_create(cluster.pointer, name, partitions, replicationFactor) }) else {
            throw KafkaError(code: KafkaError.destroyed, message: "mock cluster is closed")
        }
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw RDKafkaErrors.error(err, "create topic \(name)")
        }
    }

    /// Takes every broker down (`true`: connected clients are disconnected and new connections
    /// refused, the data is kept) or brings them back up (`false`), for outage drills
    /// (`rd_kafka_mock_broker_set_down` / `_set_up`; no leader change).
    public func setBrokersDown(_ down: Bool) throws(KafkaError) {
        for id in 1...brokerCount {
            let broker = Int32(id)
            guard let err = client.handleGuard.with({
                down ? rd_kafka_mock_broker_set_down(cluster.pointer, broker) : rd_kafka_mock_broker_set_up(cluster.pointer, broker)
            }) else {
                throw KafkaError(code: KafkaError.destroyed, message: "mock cluster is closed")
            }
            if err != RD_KAFKA_RESP_ERR_NO_ERROR {
                throw RDKafkaErrors.error(err, down ? "set broker \(id) down" : "set broker \(id) up")
            }
        }
    }

    /// Stops the cluster (idempotent); connected clients see their brokers go down.
    public func close() {
        client.close(timeout: .zero)
    }
}
