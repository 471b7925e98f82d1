import Foundation
import PushCore
import PushProviders

/// What a process exports from its first scrape (docs/reference/metrics.md): the build info, the process
/// gauges, and every counter of its role at 0 for each of its known label sets, so that
/// `increase(pushworker_dlq_total[10m]) > 0` fires on the first dead letter instead of seeing
/// the series appear.
extension Metrics {
    /// Whose series to declare.
    public enum Role: Sendable { case worker, events, api }

    /// The counters (and histograms) of each role with their known label sets. Counters whose
    /// labels come from an open set (HTTP status codes, Kafka error names, Redis nodes, lag
    /// partitions) appear on their first update and are listed in ``openLabelSeries``.
    public static func startupSeries(_ role: Role) -> [(name: String, labels: [[(String, String)]])] {
        switch role {
        case .worker:
            let providers = Platform.allCases.map(MetricLabels.provider)
            return [
                ("pushworker_notifications_total", Platform.allCases.flatMap { platform in
                    DeliveryStatus.allCases.map { [("platform", platform.rawValue), ("status", $0.rawValue), ("reason", "")] }
                }),
                ("pushworker_jobs_total", [[("outcome", "accepted")], [("outcome", "dead_letter")]]),
                ("pushworker_dlq_total", [[]]),
                ("pushworker_retries_total", [[]]),
                ("pushworker_webpush_encryption_cpu_seconds_total", [[]]),
                ("pushworker_webpush_encryptions_total", [[]]),
                ("pushworker_redis_errors_total", [[]]),
                ("pushworker_kafka_errors_total", [[]]),
                ("pushworker_token_refreshes_total", providers.map { [("provider", $0)] }),
                ("pushworker_claims_total", ["send", "resend", "duplicate", "wait", "known_invalid", "unanswered", "capped"].map { [("verdict", $0)] }),
                ("pushworker_claims_lost_total", [[]]),
                ("pushworker_unanswered_total", ["resend", "left", "failed"].map { [("action", $0)] }),
                ("pushworker_parked_total", [[]]),
                ("pushworker_deferred_total", [[("reason", "quiet_hours")], [("reason", "send_at_local")]]),
                ("pushworker_throttle_waits_total", [[]]),
                ("pushworker_campaign_controls", ["active", "paused", "cancelled"].map { [("state", $0)] }),
                ("pushworker_campaign_steered_total", ["parked", "cancelled", "expired"].map { [("action", $0)] }),
                ("pushworker_redis_record_skipped_total", [[]]),
                ("pushworker_apns_certificate_held_total", [[]]),
                ("pushworker_hms_batches_total", [[]]),
                ("pushworker_provider_request_seconds", providers.map { [("provider", $0)] }),
                ("pushworker_result_delay_seconds", [[]]),
                ("pushworker_job_seconds", [[]]),
            ]
        case .events:
            return [
                ("pushworker_events_total", ["delivered", "opened", "clicked", "dismissed"].flatMap { type in
                    ["accepted", "bad_msgid"].map { [("type", type), ("outcome", $0)] }
                }),
                ("pushworker_events_rate_limited_total", [[]]),
                ("pushworker_events_rate_limit_evictions_total", [[]]),
                ("pushworker_events_published_total", [[("outcome", "ok")], [("outcome", "error")]]),
                ("pushworker_events_counter_flushes_total", [[("outcome", "ok")], [("outcome", "error")]]),
                ("pushworker_events_counter_dropped_total", [[]]),
                ("pushworker_webhook_deliveries_total", ["delivered", "retried", "rejected", "failed"].map { [("outcome", $0)] }),
                ("pushworker_webhook_events_total", [[]]),
                ("pushworker_webhook_dropped_total", [[]]),
                ("pushworker_kafka_errors_total", [[]]),
                ("pushworker_redis_errors_total", [[]]),
            ]
        case .api:
            return [
                ("pushworker_api_jobs_total", [[]]),
                ("pushworker_kafka_errors_total", [[]]),
                ("pushworker_redis_errors_total", [[]]),
            ]
        }
    }

    /// Counters and histograms whose label values are not known in advance: they appear when
    /// first updated.
    public static let openLabelSeries: Set<String> = [
        "pushworker_provider_responses_total",   // status: any HTTP status code
        "pushworker_kafka_produce_failures_total", // topic: the configured names (declared by the worker at start-up, with every error)
        "pushworker_redis_node_round_trips_total", "pushworker_redis_node_errors_total",
        "pushworker_redis_node_moved_total", "pushworker_redis_node_ask_total", // node: the cluster's
        "process_cpu_seconds_total",  // read at scrape time, not a stored counter
        "pushworker_redis_round_trips_total",    // read at scrape time from the client (0 from the start)
        "pushworker_api_requests_total",         // route × code: the codes a route answers appear as they happen
        "pushworker_capped_total",               // category: PUSHWORKER_CAPS's (declared by the worker at start-up)
    ]

    /// Declares `role`'s series, `pushworker_build_info` and the process gauges. Call once, at
    /// start-up, before the listener answers.
    public func registerStartup(_ role: Role) {
        set("pushworker_build_info", BuildInfo.metricLabels(), 1)
        set("pushworker_ready", [], 0)  // until the first readiness check says otherwise
        for (name, labelSets) in Self.startupSeries(role) {
            for labels in labelSets { declare(name, labels) }
        }
        ProcessMetrics.register(in: self)
    }
}

/// `process_*`: the standard Prometheus process metrics under the client libraries' names
/// (`process_resident_memory_bytes`, `process_cpu_seconds_total`, `process_open_fds`, …; the
/// only metrics without the `pushworker_` prefix, docs/reference/metrics.md), read from
/// `/proc/self` at each scrape (a few small reads, no state). Linux only; elsewhere they read 0.
public enum ProcessMetrics {
    public static func register(in metrics: Metrics) {
        let started = startTime()
        metrics.gauge("process_resident_memory_bytes") { Double(memory().resident) }
        metrics.gauge("process_virtual_memory_bytes") { Double(memory().virtual) }
        metrics.gauge("process_cpu_seconds_total") { cpuSeconds() }
        metrics.gauge("process_open_fds") { Double(openFileDescriptors()) }
        metrics.gauge("process_max_fds") { Double(maxFileDescriptors()) }
        metrics.gauge("process_start_time_seconds") { started }
        metrics.gauge("process_threads") { Double(threads()) }
    }

    static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
    static let ticksPerSecond = Double(max(1, sysconf(Int32(_SC_CLK_TCK))))

    /// `/proc/self/statm`: size and resident, in pages.
    static func memory() -> (virtual: Int, resident: Int) {
        let fields = read("/proc/self/statm").split(separator: " ")
        guard fields.count >= 2, let size = Int(fields[0]), let resident = Int(fields[1]) else { return (0, 0) }
        return (size * pageSize, resident * pageSize)
    }

    /// The fields of `/proc/self/stat` after the command name (which may hold spaces): field 3
    /// (state) is at index 0.
    static func statFields() -> [Substring] {
        let text = read("/proc/self/stat")
        guard let close = text.lastIndex(of: ")") else { return [] }
        return text[text.index(after: close)...].split(separator: " ")
    }

    /// utime + stime (fields 14 and 15) in seconds.
    static func cpuSeconds() -> Double {
        let fields = statFields()
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / ticksPerSecond
    }

    /// num_threads (field 20).
    static func threads() -> Int {
        let fields = statFields()
        guard fields.count > 17 else { return 0 }
        return Int(fields[17]) ?? 0
    }

    /// Boot time + starttime (field 22, ticks since boot), as Unix seconds.
    static func startTime() -> Double {
        let fields = statFields()
        guard fields.count > 19, let ticks = Double(fields[19]) else { return Date().timeIntervalSince1970 }
        let boot = read("/proc/stat").split(separator: "\n").first { $0.hasPrefix("btime ") }
            .flatMap { Double($0.dropFirst(6).trimmingCharacters(in: .whitespaces)) }
        guard let boot else { return Date().timeIntervalSince1970 }
        return boot + ticks / ticksPerSecond
    }

    static func openFileDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    }

    static func maxFileDescriptors() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        return Int(clamping: limit.rlim_cur)
    }

    private static func read(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }
}
