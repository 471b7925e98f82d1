import Foundation
import PushCore
import PushKafka

/// The checks `Configuration.load` runs on values it would otherwise hand to a library that
/// misreads them (docs/reference/configuration.md: refuse what cannot be used, exit 78, naming the variable). Each
/// returns the problems as `config check` prints them; none prints a secret.
enum ConfigurationChecks {
    /// Kafka topic names: 1–249 of `[a-zA-Z0-9._-]`, not `.` or `..` (Kafka's `Topic.validate`).
    /// librdkafka reads a subscription starting with `^` as a regular expression, so `^[` would
    /// subscribe to nothing (or abort the consumer): such names are refused here.
    static func topic(_ name: String, variable: String) -> String? {
        guard !name.isEmpty, name.utf8.count <= 249, name != ".", name != ".." else {
            return "\(variable) must be a Kafka topic name (1–249 characters, not '.' or '..'), got '\(name)'"
        }
        let legal = name.utf8.allSatisfy { byte in
            (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
        return legal ? nil : "\(variable) must be a Kafka topic name of [a-zA-Z0-9._-] only, got '\(name)'"
    }

    /// The worker consumes the jobs and retry topics and produces the others: a consumed topic
    /// that is also a produced one would feed results (or DLQ copies) back in as jobs.
    static func topicOverlap(consumed: [(variable: String, name: String)], produced: [(variable: String, name: String)]) -> [String] {
        var problems: [String] = []
        for input in consumed {
            for output in produced where output.name == input.name {
                problems.append("\(output.variable) is the same topic as \(input.variable) ('\(input.name)'): the worker would consume its own output")
            }
        }
        return problems
    }

    /// `PUSHWORKER_KAFKA_BROKERS`: comma-separated `[protocol://]host[:port]` (librdkafka's
    /// `bootstrap.servers`), host a name, an IPv4 address or a bracketed IPv6 one.
    static func brokers(_ list: String) -> [String] {
        var problems: [String] = []
        for raw in list.split(separator: ",", omittingEmptySubsequences: false) {
            let entry = raw.trimmingCharacters(in: .whitespaces)
            if entry.isEmpty {
                problems.append("PUSHWORKER_KAFKA_BROKERS has an empty entry: '\(list)'")
                continue
            }
            if !isBroker(entry) {
                problems.append("PUSHWORKER_KAFKA_BROKERS: '\(entry)' is not host:port (e.g. kafka-0.kafka.svc:9092, 10.0.0.5:9093, [2001:db8::5]:9092)")
            }
        }
        return problems
    }

    private static func isBroker(_ entry: String) -> Bool {
        var rest = Substring(entry)
        if let scheme = rest.firstRange(of: "://") {
            let name = rest[..<scheme.lowerBound]
            guard !name.isEmpty, name.utf8.allSatisfy({ isAlphanumeric($0) || $0 == UInt8(ascii: "_") }) else { return false }
            rest = rest[scheme.upperBound...]
        }
        var host = rest
        var port: Substring?
        if rest.first == "[" {
            guard let close = rest.firstIndex(of: "]"), IPAddress(rest[...close]) != nil else { return false }
            host = rest[...close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.first == ":" else { return false }
                port = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            port = rest[rest.index(after: colon)...]
        }
        if let port {
            guard isPort(port, allowingZero: false) else { return false }
        }
        return host.first == "[" || isHostName(host)
    }

    /// `PUSHWORKER_HTTP_ADDR`: the listener binds an IPv4 address (`0.0.0.0` for all
    /// interfaces) or `localhost`, port 0–65535 (0: the kernel picks one).
    static func listenAddress(_ text: String, variable: String) -> String? {
        let message = "\(variable) must be IPv4:port or localhost:port (0.0.0.0:9400 listens on every interface), got '\(text)'"
        guard let colon = text.lastIndex(of: ":") else { return message }
        let host = text[..<colon]
        guard isPort(text[text.index(after: colon)...], allowingZero: true) else { return message }
        guard host == "localhost" || (IPAddress(host)?.isIPv4 == true && !host.contains(":")) else { return message }
        return nil
    }

    /// `PUSHWORKER_WEBPUSH_ALLOWED_HOSTS`: every entry a host name, `.suffix` or IP literal
    /// (``WebPushPolicy/parseEntry(_:)``); empty entries are skipped.
    static func allowedHosts(_ list: String) -> (hosts: [String], problems: [String]) {
        var hosts: [String] = []
        var problems: [String] = []
        for raw in list.split(separator: ",") {
            switch WebPushPolicy.parseEntry(raw) {
            case .success(let host): hosts.append(host)
            case .failure(.empty): continue
            case .failure(let error): problems.append("PUSHWORKER_WEBPUSH_ALLOWED_HOSTS: \(error)")
            }
        }
        return (hosts, problems)
    }

    /// `PUSHWORKER_CA_FILE`: a readable file holding at least one PEM certificate (curl would
    /// otherwise fail every TLS handshake with it).
    static func caFile(_ path: String) -> String? {
        pemFile(path, variable: "PUSHWORKER_CA_FILE", marker: "-----BEGIN CERTIFICATE-----")
    }

    /// A readable file holding `marker` (a PEM header), or the problem naming `variable`.
    static func pemFile(_ path: String, variable: String, marker: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return "\(variable): cannot read \(path)" }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: 16 << 20)) ?? Data()
        guard head.range(of: Data(marker.utf8)) != nil else {
            let what = marker.contains("PRIVATE KEY") ? "PEM private key (-----BEGIN … PRIVATE KEY-----)" : "PEM certificate (\(marker))"
            return "\(variable): \(path) holds no \(what)"
        }
        return nil
    }

    /// Pass-through librdkafka properties, asked of librdkafka for each client kind with the
    /// properties that client gets (`Configuration.kafkaProperties(for:)`).
    static func kafkaProperties(_ configuration: Configuration) -> [String] {
        var problems: [String] = []
        var seen = Set<String>()
        for (kind, type) in [(Configuration.KafkaClientKind.producer, KafkaConfigCheck.ClientType.producer), (.consumer, .consumer)] {
            var properties = configuration.kafkaProperties(for: kind)
            if kind == .consumer { properties["group.id"] = configuration.kafkaGroup }
            for problem in KafkaConfigCheck.validate(properties: properties, for: type, isSecret: Configuration.isSecretKafkaProperty) {
                let text: String
                switch problem.property {
                case "bootstrap.servers"?: text = "PUSHWORKER_KAFKA_BROKERS: \(problem.message)"
                case "group.id"?: text = "PUSHWORKER_KAFKA_GROUP: \(problem.message)"
                case let property?: text = "\(variableName(property)): librdkafka refuses it: \(problem.message)"
                case nil: text = "PUSHWORKER_RDKAFKA_*: librdkafka refuses these properties together: \(problem.message)"
                }
                if seen.insert(text).inserted { problems.append(text) }
            }
        }
        return problems
    }

    /// `sasl.mechanism` ⇒ `PUSHWORKER_RDKAFKA_SASL_MECHANISM`.
    static func variableName(_ property: String) -> String {
        "PUSHWORKER_RDKAFKA_" + property.uppercased().replacingOccurrences(of: ".", with: "_")
    }

    // MARK: - Pieces

    static func isPort(_ text: Substring, allowingZero: Bool) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 5, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let port = Int(text) else { return false }
        return port <= 65535 && (allowingZero || port > 0)
    }

    /// A DNS name or IPv4 address: labels of 1–63 `[A-Za-z0-9_-]`, not starting or ending with `-`.
    static func isHostName(_ host: Substring) -> Bool {
        var name = host
        if name.hasSuffix(".") { name = name.dropLast() }
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        return name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            (1...63).contains(label.utf8.count) && label.utf8.first != UInt8(ascii: "-") && label.utf8.last != UInt8(ascii: "-")
                && label.utf8.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
        }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
    }
}
