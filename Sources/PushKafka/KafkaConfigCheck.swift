import CRdKafka

/// Validates librdkafka properties with librdkafka itself (docs/reference/configuration.md,
/// "librdkafka pass-through"), offline: `config check`, `run` and `events` refuse what it refuses before
/// any client exists.
public enum KafkaConfigCheck {
    /// Which client the properties are for (a consumer needs `group.id`; a producer ignores it).
    public enum ClientType: Sendable { case producer, consumer }

    /// One refused property (or, with `property` nil, a combination refused when a client is
    /// created from them). `message` is librdkafka's, with the value of a secret property
    /// (`isSecret`) replaced by `<redacted>`.
    public struct Problem: Sendable, Equatable {
        public var property: String?
        public var message: String
    }

    /// The problems of `properties` for a client of `type`; empty when librdkafka accepts
    /// them all. Connects to nothing (bootstrap servers are left out of the scratch client).
    public static func validate(properties: [String: String], for type: ClientType,
                                isSecret: (String) -> Bool = { _ in false }) -> [Problem] {
        var probed = properties
        if type == .consumer && (probed["group.id"] ?? "").isEmpty { probed["group.id"] = "pushworker-config-check" }
        let found = RDKafkaConfigProbe.problems(probed, type: type == .producer ? RD_KAFKA_PRODUCER : RD_KAFKA_CONSUMER)
        return found.map { problem in
            var message = problem.message
            for (name, value) in properties where isSecret(name) && value.utf8.count >= 3 {
                message = message.replacingAll(value, with: "<redacted>")
            }
            return Problem(property: problem.property, message: message)
        }
    }
}

extension String {
    fileprivate func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
