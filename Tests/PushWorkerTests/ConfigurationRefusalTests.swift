import Foundation
@testable import PushRuntime
import PushCore
import PushTestSupport
@testable import PushWorker
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Every value the process cannot use is refused before it is used (docs/reference/configuration.md):
/// `config check`, `run` and `events` exit 78 naming the variable, and nothing reachable
/// from configuration crashes the process.
@Suite("Configuration: values that cannot be used are refused, by name", .serialized)
struct ConfigurationRefusalTests {
    static let base = ConfigurationTests.base

    /// A file that exists but is no CA bundle.
    static let notPEM: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pw-not-a-ca-\(getpid()).txt").path
        _ = FileManager.default.createFile(atPath: path, contents: Data("just text\n".utf8))
        return path
    }()

    /// (variable, bad value, what the message says). Every row is a value some library would
    /// misread or a typo an operator makes.
    static let rows: [(String, String, String)] = [
        ("PUSHWORKER_TOPIC_JOBS", "^[", "PUSHWORKER_TOPIC_JOBS must be a Kafka topic name of [a-zA-Z0-9._-] only, got '^['"),
        ("PUSHWORKER_TOPIC_JOBS", "^push\\..*", "PUSHWORKER_TOPIC_JOBS must be a Kafka topic name"),
        ("PUSHWORKER_TOPIC_RETRY", "push retry", "PUSHWORKER_TOPIC_RETRY must be a Kafka topic name"),
        ("PUSHWORKER_TOPIC_RESULTS", "..", "PUSHWORKER_TOPIC_RESULTS must be a Kafka topic name (1–249 characters, not '.' or '..')"),
        ("PUSHWORKER_TOPIC_TOKENS", String(repeating: "t", count: 250), "PUSHWORKER_TOPIC_TOKENS must be a Kafka topic name (1–249"),
        ("PUSHWORKER_TOPIC_DLQ", "push/dlq", "PUSHWORKER_TOPIC_DLQ must be a Kafka topic name"),
        ("PUSHWORKER_TOPIC_EVENTS", "événements", "PUSHWORKER_TOPIC_EVENTS must be a Kafka topic name"),
        ("PUSHWORKER_TOPIC_RESULTS", "push.jobs.v1", "PUSHWORKER_TOPIC_RESULTS is the same topic as PUSHWORKER_TOPIC_JOBS"),
        ("PUSHWORKER_TOPIC_DLQ", "push.retry.v1", "PUSHWORKER_TOPIC_DLQ is the same topic as PUSHWORKER_TOPIC_RETRY"),
        ("PUSHWORKER_KAFKA_BROKERS", "kafka:99999", "PUSHWORKER_KAFKA_BROKERS: 'kafka:99999' is not host:port"),
        ("PUSHWORKER_KAFKA_BROKERS", "kafka-0:9092,,kafka-1:9092", "PUSHWORKER_KAFKA_BROKERS has an empty entry"),
        ("PUSHWORKER_KAFKA_BROKERS", "http://kafka:9092/path", "PUSHWORKER_KAFKA_BROKERS: 'http://kafka:9092/path' is not host:port"),
        ("PUSHWORKER_KAFKA_BROKERS", "kafka 0:9092", "PUSHWORKER_KAFKA_BROKERS: 'kafka 0:9092' is not host:port"),
        ("PUSHWORKER_RDKAFKA_NOT_A_PROPERTY", "1", "PUSHWORKER_RDKAFKA_NOT_A_PROPERTY: librdkafka refuses it: No such configuration property"),
        ("PUSHWORKER_RDKAFKA_SECURITY_PROTOCOL", "ssh", "PUSHWORKER_RDKAFKA_SECURITY_PROTOCOL: librdkafka refuses it: Invalid value"),
        ("PUSHWORKER_RDKAFKA_SESSION_TIMEOUT_MS", "soon", "PUSHWORKER_RDKAFKA_SESSION_TIMEOUT_MS: librdkafka refuses it"),
        ("PUSHWORKER_RDKAFKA_LINGER_MS", "-5", "PUSHWORKER_RDKAFKA_LINGER_MS: librdkafka refuses it"),
        ("PUSHWORKER_RDKAFKA_ENABLE_IDEMPOTENCE", "maybe", "PUSHWORKER_RDKAFKA_ENABLE_IDEMPOTENCE: librdkafka refuses it"),
        ("PUSHWORKER_WEBPUSH_ALLOWED_HOSTS", "https://push.example.com/", "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS: 'https://push.example.com/' is a URL"),
        ("PUSHWORKER_WEBPUSH_ALLOWED_HOSTS", "push.example.com:443", "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS: 'push.example.com:443': an entry is a host name without a port"),
        ("PUSHWORKER_WEBPUSH_ALLOWED_HOSTS", "fcm.googleapis.com, *.example.com", "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS: '*.example.com': wildcards"),
        ("PUSHWORKER_WEBPUSH_ALLOWED_HOSTS", "10.0.0.0/8", "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS: '10.0.0.0/8': an entry is a host name (no path, no CIDR range)"),
        ("PUSHWORKER_WEBPUSH_ALLOWED_HOSTS", "2130706433", "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS: '2130706433' is not a dotted-decimal IPv4"),
        ("PUSHWORKER_HTTP_ADDR", "[::]:9400", "PUSHWORKER_HTTP_ADDR must be IPv4:port or localhost:port"),
        ("PUSHWORKER_HTTP_ADDR", "metrics.internal:9400", "PUSHWORKER_HTTP_ADDR must be IPv4:port or localhost:port"),
        ("PUSHWORKER_HTTP_ADDR", "0.0.0.0:http", "PUSHWORKER_HTTP_ADDR must be IPv4:port"),
        ("PUSHWORKER_HTTP_ADDR", "0.0.0.0:70000", "PUSHWORKER_HTTP_ADDR must be IPv4:port"),
        ("PUSHWORKER_HTTP_ADDR", "0.0.0.0:+80", "PUSHWORKER_HTTP_ADDR must be IPv4:port"),
        ("PUSHWORKER_CA_FILE", notPEM, "PUSHWORKER_CA_FILE: \(notPEM) holds no PEM certificate"),
        ("PUSHWORKER_REDIS_URL", "redis://127.0.0.1:port", "PUSHWORKER_REDIS_URL: "),
        ("PUSHWORKER_MSGID_KEYS", "k1:c2hvcnQ=", "PUSHWORKER_MSGID_KEYS: entry 1 (kid \"k1\")"),
        ("PUSHWORKER_MAX_IN_FLIGHT", "1e9", "PUSHWORKER_MAX_IN_FLIGHT must be a whole number"),
        ("PUSHWORKER_SATURATION_PAUSE_MS", "-1", "PUSHWORKER_SATURATION_PAUSE_MS must be a whole number"),
        ("PUSHWORKER_DEDUP_MAX_SECONDS", "9999999999999999999999", "PUSHWORKER_DEDUP_MAX_SECONDS must be a whole number"),
        ("PUSHWORKER_MAX_ATTEMPTS", "0", "PUSHWORKER_MAX_ATTEMPTS must be a whole number in 1…100"),
        ("PUSHWORKER_SHUTDOWN_GRACE_SECONDS", "forever", "PUSHWORKER_SHUTDOWN_GRACE_SECONDS must be a whole number"),
        ("PUSHWORKER_HTTP_CONNECTIONS", "1000", "PUSHWORKER_HTTP_CONNECTIONS must be a whole number in 1…64"),
        ("PUSHWORKER_HTTP_STREAMS", "0", "PUSHWORKER_HTTP_STREAMS must be a whole number in 1…1000"),
        ("PUSHWORKER_REQUEST_TIMEOUT_MS", "10s", "PUSHWORKER_REQUEST_TIMEOUT_MS must be a whole number"),
        ("PUSHWORKER_CLAIM_LEASE_SECONDS", "15", "PUSHWORKER_CLAIM_LEASE_SECONDS (15 s) must be more than two request timeouts"),
        ("PUSHWORKER_RECORD_DELAY_MS", "-5", "PUSHWORKER_RECORD_DELAY_MS must be a whole number in 0…1000"),
        ("PUSHWORKER_LOG_LEVEL", "loud", "PUSHWORKER_LOG_LEVEL must be one of"),
        ("PUSHWORKER_LOG_FORMAT", "xml", "PUSHWORKER_LOG_FORMAT must be json or text"),
        ("PUSHWORKER_CREDENTIALS_DIR", "/nonexistent/credentials", "PUSHWORKER_CREDENTIALS_DIR: /nonexistent/credentials is not a folder"),
        ("PUSHWORKER_CONFIG_FILE", "/nonexistent/pushworker.json", "PUSHWORKER_CONFIG_FILE: cannot read /nonexistent/pushworker.json"),
        ("PUSHWORKER_TOPIK_JOBS", "push.jobs.v1", "PUSHWORKER_TOPIK_JOBS is not a pushworker setting (did you mean PUSHWORKER_TOPIC_JOBS?)"),
        ("PUSHWORKER_SOMETHING_ELSE", "x", "PUSHWORKER_SOMETHING_ELSE is not a pushworker setting (typo?)"),
    ]

    @Test("Configuration.load refuses each bad value with a message naming its variable", arguments: rows)
    func inProcess(name: String, value: String, expected: String) {
        let problems = ConfigurationTests.problems([name: value])
        #expect(problems.contains { $0.hasPrefix(expected) }, "\(problems)")
        #expect(problems.allSatisfy { $0.contains(name) }, "only this value is wrong: \(problems)")
    }

    @Test("librdkafka is asked about combinations too, offline: an SSL CA file that cannot be read")
    func kafkaCombination() {
        let problems = ConfigurationTests.problems(["PUSHWORKER_RDKAFKA_SECURITY_PROTOCOL": "ssl",
                                                    "PUSHWORKER_RDKAFKA_SSL_CA_LOCATION": "/nonexistent/kafka-ca.pem"])
        #expect(problems.contains { $0.hasPrefix("PUSHWORKER_RDKAFKA_*: librdkafka refuses") && $0.contains("ssl.ca.location") }, "\(problems)")
    }

    @Test("librdkafka's messages never carry a secret property's value")
    func kafkaSecretRedacted() {
        let problems = ConfigurationTests.problems(["PUSHWORKER_RDKAFKA_SSL_KEY_PASSWORD": "Sup3rS3cr3t",
                                                    "PUSHWORKER_RDKAFKA_SSL_KEY_LOCATION": "/nonexistent/key.pem",
                                                    "PUSHWORKER_RDKAFKA_SECURITY_PROTOCOL": "ssl"])
        #expect(problems.contains { $0.contains("ssl.key") }, "the key path was tried: \(problems)")
        #expect(!problems.joined().contains("Sup3rS3cr3t"), "\(problems)")
    }

    @Test("good values stay accepted: Kafka properties, broker forms, allow-list entries, listen addresses")
    func accepted() throws {
        let configuration = try ConfigurationTests.load([
            "PUSHWORKER_KAFKA_BROKERS": "SASL_SSL://kafka-0.kafka.svc:9093, 10.0.0.5:9092,[2001:db8::5]:9092,kafka-2",
            "PUSHWORKER_RDKAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "PUSHWORKER_RDKAFKA_SASL_USERNAME": "pw",
            "PUSHWORKER_RDKAFKA_SESSION_TIMEOUT_MS": "6000", "PUSHWORKER_RDKAFKA_LINGER_MS": "5",
            "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS": "push.example.com, .corp.example., 127.0.0.1, [::1]",
            "PUSHWORKER_HTTP_ADDR": "localhost:0", "PUSHWORKER_TOPIC_JOBS": "team-a.push_jobs.v2",
        ])
        #expect(configuration.webPushAllowedHosts == ["push.example.com", ".corp.example", "127.0.0.1", "::1"])
        #expect(configuration.rdkafkaProperties["session.timeout.ms"] == "6000")
    }

    // MARK: - The binary

    @Test("`pushworker config check` exits 78 naming the variable, for every bad value and EVENT_* setting")
    func configCheckBinary() throws {
        let eventRows = [("EVENT_RATE_LIMIT", "fast", "EVENT_RATE_LIMIT must be N/s or N/m"),
                         ("EVENT_RATE_LIMT", "20/s", "EVENT_RATE_LIMT is not a tracking-endpoint setting (did you mean EVENT_RATE_LIMIT?)"),
                         ("EVENT_TRUSTED_PROXIES", "lb.internal", "EVENT_TRUSTED_PROXIES: 'lb.internal' is not an IP address or CIDR"),
                         ("EVENT_IPV6_PREFIX", "200", "EVENT_IPV6_PREFIX must be a whole number in 1…128")]
        for (name, value, expected) in Self.rows + eventRows {
            var environment = Self.base
            environment[name] = value
            let result = try runCommand(BuiltProducts.pushworker, ["config", "check"], environment: environment, timeout: 30)
            #expect(result.status == 78, "\(name)=\(value): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains("- \(expected)"), "\(name)=\(value): \(result.stderr)")
        }
    }

    @Test("`pushworker run` exits 78 before touching Kafka: PUSHWORKER_TOPIC_JOBS='^[' and other bad values", arguments: [
        ("PUSHWORKER_TOPIC_JOBS", "^[", "- PUSHWORKER_TOPIC_JOBS must be a Kafka topic name"),
        ("PUSHWORKER_RDKAFKA_NOT_A_PROPERTY", "1", "- PUSHWORKER_RDKAFKA_NOT_A_PROPERTY: librdkafka refuses it"),
        ("PUSHWORKER_WEBPUSH_ALLOWED_HOSTS", "https://push.example.com/", "- PUSHWORKER_WEBPUSH_ALLOWED_HOSTS: "),
        ("PUSHWORKER_HTTP_ADDR", "[::]:9400", "- PUSHWORKER_HTTP_ADDR must be IPv4:port"),
        ("PUSHWORKER_REDIS_UR", "redis://127.0.0.1:6379", "- PUSHWORKER_REDIS_UR is not a pushworker setting (did you mean PUSHWORKER_REDIS_URL?)"),
    ])
    func runBinary(name: String, value: String, expected: String) throws {
        let broker = try LoopbackListener()
        var environment = Self.base
        environment["PUSHWORKER_KAFKA_BROKERS"] = "127.0.0.1:\(broker.port)"
        environment["PUSHWORKER_HTTP_ADDR"] = "127.0.0.1:\(freeLoopbackPort())"
        environment[name] = value
        let result = try runCommand(BuiltProducts.pushworker, ["run"], environment: environment, timeout: 30)
        #expect(result.status == 78, "\(result.stderr)")
        #expect(result.stderr.contains(expected), "\(result.stderr)")
        #expect(broker.acceptedConnections() == 0, "the broker address was never contacted")
    }

    @Test("`pushworker events` exits 78 for a bad EVENT_* value or name, before listening")
    func eventsBinary() throws {
        let broker = try LoopbackListener()
        for (name, value) in [("EVENT_RATE_LIMIT", "fast"), ("EVENT_CONECTIONS_PER_IP", "8"), ("EVENT_IDLE_TIMEOUT_SECONDS", "0")] {
            let port = freeLoopbackPort()
            var environment = Self.base
            environment["PUSHWORKER_KAFKA_BROKERS"] = "127.0.0.1:\(broker.port)"
            environment["PUSHWORKER_HTTP_ADDR"] = "127.0.0.1:\(port)"
            environment[name] = value
            let result = try runCommand(BuiltProducts.pushworker, ["events"], environment: environment, timeout: 30)
            #expect(result.status == 78, "\(name): \(result.stderr)")
            #expect(result.stderr.contains("- \(name)"), "\(result.stderr)")
            #expect(!isListening(port: port))
        }
        #expect(broker.acceptedConnections() == 0)
    }

    @Test("unusable credential endpoints and rates are reported by `config check`", arguments: [
        ("apns.json", #"{"teamId":"T","keyId":"K","topic":"t","privateKey":"x","endpoint":"http://api.push.apple.com"}"#, "apns.json: endpoint must be an https origin"),
        ("fcm.json", #"{"project_id":"p","client_email":"e","private_key":"x","endpoint":"https://fcm.googleapis.com/v1/x"}"#, "fcm.json: endpoint must be an https origin such as https://fcm.googleapis.com"),
        ("fcm.json", #"{"project_id":"p","client_email":"e","private_key":"x","token_uri":"ftp://oauth2.example/token"}"#, "fcm.json: token_uri must be an https URL"),
        ("app.json", #"{"ratePerSecond": -3}"#, "app.json: ratePerSecond must be a number > 0"),
        ("app.json", #"{"webhook": {"url": "https://user@hooks.example/x", "secret": "s"}}"#, "app.json: webhook needs an https url"),
    ])
    func credentialEndpoints(file: String, content: String, expected: String) throws {
        let folder = try TemporaryFolder.make(prefix: "cfgendpoint")
        defer { try? FileManager.default.removeItem(at: folder) }
        let app = folder.appendingPathComponent("app_e")
        try FileManager.default.createDirectory(at: app, withIntermediateDirectories: true)
        try content.write(to: app.appendingPathComponent(file), atomically: true, encoding: .utf8)
        var environment = Self.base
        environment["PUSHWORKER_CREDENTIALS_DIR"] = folder.path
        let result = try runCommand(BuiltProducts.pushworker, ["config", "check"], environment: environment)
        #expect(result.status == 78)
        #expect(result.stderr.contains("PUSHWORKER_CREDENTIALS_DIR: app_e/\(expected)"), "\(result.stderr)")
    }
}
