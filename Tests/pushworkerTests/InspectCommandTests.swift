import Foundation
import PushRuntime
import PushCore
import PushKafka
import PushKafkaMock
import PushRedis
@testable import PushEvents
import PushTestSupport
import PushWorker
import Testing

/// `pushworker inspect results|dlq|stats` against librdkafka's mock cluster and a real
/// redis-server (docs/reference/cli.md).
@Suite("pushworker inspect", .serialized)
struct InspectCommandTests {
    static func result(job: String, campaign: String, app: String = "app_i", variant: String? = "A", subscription: String,
                       platform: String, status: DeliveryStatus, reason: String? = nil, at: Int64) -> [UInt8] {
        ResultRecord(jobID: job, msgID: "m-\(subscription)", appID: app, campaignID: campaign, variant: variant, userID: "u",
                     subscriptionID: subscription, platform: platform, status: status, reason: reason, httpStatus: status == .sent ? 200 : nil,
                     providerMessageID: nil, attempts: 1, latencyMs: 3, atUnixMs: at).jsonBytes()
    }

    static func produce(_ producer: KafkaProducer, _ topic: String, key: String?, _ value: [UInt8], headers: [KafkaHeader] = []) throws {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var failure: KafkaError?
        producer.produce(topic: topic, key: key.map { Array($0.utf8) }, value: value, headers: headers) { result in
            if case .failure(let error) = result { failure = error }
            done.signal()
        }
        done.wait()
        if let failure { throw failure }
    }

    struct Cluster {
        let mock: KafkaMockCluster
        let producer: KafkaProducer
        var environment: [String: String] { CLITest.environment(["PUSHWORKER_KAFKA_BROKERS": mock.bootstrapServers]) }
    }

    static func cluster() throws -> Cluster {
        let mock = try KafkaMockCluster()
        for topic in ["push.results.v1", "push.dlq.v1", "push.jobs.v1", "push.retry.v1"] { try mock.createTopic(topic, partitions: 3) }
        return Cluster(mock: mock, producer: try KafkaProducer(properties: ["bootstrap.servers": mock.bootstrapServers]))
    }

    @Test("results: a summary by status, reason and platform for a campaign or a job (and its batches); --all; --json")
    func results() throws {
        let cluster = try Self.cluster()
        defer { cluster.producer.close(timeout: .seconds(2)); cluster.mock.close() }
        let base: Int64 = 1_790_000_000_000
        let rows: [(String, String, String, String, DeliveryStatus, String?)] = [
            ("c1:0000", "c1", "i1", "ios", .sent, nil), ("c1:0000", "c1", "i2", "ios", .invalidToken, "Unregistered"),
            ("c1:0001", "c1", "a1", "android", .sent, nil), ("c1:0001", "c1", "a2", "android", .rejected, "bad_token"),
            ("c1:0001", "c1", "w1", "web", .sent, nil), ("c2:0000", "c2", "i3", "ios", .failed, "TooManyRequests"),
            ("c10", "c10", "i4", "ios", .sent, nil),
        ]
        for (index, row) in rows.enumerated() {
            try Self.produce(cluster.producer, "push.results.v1", key: row.2,
                             Self.result(job: row.0, campaign: row.1, subscription: row.2, platform: row.3, status: row.4, reason: row.5, at: base + Int64(index)))
        }
        try Self.produce(cluster.producer, "push.results.v1", key: "x", Array("not json".utf8))

        let campaign = try runCommand(BuiltProducts.pushworker, ["inspect", "results", "--campaign", "c1"], environment: cluster.environment)
        #expect(campaign.status == 0, "\(campaign.stderr)")
        let lines = campaign.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        #expect(campaign.stdout.hasPrefix("campaign c1 in push.results.v1: 5 of 8 results (1 unreadable)"), "\(campaign.stdout)")
        #expect(lines.contains(["STATUS", "REASON", "IOS", "ANDROID", "WEB", "TOTAL"]))
        #expect(lines.contains(["sent", "-", "1", "1", "1", "3"]))
        #expect(lines.contains(["invalid_token", "Unregistered", "1", "0", "0", "1"]))
        #expect(lines.contains(["rejected", "bad_token", "0", "1", "0", "1"]))
        #expect(lines.contains(["total", "2", "2", "1", "5"]))

        // --job matches the job and its batches, not another job sharing a prefix.
        let job = try runCommand(BuiltProducts.pushworker, ["inspect", "results", "--job", "c1", "--json"], environment: cluster.environment)
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(job.stdout.utf8)) as? [String: Any])
        #expect(summary["matched"] as? Int == 5)
        #expect((summary["byStatus"] as? [String: Int])?["sent"] == 3)
        #expect((summary["byStatus"] as? [String: Int])?["duplicate"] == 0)
        let one = try runCommand(BuiltProducts.pushworker, ["inspect", "results", "--job", "c1:0001", "--all"], environment: cluster.environment)
        #expect(one.status == 0)
        let printed = CLITest.lines(one.stdout)
        #expect(printed.map { $0["subscriptionId"] as? String } .sorted { ($0 ?? "") < ($1 ?? "") } == ["a1", "a2", "w1"])
        #expect(one.stderr.contains("job c1:0001 in push.results.v1: 3 of 8 results"))

        // A job nobody delivered: said plainly, exit 1 (the summary is still printed).
        let none = try runCommand(BuiltProducts.pushworker, ["inspect", "results", "--job", "no-such-job"], environment: cluster.environment)
        #expect(none.status == 1, "\(none.stdout)\(none.stderr)")
        #expect(none.stderr.contains("inspect: no results found for job no-such-job in push.results.v1 (8 scanned)"), "\(none.stderr)")
        let noneJSON = try runCommand(BuiltProducts.pushworker, ["inspect", "results", "--campaign", "c1", "--app", "other", "--json"],
                                      environment: cluster.environment)
        #expect(noneJSON.status == 1 && noneJSON.stderr.contains("no results found for campaign c1 of app other"), "\(noneJSON.stderr)")
        #expect(noneJSON.stdout.contains("\"matched\":0"), "\(noneJSON.stdout)")

        let usage = try runCommand(BuiltProducts.pushworker, ["inspect", "results", "--job", "a", "--campaign", "b"], environment: cluster.environment)
        #expect(usage.status == 64)
        let missing = try runCommand(BuiltProducts.pushworker, ["inspect", "results", "--topic", "nope", "--timeout", "3"], environment: cluster.environment)
        #expect(missing.status == 69)
        #expect(missing.stderr.contains("topic nope does not exist"))
    }

    @Test("dlq: each record with its error headers; --replay puts the fixed ones back onto the jobs topic, keyed as before")
    func deadLetters() throws {
        let cluster = try Self.cluster()
        defer { cluster.producer.close(timeout: .seconds(2)); cluster.mock.close() }
        let valid = CLITest.job(recipients: [#"{"subscriptionId":"i1","platform":"ios","token":"\#(CLITest.iosToken)"}"#])
        func dlqHeaders(_ error: String, offset: Int) -> [KafkaHeader] {
            [KafkaHeader(name: "trace", string: "t-\(offset)"), KafkaHeader(name: "error", string: error),
             KafkaHeader(name: "source-topic", string: "push.jobs.v1"), KafkaHeader(name: "source-partition", string: "1"),
             KafkaHeader(name: "source-offset", string: "\(offset)"), KafkaHeader(name: "failed-at", string: "2026-05-01T10:00:00.000Z")]
        }
        // A job refused by an older worker that this one accepts, a job still invalid, a truncated copy, a result copy.
        try Self.produce(cluster.producer, "push.dlq.v1", key: "j1", Array(valid.utf8), headers: dlqHeaders("$.x: y", offset: 7))
        try Self.produce(cluster.producer, "push.dlq.v1", key: "j2", Array(#"{"schemaVersion":1}"#.utf8),
                         headers: dlqHeaders("$.jobId: required; $.appId: required", offset: 8))
        try Self.produce(cluster.producer, "push.dlq.v1", key: "j3", Array(valid.utf8.prefix(40)),
                         headers: dlqHeaders("too big", offset: 9) + [KafkaHeader(name: "truncated-from", string: "9000000")])
        try Self.produce(cluster.producer, "push.dlq.v1", key: "s1", Array("{}".utf8),
                         headers: [KafkaHeader(name: "error", string: "produce to push.results.v1 failed"), KafkaHeader(name: "target-topic", string: "push.results.v1")])

        let list = try runCommand(BuiltProducts.pushworker, ["inspect", "dlq"], environment: cluster.environment)
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.contains("key=j1  failed-at=2026-05-01T10:00:00.000Z  from=push.jobs.v1[1]@7"))
        #expect(list.stdout.contains("  error: $.jobId: required\n  error: $.appId: required"))
        #expect(list.stdout.contains("  header trace=t-8"))
        #expect(list.stdout.contains("(truncated from 9000000)"))
        #expect(list.stderr.contains("4 dead-lettered records in push.dlq.v1"))
        let json = try runCommand(BuiltProducts.pushworker, ["inspect", "dlq", "--json"], environment: cluster.environment)
        let entries = CLITest.lines(json.stdout)
        #expect(entries.count == 4)
        let first = try #require(entries.first { $0["key"] as? String == "j1" })
        #expect(first["jobId"] as? String == "j1")
        #expect((first["headers"] as? [String: String])?["source-offset"] == "7")
        #expect(first["value"] == nil)

        let dry = try runCommand(BuiltProducts.pushworker, ["inspect", "dlq", "--replay", "--dry-run"], environment: cluster.environment)
        #expect(dry.status == 1)  // some are skipped
        #expect(dry.stdout.split(separator: "\n").filter { $0.hasPrefix("would replay ") }.count == 1)

        let replay = try runCommand(BuiltProducts.pushworker, ["inspect", "dlq", "--replay"], environment: cluster.environment)
        #expect(replay.status == 1, "\(replay.stderr)")
        #expect(replay.stdout.contains("still invalid: $.jobId: required (and 4 more) — fix it, or --force"))
        #expect(replay.stdout.contains("only the first 40 of 9000000 bytes were kept"))
        #expect(replay.stdout.contains("a copy of a message for push.results.v1, not a job"))
        #expect(replay.stderr.contains("replayed 1, skipped 3"))

        // Back on the jobs topic: the same key and value, the original headers, where it came from.
        let reader = try KafkaTopicReader(properties: ["bootstrap.servers": cluster.mock.bootstrapServers], timeout: .seconds(10))
        defer { reader.close() }
        var replayed: [KafkaMessage] = []
        try reader.read("push.jobs.v1", spans: try reader.spans("push.jobs.v1")) { replayed.append($0); return true }
        #expect(replayed.count == 1)
        let message = try #require(replayed.first)
        #expect(message.key == Array("j1".utf8))
        #expect(message.value == Array(valid.utf8))
        #expect(message.header("trace")?.value == Array("t-7".utf8))
        #expect(message.header("error") == nil && message.header("source-offset") == nil)
        let from = try #require(message.header("replayed-from")?.value)
        #expect(String(decoding: from, as: UTF8.self).hasPrefix("push.dlq.v1["))
        #expect(message.header("replayed-at") != nil)

        // One record by offset; --force replays a still-invalid one.
        let j2 = try #require(entries.first { $0["key"] as? String == "j2" })
        let forced = try runCommand(BuiltProducts.pushworker, ["inspect", "dlq", "--replay", "--force", "--partition", "\(j2["partition"] as? Int ?? 0)",
                                                               "--offset", "\(j2["offset"] as? Int ?? 0)"], environment: cluster.environment)
        #expect(forced.status == 0, "\(forced.stdout)\(forced.stderr)")
        #expect(forced.stderr.contains("replayed 1, skipped 0"))
    }

    @Test("stats: a campaign's deliveries by status and variant beside its tracking counters from Redis")
    func stats() throws {
        let cluster = try Self.cluster()
        defer { cluster.producer.close(timeout: .seconds(2)); cluster.mock.close() }
        let redis = try RedisServer()
        defer { redis.stop() }
        let base: Int64 = 1_790_000_000_000
        for (index, (subscription, variant, status)) in [("s1", "A", DeliveryStatus.sent), ("s2", "A", .sent), ("s3", "B", .sent),
                                                          ("s4", "B", .invalidToken), ("s5", "B", .failed)].enumerated() {
            try Self.produce(cluster.producer, "push.results.v1", key: subscription,
                             Self.result(job: "cs:0000", campaign: "cs", variant: variant, subscription: subscription, platform: "ios",
                                         status: status, at: base + Int64(index)))
        }
        try Self.produce(cluster.producer, "push.results.v1", key: "o1", Self.result(job: "o", campaign: "other", subscription: "o1", platform: "ios", status: .sent, at: base))
        // Tracking events as `pushworker events` counts them: opened twice by s1 (one unique), once by s3; delivered 3.
        let client = try RedisTarget.makeClient(url: redis.url)
        defer { client.close() }
        let flusher = EventCounterFlusher(redis: client, metrics: Metrics(), logger: Logger(level: .error))
        func event(_ type: TrackingEventType, _ subscription: String, _ variant: String) -> TrackingEvent {
            TrackingEvent(type: type, msgID: "m-\(subscription)", fields: MsgIDFields(appID: "app_i", campaignID: "cs", userID: "u",
                                                                                      subscriptionID: subscription, platform: "ios", variant: variant),
                          atMilliseconds: base, ipHash: nil)
        }
        for e in [event(.opened, "s1", "A"), event(.opened, "s1", "A"), event(.opened, "s3", "B"),
                  event(.delivered, "s1", "A"), event(.delivered, "s2", "A"), event(.delivered, "s3", "B")] { flusher.record(e) }
        flusher.flushOnce()

        var environment = cluster.environment
        environment["PUSHWORKER_REDIS_URL"] = redis.url
        let result = try runCommand(BuiltProducts.pushworker, ["inspect", "stats", "cs"], environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        let text = result.stdout
        #expect(text.contains("campaign cs of app app_i"), "\(text)")
        #expect(text.contains("deliveries (push.results.v1, 5 results): sent 3 · invalid_token 1 · rejected 0 · failed 1 · expired 0 · duplicate 0"))
        let rows = text.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
        #expect(rows.contains("opened 3 2 66.7 %"), "\(rows)")
        #expect(rows.contains("delivered 3 3 100.0 %"))
        #expect(rows.contains("clicked 0 0 0.0 %"))
        #expect(text.contains("variant A: sent 2 of 2 · unique/all delivered 2/2 · opened 1/2 · clicked 0/0 · dismissed 0/0"))
        #expect(text.contains("variant B: sent 1 of 3 · unique/all delivered 1/1 · opened 1/1"))

        let json = try runCommand(BuiltProducts.pushworker, ["inspect", "stats", "cs", "--json"], environment: environment)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["results"] as? Int == 5)
        let opened = ((object["tracking"] as? [String: Any])?["opened"] as? [String: Int])
        #expect(opened == ["count": 3, "unique": 2])

        // Without Redis: deliveries only, and why.
        let noRedis = try runCommand(BuiltProducts.pushworker, ["inspect", "stats", "cs"], environment: cluster.environment)
        #expect(noRedis.status == 0)
        #expect(noRedis.stdout.contains("tracking: PUSHWORKER_REDIS_URL is not set"))
        let unknown = try runCommand(BuiltProducts.pushworker, ["inspect", "stats", "nope"], environment: environment)
        #expect(unknown.stderr.contains("no results found for campaign nope"))
        #expect(unknown.status == 1)
        #expect(try runCommand(BuiltProducts.pushworker, ["inspect", "stats"], environment: environment).status == 64)
    }
}
