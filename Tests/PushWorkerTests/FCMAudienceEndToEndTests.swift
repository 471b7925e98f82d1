import Foundation
import PushKafka
import PushTestSupport
import Testing

/// FCM topic and condition sends (docs/payloads.md) through the real worker: dev-broker, redis-server,
/// the sandbox and `pushworker run` as separate processes.
@Suite("End to end: FCM topics and conditions", .serialized)
struct FCMAudienceEndToEndTests {
    /// A job for `audience` (JSON) instead of recipients; `data` replaces the job's data.
    static func job(id: String, audience: String, data: String = #"{"screen":"e2e"}"#) -> String {
        let base = E2EEnvironment.job(id: id, recipients: [])
        return base.replacingOccurrences(of: #""recipients":[]"#, with: #""audience":"# + audience)
            .replacingOccurrences(of: #""data":{"screen":"e2e"}"#, with: #""data":"# + data)
    }

    func setFaults(_ env: E2EEnvironment, _ json: String) throws {
        let reply = try runCommand("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", env.certificate,
                                                     "-X", "POST", "-d", json, env.origin + "/_sandbox/faults"]).stdout
        try #require(reply == "200", "faults not set: \(reply)")
    }

    @Test("one result per topic or condition job; a throttled send is retried as an audience job; a 2xx is never sent again; bad audiences go to the DLQ")
    func audienceJobs() throws {
        let env = try E2EEnvironment(sandboxArguments: ["--throttle-share", "1", "--retry-after", "1"])
        // 1. FCM is throttling: the first attempt goes to the retry topic, still an audience job.
        let stormy = Self.job(id: "aud:retry", audience: #"{"topic":"/topics/storm"}"#)
        try env.produce("push.jobs.v1", key: "aud:retry", value: Array(stormy.utf8))
        let worker = try env.startWorker()
        let retry = E2EEnvironment.objects(try env.read("push.retry.v1", count: 1, timeout: 30))
        // The sandbox keeps throttling until the faults are reset below: a reader slowed down by a
        // loaded machine may also find the retry's own retry (attempt 2, one second later).
        #expect((1...2).contains(retry.count), "worker stderr: \(worker.stderr().suffix(2000))")
        #expect(retry.allSatisfy { ($0["audience"] as? [String: Any])?["topic"] as? String == "/topics/storm" })
        let retryJob = try #require(retry.first)
        #expect((retryJob["audience"] as? [String: Any])?["topic"] as? String == "/topics/storm")
        #expect(retryJob["recipients"] == nil)
        #expect(retryJob["attempt"] as? Int == 1)
        try setFaults(env, #"{"throttleShare":0}"#)

        // 2. A topic, a condition, data that cannot fit FCM's 2048 topic bytes, and two invalid jobs.
        let topic = Self.job(id: "aud:topic", audience: #"{"topic":"news"}"#)
        let condition = "'sports' in topics && ('team-a' in topics || 'team-b' in topics)"
        let jobs = [
            ("aud:topic", topic),
            ("aud:condition", Self.job(id: "aud:condition", audience: #"{"condition":"\#(condition)"}"#)),
            ("aud:big", Self.job(id: "aud:big", audience: #"{"topic":"big"}"#, data: #"{"big":"\#(String(repeating: "x", count: 2000))"}"#)),
            ("aud:bad-topic", Self.job(id: "aud:bad-topic", audience: #"{"topic":"two words"}"#)),
            ("aud:six", Self.job(id: "aud:six", audience: #"{"condition":"\#((1...6).map { "'t\($0)' in topics" }.joined(separator: " || "))"}"#)),
            ("aud:both", E2EEnvironment.job(id: "aud:both", recipients: [
                #"{"userId":"u1","subscriptionId":"and-1","platform":"android","token":"\#(E2EEnvironment.fcmToken(1))"}"#,
            ]).replacingOccurrences(of: #""recipients":"#, with: #""audience":{"topic":"news"},"recipients":"#)),
        ]
        for (key, value) in jobs { try env.produce("push.jobs.v1", key: key, value: Array(value.utf8)) }

        let results = E2EEnvironment.objects(try env.read("push.results.v1", count: 4, timeout: 60))
        #expect(results.count == 4, "worker stderr: \(worker.stderr().suffix(2000))")
        var byJob: [String: [[String: Any]]] = [:]
        for result in results { byJob[result["jobId"] as? String ?? "", default: []].append(result) }
        for id in ["aud:retry", "aud:topic", "aud:condition", "aud:big"] { #expect(byJob[id]?.count == 1, "one result for \(id)") }
        let retried = try #require(byJob["aud:retry"]?.first)
        #expect(retried["status"] as? String == "sent" && retried["subscriptionId"] as? String == "storm")
        #expect((retried["attempts"] as? Int ?? 0) >= 2)
        let sent = try #require(byJob["aud:topic"]?.first)
        #expect(sent["status"] as? String == "sent")
        #expect(sent["subscriptionId"] as? String == "news" && sent["platform"] as? String == "android")
        #expect(sent["userId"] is NSNull && sent["httpStatus"] as? Int == 200)
        #expect((sent["providerMessageId"] as? String)?.hasPrefix("projects/sandbox-appe2e/messages/") == true, "\(sent)")
        let byCondition = try #require(byJob["aud:condition"]?.first)
        #expect(byCondition["status"] as? String == "sent" && byCondition["subscriptionId"] as? String == condition)
        let big = try #require(byJob["aud:big"]?.first)
        #expect(big["status"] as? String == "rejected" && big["reason"] as? String == "payload_too_large")

        let dlq = try env.read("push.dlq.v1", count: 3, timeout: 30)
        #expect(dlq.count == 3)
        let errors = Dictionary(dlq.map { (String(decoding: $0.key ?? [], as: UTF8.self),
                                           String(decoding: $0.headers.first { $0.name == "error" }?.value ?? [], as: UTF8.self)) },
                                uniquingKeysWith: { first, _ in first })
        #expect(errors["aud:bad-topic"]?.contains("$.audience.topic: character \" \" not allowed in a topic name") == true, "\(errors)")
        #expect(errors["aud:six"]?.contains("$.audience.condition: names 6 topics; FCM allows at most 5") == true, "\(errors)")
        #expect(errors["aud:both"]?.contains("$.recipients: a job has recipients or an audience, not both") == true, "\(errors)")

        // 3. A redelivered copy of the sent topic job is a duplicate: FCM's fan-out is committed.
        try env.produce("push.jobs.v1", key: "aud:topic", value: Array(topic.utf8))
        let all = E2EEnvironment.objects(try env.read("push.results.v1", count: 5, timeout: 60))
        #expect(all.count == 5, "worker stderr: \(worker.stderr().suffix(2000))")
        let replay = all.filter { $0["jobId"] as? String == "aud:topic" }
        #expect(replay.map { $0["status"] as? String } == ["sent", "duplicate"])
        #expect(replay.last?["msgId"] as? String == sent["msgId"] as? String)

        // The sandbox received each audience once (the throttled attempts were refused); no
        // audience was reported as a dead token.
        let stats = try #require(try JSONSerialization.jsonObject(with: Data(try env.sandboxGET("/_sandbox/stats").utf8)) as? [String: Any])
        #expect((stats["accepted"] as? [String: Any])?["android"] as? Int == 3)
        #expect(stats["duplicateMsgIds"] as? Int == 0)
        let messages = try env.sandboxGET("/_sandbox/messages?platform=android")
        #expect(messages.contains(#""topic":"storm""#) && messages.contains(#""topic":"news""#), "\(messages.prefix(1500))")
        #expect(try env.read("push.tokens.v1", count: 1, timeout: 2).isEmpty)
        worker.stop()
    }
}
