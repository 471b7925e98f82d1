import Foundation
import PushKafka
import PushTestSupport
import Testing

/// The walking skeleton and the pipeline's failure paths, with every part real and separate:
/// dev-broker, redis-server, sandbox and `pushworker run` are processes talking over loopback.
@Suite("End to end", .serialized)
struct EndToEndTests {
    @Test("a job travels Kafka → worker → HTTP/2 sandbox → results; dead and bad tokens; redelivery is de-duplicated")
    func walkingSkeleton() throws {
        let env = try E2EEnvironment()
        let web = try env.subscriptions(2)
        try #require(web.count == 2)
        let recipients = [
            #"{"userId":"u1","subscriptionId":"ios-1","platform":"ios","token":"\#(E2EEnvironment.apnsToken(1))","language":"tr","properties":{"name":"Ayşe"}}"#,
            #"{"userId":"u2","subscriptionId":"ios-dead","platform":"ios","token":"\#(E2EEnvironment.apnsToken(2, dead: true))"}"#,
            #"{"userId":"u3","subscriptionId":"and-1","platform":"android","token":"\#(E2EEnvironment.fcmToken(3))","language":"pt-BR"}"#,
            #"{"userId":"u4","subscriptionId":"and-bad","platform":"android","token":"bad token!"}"#,
            #"{"userId":"u5","subscriptionId":"web-1","platform":"web","subscription":\#(web[0])}"#,
            #"{"userId":"u6","subscriptionId":"web-2","platform":"web","browser":"firefox","subscription":\#(web[1])}"#,
            #"{"userId":"u7","subscriptionId":"pager-1","platform":"pager","token":"x"}"#,
        ]
        let job = E2EEnvironment.job(id: "cmp_e2e:0001", recipients: recipients)
        try env.produce("push.jobs.v1", key: "cmp_e2e:0001", value: Array(job.utf8))

        let worker = try env.startWorker()
        let results = E2EEnvironment.objects(try env.read("push.results.v1", count: recipients.count))
        #expect(results.count == recipients.count, "worker stderr: \(worker.stderr().suffix(2000))")
        var bySubscription: [String: [String: Any]] = [:]
        for result in results { bySubscription[result["subscriptionId"] as? String ?? ""] = result }
        #expect(bySubscription["ios-1"]?["status"] as? String == "sent")
        #expect(bySubscription["ios-1"]?["httpStatus"] as? Int == 200)
        #expect((bySubscription["ios-1"]?["providerMessageId"] as? String)?.isEmpty == false)
        #expect(bySubscription["ios-dead"]?["status"] as? String == "invalid_token")
        #expect(bySubscription["ios-dead"]?["reason"] as? String == "Unregistered")
        #expect(bySubscription["and-1"]?["status"] as? String == "sent")
        #expect(bySubscription["and-bad"]?["status"] as? String == "rejected")
        #expect(bySubscription["and-bad"]?["reason"] as? String == "bad_token")
        #expect(bySubscription["web-1"]?["status"] as? String == "sent")
        #expect(bySubscription["web-2"]?["status"] as? String == "sent")
        #expect(bySubscription["pager-1"]?["status"] as? String == "rejected")
        #expect(bySubscription["pager-1"]?["reason"] as? String == "unknown_platform")
        for result in results {
            #expect(result["schemaVersion"] as? Int == 1)
            #expect(result["jobId"] as? String == "cmp_e2e:0001")
            #expect(result["campaignId"] as? String == "cmp_e2e")
        }

        let tokens = E2EEnvironment.objects(try env.read("push.tokens.v1", count: 1))
        #expect(tokens.count == 1)
        #expect(tokens.first?["subscriptionId"] as? String == "ios-dead")
        #expect((tokens.first?["tokenHash"] as? String)?.count == 32)

        // The sandbox accepted exactly the sent ones, each msgId once.
        let stats = try env.sandboxGET("/_sandbox/stats")
        let statsObject = try #require(try JSONSerialization.jsonObject(with: Data(stats.utf8)) as? [String: Any])
        let accepted = statsObject["accepted"] as? [String: Any]
        #expect(accepted?["ios"] as? Int == 1)
        #expect(accepted?["android"] as? Int == 1)
        #expect(accepted?["web"] as? Int == 2)

        // SIGTERM: drain and exit 0.
        worker.signal(SIGTERM)
        #expect(worker.wait(timeout: 30) == 0, "worker stderr: \(worker.stderr().suffix(2000))")

        // The offset was committed after the results: a new worker in the same group sees no
        // old job, and a re-delivered copy (produced again) is de-duplicated by msgId.
        try env.produce("push.jobs.v1", key: "cmp_e2e:0001", value: Array(job.utf8))
        let second = try env.startWorker()
        let all = E2EEnvironment.objects(try env.read("push.results.v1", count: recipients.count * 2))
        #expect(all.count == recipients.count * 2, "worker stderr: \(second.stderr().suffix(2000))")
        let replay = all.suffix(recipients.count)
        var replayed: [String: String] = [:]
        for result in replay { replayed[result["subscriptionId"] as? String ?? ""] = result["status"] as? String }
        #expect(replayed["ios-1"] == "duplicate")
        #expect(replayed["and-1"] == "duplicate")
        #expect(replayed["web-1"] == "duplicate")
        #expect(replayed["ios-dead"] == "invalid_token")
        second.stop()
        let afterStats = try env.sandboxGET("/_sandbox/stats")
        let after = try #require(try JSONSerialization.jsonObject(with: Data(afterStats.utf8)) as? [String: Any])
        #expect((after["accepted"] as? [String: Any])?["ios"] as? Int == 1, "no device notified twice")
        #expect(after["duplicateMsgIds"] as? Int == 0)
    }

    @Test("undecodable and invalid jobs go to the DLQ with error headers; the worker keeps going")
    func deadLetters() throws {
        let env = try E2EEnvironment()
        try env.produce("push.jobs.v1", key: "garbage", value: Array("{not json".utf8),
                        headers: [KafkaHeader(name: "trace", value: Array("t-1".utf8))])
        let tooManyActions = E2EEnvironment.job(id: "bad:1", recipients: []).replacingOccurrences(
            of: #""actions":[{"id":"buy","title":"Buy","url":"https://shop.example/buy"}]"#,
            with: #""actions":[{"id":"a","title":"A"},{"id":"b","title":"B"},{"id":"c","title":"C"},{"id":"d","title":"D"}]"#)
        try env.produce("push.jobs.v1", key: "bad:1", value: Array(tooManyActions.utf8))
        let good = E2EEnvironment.job(id: "good:1", recipients: [
            #"{"userId":"u1","subscriptionId":"ios-1","platform":"ios","token":"\#(E2EEnvironment.apnsToken(9))"}"#,
        ])
        try env.produce("push.jobs.v1", key: "good:1", value: Array(good.utf8))

        let worker = try env.startWorker()
        let dlq = try env.read("push.dlq.v1", count: 2)
        #expect(dlq.count == 2, "worker stderr: \(worker.stderr().suffix(2000))")
        for message in dlq {
            let names = Set(message.headers.map(\.name))
            #expect(names.isSuperset(of: ["error", "source-topic", "source-partition", "source-offset", "failed-at"]))
            #expect(message.headers.first { $0.name == "source-topic" }?.value == Array("push.jobs.v1".utf8))
        }
        let garbage = dlq.first { $0.key == Array("garbage".utf8) }
        #expect(garbage?.value == Array("{not json".utf8))
        #expect(garbage?.headers.contains { $0.name == "trace" } == true, "original headers are kept")
        let results = E2EEnvironment.objects(try env.read("push.results.v1", count: 1))
        #expect(results.first?["status"] as? String == "sent")
        #expect(worker.isRunning)
        worker.stop()
    }
}
