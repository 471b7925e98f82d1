import Foundation
@testable import PushRuntime
import PushCore
import PushHTTPServer
import PushTestSupport
import Testing
@testable import PushWorker

/// `/metrics`, `/healthz`, `/readyz` (docs/operations.md).
@Suite("Health and metrics endpoints")
struct HealthTests {
    /// (status, headers, body) of one request with the curl CLI.
    static func curl(_ method: String, _ url: String) throws -> (status: Int, headers: String, body: String) {
        let folder = try TemporaryFolder.make(prefix: "curl")
        defer { try? FileManager.default.removeItem(at: folder) }
        let headerFile = folder.appendingPathComponent("h").path
        var arguments = ["-s", "-o", "-", "-D", headerFile, "-w", "\n%{http_code}", "--max-time", "5"]
        arguments += method == "HEAD" ? ["-I"] : ["-X", method]
        arguments.append(url)
        let result = try runCommand("/usr/bin/curl", arguments, timeout: 10)
        var body = result.stdout
        let status = body.split(separator: "\n").last.flatMap { Int($0) } ?? 0
        if let newline = body.lastIndex(of: "\n") { body = String(body[..<newline]) }
        return (status, (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? "", body)
    }

    @Test("routing: paths, methods and readiness", arguments: [
        ("GET", "/healthz", true, 200), ("HEAD", "/healthz", true, 200), ("GET", "/metrics", true, 200),
        ("GET", "/readyz", true, 200), ("GET", "/readyz", false, 503), ("GET", "/healthz", false, 200),
        ("POST", "/metrics", true, 405), ("PUT", "/readyz", true, 405), ("DELETE", "/healthz", true, 405),
        ("GET", "/", true, 404), ("GET", "/metrics/x", true, 404), ("POST", "/nope", true, 404),
    ])
    func routing(method: String, path: String, ready: Bool, status: Int) {
        let request = HTTPListener.Request(method: method, path: path, clientAddress: "127.0.0.1", headers: [:])
        let readiness = ready ? Readiness.ready : Readiness(failing: [.init(dependency: "redis", detail: "unreachable")])
        let response = OperationsEndpoints.respond(to: request, metrics: Metrics(), readiness: { readiness })
        #expect(response.status == status)
        if status == 405 { #expect(response.headers.contains { $0.0 == "Allow" && $0.1 == "GET, HEAD" }) }
    }

    @Test("the libmicrohttpd listener serves the endpoints over real HTTP/1.1")
    func listener() throws {
        let metrics = Metrics()
        metrics.increment("pushworker_dlq_total")
        let listener = try HTTPListener(address: try #require(HostPort("127.0.0.1:0")),
                                        handler: OperationsEndpoints.handler(metrics: metrics, readiness: {
                                            Readiness(failing: [.init(dependency: "redis", detail: "unreachable: no answer to PING"),
                                                                .init(dependency: "kafka_consumer_group", detail: "not joined \"g\" yet")])
                                        }))
        defer { listener.stop() }
        let base = "http://127.0.0.1:\(listener.port)"
        let health = try Self.curl("GET", base + "/healthz")
        #expect(health.status == 200 && health.body == "ok\n")
        let head = try Self.curl("HEAD", base + "/metrics")
        #expect(head.status == 200 && head.headers.lowercased().contains("content-type: text/plain; version=0.0.4"))
        let body = try Self.curl("GET", base + "/metrics")
        #expect(body.body.contains("# TYPE pushworker_dlq_total counter\npushworker_dlq_total 1\n"))
        let readyz = try Self.curl("GET", base + "/readyz")
        #expect(readyz.status == 503 && readyz.headers.lowercased().contains("content-type: application/json"))
        #expect(readyz.body == #"{"ready":false,"failing":[{"dependency":"redis","detail":"unreachable: no answer to PING"},{"dependency":"kafka_consumer_group","detail":"not joined \"g\" yet"}]}"# + "\n",
                 "\(readyz.body)")
        let post = try Self.curl("POST", base + "/metrics")
        #expect(post.status == 405 && post.headers.contains("Allow: GET, HEAD"))
        #expect(try Self.curl("GET", base + "/other").status == 404)
    }

    @Test("`pushworker run`: /healthz 200, /readyz 503 until the group is joined, metrics after a job, 503 when Redis goes away")
    func workerEndpoints() throws {
        let env = try E2EEnvironment()
        let port = freeLoopbackPort()
        let base = "http://127.0.0.1:\(port)"
        let worker = try env.startWorker(group: "ops-\(UUID().uuidString.prefix(6))", extra: ["PUSHWORKER_HTTP_ADDR": "127.0.0.1:\(port)"])
        defer { worker.stop() }
        func status(_ path: String) -> Int { (try? Self.curl("GET", base + path).status) ?? 0 }

        #expect(eventually(timeout: 20) { status("/healthz") == 200 }, "worker stderr: \(worker.stderr().suffix(2000))")
        // The listener starts before the consumer loop; the join takes a few seconds.
        #expect(status("/readyz") == 503, "not ready before the group is joined")
        #expect(eventually(timeout: 40) { status("/readyz") == 200 }, "worker stderr: \(worker.stderr().suffix(2000))")
        #expect(try Self.curl("GET", base + "/readyz").body == #"{"ready":true}"# + "\n")

        let job = E2EEnvironment.job(id: "ops:1", recipients: [
            #"{"userId":"u1","subscriptionId":"ios-1","platform":"ios","token":"\#(E2EEnvironment.apnsToken(41))"}"#,
            #"{"userId":"u2","subscriptionId":"and-1","platform":"android","token":"\#(E2EEnvironment.fcmToken(42))"}"#,
            #"{"userId":"u3","subscriptionId":"ios-bad","platform":"ios","token":"not-a-token"}"#,
        ])
        try env.produce("push.jobs.v1", key: "ops:1", value: Array(job.utf8))
        #expect(try env.read("push.results.v1", count: 3).count == 3, "worker stderr: \(worker.stderr().suffix(2000))")

        var metrics = ""
        #expect(eventually(timeout: 10) {
            metrics = (try? Self.curl("GET", base + "/metrics").body) ?? ""
            return metrics.contains(#"pushworker_notifications_total{platform="ios",status="sent",reason=""} 1"#)
        }, "\(metrics)")
        #expect(metrics.contains(#"pushworker_notifications_total{platform="android",status="sent",reason=""} 1"#))
        #expect(metrics.contains(#"pushworker_notifications_total{platform="ios",status="rejected",reason="bad_token"} 1"#))
        #expect(metrics.contains("# TYPE pushworker_provider_request_seconds histogram"))
        #expect(metrics.contains(#"pushworker_provider_request_seconds_bucket{provider="apns",le="+Inf"} 1"#))
        #expect(metrics.contains(#"pushworker_provider_request_seconds_count{provider="fcm"} 1"#))
        #expect(metrics.contains("pushworker_ready 1"))
        #expect(metrics.contains(#"pushworker_jobs_total{outcome="accepted"} 1"#))
        let parsed = try MetricsTests.parse(metrics)
        #expect(parsed.samples.allSatisfy { $0.name.hasPrefix("pushworker_") || $0.name.hasPrefix("process_") })
        #expect(parsed.samples.contains { $0.name == "pushworker_in_flight" && $0.value == 0 })
        #expect(Set(parsed.types.keys).isSubset(of: Set(Metrics.catalogue.keys)))
        // Per-job info logs: started and finished with the outcomes by status and the duration.
        let log = worker.stderr()
        #expect(log.contains(#""msg":"job started""#) && log.contains(#""job.id":"ops:1""#), "\(log.suffix(2000))")
        let finished = try #require(log.split(separator: "\n").first { $0.contains(#""msg":"job finished""#) })
        #expect(finished.contains(#""job.outcomes":"sent=2 rejected=1""#), "\(finished)")
        #expect(finished.contains(#""job.recipients":"3""#) && finished.contains(#""job.ms":""#))

        #expect(try Self.curl("POST", base + "/readyz").status == 405)
        #expect(status("/nope") == 404)

        // Redis goes away while the worker is idle: readiness follows within a few seconds.
        env.redis.stop()
        #expect(eventually(timeout: 15) { status("/readyz") == 503 }, "worker stderr: \(worker.stderr().suffix(2000))")
        let away = try Self.curl("GET", base + "/readyz").body
        #expect(away.hasPrefix(#"{"ready":false,"failing":[{"dependency":"redis","detail":"unreachable"#), "\(away)")
        #expect(status("/healthz") == 200, "alive, just not ready")
        #expect(worker.stderr().contains("redis unreachable"))

        worker.signal(SIGTERM)
        #expect(worker.wait(timeout: 30) == 0, "worker stderr: \(worker.stderr().suffix(2000))")
    }

    @Test("`pushworker run` with no reachable broker: alive (/healthz 200) but never ready (/readyz 503); SIGTERM still exits 0")
    func neverJoined() throws {
        let redis = try RedisServer()
        let port = freeLoopbackPort()
        let keys = "k1:" + Data(repeating: 5, count: 32).base64EncodedString()
        let worker = try TestProcess(BuiltProducts.pushworker, ["run"], environment: [
            "PUSHWORKER_KAFKA_BROKERS": "127.0.0.1:\(freeLoopbackPort())", "PUSHWORKER_REDIS_URL": redis.url,
            "PUSHWORKER_MSGID_KEYS": keys, "PUSHWORKER_HTTP_ADDR": "127.0.0.1:\(port)", "PUSHWORKER_LOG_LEVEL": "warning",
            "PUSHWORKER_SHUTDOWN_GRACE_SECONDS": "2",
        ])
        defer { worker.stop() }
        let base = "http://127.0.0.1:\(port)"
        #expect(eventually(timeout: 20) { (try? Self.curl("GET", base + "/healthz").status) == 200 }, "\(worker.stderr().suffix(2000))")
        for _ in 0..<3 {
            let readyz = try Self.curl("GET", base + "/readyz")
            #expect(readyz.status == 503)
            #expect(readyz.body.hasPrefix(#"{"ready":false,"failing":[{"dependency":"kafka_consumer_group","detail":"not joined group "#), "\(readyz.body)")
            #expect(!readyz.body.contains(#""redis""#), "Redis answers: only the group is named")
            usleep(500_000)
        }
        let metrics = try Self.curl("GET", base + "/metrics").body
        #expect(metrics.contains("pushworker_ready 0"))
        // Counters exist from start-up (so increase() alerts see the first event), with the build info.
        #expect(metrics.contains("\npushworker_dlq_total 0\n"), "\(metrics)")
        #expect(metrics.contains(#"pushworker_notifications_total{platform="web",status="failed",reason=""} 0"#))
        #expect(metrics.contains(#"pushworker_build_info{version="\#(BuildInfo.version)",commit=""#))
        #expect(metrics.contains("process_resident_memory_bytes "))
        worker.signal(SIGTERM)
        #expect(worker.wait(timeout: 20) == 0, "\(worker.stderr().suffix(2000))")
    }

    @Test("`pushworker run` on redis+sentinel://: /readyz names Redis while no Sentinel knows the master, and stops naming it once one does")
    func sentinelReadiness() throws {
        let set = try RedisSentinelServer(replicas: 0, sentinels: 1)
        defer { set.stop() }
        let port = freeLoopbackPort()
        let keys = "k1:" + Data(repeating: 5, count: 32).base64EncodedString()
        let sentinel = set.sentinelPorts[0]
        let worker = try TestProcess(BuiltProducts.pushworker, ["run"], environment: [
            "PUSHWORKER_KAFKA_BROKERS": "127.0.0.1:\(freeLoopbackPort())", "PUSHWORKER_REDIS_URL": "redis+sentinel://127.0.0.1:\(sentinel)/later",
            "PUSHWORKER_MSGID_KEYS": keys, "PUSHWORKER_HTTP_ADDR": "127.0.0.1:\(port)", "PUSHWORKER_LOG_LEVEL": "warning",
            "PUSHWORKER_SHUTDOWN_GRACE_SECONDS": "2",
        ])
        defer { worker.stop() }
        let base = "http://127.0.0.1:\(port)"
        func readyz() -> String { (try? Self.curl("GET", base + "/readyz").body) ?? "" }
        #expect(eventually(timeout: 20) { readyz().contains("no master known for 'later'") }, "\(readyz()) \(worker.stderr().suffix(2000))")
        let away = try Self.curl("GET", base + "/readyz")
        #expect(away.status == 503 && away.body.contains(#"{"dependency":"redis","detail":"unreachable"#)
                && away.body.contains("no master known for 'later': 127.0.0.1:\(sentinel) does not know master 'later'"), "\(away.body)")
        try set.cli(sentinel, ["SENTINEL", "MONITOR", "later", "127.0.0.1", "\(set.dataPorts[0])", "1"])
        #expect(eventually(timeout: 15) { let body = readyz(); return !body.isEmpty && !body.contains(#""redis""#) }, "\(readyz())")
        #expect(readyz().contains("kafka_consumer_group"), "the broker is still away")
        worker.signal(SIGTERM)
        #expect(worker.wait(timeout: 20) == 0, "\(worker.stderr().suffix(2000))")
    }
}
