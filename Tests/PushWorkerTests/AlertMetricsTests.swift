import Foundation
@testable import PushRuntime
import PushTestSupport
import Testing

/// The chart's alert rules read only metrics a fresh process exports: an `increase()` over a
/// series that appears with its first event misses that event (docs/reference/metrics.md,
/// "From the first scrape"). Read from the real `/metrics` of `pushworker run` and
/// `pushworker events` started against Redis and a broker address that never answers.
@Suite("Alert rules: every metric they use is exported from start-up", .serialized)
struct AlertMetricsTests {
    static let rules = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("charts/pushworker/templates/prometheusrule.yaml")

    /// Gauges whose series depend on what the process is given, so no series can exist before:
    /// the consumer lag has one per assigned partition (the lag alerts fall back to
    /// `last_over_time`). Counters never belong here.
    static let perAssignment: Set<String> = ["pushworker_kafka_consumer_lag"]

    /// The metric names in the rules of the worker's group and of the events group.
    static func alertMetrics() throws -> (worker: Set<String>, events: Set<String>) {
        let text = try String(contentsOf: rules, encoding: .utf8)
        guard let split = text.range(of: "{{- $events := list }}") else { throw TestSupportError("no events group in \(rules.path)") }
        func names(_ part: Substring) throws -> Set<String> {
            let pattern = try NSRegularExpression(pattern: #"\b((?:pushworker|process)_[a-z0-9_]+)"#)
            let string = String(part)
            let found = pattern.matches(in: string, range: NSRange(string.startIndex..., in: string)).compactMap {
                Range($0.range(at: 1), in: string).map { String(string[$0]) }
            }
            // A histogram is used through its _bucket/_sum/_count series.
            return Set(found.map { name in
                for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
                    let family = String(name.dropLast(suffix.count))
                    if Metrics.catalogue[family]?.type == "histogram" { return family }
                }
                return name
            })
        }
        return (try names(text[..<split.lowerBound]), try names(text[split.upperBound...]))
    }

    /// The families with at least one sample in a `/metrics` text.
    static func exported(_ metrics: String) -> Set<String> {
        var families: Set<String> = []
        for line in metrics.split(separator: "\n") where !line.hasPrefix("#") {
            guard let end = line.firstIndex(where: { $0 == "{" || $0 == " " }) else { continue }
            var name = String(line[..<end])
            for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
                let family = String(name.dropLast(suffix.count))
                if Metrics.catalogue[family]?.type == "histogram" { name = family }
            }
            families.insert(name)
        }
        return families
    }

    static func scrape(_ port: UInt16, process: TestProcess) throws -> String {
        let base = "http://127.0.0.1:\(port)"
        #expect(eventually(timeout: 20) { (try? HealthTests.curl("GET", base + "/healthz").status) == 200 }, "\(process.stderr().suffix(2000))")
        return try HealthTests.curl("GET", base + "/metrics").body
    }

    @Test("the rules name metrics of both groups; exemptions are gauges")
    func rulesParsed() throws {
        let (worker, events) = try Self.alertMetrics()
        #expect(worker.contains("pushworker_kafka_produce_failures_total") && worker.contains("pushworker_dlq_total"), "\(worker)")
        #expect(events.contains("pushworker_webhook_dropped_total"), "\(events)")
        for name in worker.union(events) { #expect(Metrics.catalogue[name] != nil, "\(name) is not a metric pushworker declares") }
        for name in Self.perAssignment { #expect(Metrics.catalogue[name]?.type == "gauge", "\(name)") }
    }

    @Test("`pushworker run`, fresh: every metric of the worker alerts has a series")
    func worker() throws {
        let redis = try RedisServer()
        let port = freeLoopbackPort()
        let process = try TestProcess(BuiltProducts.pushworker, ["run"], environment: [
            "PUSHWORKER_KAFKA_BROKERS": "127.0.0.1:\(freeLoopbackPort())", "PUSHWORKER_REDIS_URL": redis.url,
            "PUSHWORKER_MSGID_KEYS": CLITest.keys, "PUSHWORKER_HTTP_ADDR": "127.0.0.1:\(port)", "PUSHWORKER_LOG_LEVEL": "warning",
            "PUSHWORKER_SHUTDOWN_GRACE_SECONDS": "2",
        ])
        defer { process.stop() }
        let metrics = try Self.scrape(port, process: process)
        let exported = Self.exported(metrics)
        for name in try Self.alertMetrics().worker.subtracting(Self.perAssignment).sorted() {
            #expect(exported.contains(name), "\(name) is used by an alert but not exported by a fresh worker")
        }
        // The produce failures the alert counts, at 0 for each topic × permanent error.
        #expect(metrics.contains(#"pushworker_kafka_produce_failures_total{topic="push.results.v1",error="MSG_SIZE_TOO_LARGE"} 0"#), "\(metrics)")
        #expect(metrics.contains(#"pushworker_kafka_produce_failures_total{topic="dlq",error="_FATAL"} 0"#))
        #expect(metrics.contains("\npushworker_ready 0\n"))
        process.signal(SIGTERM)
        #expect(process.wait(timeout: 20) == 0, "\(process.stderr().suffix(2000))")
    }

    @Test("`pushworker events`, fresh: every metric of the events alerts has a series")
    func events() throws {
        let redis = try RedisServer()
        let port = freeLoopbackPort()
        let process = try TestProcess(BuiltProducts.pushworker, ["events"], environment: [
            "PUSHWORKER_KAFKA_BROKERS": "127.0.0.1:\(freeLoopbackPort())", "PUSHWORKER_REDIS_URL": redis.url,
            "PUSHWORKER_MSGID_KEYS": CLITest.keys, "PUSHWORKER_HTTP_ADDR": "127.0.0.1:\(port)", "PUSHWORKER_LOG_LEVEL": "warning",
        ])
        defer { process.stop() }
        let exported = Self.exported(try Self.scrape(port, process: process))
        for name in try Self.alertMetrics().events.subtracting(Self.perAssignment).sorted() {
            #expect(exported.contains(name), "\(name) is used by an alert but not exported by a fresh events process")
        }
        process.signal(SIGTERM)
        #expect(process.wait(timeout: 20) == 0, "\(process.stderr().suffix(2000))")
    }
}
