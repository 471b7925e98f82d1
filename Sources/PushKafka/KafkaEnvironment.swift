/// librdkafka property pass-through from the environment (docs/reference/configuration.md):
/// `PUSHWORKER_RDKAFKA_<NAME>=value` ⇒ property `<name>` lower-cased with `_` → `.`,
/// e.g. `PUSHWORKER_RDKAFKA_SASL_MECHANISM=SCRAM-SHA-512` ⇒ `sasl.mechanism`.
public enum KafkaEnvironment {
    /// The prefix of pass-through variables.
    public static let prefix = "PUSHWORKER_RDKAFKA_"

    /// The librdkafka properties named by `PUSHWORKER_RDKAFKA_*` variables in `environment`.
    public static func properties(from environment: [String: String]) -> [String: String] {
        var properties: [String: String] = [:]
        for (key, value) in environment where key.hasPrefix(prefix) && key.count > prefix.count {
            let name = String(key.dropFirst(prefix.count).lowercased().map { $0 == "_" ? "." : $0 })
            properties[name] = value
        }
        return properties
    }
}
