import Foundation
import PushKafka
import PushTestSupport
import Testing

/// Retries through `push.retry.v1` and the fleet-wide campaign throttle, against real processes.
@Suite("Retries and pacing", .serialized)
struct PacingAndRetryTests {
    @Test("5xx answers go to push.retry.v1 with attempt and notBefore, and end failed after the maximum attempts")
    func retriesExhausted() throws {
        let env = try E2EEnvironment(sandboxArguments: ["--error-share", "1"])
        let job = E2EEnvironment.job(id: "retry:1", recipients: [
            #"{"userId":"u1","subscriptionId":"ios-r1","platform":"ios","token":"\#(E2EEnvironment.apnsToken(21))"}"#,
            #"{"userId":"u2","subscriptionId":"and-r2","platform":"android","token":"\#(E2EEnvironment.fcmToken(22))"}"#,
        ])
        try env.produce("push.jobs.v1", key: "retry:1", value: Array(job.utf8))
        let started = Date()
        let worker = try env.startWorker(extra: ["PUSHWORKER_MAX_ATTEMPTS": "3"])

        let results = E2EEnvironment.objects(try env.read("push.results.v1", count: 2, timeout: 90))
        #expect(results.count == 2, "worker stderr: \(worker.stderr().suffix(2000))")
        for result in results {
            #expect(result["status"] as? String == "failed")
            #expect(result["attempts"] as? Int == 3, "every attempt is counted")
            #expect((result["httpStatus"] as? Int).map { $0 >= 500 } == true)
        }
        // Two hand-offs to the retry topic (after attempts 1 and 2), each with the recipients,
        // attempt = attempts made and a notBefore in the future of the hand-off.
        let retries = try env.read("push.retry.v1", count: 2, timeout: 10)
        #expect(retries.count == 2)
        let attempts = E2EEnvironment.objects(retries).compactMap { $0["attempt"] as? Int }.sorted()
        #expect(attempts == [1, 2])
        for message in retries {
            #expect(message.key == Array("retry:1".utf8), "retry jobs keep the jobId key")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(message.value)) as? [String: Any])
            #expect((object["recipients"] as? [Any])?.count == 2)
            let notBefore = try #require(object["notBefore"] as? String)
            let date = try #require(ISO8601DateFormatter.withFractions.date(from: notBefore) ?? ISO8601DateFormatter().date(from: notBefore))
            #expect(date > started)
        }
        worker.stop()
    }

    @Test("a campaign's throttlePerMinute paces sends fleet-wide through the Redis token bucket")
    func campaignThrottle() throws {
        let env = try E2EEnvironment()
        let recipients = (0..<6).map {
            #"{"userId":"u\#($0)","subscriptionId":"t-\#($0)","platform":"ios","token":"\#(E2EEnvironment.apnsToken(40 + $0))"}"#
        }
        // 120/min = 2 per second, burst 2: six sends need at least two seconds.
        let job = E2EEnvironment.job(id: "throttle:1", recipients: recipients)
            .replacingOccurrences(of: #""priority":"high","#, with: #""priority":"high","throttlePerMinute":120,"#)
        try env.produce("push.jobs.v1", key: "throttle:1", value: Array(job.utf8))
        let worker = try env.startWorker()
        let results = E2EEnvironment.objects(try env.read("push.results.v1", count: 6, timeout: 60))
        #expect(results.count == 6, "worker stderr: \(worker.stderr().suffix(2000))")
        #expect(results.allSatisfy { $0["status"] as? String == "sent" })
        let times = results.compactMap { ($0["at"] as? String).flatMap(ISO8601DateFormatter.withFractions.date(from:)) }.sorted()
        try #require(times.count == 6)
        let span = times[5].timeIntervalSince(times[0])
        #expect(span >= 1.5, "six sends at 2/s with a burst of 2 took \(span) s")
        worker.stop()
    }

    @Test("back-pressure: at most PUSHWORKER_MAX_IN_FLIGHT sends at once, whether a saturation is waited out or pauses the partitions",
          arguments: ["5000", "0"])
    func backPressure(saturationPauseMs: String) throws {
        let env = try E2EEnvironment()
        // Every answer takes 300 ms: six one-recipient jobs with two in flight need three rounds.
        _ = try runCommand("/usr/bin/curl", ["-s", "--cacert", env.certificate, "-X", "POST", "-d", #"{"latencyMs":300}"#,
                                             env.origin + "/_sandbox/faults"])
        for index in 0..<6 {
            let recipient = #"{"userId":"u\#(index)","subscriptionId":"bp-\#(index)","platform":"ios","token":"\#(E2EEnvironment.apnsToken(60 + index))"}"#
            let job = E2EEnvironment.job(id: "bp:\(index)", recipients: [recipient])
            try env.produce("push.jobs.v1", key: "bp:\(index)", value: Array(job.utf8))
        }
        let worker = try env.startWorker(extra: ["PUSHWORKER_MAX_IN_FLIGHT": "2", "PUSHWORKER_SATURATION_PAUSE_MS": saturationPauseMs])
        let results = E2EEnvironment.objects(try env.read("push.results.v1", count: 6, timeout: 60))
        #expect(results.count == 6, "worker stderr: \(worker.stderr().suffix(2000))")
        #expect(results.allSatisfy { $0["status"] as? String == "sent" })
        let times = results.compactMap { ($0["at"] as? String).flatMap(ISO8601DateFormatter.withFractions.date(from:)) }.sorted()
        try #require(times.count == 6)
        // Unbounded, all six would finish together; two at a time, the last pair ends ≥ 2 × 300 ms after the first.
        let span = times[5].timeIntervalSince(times[0])
        #expect(span >= 0.5, "six 300 ms sends two at a time finished within \(span) s")
        worker.stop()
    }

    @Test("an FCM 429 QUOTA_EXCEEDED with Retry-After sets a fleet-wide backoff in Redis; delivery resumes after it")
    func providerBackoff() throws {
        let env = try E2EEnvironment(sandboxArguments: ["--throttle-share", "1", "--retry-after", "3"])
        let job = E2EEnvironment.job(id: "quota:1", recipients: (0..<3).map {
            #"{"userId":"q\#($0)","subscriptionId":"q-\#($0)","platform":"android","token":"\#(E2EEnvironment.fcmToken(60 + $0))"}"#
        })
        try env.produce("push.jobs.v1", key: "quota:1", value: Array(job.utf8))
        let worker = try env.startWorker()
        // The first attempt meets the storm and is handed to the retry topic.
        let retry = try env.read("push.retry.v1", count: 1, timeout: 30)
        #expect(retry.count == 1, "worker stderr: \(worker.stderr().suffix(2000))")
        let keys = try runCommand("/usr/bin/redis-cli", ["-p", "\(env.redis.port)", "--scan", "--pattern", "pw:*backoff*"]).stdout
        #expect(keys.contains("fcm"), "backoff key for the app's FCM provider: \(keys)")
        let ttl = try runCommand("/usr/bin/redis-cli", ["-p", "\(env.redis.port)", "PTTL",
                                                        keys.split(separator: "\n").first.map(String.init) ?? ""]).stdout
        #expect((Int(ttl.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1) > 0, "every key has a TTL")
        // The storm ends; the retry is delivered.
        _ = try runCommand("/usr/bin/curl", ["-s", "--cacert", env.certificate, "-X", "POST", "-d", #"{"throttleShare":0}"#,
                                             env.origin + "/_sandbox/faults"])
        let results = E2EEnvironment.objects(try env.read("push.results.v1", count: 3, timeout: 60))
        #expect(results.count == 3)
        for result in results {
            #expect(result["status"] as? String == "sent")
            #expect((result["attempts"] as? Int ?? 0) >= 2)
        }
        worker.stop()
    }
}

extension ISO8601DateFormatter {
    nonisolated(unsafe) static let withFractions: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
}
