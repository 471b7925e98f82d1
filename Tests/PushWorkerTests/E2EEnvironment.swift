import Foundation
import PushKafka
import PushTestSupport

/// Real services as separate processes for end-to-end tests: `pushworker-dev dev-broker`,
/// `redis-server`, `pushworker-dev sandbox`; and a `pushworker run` worker on demand.
final class E2EEnvironment: @unchecked Sendable {
    // Thread safety: used by one test at a time (the suite is serialized).
    let folder: URL
    let broker: TestProcess
    let bootstrap: String
    let redis: RedisServer
    let sandbox: TestProcess
    let sandboxPort: UInt16
    let certificate: String
    let credentialsDir: String
    let seed = "e2e-seed"
    let msgIDKeys = "k1:" + Data((0..<32).map { UInt8($0 * 7 % 256) }).base64EncodedString()
    static let topics = ["push.jobs.v1", "push.jobs.transactional.v1", "push.retry.v1", "push.results.v1", "push.tokens.v1", "push.dlq.v1", "push.events.v1"]

    init(sandboxArguments: [String] = []) throws {
        folder = try TemporaryFolder.make(prefix: "e2e")
        let bootstrapFile = folder.appendingPathComponent("bootstrap").path
        var brokerArguments = ["dev-broker", "--bootstrap-file", bootstrapFile]
        for topic in Self.topics { brokerArguments += ["--topic", "\(topic):2"] }
        broker = try TestProcess(BuiltProducts.pushworkerDev, brokerArguments)
        var address = ""
        guard eventually(timeout: 20, {
            address = (try? String(contentsOfFile: bootstrapFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            return !address.isEmpty
        }) else { throw TestSupportError("dev-broker did not start: \(broker.stderr())") }
        bootstrap = address
        redis = try RedisServer()

        let portFile = folder.appendingPathComponent("sandbox.port").path
        certificate = folder.appendingPathComponent("sandbox.pem").path
        credentialsDir = folder.appendingPathComponent("credentials").path
        sandbox = try TestProcess(BuiltProducts.pushworkerDev, [
            "sandbox", "--listen", "127.0.0.1:0", "--port-file", portFile, "--cert-out", certificate,
            "--credentials-out", credentialsDir, "--app", "app_e2e", "--seed", seed,
        ] + sandboxArguments)
        var port: UInt16 = 0
        guard eventually(timeout: 20, {
            let text = (try? String(contentsOfFile: portFile, encoding: .utf8)) ?? ""
            port = UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ":").last ?? "") ?? 0
            return port != 0
        }) else { throw TestSupportError("sandbox did not start: \(sandbox.stderr())") }
        sandboxPort = port
    }

    var origin: String { "https://127.0.0.1:\(sandboxPort)" }

    func workerEnvironment(group: String = "pushworker", extra: [String: String] = [:]) -> [String: String] {
        var environment = [
            "PUSHWORKER_KAFKA_BROKERS": bootstrap,
            "PUSHWORKER_KAFKA_GROUP": group,
            "PUSHWORKER_REDIS_URL": redis.url,
            "PUSHWORKER_CREDENTIALS_DIR": credentialsDir,
            "PUSHWORKER_MSGID_KEYS": msgIDKeys,
            "PUSHWORKER_CA_FILE": certificate,
            "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS": "127.0.0.1",
            "PUSHWORKER_HTTP_ADDR": "127.0.0.1:\(freeLoopbackPort())",
            "PUSHWORKER_LOG_LEVEL": "info",
            "PUSHWORKER_SHUTDOWN_GRACE_SECONDS": "10",
            "PUSHWORKER_RDKAFKA_SESSION_TIMEOUT_MS": "6000",
            "PUSHWORKER_RDKAFKA_HEARTBEAT_INTERVAL_MS": "500",
        ]
        for (key, value) in extra { environment[key] = value }
        return environment
    }

    func startWorker(group: String = "pushworker", extra: [String: String] = [:]) throws -> TestProcess {
        try TestProcess(BuiltProducts.pushworker, ["run"], environment: workerEnvironment(group: group, extra: extra))
    }

    func subscriptions(_ count: Int) throws -> [String] {
        let result = try runCommand(BuiltProducts.pushworkerDev, ["sandbox", "subscriptions", "\(count)", "--origin", origin, "--seed", seed])
        return result.stdout.split(separator: "\n").map(String.init).filter { $0.hasPrefix("{") }
    }

    func produce(_ topic: String, key: String, value: [UInt8], headers: [KafkaHeader] = []) throws {
        let producer = try KafkaProducer(properties: ["bootstrap.servers": bootstrap])
        producer.produce(topic: topic, key: Array(key.utf8), value: value, headers: headers) { _ in }
        try producer.flush(timeout: .seconds(10))
        producer.close(timeout: .seconds(2))
    }

    /// Reads `topic` from the beginning with a fresh group until `count` messages or `timeout`.
    func read(_ topic: String, count: Int, timeout: Double = 60) throws -> [KafkaMessage] {
        let consumer = try KafkaConsumer(properties: ["bootstrap.servers": bootstrap, "group.id": "reader-\(UUID().uuidString.prefix(8))",
                                                      "auto.offset.reset": "earliest"], topics: [topic])
        defer { consumer.close() }
        var messages: [KafkaMessage] = []
        let deadline = Date().addingTimeInterval(timeout)
        while messages.count < count && Date() < deadline {
            for case .success(let message) in consumer.pollBatch(max: 100, timeout: .milliseconds(200)) { messages.append(message) }
        }
        return messages
    }

    /// JSON objects of `messages`.
    static func objects(_ messages: [KafkaMessage]) -> [[String: Any]] {
        messages.compactMap { try? JSONSerialization.jsonObject(with: Data($0.value)) as? [String: Any] }
    }

    /// `GET path` on the sandbox (stats, messages) via the curl CLI.
    func sandboxGET(_ path: String) throws -> String {
        try runCommand("/usr/bin/curl", ["-s", "--http2", "--cacert", certificate, origin + path]).stdout
    }

    static func apnsToken(_ seed: Int, dead: Bool = false) -> String {
        var text = dead ? "dead" : ""
        var value = UInt64(seed + 1) &* 0x9E37_79B9_7F4A_7C15
        while text.count < 64 {
            value = value &* 6364136223846793005 &+ 1442695040888963407
            text += String(value, radix: 16)
        }
        return String(text.prefix(64))
    }

    static func fcmToken(_ seed: Int, dead: Bool = false) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
        var text = dead ? "dead" : "f"
        var value = UInt64(seed + 7)
        while text.count < 160 {
            value = value &* 6364136223846793005 &+ 1442695040888963407
            text.append(alphabet[Int(value >> 58)])
        }
        return text
    }

    /// A job with the given recipient JSON objects.
    static func job(id: String, recipients: [String], expiresIn: Double = 3600) -> String {
        let expires = ISO8601DateFormatter().string(from: Date().addingTimeInterval(expiresIn))
        return """
        {"schemaVersion":1,"jobId":"\(id)","appId":"app_e2e","campaignId":"cmp_e2e","variant":"A","expiresAt":"\(expires)",
         "priority":"high","ttlSeconds":3600,"collapseId":"e2e",
         "content":{"defaultLanguage":"en","languages":{"en":{"title":"Hi {{ name | default: \\"there\\" }}","body":"Hello",
           "url":"https://shop.example/e2e","actions":[{"id":"buy","title":"Buy","url":"https://shop.example/buy"}]},
           "tr":{"title":"Merhaba {{ name }}","body":"Selam"}}},
         "data":{"screen":"e2e"},
         "recipients":[\(recipients.joined(separator: ","))]}
        """.replacingOccurrences(of: "\n", with: "")
    }
}
