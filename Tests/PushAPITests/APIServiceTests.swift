import Foundation
@testable import PushAPI
import PushCore
import PushEncoding
import PushKafka
import PushRedis
import PushRuntime
import PushTestSupport
import Testing

/// ``APIService`` over HTTP on real parts (``APIHarness``: redis-server, the Kafka mock cluster,
/// the listener with the API's limits): auth, errors, body limits, jobs to the topic,
/// idempotency, campaign control, metrics, Redis and Kafka outages.
@Suite("API service over HTTP (Redis, Kafka mock)", .serialized)
struct APIServiceTests {
    @Test("errors are JSON with a code: 404, 405 with Allow, 401 with WWW-Authenticate (missing, wrong, other scheme); operations need no token")
    func errorsAndAuth() throws {
        let api = try APIHarness()
        defer { api.stop() }
        let missing = try api.request("GET", "/v1/nope", headers: [])
        #expect(missing.status == 404 && missing.errorCode == "not_found" && missing.headers["content-type"] == "application/json")
        let wrongMethod = try api.request("DELETE", "/v1/campaigns/app_demo/c")
        #expect(wrongMethod.status == 405 && wrongMethod.errorCode == "method_not_allowed" && wrongMethod.headers["allow"] == "GET, HEAD")

        for headers in [[], ["Authorization: Bearer wrong-token-0123456789"], ["Authorization: Basic dXNlcjpwYXNzd29yZA=="],
                        ["Authorization: Bearer \(APIHarness.token) extra"]] {
            let answer = try api.request("GET", "/v1/campaigns/app_demo/c", headers: headers)
            #expect(answer.status == 401 && answer.errorCode == "unauthorized", "\(headers)")
            #expect(answer.headers["www-authenticate"]?.hasPrefix("Bearer realm=\"pushworker\"") == true)
        }
        let refused = try api.request("POST", "/v1/jobs", headers: ["Authorization: Bearer wrong-token-0123456789"], body: "{}")
        #expect(refused.headers["www-authenticate"] == #"Bearer realm="pushworker", error="invalid_token""#)
        #expect(try api.request("GET", "/v1/campaigns/app_demo/c", headers: ["Authorization: Bearer \(APIHarness.otherToken)"]).status == 200)

        #expect(try api.request("GET", "/healthz", headers: []).body == "ok\n")
        let document = try api.request("GET", "/openapi.json", headers: [])
        #expect(document.status == 200 && document.headers["content-type"] == "application/json")
        #expect(document.body == OpenAPIDocument.text)
        api.health.check()
        let ready = try api.request("GET", "/readyz", headers: [])
        #expect(ready.status == 200 && ready.body == "{\"ready\":true}\n", "\(ready.body)")
        let metrics = try api.request("GET", "/metrics", headers: [])
        #expect(metrics.body.contains(#"pushworker_api_requests_total{route="campaign_status",code="401"} 4"#), "\(metrics.body)")
        #expect(metrics.body.contains(#"pushworker_api_requests_total{route="unknown",code="404"} 1"#))
        #expect(metrics.body.contains(#"pushworker_api_requests_total{route="jobs",code="401"} 1"#))
        #expect(metrics.body.contains("pushworker_api_jobs_total 0"))
        #expect(metrics.body.contains("pushworker_ready 1"))
    }

    @Test("bodies: 413 JSON over the limit (declared or streamed), 415 for what is not JSON, 400 invalid_json")
    func bodies() throws {
        let api = try APIHarness(maximumBody: 4096)
        defer { api.stop() }
        let large = try api.request("POST", "/v1/jobs", body: String(repeating: "a", count: 5000))
        #expect(large.status == 413 && large.errorCode == "body_too_large" && large.headers["content-type"] == "application/json")
        let chunked = try api.request("POST", "/v1/jobs", headers: [api.auth, api.json, "Transfer-Encoding: chunked"],
                                      body: String(repeating: "b", count: 9000))
        #expect(chunked.status == 413 || chunked.status == 0, "answered 413 or closed: \(chunked.status)")
        let form = try api.request("POST", "/v1/jobs", headers: [api.auth, "Content-Type: application/x-www-form-urlencoded"], body: "{}")
        #expect(form.status == 415 && form.errorCode == "unsupported_media_type" && form.errorField == "Content-Type")
        let pauseForm = try api.request("POST", "/v1/campaigns/app_demo/c/pause", headers: [api.auth, "Content-Type: text/plain"], body: "x")
        #expect(pauseForm.status == 415)
        #expect(try api.request("POST", "/v1/jobs", headers: [api.auth, "Content-Type: application/json; charset=utf-8"], body: "{").errorCode == "invalid_json")
        #expect(try api.request("POST", "/v1/jobs", headers: [api.auth, "Content-Type: application/problem+json"], body: "[]").status == 422)
        #expect(try api.request("POST", "/v1/jobs", headers: [api.auth, "Content-Type:"], body: "[]").status == 422, "no Content-Type: read as JSON")
        #expect(try api.request("POST", "/v1/campaigns/app_demo/c/pause", headers: [api.auth, "Content-Type: text/plain"]).status == 200,
                "no body, no media type to check")
    }

    @Test("jobs: 202 after Kafka acknowledged each, keyed by jobId; 422 lists every problem and produces nothing")
    func jobs() throws {
        let api = try APIHarness()
        defer { api.stop() }
        let one = try api.request("POST", "/v1/jobs", body: APIHarness.job("j:1"))
        #expect(one.status == 202, "\(one.body)")
        #expect(one.json?["jobIds"]?.arrayValue?.compactMap(\.stringValue) == ["j:1"])
        #expect(one.json?["recipients"]?.numberValue == 2 && one.json?["topic"]?.stringValue == APIHarness.topic)
        let array = try api.request("POST", "/v1/jobs", body: "[\(APIHarness.job("j:2", recipients: 3)), \(APIHarness.job("j:3"))]")
        #expect(array.status == 202 && array.json?["jobs"]?.numberValue == 2 && array.json?["recipients"]?.numberValue == 5)

        let invalid = try api.request("POST", "/v1/jobs", body: "[\(APIHarness.job("j:4")), {\"schemaVersion\": 1}]")
        #expect(invalid.status == 422 && invalid.errorCode == "invalid_job")
        let problems = invalid.json?["error"]?.objectValue?["problems"]?.arrayValue?.compactMap { $0.objectValue?["field"]?.stringValue } ?? []
        #expect(problems.contains("$[1].jobId") && problems.contains("$[1].content"), "\(problems)")

        let records = try api.records()
        #expect(Set(records.map(\.key)) == ["j:1", "j:2", "j:3"])
        let first = try #require(records.first { $0.key == "j:1" })
        let decoded = try JobDecoder.decode(Array(first.value.utf8))
        #expect(decoded.recipients.count == 2 && decoded.expiresAt != nil, "the relative expiresAt was resolved")
        let metrics = try api.request("GET", "/metrics", headers: [])
        #expect(metrics.body.contains("pushworker_api_jobs_total 3"))
        #expect(metrics.body.contains(#"pushworker_api_requests_total{route="jobs",code="202"} 2"#))
    }

    @Test("Idempotency-Key: a retry gets the first answer and produces nothing; another body 422; a bad key 400; keys are per token")
    func idempotency() throws {
        let api = try APIHarness()
        defer { api.stop() }
        let body = APIHarness.job("idem:1")
        let headers = [api.auth, api.json, "Idempotency-Key: order-42"]
        let first = try api.request("POST", "/v1/jobs", headers: headers, body: body)
        #expect(first.status == 202 && first.headers["idempotent-replayed"] == nil)
        let again = try api.request("POST", "/v1/jobs", headers: headers, body: body)
        #expect(again.status == 202 && again.body == first.body && again.headers["idempotent-replayed"] == "true")
        let other = try api.request("POST", "/v1/jobs", headers: headers, body: APIHarness.job("idem:2"))
        #expect(other.status == 422 && other.errorCode == "idempotency_key_reused" && other.errorField == "Idempotency-Key")
        let otherCaller = try api.request("POST", "/v1/jobs", headers: ["Authorization: Bearer \(APIHarness.otherToken)", api.json, "Idempotency-Key: order-42"],
                                          body: APIHarness.job("idem:3"))
        #expect(otherCaller.status == 202, "another token's key of the same name is another key")
        let bad = try api.request("POST", "/v1/jobs", headers: [api.auth, api.json, "Idempotency-Key: has space"], body: body)
        #expect(bad.status == 400 && bad.errorCode == "invalid_idempotency_key")

        // A refused body frees its key: fixed and sent again with the same key, it is accepted.
        let broken = try api.request("POST", "/v1/jobs", headers: [api.auth, api.json, "Idempotency-Key: fix-me"], body: "{}")
        #expect(broken.status == 422)
        #expect(try api.request("POST", "/v1/jobs", headers: [api.auth, api.json, "Idempotency-Key: fix-me"], body: APIHarness.job("idem:4")).status == 202)
        #expect(try api.records().map(\.key).sorted() == ["idem:1", "idem:3", "idem:4"])
    }

    @Test("campaigns: status of a campaign never steered, pause with a reason, throttle, deadline, resume, cancel; 409 after cancel")
    func campaigns() throws {
        let api = try APIHarness()
        defer { api.stop() }
        let path = "/v1/campaigns/app_demo/spring%2F2026"
        let fresh = try api.request("GET", path)
        #expect(fresh.status == 200 && fresh.json?["state"]?.stringValue == "active" && fresh.json?["updatedAt"]?.isNull == true)
        #expect(fresh.json?["campaignId"]?.stringValue == "spring/2026")

        let paused = try api.request("POST", path + "/pause", body: #"{"reason": "complaints"}"#)
        #expect(paused.status == 200 && paused.json?["state"]?.stringValue == "paused" && paused.json?["reason"]?.stringValue == "complaints")
        let throttled = try api.request("PUT", path + "/throttle", body: #"{"perMinute": 600}"#)
        #expect(throttled.json?["throttlePerMinute"]?.numberValue == 600 && throttled.json?["state"]?.stringValue == "paused")
        let deadline = try api.request("PUT", path + "/deadline", body: #"{"sendBy": "2030-01-01T00:00:00Z"}"#)
        #expect(deadline.json?["sendBy"]?.stringValue == "2030-01-01T00:00:00.000Z")
        let resumed = try api.request("POST", path + "/resume")
        #expect(resumed.json?["state"]?.stringValue == "active" && resumed.json?["reason"]?.isNull == true)
        #expect(try api.request("PUT", path + "/throttle", body: #"{"perMinute": null}"#).json?["throttlePerMinute"]?.isNull == true)
        #expect(try api.request("PUT", path + "/deadline", body: #"{"sendBy": null}"#).json?["sendBy"]?.isNull == true)
        let badValue = try api.request("PUT", path + "/throttle", body: #"{"perMinute": 0}"#)
        #expect(badValue.status == 422 && badValue.errorCode == "invalid_field" && badValue.errorField == "$.perMinute")

        let cancelled = try api.request("POST", path + "/cancel", body: #"{"reason": "wrong audience"}"#)
        #expect(cancelled.status == 200 && cancelled.json?["state"]?.stringValue == "cancelled")
        #expect(try api.request("POST", path + "/cancel").status == 200, "cancelling a cancelled campaign is fine")
        for (method, verb, body) in [("POST", "resume", ""), ("POST", "pause", ""), ("PUT", "throttle", #"{"perMinute": 5}"#),
                                     ("PUT", "deadline", #"{"sendBy": null}"#)] {
            let refused = try api.request(method, path + "/" + verb, body: body.isEmpty ? nil : body)
            #expect(refused.status == 409 && refused.errorCode == "campaign_cancelled", "\(verb): \(refused.body)")
        }
        #expect(try api.request("GET", path).json?["state"]?.stringValue == "cancelled")
        let invalidPath = try api.request("GET", "/v1/campaigns/a%2Fb/c")
        #expect(invalidPath.status == 400 && invalidPath.errorField == "app")
    }

    @Test("Redis away: campaign endpoints and keyed jobs answer 503 redis_unavailable with Retry-After; readiness names redis")
    func redisOutage() throws {
        let api = try APIHarness()
        defer { api.stop() }
        api.redis.stop()
        let status = try api.request("GET", "/v1/campaigns/app_demo/c")
        #expect(status.status == 503 && status.errorCode == "redis_unavailable" && status.headers["retry-after"] == "5")
        #expect(try api.request("POST", "/v1/campaigns/app_demo/c/pause").status == 503)
        let keyed = try api.request("POST", "/v1/jobs", headers: [api.auth, api.json, "Idempotency-Key: k"], body: APIHarness.job("r:1"))
        #expect(keyed.status == 503 && keyed.errorCode == "redis_unavailable")
        #expect(try api.request("POST", "/v1/jobs", body: APIHarness.job("r:2")).status == 202, "jobs without a key need no Redis")
        api.health.check()
        let ready = try api.request("GET", "/readyz", headers: [])
        #expect(ready.status == 503 && ready.body.contains("\"dependency\":\"redis\""), "\(ready.body)")
        #expect(try api.request("GET", "/metrics", headers: []).body.contains("pushworker_ready 0"))
    }

    @Test("Kafka away: jobs answer 503 kafka_unavailable once the produce timeout passes; readiness names kafka")
    func kafkaOutage() throws {
        let api = try APIHarness(produceTimeout: .seconds(2))
        defer { api.stop() }
        try api.cluster.setBrokersDown(true)
        let answer = try api.request("POST", "/v1/jobs", headers: [api.auth, api.json, "Idempotency-Key: during-outage"], body: APIHarness.job("k:1"))
        #expect(answer.status == 503 && answer.errorCode == "kafka_unavailable", "\(answer.body)")
        api.health.check()
        #expect(api.health.readiness.failing.map(\.dependency).contains("kafka"))
        try api.cluster.setBrokersDown(false)
        // The failed request freed its key: the retry goes through.
        #expect(eventually(timeout: 30) {
            (try? api.request("POST", "/v1/jobs", headers: [api.auth, api.json, "Idempotency-Key: during-outage"], body: APIHarness.job("k:1")))?.status == 202
        })
    }

    @Test("Redis refusing a command (a key of another type where a control lives) is 500 internal, logged; the API goes on")
    func redisRefusal() throws {
        let api = try APIHarness()
        defer { api.stop() }
        _ = try api.client.pipeline([["SET", .string(RedisKeys.campaignControl(appID: "app_demo", campaignID: "odd")), "not a hash"]])
        let status = try api.request("GET", "/v1/campaigns/app_demo/odd")
        #expect(status.status == 500 && status.errorCode == "internal", "\(status.body)")
        let pause = try api.request("POST", "/v1/campaigns/app_demo/odd/pause")
        #expect(pause.status == 500 && pause.errorCode == "internal")
        #expect(try api.request("GET", "/v1/campaigns/app_demo/fine").status == 200)
    }

    @Test("readiness names a jobs topic that does not exist (pushworker topics apply), and turns ready once it does")
    func missingTopic() throws {
        let api = try APIHarness()
        defer { api.stop() }
        let admin = try KafkaAdmin(properties: ["bootstrap.servers": api.cluster.bootstrapServers], timeout: .seconds(2))
        defer { admin.close() }
        let health = APIHealth(redis: api.client, admin: admin, producer: api.producer, topic: "push.absent.v1",
                               tokens: APITokens(tokens: [APIHarness.token]), metrics: api.metrics,
                               logger: Logger(level: .critical, format: .text, sink: { _ in }))
        #expect(health.readiness.failing.map(\.dependency) == ["starting"])
        health.check()
        let failing = health.readiness.failing
        #expect(failing.map(\.dependency) == ["kafka"] && failing.first?.detail.contains("push.absent.v1 does not exist") == true, "\(failing)")
        try api.cluster.createTopic("push.absent.v1", partitions: 1)
        health.check()
        #expect(health.readiness.isReady)
    }

    @Test("a job over the topic's size limit is 422 job_too_large naming it")
    func jobTooLarge() throws {
        let api = try APIHarness(maximumBody: 8 << 20)
        defer { api.stop() }
        let big = APIHarness.job("big:1", recipients: 45_000)
        #expect(big.utf8.count > 4_194_304)
        let answer = try api.request("POST", "/v1/jobs", body: "[\(APIHarness.job("small:1")), \(big)]")
        #expect(answer.status == 422 && answer.errorCode == "job_too_large" && answer.errorField == "$[1]", "\(answer.body)")
    }
}
