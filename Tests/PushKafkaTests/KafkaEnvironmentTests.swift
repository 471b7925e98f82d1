import PushKafka
import Testing

@Suite("librdkafka pass-through from the environment")
struct KafkaEnvironmentTests {
    @Test("PUSHWORKER_RDKAFKA_* variables become librdkafka properties", arguments: [
        ("PUSHWORKER_RDKAFKA_SASL_MECHANISM", "sasl.mechanism"),
        ("PUSHWORKER_RDKAFKA_SECURITY_PROTOCOL", "security.protocol"),
        ("PUSHWORKER_RDKAFKA_SSL_CA_LOCATION", "ssl.ca.location"),
        ("PUSHWORKER_RDKAFKA_STATISTICS_INTERVAL_MS", "statistics.interval.ms"),
    ])
    func passThrough(variable: String, property: String) {
        #expect(KafkaEnvironment.properties(from: [variable: "v"]) == [property: "v"])
    }

    @Test("other variables are ignored")
    func ignoresOthers() {
        #expect(KafkaEnvironment.properties(from: [
            "PUSHWORKER_KAFKA_BROKERS": "b:9092", "PUSHWORKER_RDKAFKA_": "x", "RDKAFKA_DEBUG": "all",
        ]).isEmpty)
    }
}
