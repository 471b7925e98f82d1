import Foundation
import PushCore
import PushEncoding
import PushKafka
import PushKafkaMock
import PushRedis
import PushTestSupport
import Testing

/// `pushworker api` and `pushworker campaign`, the built binary (.build/debug/pushworker), against
/// a real redis-server and librdkafka's mock cluster on loopback.
@Suite("pushworker api and campaign: the binary end to end", .serialized)
struct APICommandTests {
    static let token = "e2e-token-0123456789abcdef"
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func tokensFile(_ text: String) throws -> String {
        let path = try TemporaryFolder.make(prefix: "api-e2e").appendingPathComponent("tokens").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// curl: (status, body); `data` goes in as the body.
    static func curl(_ method: String, _ url: String, token: String? = APICommandTests.token, data: String? = nil) throws -> (Int, String) {
        var arguments = ["-s", "-X", method, "-w", "\n%{http_code}", "-H", "Content-Type: application/json"]
        if let token { arguments += ["-H", "Authorization: Bearer \(token)"] }
        if data != nil { arguments += ["--data-binary", "@-"] }
        let result = try runCommand("/usr/bin/curl", arguments + [url], stdin: data.map { Data($0.utf8) }, timeout: 60)
        let parts = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(parts.last ?? "") ?? 0, parts.dropLast().joined(separator: "\n"))
    }

    static func job(_ id: String, campaign: String) -> String {
        #"{"schemaVersion": 1, "jobId": "\#(id)", "appId": "app_e2e", "campaignId": "\#(campaign)", "expiresAt": "+2h", "content": {"defaultLanguage": "en", "languages": {"en": {"title": "Hi", "body": "There"}}}, "recipients": [{"subscriptionId": "s1", "platform": "ios", "token": "94a123a49f1f3a4ceac27050e47aeff4325e5b67ee0d2e575090e9f8d69bdfa3"}]}"#
    }

    static func object(_ text: String) -> JSONObject? { (try? JSONParser.parse(text))?.objectValue }

    @Test("refuses to start without a usable tokens file (78, the problem named, no token printed); --openapi prints the committed document")
    func startup() throws {
        let base = CLITest.environment(["PUSHWORKER_KAFKA_BROKERS": "127.0.0.1:1", "PUSHWORKER_REDIS_URL": "redis://127.0.0.1:1"])
        let none = try runCommand(BuiltProducts.pushworker, ["api"], environment: base)
        #expect(none.status == 78 && none.stderr.contains("PUSHWORKER_API_TOKENS_FILE is required"), "\(none.stderr)")
        var missing = base
        missing["PUSHWORKER_API_TOKENS_FILE"] = "/nonexistent/tokens"
        let absent = try runCommand(BuiltProducts.pushworker, ["api"], environment: missing)
        #expect(absent.status == 78 && absent.stderr.contains("not a readable file"), "\(absent.stderr)")
        var empty = base
        empty["PUSHWORKER_API_TOKENS_FILE"] = try Self.tokensFile("# nobody yet\n\n")
        let noToken = try runCommand(BuiltProducts.pushworker, ["api"], environment: empty)
        #expect(noToken.status == 78 && noToken.stderr.contains("no token in the file"), "\(noToken.stderr)")
        var short = base
        short["PUSHWORKER_API_TOKENS_FILE"] = try Self.tokensFile("\(Self.token)\nshort-secret\n")
        let bad = try runCommand(BuiltProducts.pushworker, ["api"], environment: short)
        #expect(bad.status == 78 && bad.stderr.contains("line 2 is not a token") && !bad.stderr.contains("short-secret"), "\(bad.stderr)")

        var printing = base
        printing["PUSHWORKER_API_TOKENS_FILE"] = try Self.tokensFile("\(Self.token)\n")
        printing["PUSHWORKER_MSGID_KEYS"] = CLITest.keys
        let printed = try runCommand(BuiltProducts.pushworker, ["config", "print"], environment: printing)
        #expect(printed.status == 0, "\(printed.stderr)")
        #expect(printed.stdout.contains("PUSHWORKER_API_TOKENS_FILE=/") && printed.stdout.contains("PUSHWORKER_API_ADDR=0.0.0.0:9500"))
        #expect(!printed.stdout.contains(Self.token), "config print never prints a token")

        let document = try runCommand(BuiltProducts.pushworker, ["api", "--openapi"])
        #expect(document.status == 0)
        #expect(document.stdout == (try String(contentsOf: Self.repository.appendingPathComponent("docs/reference/openapi.json"), encoding: .utf8)))
        #expect(try runCommand(BuiltProducts.pushworker, ["api", "extra"]).status == 64)

        // An address already taken: 69, after the configuration was accepted.
        let taken = try LoopbackListener()
        var busy = printing
        busy["PUSHWORKER_API_ADDR"] = "127.0.0.1:\(taken.port)"
        busy["PUSHWORKER_LOG_FORMAT"] = "text"
        let refused = try runCommand(BuiltProducts.pushworker, ["api"], environment: busy, timeout: 60)
        #expect(refused.status == 69 && refused.stderr.contains("cannot listen"), "\(refused.status) \(refused.stderr)")
    }

    @Test("jobs posted over HTTP land on the topic; a campaign paused, throttled, resumed, cancelled and read back; SIGTERM exits 0")
    func endToEnd() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let cluster = try KafkaMockCluster()
        defer { cluster.close() }
        try cluster.createTopic("push.jobs.v1", partitions: 3)
        let port = freeLoopbackPort()
        let server = try TestProcess(BuiltProducts.pushworker, ["api"], environment: CLITest.environment([
            "PUSHWORKER_KAFKA_BROKERS": cluster.bootstrapServers, "PUSHWORKER_REDIS_URL": redis.url,
            "PUSHWORKER_API_TOKENS_FILE": try Self.tokensFile("# e2e\n\(Self.token)\n"), "PUSHWORKER_API_ADDR": "127.0.0.1:\(port)",
            "PUSHWORKER_LOG_FORMAT": "text",
        ]))
        defer { server.stop() }
        let base = "http://127.0.0.1:\(port)"
        #expect(eventually(timeout: 30) { (try? Self.curl("GET", base + "/readyz", token: nil))?.0 == 200 }, "\(server.stderr())")

        let (jobStatus, jobBody) = try Self.curl("POST", base + "/v1/jobs", data: "[\(Self.job("e2e:1", campaign: "spring")), \(Self.job("e2e:2", campaign: "spring"))]")
        #expect(jobStatus == 202, "\(jobBody)")
        #expect(Self.object(jobBody)?["jobIds"]?.arrayValue?.compactMap(\.stringValue) == ["e2e:1", "e2e:2"])
        let (invalidStatus, invalidBody) = try Self.curl("POST", base + "/v1/jobs", data: #"{"schemaVersion": 1, "jobId": "x"}"#)
        #expect(invalidStatus == 422 && invalidBody.contains("\"$.appId\""), "\(invalidBody)")
        #expect(try Self.curl("POST", base + "/v1/jobs", token: "wrong-token-0123456789", data: "{}").0 == 401)

        // Read the topic back: the two jobs, keyed by jobId, as the worker will decode them.
        let reader = try KafkaTopicReader(properties: ["bootstrap.servers": cluster.bootstrapServers], timeout: .seconds(10))
        defer { reader.close() }
        var produced: [String: [UInt8]] = [:]
        try reader.read("push.jobs.v1", spans: try reader.spans("push.jobs.v1")) { message in
            produced[String(decoding: message.key ?? [], as: UTF8.self)] = message.value
            return true
        }
        #expect(Set(produced.keys) == ["e2e:1", "e2e:2"])
        #expect(try JobDecoder.decode(try #require(produced["e2e:1"])).campaignID == "spring")

        let campaign = base + "/v1/campaigns/app_e2e/spring"
        let paused = try Self.curl("POST", campaign + "/pause", data: #"{"reason": "e2e check"}"#)
        #expect(paused.0 == 200 && Self.object(paused.1)?["state"]?.stringValue == "paused")
        #expect(Self.object(try Self.curl("PUT", campaign + "/throttle", data: #"{"perMinute": 120}"#).1)?["throttlePerMinute"]?.numberValue == 120)
        #expect(Self.object(try Self.curl("POST", campaign + "/resume").1)?["state"]?.stringValue == "active")
        #expect(Self.object(try Self.curl("POST", campaign + "/cancel").1)?["state"]?.stringValue == "cancelled")
        let refused = try Self.curl("PUT", campaign + "/deadline", data: #"{"sendBy": "2030-01-01T00:00:00Z"}"#)
        #expect(refused.0 == 409 && refused.1.contains("campaign_cancelled"))
        let status = try #require(Self.object(try Self.curl("GET", campaign).1))
        #expect(status["state"]?.stringValue == "cancelled" && status["throttlePerMinute"]?.numberValue == 120)

        // The CLI reads the same control.
        let cli = try runCommand(BuiltProducts.pushworker, ["campaign", "status", "app_e2e", "spring", "--json"],
                                 environment: CLITest.environment(["PUSHWORKER_REDIS_URL": redis.url]))
        #expect(cli.status == 0 && Self.object(cli.stdout)?["state"]?.stringValue == "cancelled", "\(cli.stderr)")

        let metrics = try Self.curl("GET", base + "/metrics", token: nil).1
        #expect(metrics.contains("pushworker_api_jobs_total 2"))
        #expect(metrics.contains(#"pushworker_api_requests_total{route="campaign_deadline",code="409"} 1"#), "\(metrics)")
        #expect(server.stderr().contains("campaign pause") && !server.stderr().contains(Self.token), "audit lines, never the token")

        server.signal(SIGTERM)
        #expect(server.wait(timeout: 20) == 0, "\(server.stderr().suffix(1000))")
    }

    @Test("pushworker campaign: every subcommand against Redis, the text and --json status, refusals and usage errors")
    func campaignCommand() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let environment = CLITest.environment(["PUSHWORKER_REDIS_URL": redis.url])
        func run(_ arguments: String...) throws -> (status: Int32, stdout: String, stderr: String) {
            try runCommand(BuiltProducts.pushworker, ["campaign"] + arguments, environment: environment)
        }
        let fresh = try run("status", "app_cli", "cmp")
        #expect(fresh.status == 0 && fresh.stdout.hasPrefix("campaign cmp of app app_cli: active\n"), "\(fresh.stdout)\(fresh.stderr)")
        #expect(fresh.stdout.contains("  updated    never (no control)"))

        let paused = try run("pause", "app_cli", "cmp", "--reason", "too many complaints")
        #expect(paused.status == 0 && paused.stdout.contains(": paused\n  reason     too many complaints\n"), "\(paused.stdout)")
        #expect(try run("throttle", "app_cli", "cmp", "600").stdout.contains("  throttle   600 per minute"))
        let deadline = try run("deadline", "app_cli", "cmp", "2030-01-01T00:00:00Z", "--json")
        let json = try #require(Self.object(deadline.stdout))
        #expect(json["sendBy"]?.stringValue == "2030-01-01T00:00:00.000Z" && json["throttlePerMinute"]?.numberValue == 600)
        #expect(json["state"]?.stringValue == "paused" && json["reason"]?.stringValue == "too many complaints")
        #expect(try run("deadline", "app_cli", "cmp", "+2h").stdout.contains("  deadline   20"))
        #expect(try run("deadline", "app_cli", "cmp", "off").stdout.contains("  deadline   none"))
        #expect(try run("throttle", "app_cli", "cmp", "off").stdout.contains("  throttle   none"))
        #expect(try run("resume", "app_cli", "cmp").stdout.contains(": active\n"))
        #expect(try run("cancel", "app_cli", "cmp", "--reason", "wrong audience").stdout.contains(": cancelled\n"))
        let refused = try run("resume", "app_cli", "cmp")
        #expect(refused.status == 1 && refused.stderr.contains("the campaign is cancelled"), "\(refused.stderr)")
        #expect(try run("cancel", "app_cli", "cmp").status == 0, "cancelling a cancelled campaign is fine")
        #expect(try run("status", "app_cli", "--", "-dash").status == 0)

        for arguments in [["status"], ["status", "app_cli"], ["stats", "app_cli", "cmp"], ["pause", "../x", "cmp"], ["pause", "app", ""],
                          ["throttle", "app", "cmp"], ["throttle", "app", "cmp", "0"], ["throttle", "app", "cmp", "fast"],
                          ["deadline", "app", "cmp", "soon"], ["resume", "app", "cmp", "--reason", "x"], ["status", "app", "cmp", "extra"],
                          ["pause", "app", "cmp", "--reason", String(repeating: "r", count: 1025)], ["status", "app", String(repeating: "c", count: 257)]] {
            let result = try runCommand(BuiltProducts.pushworker, ["campaign"] + arguments, environment: environment)
            #expect(result.status == 64, "\(arguments): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains("run 'pushworker campaign --help' for usage"), "\(arguments)")
        }
        // Redis refusing the command (a key of another type where the control lives): 70.
        let client = try RedisClient(url: redis.url)
        defer { client.close() }
        _ = try client.pipeline([["SET", .string(RedisKeys.campaignControl(appID: "app_cli", campaignID: "odd")), "not a hash"]])
        let odd = try run("pause", "app_cli", "odd")
        #expect(odd.status == 70 && odd.stderr.contains("WRONGTYPE"), "\(odd.status) \(odd.stderr)")
        let noRedis = try runCommand(BuiltProducts.pushworker, ["campaign", "status", "a", "c"], environment: CLITest.environment([:]))
        #expect(noRedis.status == 78 && noRedis.stderr.contains("PUSHWORKER_REDIS_URL is required"))
        let down = try runCommand(BuiltProducts.pushworker, ["campaign", "status", "a", "c"],
                                  environment: CLITest.environment(["PUSHWORKER_REDIS_URL": "redis://127.0.0.1:\(freeLoopbackPort())"]))
        #expect(down.status == 69, "\(down.stderr)")
        #expect(try runCommand(BuiltProducts.pushworker, ["campaign", "--help"]).stdout.contains("pushworker campaign throttle APP CAMPAIGN PER_MINUTE|off"))
    }
}
