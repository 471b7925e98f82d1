import Foundation
import PushAPI
import PushRuntime
import PushTestSupport
import Testing

/// The `api` and `campaign` purposes of the configuration: what each requires, the
/// PUSHWORKER_API_* variables' ranges and checks, and what `config print` shows of them.
@Suite("API configuration")
struct APIConfigurationTests {
    static func problems(_ values: [String: String], _ purpose: Configuration.Purpose) -> [String] {
        do { _ = try Configuration.load(environment: values, purpose: purpose); return [] } catch { return error.messages }
    }

    @Test("api needs Kafka, Redis and a readable tokens file; campaign needs Redis only; neither needs msgId keys or credentials")
    func required() throws {
        #expect(Set(Self.problems([:], .api)) == ["PUSHWORKER_API_TOKENS_FILE is required", "PUSHWORKER_KAFKA_BROKERS is required",
                                                  "PUSHWORKER_REDIS_URL is required"])
        #expect(Self.problems([:], .campaign) == ["PUSHWORKER_REDIS_URL is required"])
        let tokens = try TemporaryFolder.make(prefix: "api-config").appendingPathComponent("tokens")
        try "tok_0123456789abcdef\n".write(to: tokens, atomically: true, encoding: .utf8)
        let base = ["PUSHWORKER_KAFKA_BROKERS": "kafka:9092", "PUSHWORKER_REDIS_URL": "redis://redis:6379",
                    "PUSHWORKER_API_TOKENS_FILE": tokens.path, "PUSHWORKER_CREDENTIALS_DIR": "/nonexistent/credentials"]
        #expect(Self.problems(base, .api).isEmpty, "the image's credentials folder need not exist for the API")
        #expect(Self.problems(["PUSHWORKER_REDIS_URL": "redis://redis:6379", "PUSHWORKER_CREDENTIALS_DIR": "/nonexistent"], .campaign).isEmpty)
        var missing = base
        missing["PUSHWORKER_API_TOKENS_FILE"] = "/nonexistent/tokens"
        #expect(Self.problems(missing, .api) == ["PUSHWORKER_API_TOKENS_FILE: /nonexistent/tokens is not a readable file"])
        #expect(Self.problems(missing, .worker).contains { $0.contains("PUSHWORKER_API_TOKENS_FILE") } == false,
                "only the API reads the file")
    }

    @Test("defaults, and every PUSHWORKER_API_* value out of range or malformed is a problem naming it", arguments: [
        ("PUSHWORKER_API_ADDR", "9500"), ("PUSHWORKER_API_ADDR", "example.com:9500"), ("PUSHWORKER_API_MAX_BODY", "100"),
        ("PUSHWORKER_API_MAX_BODY", "8MiB"), ("PUSHWORKER_API_THREADS", "0"), ("PUSHWORKER_API_THREADS", "257"),
        ("PUSHWORKER_API_IDEMPOTENCY_TTL_SECONDS", "59"), ("PUSHWORKER_API_PRODUCE_TIMEOUT_SECONDS", "301"),
        ("PUSHWORKER_API_TOKEN_FILE", "/x"),
    ])
    func ranges(name: String, value: String) {
        let problems = Self.problems(["PUSHWORKER_REDIS_URL": "redis://redis:6379", name: value], .campaign)
        #expect(problems.count == 1 && problems[0].contains(name), "\(problems)")
    }

    @Test("defaults reach the fields; config print shows the path of the tokens file, never a token")
    func defaultsAndPrint() throws {
        let configuration = try Configuration.load(environment: ["PUSHWORKER_REDIS_URL": "redis://redis:6379"], purpose: .campaign)
        #expect(configuration.apiAddr == "0.0.0.0:9500" && configuration.apiMaxBody == 8 << 20 && configuration.apiThreads == 4)
        #expect(configuration.apiIdempotencyTTLSeconds == 86_400 && configuration.apiProduceTimeoutSeconds == 30)
        let tokens = try TemporaryFolder.make(prefix: "api-print").appendingPathComponent("tokens")
        try "secret-token-0123456789\n".write(to: tokens, atomically: true, encoding: .utf8)
        let printed = try Configuration.load(environment: ["PUSHWORKER_REDIS_URL": "redis://redis:6379", "PUSHWORKER_API_TOKENS_FILE": tokens.path],
                                             purpose: .campaign).redactedLines().joined(separator: "\n")
        #expect(printed.contains("PUSHWORKER_API_TOKENS_FILE=\(tokens.path)"))
        #expect(!printed.contains("secret-token-0123456789"))
        let properties = APIProcess.producerProperties(try Configuration.load(environment: [
            "PUSHWORKER_KAFKA_BROKERS": "kafka:9092", "PUSHWORKER_REDIS_URL": "redis://redis:6379", "PUSHWORKER_API_TOKENS_FILE": tokens.path,
            "PUSHWORKER_API_PRODUCE_TIMEOUT_SECONDS": "12"], purpose: .api))
        #expect(properties["message.timeout.ms"] == "12000" && properties["message.max.bytes"] == "4194304")
        #expect(properties["bootstrap.servers"] == "kafka:9092")
    }
}
