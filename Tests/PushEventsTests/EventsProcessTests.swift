import Foundation
import PushCore
import PushKafka
import PushKafkaMock
import PushRedis
@testable import PushEvents
import PushTestSupport
import Testing
@testable import PushWorker

@Suite("Events: the real `pushworker events` binary over HTTP, with webhooks to a local HTTPS receiver", .serialized)
struct EventsProcessTests {
    static let keys = "k1:" + Data([UInt8](repeating: 7, count: 32)).base64EncodedString()

    /// curl's status, headers and connection reuse for one or more URLs in one invocation (keep-alive).
    static func curl(_ arguments: [String]) throws -> String {
        try runCommand("/usr/bin/curl", ["-s", "-v", "-o", "/dev/null"] + arguments, timeout: 30).stderr
    }

    @Test("HTTP: keep-alive, 204/400/404/405 with Allow, 429 with Retry-After; webhooks batched, signed, retried; SIGTERM exits 0")
    func endToEnd() throws {
        let redis = try RedisServer()
        let cluster = try KafkaMockCluster()
        try cluster.createTopic("push.events.v1", partitions: 2)
        defer { cluster.close() }
        let receiver = try EventsWebhookReceiver(failFirst: 2)
        let credentials = try TemporaryFolder.make(prefix: "events-creds")
        let appFolder = credentials.appendingPathComponent("app_hook")
        try FileManager.default.createDirectory(at: appFolder, withIntermediateDirectories: true)
        let secret = "whsec_test_123"
        try #"{"webhook": {"url": "\#(receiver.url)", "secret": "\#(secret)"}}"#
            .write(to: appFolder.appendingPathComponent("app.json"), atomically: true, encoding: .utf8)

        let port = freeLoopbackPort()
        let server = try TestProcess(BuiltProducts.pushworker, ["events"], environment: [
            "PUSHWORKER_KAFKA_BROKERS": cluster.bootstrapServers,
            "PUSHWORKER_REDIS_URL": redis.url,
            "PUSHWORKER_MSGID_KEYS": Self.keys,
            "PUSHWORKER_CREDENTIALS_DIR": credentials.path,
            "PUSHWORKER_CA_FILE": receiver.certificatePath,
            "PUSHWORKER_HTTP_ADDR": "127.0.0.1:\(port)",
            "EVENT_RATE_LIMIT": "8/m",
            "EVENT_TRUSTED_PROXIES": "127.0.0.1",
        ])
        defer { server.stop() }
        #expect(eventually(timeout: 20) { isListening(port: port) }, "\(server.stderr())")
        let base = "http://127.0.0.1:\(port)"
        let keyring = try MsgIDKeyring(parsing: Self.keys)
        let ids = (0..<5).map { MsgID.sign(MsgIDFields(appID: "app_hook", campaignID: "cmp_h", userID: nil, subscriptionID: "s\($0)",
                                                      platform: "web", variant: "B"), keyring: keyring) }

        // Five valid pings on one connection (keep-alive), from one forwarded client.
        let five = try Self.curl(["-X", "POST", "-H", "X-Forwarded-For: 198.51.100.20"] + ids.map { "\(base)/v1/e/o/\($0)" })
        #expect(five.components(separatedBy: "< HTTP/1.1 204").count - 1 == 5, "\(five)")
        #expect(five.contains("Re-using existing"), "HTTP/1.1 keep-alive (curl 7: \"Re-using existing connection\", 8: \"Re-using existing http: connection\")")
        #expect(!five.contains("Connection: close"))

        let badID = try Self.curl(["-X", "POST", "\(base)/v1/e/o/\(ids[0].dropLast(2))xx"])
        #expect(badID.contains("< HTTP/1.1 400"))
        #expect(try Self.curl(["-X", "POST", "\(base)/v1/e/k/\(ids[0])"]).contains("< HTTP/1.1 404"))
        let wrongMethod = try Self.curl(["-X", "GET", "\(base)/v1/e/o/\(ids[0])"])
        #expect(wrongMethod.contains("< HTTP/1.1 405"))
        #expect(wrongMethod.contains("< Allow: POST"))
        // A body is read and ignored.
        #expect(try Self.curl(["-X", "POST", "--data", "ignored", "-H", "X-Forwarded-For: 198.51.100.21", "\(base)/v1/e/d/\(ids[1])"])
            .contains("< HTTP/1.1 204"))

        // The forwarded client 198.51.100.20 spent 5 of 8 tokens: 3 more, then 429.
        let burst = try Self.curl(["-X", "POST", "-H", "X-Forwarded-For: 198.51.100.20"]
                                  + Array(repeating: "\(base)/v1/e/c/\(ids[2])", count: 4))
        #expect(burst.components(separatedBy: "< HTTP/1.1 204").count - 1 == 3, "\(burst)")
        #expect(burst.contains("< HTTP/1.1 429"))
        #expect(burst.contains("< Retry-After: 8"), "one token per 7.5 s under 8/m")

        #expect(try Self.curl(["\(base)/healthz"]).contains("< HTTP/1.1 200"))
        #expect(eventually(timeout: 10) { (try? Self.curl(["\(base)/readyz"]))?.contains("< HTTP/1.1 200") == true })

        // Webhooks: 9 accepted events, delivered after two 500s, in few batches, signed.
        var delivered: [[String: Any]] = []
        #expect(eventually(timeout: 30) {
            delivered = receiver.requests().filter { $0["status"] as? Int == 200 }
            let events = delivered.compactMap { $0["body"] as? String }
                .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [Any] }.map(\.count).reduce(0, +)
            return events == 9
        }, "\(receiver.requests().count) requests: \(server.stderr().suffix(2000))")
        let all = receiver.requests()
        #expect(all.prefix(2).allSatisfy { $0["status"] as? Int == 500 })
        #expect(delivered.count <= 3, "batched, not one request per event")
        for request in all {
            let headers = try #require(request["headers"] as? [String: String])
            let body = try #require(request["body"] as? String)
            #expect(headers["x-pushworker-signature"] == WebhookDispatcher.signature(secret: Array(secret.utf8), body: Array(body.utf8)))
            #expect(headers["content-type"] == "application/json")
            let timestamp = Double(headers["x-pushworker-timestamp"] ?? "") ?? 0
            #expect(abs(timestamp - Date().timeIntervalSince1970) < 120)
            #expect(headers["x-pushworker-delivery"]?.isEmpty == false)
        }
        // The retried batch keeps its delivery id.
        let failedIDs = Set(all.prefix(2).compactMap { ($0["headers"] as? [String: String])?["x-pushworker-delivery"] })
        let deliveredIDs = Set(delivered.compactMap { ($0["headers"] as? [String: String])?["x-pushworker-delivery"] })
        #expect(!failedIDs.isDisjoint(with: deliveredIDs))
        let firstEvent = try #require(((try JSONSerialization.jsonObject(with: Data(((delivered.first?["body"] as? String) ?? "[]").utf8))) as? [[String: Any]])?.first)
        #expect(firstEvent["appId"] as? String == "app_hook")
        #expect(firstEvent["campaignId"] as? String == "cmp_h")

        let metrics = try runCommand("/usr/bin/curl", ["-s", "\(base)/metrics"]).stdout
        #expect(metrics.contains(#"pushworker_webhook_deliveries_total{outcome="retried"} 2"#), "\(metrics)")
        #expect(metrics.contains(#"pushworker_events_total{type="opened",outcome="accepted"} 5"#))
        #expect(metrics.contains("pushworker_events_rate_limited_total 1"))
        #expect(metrics.contains(#"pushworker_events_total{type="dismissed",outcome="bad_msgid"} 0"#))  // declared at start-up
        #expect(metrics.contains("pushworker_build_info{version="))

        server.signal(SIGTERM)
        #expect(server.wait(timeout: 20) == 0, "\(server.stderr().suffix(1000))")
    }
}
