import Foundation
import PushCore
import PushKafkaMock
import PushTestSupport
import Testing

/// `pushworker config check --connect` against librdkafka's mock cluster, a real redis-server
/// and the sandbox (docs/reference/cli.md).
@Suite("pushworker config check --connect", .serialized)
struct ConfigCheckConnectTests {
    static let topics = ["push.jobs.v1", "push.retry.v1", "push.results.v1", "push.tokens.v1", "push.dlq.v1", "push.events.v1"]

    static func environment(kafka: String, redis: String, sandbox: SandboxServer) -> [String: String] {
        CLITest.environment([
            "PUSHWORKER_KAFKA_BROKERS": kafka, "PUSHWORKER_REDIS_URL": redis, "PUSHWORKER_MSGID_KEYS": CLITest.keys,
            "PUSHWORKER_CREDENTIALS_DIR": sandbox.credentialsPath, "PUSHWORKER_CA_FILE": sandbox.certificatePath,
        ])
    }

    static func lines(_ stdout: String) -> [String] { stdout.split(separator: "\n").map(String.init) }

    @Test("everything reachable and accepted: one ok line per check, exit 0, nothing delivered")
    func allGood() throws {
        let cluster = try KafkaMockCluster()
        defer { cluster.close() }
        for topic in Self.topics { try cluster.createTopic(topic, partitions: 2) }
        let redis = try RedisServer()
        defer { redis.stop() }
        let sandbox = try SandboxServer(apps: ["app_cli"])
        let result = try runCommand(BuiltProducts.pushworker, ["config", "check", "--connect", "--timeout", "5"],
                                    environment: Self.environment(kafka: cluster.bootstrapServers, redis: redis.url, sandbox: sandbox))
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let lines = Self.lines(result.stdout)
        #expect(lines.first == "configuration OK")
        #expect(lines.contains { $0.hasPrefix("ok    kafka ") && $0.contains("1 broker") })
        for topic in Self.topics { #expect(lines.contains { $0.hasPrefix("ok    topic ") && $0.contains("\(topic): 2 partitions") }, "\(topic)") }
        #expect(lines.contains { $0.hasPrefix("ok    redis ") && $0.contains("PING answered, the claim/record/rate scripts loaded") })
        #expect(lines.contains { $0.hasPrefix("ok    app_cli ") && $0.contains("apns: provider token and topic accepted") && $0.contains("answered 400 BadDeviceToken") },
                "\(lines)")
        #expect(lines.contains { $0.hasPrefix("ok    app_cli ") && $0.contains("fcm: OAuth grant accepted") && $0.contains("validate_only answered 200") })
        #expect(lines.contains { $0.hasPrefix("ok    app_cli ") && $0.contains("webpush: VAPID key pair consistent") })
        #expect(!lines.contains { $0.hasPrefix("FAIL") || $0.hasPrefix("WARN") })
        let accepted = (try sandbox.stats())["accepted"] as? [String: Any]
        #expect(accepted?["ios"] as? Int == 0 && accepted?["android"] as? Int == 0, "\(accepted ?? [:])")
    }

    @Test("wrong credentials, a missing topic, Redis away: a FAIL line each with the likely fix, exit 1")
    func failures() throws {
        let cluster = try KafkaMockCluster()
        defer { cluster.close() }
        for topic in Self.topics where topic != "push.tokens.v1" && topic != "push.events.v1" { try cluster.createTopic(topic, partitions: 1) }
        let sandbox = try SandboxServer(apps: ["app_cli", "app_other"])
        // app_cli signs with app_other's keys: APNs refuses the provider token, Google the grant.
        let folder = URL(fileURLWithPath: sandbox.credentialsPath)
        func json(_ app: String, _ file: String) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("\(app)/\(file)"))) as? [String: Any])
        }
        var apns = try json("app_cli", "apns.json")
        apns["privateKey"] = try json("app_other", "apns.json")["privateKey"]
        try JSONSerialization.data(withJSONObject: apns).write(to: folder.appendingPathComponent("app_cli/apns.json"))
        var fcm = try json("app_cli", "fcm.json")
        fcm["private_key"] = try json("app_other", "fcm.json")["private_key"]
        try JSONSerialization.data(withJSONObject: fcm).write(to: folder.appendingPathComponent("app_cli/fcm.json"))
        let redisPort = freeLoopbackPort()
        let result = try runCommand(BuiltProducts.pushworker, ["config", "check", "--connect", "--timeout", "3"],
                                    environment: Self.environment(kafka: cluster.bootstrapServers, redis: "redis://127.0.0.1:\(redisPort)", sandbox: sandbox))
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let lines = Self.lines(result.stdout)
        #expect(lines.contains { $0.hasPrefix("FAIL  topic ") && $0.contains("push.tokens.v1 (PUSHWORKER_TOPIC_TOKENS) does not exist") })
        #expect(lines.contains { $0.hasPrefix("WARN  topic ") && $0.contains("push.events.v1") })
        #expect(lines.contains { $0.hasPrefix("FAIL  redis ") && $0.contains("does not answer PING") })
        #expect(lines.contains { $0.hasPrefix("FAIL  app_cli ") && $0.contains("apns:") && $0.contains("403 InvalidProviderToken") && $0.contains("keyId, teamId") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("FAIL  app_cli ") && $0.contains("fcm: the OAuth grant") && $0.contains("client_email and private_key") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("ok    app_other ") && $0.contains("apns:") })
        #expect(!result.stdout.contains("BEGIN PRIVATE KEY") && !result.stderr.contains("BEGIN PRIVATE KEY"))
    }

    @Test("rediss://: with the CA that signed Redis's certificate, ok; with another CA, a FAIL line naming PUSHWORKER_REDIS_CA_FILE")
    func redisTLS() throws {
        let files = try RedisTLSFiles.shared()
        let redis = try RedisServer(tls: .init(files: files))
        defer { redis.stop() }
        let sandbox = try SandboxServer(apps: ["app_cli"])
        var environment = Self.environment(kafka: "127.0.0.1:\(freeLoopbackPort())", redis: redis.url, sandbox: sandbox)
        for (ca, status, expected) in [(files.caFile, "ok    redis ", "rediss://127.0.0.1:\(redis.port): PING answered"),
                                       (files.otherCAFile, "FAIL  redis ", "rediss://127.0.0.1:\(redis.port) does not answer PING")] {
            environment["PUSHWORKER_REDIS_CA_FILE"] = ca
            let result = try runCommand(BuiltProducts.pushworker, ["config", "check", "--connect", "--timeout", "2"], environment: environment)
            let line = Self.lines(result.stdout).first { $0.contains(" redis ") } ?? ""
            #expect(line.hasPrefix(status) && line.contains(expected), "\(result.stdout)\(result.stderr)")
            if ca == files.otherCAFile { #expect(line.contains("set PUSHWORKER_REDIS_CA_FILE to the CA that signed the server certificate"), "\(line)") }
        }
    }

    @Test("an unreachable broker fails fast; --connect is only for check")
    func unreachable() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let sandbox = try SandboxServer(apps: ["app_cli"])
        let started = Date()
        let result = try runCommand(BuiltProducts.pushworker, ["config", "check", "--connect", "--timeout", "2"],
                                    environment: Self.environment(kafka: "127.0.0.1:\(freeLoopbackPort())", redis: redis.url, sandbox: sandbox))
        #expect(result.status == 1)
        #expect(Self.lines(result.stdout).contains { $0.hasPrefix("FAIL  kafka ") && $0.contains("did not answer") })
        #expect(Date().timeIntervalSince(started) < 20)
        #expect(try runCommand(BuiltProducts.pushworker, ["config", "print", "--connect"]).status == 64)
    }
}
