import Foundation
@testable import PushAPI
import PushCore
import PushEncoding
import PushHTTPServer
import PushKafka
import PushKafkaMock
import PushRedis
import PushRuntime
import PushTestSupport

/// One HTTP exchange made with curl: the status, the headers by lower-case name, the body.
struct HTTPAnswer {
    var status: Int
    var headers: [String: String]
    var body: String

    var json: JSONObject? { (try? JSONParser.parse(body))?.objectValue }
    var errorCode: String? { json?["error"]?.objectValue?["code"]?.stringValue }
    var errorField: String? { json?["error"]?.objectValue?["field"]?.stringValue }
}

/// curl against `base` (one request per call; bodies through standard input, so any bytes go).
func http(_ base: String, _ method: String, _ path: String, headers: [String] = [], body: [UInt8]? = nil) throws -> HTTPAnswer {
    let folder = try TemporaryFolder.make(prefix: "api-http")
    defer { try? FileManager.default.removeItem(at: folder) }
    let headerFile = folder.appendingPathComponent("headers").path, bodyFile = folder.appendingPathComponent("body").path
    var arguments = ["-s", "-g", "--path-as-is", "-X", method, "-D", headerFile, "-o", bodyFile, "-w", "%{http_code}",
                     "-H", "Expect:"]
    for header in headers { arguments += ["-H", header] }
    if body != nil { arguments += ["--data-binary", "@-"] }
    if method == "HEAD" { arguments = arguments.filter { $0 != "-X" && $0 != "HEAD" } + ["-I"] }
    let result = try runCommand("/usr/bin/curl", arguments + [base + path], stdin: body.map { Data($0) }, timeout: 60)
    var parsed: [String: String] = [:]
    let headerText = (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? ""
    for line in headerText.split(separator: "\r\n").dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        parsed[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return HTTPAnswer(status: Int(result.stdout) ?? 0, headers: parsed, body: (try? String(contentsOfFile: bodyFile, encoding: .utf8)) ?? "")
}

/// The API in this process, on real parts: redis-server, librdkafka's mock cluster (the jobs
/// topic with 2 partitions), a Kafka producer, the listener with the API's limits.
final class APIHarness: @unchecked Sendable {
    static let token = "test-token-0123456789abcdef"
    static let otherToken = "other-token-0123456789abcdef"
    static let topic = "push.jobs.v1"

    let redis: RedisServer
    let cluster: KafkaMockCluster
    let client: any RedisPipelining
    let producer: KafkaProducer
    let metrics = Metrics()
    let listener: HTTPListener
    let service: APIService
    let health: APIHealth
    var base: String { "http://127.0.0.1:\(listener.port)" }
    let auth = "Authorization: Bearer \(APIHarness.token)"
    let json = "Content-Type: application/json"

    init(maximumBody: Int = 64 << 10, produceTimeout: Duration = .seconds(10)) throws {
        redis = try RedisServer()
        cluster = try KafkaMockCluster()
        try cluster.createTopic(Self.topic, partitions: 2)
        client = try RedisClient(url: redis.url, timeout: .milliseconds(500))
        let milliseconds = produceTimeout.components.seconds * 1000
        producer = try KafkaProducer(properties: ["bootstrap.servers": cluster.bootstrapServers, "message.timeout.ms": "\(milliseconds)",
                                                  "message.max.bytes": "4194304"])
        metrics.registerStartup(.api)
        let logger = Logger(level: .critical, format: .text, sink: { _ in })
        let tokens = APITokens(tokens: [Self.token, Self.otherToken])
        let admin = try KafkaAdmin(properties: ["bootstrap.servers": cluster.bootstrapServers], timeout: .seconds(2))
        health = APIHealth(redis: client, admin: admin, producer: producer, topic: Self.topic, tokens: tokens, metrics: metrics, logger: logger)
        let health = self.health
        service = APIService(.init(
            tokens: tokens, campaigns: DeliveryStateStore(client: client), idempotency: IdempotencyStore(redis: client, ttlMs: 86_400_000),
            publisher: JobPublisher(producer: producer, topic: Self.topic, timeout: produceTimeout), metrics: metrics, logger: logger,
            readiness: { health.readiness }, now: { Date() }))
        let service = self.service
        listener = try HTTPListener(address: HostPort("127.0.0.1:0")!, threads: 2, limits: APIProcess.listenerLimits(maximumBody: maximumBody),
                                    headerNames: APIService.headerNames) { service.handle($0) }
    }

    func stop() {
        listener.stop()
        producer.close(timeout: .seconds(1))
        client.close()
        cluster.close()
        redis.stop()
    }

    func request(_ method: String, _ path: String, headers: [String]? = nil, body: String? = nil) throws -> HTTPAnswer {
        try http(base, method, path, headers: headers ?? [auth, json], body: body.map { Array($0.utf8) })
    }

    /// Every record of the jobs topic: (key, value).
    func records() throws -> [(key: String, value: String)] {
        let reader = try KafkaTopicReader(properties: ["bootstrap.servers": cluster.bootstrapServers], timeout: .seconds(10))
        defer { reader.close() }
        var out: [(String, String)] = []
        try reader.read(Self.topic, spans: try reader.spans(Self.topic)) { message in
            out.append((String(decoding: message.key ?? [], as: UTF8.self), String(decoding: message.value, as: UTF8.self)))
            return true
        }
        return out
    }

    /// A valid job (docs/reference/job.md) with `recipients` iOS recipients.
    static func job(_ id: String, campaign: String = "order", recipients: Int = 2, expires: String = "+1d") -> String {
        let token = "94a123a49f1f3a4ceac27050e47aeff4325e5b67ee0d2e575090e9f8d69bdfa3"
        let list = (0..<recipients).map { #"{"subscriptionId": "s\#($0)", "platform": "ios", "token": "\#(token)"}"# }.joined(separator: ", ")
        return #"{"schemaVersion": 1, "jobId": "\#(id)", "appId": "app_demo", "campaignId": "\#(campaign)", "expiresAt": "\#(expires)", "content": {"defaultLanguage": "en", "languages": {"en": {"title": "Hi", "body": "There"}}}, "recipients": [\#(list)]}"#
    }
}
