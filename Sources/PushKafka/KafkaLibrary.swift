import CRdKafka

/// The librdkafka loaded at run time.
public enum KafkaLibrary {
    /// `rd_kafka_version_str()`, e.g. "2.0.2".
    public static var version: String { String(cString: rd_kafka_version_str()) }
}
