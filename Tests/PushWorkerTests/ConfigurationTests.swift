import Foundation
@testable import PushRuntime
import PushCore
import PushTestSupport
@testable import PushWorker
import Testing

/// `Configuration.load` (docs/reference/configuration.md) and `pushworker config`.
@Suite("Configuration")
struct ConfigurationTests {
    static let key = Data((0..<32).map { UInt8(($0 * 13 + 5) % 256) }).base64EncodedString()
    static let keys = "k1:\(key)"
    /// The smallest environment `run` accepts.
    static let base = [
        "PUSHWORKER_KAFKA_BROKERS": "127.0.0.1:9092",
        "PUSHWORKER_REDIS_URL": "redis://127.0.0.1:6379",
        "PUSHWORKER_MSGID_KEYS": keys,
    ]

    static func load(_ changes: [String: String], purpose: Configuration.Purpose = .worker) throws(Configuration.Problems) -> Configuration {
        var environment = base
        for (name, value) in changes { environment[name] = value }
        return try Configuration.load(environment: environment, purpose: purpose)
    }

    static func problems(_ changes: [String: String], purpose: Configuration.Purpose = .worker) -> [String] {
        do { _ = try load(changes, purpose: purpose); return [] } catch { return error.messages }
    }

    @Test("every variable with a default shows it when unset", arguments: Configuration.variables.filter { $0.defaultValue != nil })
    func defaults(variable: (name: String, defaultValue: String?, meaning: String)) throws {
        let configuration = try Self.load([:])
        #expect(configuration.redactedLines().contains("\(variable.name)=\(variable.defaultValue ?? "")"))
    }

    @Test("defaults reach the typed fields")
    func typedDefaults() throws {
        let c = try Self.load([:])
        #expect(c.kafkaGroup == "pushworker")
        #expect([c.topicJobs, c.topicRetry, c.topicResults, c.topicTokens, c.topicDLQ, c.topicEvents] ==
            ["push.jobs.v1", "push.retry.v1", "push.results.v1", "push.tokens.v1", "push.dlq.v1", "push.events.v1"])
        #expect(c.httpAddr == "0.0.0.0:9400")
        #expect(c.maxInFlight == 2000 && c.maxAttempts == 5 && c.shutdownGraceSeconds == 25)
        #expect(c.httpConnections == 2 && c.httpStreams == 100 && c.requestTimeoutMs == 10_000)
        #expect(c.logLevel == .info && c.logFormat == .json)
        #expect(c.recordDelayMs == 25 && c.claimLeaseSeconds == 30)
        #expect(c.credentialsDir == nil && c.caFile == nil && c.webPushAllowedHosts.isEmpty && c.rdkafkaProperties.isEmpty)
    }

    @Test("a Redis Cluster URL (seed nodes) is accepted, and its password redacted")
    func clusterURL() throws {
        let c = try Self.load(["PUSHWORKER_REDIS_URL": "redis+cluster://:S3cr3t@10.0.0.1:7000,10.0.0.2:7000"])
        #expect(c.redisURL == "redis+cluster://:S3cr3t@10.0.0.1:7000,10.0.0.2:7000")
        #expect(!c.redactedLines().joined().contains("S3cr3t"))
    }

    @Test("set values are read and trimmed")
    func values() throws {
        let c = try Self.load([
            "PUSHWORKER_KAFKA_GROUP": " fleet-a ", "PUSHWORKER_TOPIC_JOBS": "jobs", "PUSHWORKER_MAX_IN_FLIGHT": "10",
            "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS": "push.example.com, .corp.example,,", "PUSHWORKER_LOG_LEVEL": "DEBUG",
            "PUSHWORKER_LOG_FORMAT": "text", "PUSHWORKER_HTTP_ADDR": "127.0.0.1:9500",
        ])
        #expect(c.kafkaGroup == "fleet-a" && c.topicJobs == "jobs" && c.maxInFlight == 10)
        #expect(c.webPushAllowedHosts == ["push.example.com", ".corp.example"])
        #expect(c.logLevel == .debug && c.logFormat == .text)
        #expect(HostPort(c.httpAddr) == HostPort("127.0.0.1:9500"))
    }

    @Test("an invalid value is reported with the variable's name", arguments: [
        ("PUSHWORKER_MAX_IN_FLIGHT", "0", "PUSHWORKER_MAX_IN_FLIGHT must be a whole number in 1…1000000, got '0'"),
        ("PUSHWORKER_MAX_IN_FLIGHT", "lots", "PUSHWORKER_MAX_IN_FLIGHT must be a whole number"),
        ("PUSHWORKER_MAX_ATTEMPTS", "101", "PUSHWORKER_MAX_ATTEMPTS must be a whole number in 1…100"),
        ("PUSHWORKER_SHUTDOWN_GRACE_SECONDS", "-1", "PUSHWORKER_SHUTDOWN_GRACE_SECONDS must be a whole number in 0…3600"),
        ("PUSHWORKER_HTTP_CONNECTIONS", "65", "PUSHWORKER_HTTP_CONNECTIONS must be a whole number in 1…64"),
        ("PUSHWORKER_HTTP_STREAMS", "2.5", "PUSHWORKER_HTTP_STREAMS must be a whole number in 1…1000"),
        ("PUSHWORKER_REQUEST_TIMEOUT_MS", "99", "PUSHWORKER_REQUEST_TIMEOUT_MS must be a whole number in 100…600000"),
        ("PUSHWORKER_LOG_LEVEL", "verbose", "PUSHWORKER_LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical"),
        ("PUSHWORKER_LOG_FORMAT", "xml", "PUSHWORKER_LOG_FORMAT must be json or text, got 'xml'"),
        ("PUSHWORKER_HTTP_ADDR", "9400", "PUSHWORKER_HTTP_ADDR must be IPv4:port or localhost:port"),
        ("PUSHWORKER_HTTP_ADDR", ":9400", "PUSHWORKER_HTTP_ADDR must be IPv4:port or localhost:port"),
        ("PUSHWORKER_REDIS_URL", "http://127.0.0.1:6379", "PUSHWORKER_REDIS_URL: "),
        ("PUSHWORKER_REDIS_URL", "rediss+sentinel://h:26379", "PUSHWORKER_REDIS_URL: redis error: invalid Redis URL (name the master"),
        ("PUSHWORKER_REDIS_URL", "redis+cluster://h:7000/2", "PUSHWORKER_REDIS_URL: redis error: invalid Redis URL (a Redis Cluster has only database 0"),
        ("PUSHWORKER_REDIS_URL", "redis+cluster://h:7000,,h:7001", "PUSHWORKER_REDIS_URL: "),
        ("PUSHWORKER_CREDENTIALS_DIR", "/nonexistent/credentials", "PUSHWORKER_CREDENTIALS_DIR: /nonexistent/credentials is not a folder"),
        ("PUSHWORKER_CA_FILE", "/nonexistent/ca.pem", "PUSHWORKER_CA_FILE: cannot read /nonexistent/ca.pem"),
        ("PUSHWORKER_MSGID_KEYS", "nocolon", "PUSHWORKER_MSGID_KEYS: entry 1: expected kid:base64key"),
        ("PUSHWORKER_MSGID_KEYS", "k1:%%%", "PUSHWORKER_MSGID_KEYS: entry 1 (kid \"k1\"): key is not valid base64"),
        ("PUSHWORKER_KAFKA_BROKER", "x:1", "PUSHWORKER_KAFKA_BROKER is not a pushworker setting (did you mean PUSHWORKER_KAFKA_BROKERS?)"),
        ("PUSHWORKER_REDIS_UR", "x", "PUSHWORKER_REDIS_UR is not a pushworker setting (did you mean PUSHWORKER_REDIS_URL?)"),
        ("PUSHWORKER_RDKAFKA_", "x", "PUSHWORKER_RDKAFKA_: empty librdkafka property name"),
    ])
    func invalid(name: String, value: String, expected: String) {
        let problems = Self.problems([name: value])
        #expect(problems.contains { $0.hasPrefix(expected) }, "\(problems)")
    }

    @Test("PUSHWORKER_CAPS: caps per category; a bad value is refused naming the variable and the item (config check exits 78)")
    func caps() throws {
        #expect(try Self.load([:]).caps.isEmpty)
        let caps = try Self.load(["PUSHWORKER_CAPS": "marketing=3/1d,marketing=1/1h"]).caps
        #expect(caps.rules(for: "marketing")?.count == 2)
        #expect(try Self.load(["PUSHWORKER_CAPS": "marketing=3/1d"]).redactedLines().contains("PUSHWORKER_CAPS=marketing=3/1d"))
        let problems = Self.problems(["PUSHWORKER_CAPS": "marketing=3/1d,promo=3/1w"])
        #expect(problems.count == 1 && problems[0].hasPrefix("PUSHWORKER_CAPS: 'promo=3/1w': the window must be"), "\(problems)")
    }

    @Test("required names are reported for the purposes that need them")
    func required() {
        #expect(Self.problemsOf([:], .worker) == ["PUSHWORKER_KAFKA_BROKERS is required", "PUSHWORKER_MSGID_KEYS is required", "PUSHWORKER_REDIS_URL is required"])
        #expect(Self.problemsOf([:], .send) == ["PUSHWORKER_MSGID_KEYS is required"])
        #expect(Self.problemsOf([:], .enqueue) == ["PUSHWORKER_KAFKA_BROKERS is required"])
        #expect(Self.problemsOf(["PUSHWORKER_MSGID_KEYS": Self.keys], .render).isEmpty)
    }

    static func problemsOf(_ environment: [String: String], _ purpose: Configuration.Purpose) -> [String] {
        do { _ = try Configuration.load(environment: environment, purpose: purpose); return [] } catch { return error.messages }
    }

    @Test("several bad values ⇒ every one is listed, at once")
    func allAtOnce() {
        let problems = Self.problems([
            "PUSHWORKER_MAX_IN_FLIGHT": "-5", "PUSHWORKER_LOG_LEVEL": "loud", "PUSHWORKER_HTTP_ADDR": "nowhere",
            "PUSHWORKER_REDIS_URL": "mysql://db", "PUSHWORKER_KAFKA_BROKERS": "", "PUSHWORKER_TOPIK_JOBS": "x",
            "PUSHWORKER_MSGID_KEYS": "k1:" + Data(repeating: 1, count: 16).base64EncodedString(),
        ])
        let expected = ["PUSHWORKER_MAX_IN_FLIGHT", "PUSHWORKER_LOG_LEVEL", "PUSHWORKER_HTTP_ADDR", "PUSHWORKER_REDIS_URL",
                        "PUSHWORKER_KAFKA_BROKERS is required", "PUSHWORKER_TOPIK_JOBS", "PUSHWORKER_MSGID_KEYS"]
        #expect(problems.count == expected.count, "\(problems)")
        for name in expected { #expect(problems.contains { $0.hasPrefix(name) }, "\(name) missing from \(problems)") }
    }

    @Test("msgId keys shorter than 32 bytes are refused without printing the key")
    func shortKey() {
        let short = Data((0..<31).map { UInt8($0 + 100) }).base64EncodedString()
        let problems = Self.problems(["PUSHWORKER_MSGID_KEYS": "k2:\(short)"])
        #expect(problems == ["PUSHWORKER_MSGID_KEYS: entry 1 (kid \"k2\"): key has 31 bytes, needs at least 32"])
        #expect(!problems.joined().contains(short))
        let second = Self.problems(["PUSHWORKER_MSGID_KEYS": "\(Self.keys),old:\(short)"])
        #expect(second.count == 1 && second[0].contains("entry 2") && !second[0].contains(short))
    }

    // MARK: - JSON file

    static func file(_ json: String) throws -> String {
        let folder = try TemporaryFolder.make(prefix: "config")
        let path = folder.appendingPathComponent("pushworker.json").path
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("the JSON file supplies values; the environment wins; numbers are accepted")
    func jsonFile() throws {
        let path = try Self.file("""
        {"PUSHWORKER_KAFKA_GROUP": "from-file", "PUSHWORKER_TOPIC_JOBS": "file.jobs", "PUSHWORKER_MAX_IN_FLIGHT": 64,
         "PUSHWORKER_RDKAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "PUSHWORKER_LOG_LEVEL": "debug"}
        """)
        let c = try Self.load(["PUSHWORKER_CONFIG_FILE": path, "PUSHWORKER_TOPIC_JOBS": "env.jobs", "PUSHWORKER_LOG_LEVEL": ""])
        #expect(c.kafkaGroup == "from-file")
        #expect(c.topicJobs == "env.jobs", "the environment wins")
        #expect(c.maxInFlight == 64)
        #expect(c.logLevel == .debug, "an empty variable does not hide the file's value")
        #expect(c.rdkafkaProperties["sasl.mechanism"] == "SCRAM-SHA-512")
    }

    @Test("the JSON file's own problems are listed with the others", arguments: [
        ("[1, 2]", "PUSHWORKER_CONFIG_FILE: "),
        ("{not json", "PUSHWORKER_CONFIG_FILE: cannot read "),
        (#"{"PUSHWORKER_TOPIC_JOBS": ["a"]}"#, "PUSHWORKER_CONFIG_FILE: PUSHWORKER_TOPIC_JOBS must be a string or number"),
        (#"{"KAFKA_BROKERS": "x"}"#, "PUSHWORKER_CONFIG_FILE: KAFKA_BROKERS is not a pushworker setting"),
        (#"{"PUSHWORKER_MAX_ATTEMPTS": 0}"#, "PUSHWORKER_MAX_ATTEMPTS must be a whole number"),
        (#"{"PUSHWORKER_TOPICS_JOBS": "x"}"#, "PUSHWORKER_TOPICS_JOBS is not a pushworker setting"),
    ])
    func jsonFileProblems(json: String, expected: String) throws {
        let path = try Self.file(json)
        let problems = Self.problems(["PUSHWORKER_CONFIG_FILE": path, "PUSHWORKER_LOG_LEVEL": "nope"])
        #expect(problems.contains { $0.hasPrefix(expected) }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("PUSHWORKER_LOG_LEVEL") }, "other problems are still reported")
    }

    @Test("a missing JSON file is a problem")
    func missingFile() {
        let problems = Self.problems(["PUSHWORKER_CONFIG_FILE": "/nonexistent/pushworker.json"])
        #expect(problems.count == 1 && problems[0].hasPrefix("PUSHWORKER_CONFIG_FILE: cannot read /nonexistent/pushworker.json"))
    }

    // MARK: - librdkafka pass-through

    @Test("PUSHWORKER_RDKAFKA_<NAME> ⇒ lower-cased property with _ → .", arguments: [
        ("PUSHWORKER_RDKAFKA_SASL_MECHANISM", "sasl.mechanism", "SCRAM-SHA-256"),
        ("PUSHWORKER_RDKAFKA_SECURITY_PROTOCOL", "security.protocol", "plaintext"),
        ("PUSHWORKER_RDKAFKA_SASL_USERNAME", "sasl.username", "svc-push"),
        ("PUSHWORKER_RDKAFKA_SSL_CA_LOCATION", "ssl.ca.location", "/etc/kafka/ca.pem"),
        ("PUSHWORKER_RDKAFKA_SESSION_TIMEOUT_MS", "session.timeout.ms", "6000"),
        ("PUSHWORKER_RDKAFKA_LINGER_MS", "linger.ms", "5"),
    ])
    func passThrough(variable: String, property: String, value: String) throws {
        let c = try Self.load([variable: value])
        #expect(c.rdkafkaProperties == [property: value])
    }

    @Test("consumer-only properties stay out of the producer and producer-only ones out of the consumer")
    func producerConsumerSplit() throws {
        let c = try Self.load([
            "PUSHWORKER_RDKAFKA_SASL_MECHANISM": "PLAIN", "PUSHWORKER_RDKAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "PUSHWORKER_RDKAFKA_SASL_USERNAME": "svc", "PUSHWORKER_RDKAFKA_SASL_PASSWORD": "pw",
            "PUSHWORKER_RDKAFKA_SESSION_TIMEOUT_MS": "6000", "PUSHWORKER_RDKAFKA_HEARTBEAT_INTERVAL_MS": "500",
            "PUSHWORKER_RDKAFKA_GROUP_INSTANCE_ID": "w-1", "PUSHWORKER_RDKAFKA_AUTO_OFFSET_RESET": "earliest",
            "PUSHWORKER_RDKAFKA_LINGER_MS": "5", "PUSHWORKER_RDKAFKA_ACKS": "all", "PUSHWORKER_RDKAFKA_COMPRESSION_TYPE": "lz4",
            "PUSHWORKER_RDKAFKA_ENABLE_IDEMPOTENCE": "true",
        ])
        let producer = c.kafkaProperties(for: .producer)
        let consumer = c.kafkaProperties(for: .consumer, extra: ["group.id": "g"])
        for shared in ["bootstrap.servers", "client.id", "sasl.mechanism", "security.protocol"] {
            #expect(producer[shared] != nil && consumer[shared] != nil, "\(shared)")
        }
        #expect(producer["bootstrap.servers"] == "127.0.0.1:9092")
        for consumerOnly in ["session.timeout.ms", "heartbeat.interval.ms", "group.instance.id", "auto.offset.reset"] {
            #expect(producer[consumerOnly] == nil && consumer[consumerOnly] != nil, "\(consumerOnly)")
        }
        for producerOnly in ["linger.ms", "acks", "compression.type", "enable.idempotence"] {
            #expect(consumer[producerOnly] == nil && producer[producerOnly] != nil, "\(producerOnly)")
        }
        #expect(consumer["group.id"] == "g")
    }

    @Test("the worker's producer lingers 50 ms and compresses with snappy unless PUSHWORKER_RDKAFKA_* says otherwise; the consumer gets neither")
    func workerProducerLinger() throws {
        let unset = try Self.load([:])
        let defaults = unset.kafkaProperties(for: .producer, defaults: Configuration.workerProducerDefaults)
        #expect(defaults["linger.ms"] == "50")
        #expect(defaults["compression.type"] == "snappy")
        #expect(unset.kafkaProperties(for: .consumer)["linger.ms"] == nil)
        #expect(unset.kafkaProperties(for: .consumer, defaults: [:])["compression.type"] == nil)
        let set = try Self.load(["PUSHWORKER_RDKAFKA_LINGER_MS": "5", "PUSHWORKER_RDKAFKA_COMPRESSION_TYPE": "lz4"])
        let overridden = set.kafkaProperties(for: .producer, defaults: Configuration.workerProducerDefaults)
        #expect(overridden["linger.ms"] == "5")
        #expect(overridden["compression.type"] == "lz4")
    }

    @Test("the worker's consumer prefetches at most 16 MiB and waits at most 100 ms per fetch unless PUSHWORKER_RDKAFKA_* says otherwise")
    func workerConsumerDefaults() throws {
        let unset = try Self.load([:])
        let defaults = unset.kafkaProperties(for: .consumer, defaults: Configuration.workerConsumerDefaults)
        #expect(defaults["queued.max.messages.kbytes"] == "16384")
        #expect(defaults["fetch.wait.max.ms"] == "100")
        let set = try Self.load(["PUSHWORKER_RDKAFKA_FETCH_WAIT_MAX_MS": "500"])
        #expect(set.kafkaProperties(for: .consumer, defaults: Configuration.workerConsumerDefaults)["fetch.wait.max.ms"] == "500")
    }

    @Test("PUSHWORKER_RECORD_DELAY_MS is read, printed, and refused outside 0…1000")
    func recordDelay() throws {
        let c = try Self.load(["PUSHWORKER_RECORD_DELAY_MS": "0"])
        #expect(c.recordDelayMs == 0)
        #expect(c.redactedLines().contains("PUSHWORKER_RECORD_DELAY_MS=0"))
        #expect(Self.problems(["PUSHWORKER_RECORD_DELAY_MS": "1001"]) == ["PUSHWORKER_RECORD_DELAY_MS must be a whole number in 0…1000, got '1001'"])
    }

    // MARK: - Redaction

    @Test("redactedLines never prints the Redis password, msgId keys or SASL/SSL secrets")
    func redaction() throws {
        let c = try Self.load([
            "PUSHWORKER_REDIS_URL": "redis://worker:S3cr3t-redis@127.0.0.1:6379/2",
            "PUSHWORKER_MSGID_KEYS": "\(Self.keys),k0:\(Data(repeating: 9, count: 40).base64EncodedString())",
            "PUSHWORKER_RDKAFKA_SASL_PASSWORD": "S3cr3t-sasl", "PUSHWORKER_RDKAFKA_SASL_USERNAME": "svc-push",
            "PUSHWORKER_RDKAFKA_SSL_KEY_PASSWORD": "S3cr3t-ssl", "PUSHWORKER_RDKAFKA_SSL_KEY_PEM": "S3cr3t-pem",
            "PUSHWORKER_RDKAFKA_SSL_KEYSTORE_PASSWORD": "S3cr3t-keystore",
            "PUSHWORKER_RDKAFKA_SASL_OAUTHBEARER_CONFIG": "principal=x S3cr3t-config",
        ])
        let text = c.redactedLines().joined(separator: "\n")
        for secret in ["S3cr3t", Self.key, Data(repeating: 9, count: 40).base64EncodedString()] {
            #expect(!text.contains(secret), "\(secret) printed")
        }
        #expect(text.contains("PUSHWORKER_REDIS_URL=redis://<redacted>@127.0.0.1:6379/2"))
        #expect(text.contains("PUSHWORKER_MSGID_KEYS=k1:<redacted>,k0:<redacted>"))
        #expect(text.contains("PUSHWORKER_RDKAFKA_SASL_PASSWORD=<redacted>"))
        #expect(text.contains("PUSHWORKER_RDKAFKA_SASL_USERNAME=svc-push"), "non-secrets stay readable")
    }

    @Test("Redis URL redaction", arguments: [
        ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379"),
        ("redis://:pw@h:1", "redis://<redacted>@h:1"),
        ("redis://u:p@ss@h:1/0", "redis://<redacted>@h:1/0"),
        ("redis://:p/w@h:1", "redis://<redacted>@h:1"),
        ("unix:///run/redis.sock?db=1&password=pw", "unix:///run/redis.sock?db=1&password=<redacted>"),
    ])
    func redactURL(url: String, expected: String) {
        #expect(Configuration.redactURL(url) == expected)
    }

    // MARK: - The binary

    @Test("`config check` lists every problem and exits 78; a good configuration prints \"configuration OK\"")
    func configCheckBinary() throws {
        let bad = try runCommand(BuiltProducts.pushworker, ["config", "check"], environment: [
            "PUSHWORKER_KAFKA_BROKERS": "127.0.0.1:9092", "PUSHWORKER_REDIS_URL": "redis://:S3cr3t@127.0.0.1:6379",
            "PUSHWORKER_MSGID_KEYS": "k1:" + Data(repeating: 3, count: 8).base64EncodedString(),
            "PUSHWORKER_MAX_IN_FLIGHT": "none", "PUSHWORKER_LOG_FORMAT": "yaml", "PUSHWORKER_TYPO": "1",
        ])
        #expect(bad.status == 78)
        for name in ["PUSHWORKER_MSGID_KEYS", "PUSHWORKER_MAX_IN_FLIGHT", "PUSHWORKER_LOG_FORMAT", "PUSHWORKER_TYPO"] {
            #expect(bad.stderr.contains("- \(name)"), "\(name) in \(bad.stderr)")
        }
        #expect(!bad.stderr.contains("S3cr3t") && !bad.stdout.contains("S3cr3t"))

        let good = try runCommand(BuiltProducts.pushworker, ["config", "check"], environment: Self.base)
        #expect(good.status == 0, "\(good.stderr)")
        #expect(good.stdout.contains("configuration OK"))
    }

    @Test("`config check` also reports unusable credential files, without their content")
    func configCheckCredentials() throws {
        let folder = try TemporaryFolder.make(prefix: "cfgcred")
        let app = folder.appendingPathComponent("app_x")
        try FileManager.default.createDirectory(at: app, withIntermediateDirectories: true)
        try #"{"teamId":"T","keyId":"K","topic":"t","privateKey":"-----BEGIN PRIVATE KEY-----\nS3cr3tMaterial\n-----END PRIVATE KEY-----"}"#
            .write(to: app.appendingPathComponent("apns.json"), atomically: true, encoding: .utf8)
        var environment = Self.base
        environment["PUSHWORKER_CREDENTIALS_DIR"] = folder.path
        let result = try runCommand(BuiltProducts.pushworker, ["config", "check"], environment: environment)
        #expect(result.status == 78)
        #expect(result.stderr.contains("app_x/apns.json"), "\(result.stderr)")
        #expect(!result.stderr.contains("S3cr3tMaterial"))
    }

    @Test("`config print` shows the effective values and no secret")
    func configPrintBinary() throws {
        var environment = Self.base
        environment["PUSHWORKER_REDIS_URL"] = "redis://:S3cr3t-redis@127.0.0.1:6379"
        environment["PUSHWORKER_RDKAFKA_SASL_PASSWORD"] = "S3cr3t-sasl"
        environment["PUSHWORKER_TOPIC_DLQ"] = "my.dlq"
        let result = try runCommand(BuiltProducts.pushworker, ["config", "print"], environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("PUSHWORKER_TOPIC_DLQ=my.dlq"))
        #expect(result.stdout.contains("PUSHWORKER_RDKAFKA_SASL_PASSWORD=<redacted>"))
        for secret in ["S3cr3t", Self.key] { #expect(!result.stdout.contains(secret) && !result.stderr.contains(secret)) }
    }

    @Test("`config` without a subcommand is a usage error (64)")
    func usage() throws {
        #expect(try runCommand(BuiltProducts.pushworker, ["config"]).status == 64)
        #expect(try runCommand(BuiltProducts.pushworker, ["config", "--help"]).status == 0)
    }
}
