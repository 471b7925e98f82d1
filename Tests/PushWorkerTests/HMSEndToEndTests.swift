import Foundation
import PushKafka
import PushTestSupport
import Testing

/// Huawei Push Kit through the whole pipeline (docs/providers.md): dev-broker, redis-server, the
/// sandbox and `pushworker run` as processes over loopback.
@Suite("Huawei end to end", .serialized)
struct HMSEndToEndTests {
    static func token(_ n: Int, dead: Bool = false) -> String { (dead ? "dead" : "") + "IQAAAACy0kYzAACcTw9fkQ3sXo3T_e2e\(n)" }

    @Test("batched sends: one request per language, illegal tokens invalid and on the tokens topic, a 503 retried, redelivery de-duplicated")
    func pipeline() throws {
        let env = try E2EEnvironment()
        // The first Huawei request is answered 503 (flow control): its batch goes through push.retry.v1.
        let fault = try runCommand("/usr/bin/curl", ["-s", "--http2", "--cacert", env.certificate, "-X", "POST",
                                                     "--data-binary", #"{"hmsAnswers":["503"],"retryAfter":1}"#, env.origin + "/_sandbox/faults"])
        #expect(fault.stdout.contains("\"hmsAnswers\":[\"503\"]"), "\(fault.stdout)")
        let recipients = [
            #"{"userId":"u1","subscriptionId":"h-1","platform":"huawei","token":"\#(Self.token(1))"}"#,
            #"{"userId":"u2","subscriptionId":"h-2","platform":"huawei","token":"\#(Self.token(2))"}"#,
            #"{"userId":"u3","subscriptionId":"h-dead","platform":"huawei","token":"\#(Self.token(3, dead: true))"}"#,
            #"{"userId":"u4","subscriptionId":"h-tr","platform":"huawei","token":"\#(Self.token(4))","language":"tr","properties":{"name":"Ayşe"}}"#,
            #"{"userId":"u5","subscriptionId":"h-bad","platform":"huawei","token":"bad token!"}"#,
            #"{"userId":"u6","subscriptionId":"and-1","platform":"android","token":"\#(E2EEnvironment.fcmToken(6))"}"#,
        ]
        let job = E2EEnvironment.job(id: "cmp_e2e:hms1", recipients: recipients)
        try env.produce("push.jobs.v1", key: "cmp_e2e:hms1", value: Array(job.utf8))
        let worker = try env.startWorker()
        defer { worker.stop() }

        let results = E2EEnvironment.objects(try env.read("push.results.v1", count: recipients.count, timeout: 90))
        #expect(results.count == recipients.count, "worker stderr: \(worker.stderr().suffix(3000))")
        var by: [String: [String: Any]] = [:]
        for result in results { by[result["subscriptionId"] as? String ?? ""] = result }
        for id in ["h-1", "h-2", "h-tr", "and-1"] {
            #expect(by[id]?["status"] as? String == "sent", "\(id): \(by[id] ?? [:])")
        }
        #expect(by["h-1"]?["platform"] as? String == "huawei")
        #expect((by["h-1"]?["providerMessageId"] as? String)?.isEmpty == false, "Huawei's requestId")
        #expect(by["h-dead"]?["status"] as? String == "invalid_token")
        #expect(by["h-dead"]?["reason"] as? String == "80100000")
        #expect(by["h-bad"]?["status"] as? String == "rejected")
        #expect(by["h-bad"]?["reason"] as? String == "bad_token")
        // Every recipient keeps its own msgId in its result.
        let msgIDs = ["h-1", "h-2", "h-tr"].compactMap { by[$0]?["msgId"] as? String }
        #expect(Set(msgIDs).count == 3)
        // One batch met the 503 and was sent on its second attempt, through the retry topic.
        let attempts = ["h-1", "h-2", "h-dead", "h-tr"].compactMap { by[$0]?["attempts"] as? Int }
        #expect(attempts.contains(2), "\(attempts)")
        let retries = E2EEnvironment.objects(try env.read("push.retry.v1", count: 1, timeout: 10))
        #expect(retries.count == 1)

        let tokens = E2EEnvironment.objects(try env.read("push.tokens.v1", count: 1))
        #expect(tokens.count == 1)
        #expect(tokens.first?["subscriptionId"] as? String == "h-dead")
        #expect(tokens.first?["platform"] as? String == "huawei")

        // Two Huawei requests went through (en: three tokens, tr: one), the dead token not delivered.
        let stats = try #require(try JSONSerialization.jsonObject(with: Data(try env.sandboxGET("/_sandbox/stats").utf8)) as? [String: Any])
        #expect((stats["accepted"] as? [String: Any])?["huawei"] as? Int == 3)
        let recorded = try env.sandboxGET("/_sandbox/messages?platform=huawei").split(separator: "\n")
        #expect(recorded.count == 2, "one request per language")
        #expect(recorded.contains { $0.contains(Self.token(1)) && $0.contains(Self.token(2)) })

        // A re-delivered copy of the job: nothing is sent twice.
        try env.produce("push.jobs.v1", key: "cmp_e2e:hms1", value: Array(job.utf8))
        let all = E2EEnvironment.objects(try env.read("push.results.v1", count: recipients.count * 2, timeout: 60))
        #expect(all.count == recipients.count * 2, "worker stderr: \(worker.stderr().suffix(2000))")
        var replayed: [String: String] = [:]
        for result in all.suffix(recipients.count) { replayed[result["subscriptionId"] as? String ?? ""] = result["status"] as? String }
        #expect(replayed["h-1"] == "duplicate" && replayed["h-2"] == "duplicate" && replayed["h-tr"] == "duplicate")
        #expect(replayed["h-dead"] == "invalid_token")
        let after = try #require(try JSONSerialization.jsonObject(with: Data(try env.sandboxGET("/_sandbox/stats").utf8)) as? [String: Any])
        #expect((after["accepted"] as? [String: Any])?["huawei"] as? Int == 3, "no device notified twice")
        #expect(after["duplicateMsgIds"] as? Int == 0)
    }
}
