import Synchronization

/// Prometheus metrics of the worker (docs/reference/metrics.md; names start `pushworker_`, but
/// for the standard `process_*` ones; labels from small
/// fixed sets only: never a token, campaign or app id). Created once, updated lock-free or under
/// a short lock, rendered as Prometheus text by `/metrics`.
public final class Metrics: Sendable {
    /// Labels are kept raw (name, value, name, value, …) and rendered only by ``render()``:
    /// updates sit on the per-notification path (docs/performance.md).
    private struct Key: Hashable {
        var name: String
        var labels: [String]
        init(name: String, labels: [(String, String)]) {
            self.name = name
            var flat: [String] = []
            if !labels.isEmpty {
                flat.reserveCapacity(labels.count * 2)
                for (label, value) in labels { flat.append(label); flat.append(value) }
            }
            self.labels = flat
        }
        var rendered: String {
            var pairs: [(String, String)] = []
            var index = 0
            while index + 1 < labels.count { pairs.append((labels[index], labels[index + 1])); index += 2 }
            return Metrics.render(pairs)
        }
    }
    /// Counters and histograms are series objects: a hot path resolves its series once
    /// (``counterSeries(_:_:)``, ``histogramSeries(_:_:)``) and then updates it with one short
    /// lock, without building a key or hashing label strings per update.
    private let counters = Mutex<[Key: CounterSeries]>([:])
    private let gauges = Mutex<[Key: Double]>([:])
    private let histograms = Mutex<[Key: HistogramSeries]>([:])
    /// Gauges read at scrape time (a value that changes per recipient, such as in-flight).
    private let liveGauges = Mutex<[String: @Sendable () -> Double]>([:])
    /// Every metric the worker exports: name ⇒ (Prometheus type, help text, label names).
    /// docs/reference/metrics.md lists the same table; scripts/check_docs.py keeps the two in step.
    public static let catalogue: [String: (type: String, help: String, labels: [String])] = [
        "pushworker_notifications_total": ("counter", "Final delivery results by platform, status and reason.", ["platform", "status", "reason"]),
        "pushworker_provider_request_seconds": ("histogram", "Provider HTTP/2 request latency.", ["provider"]),
        "pushworker_provider_responses_total": ("counter", "Provider responses by provider and HTTP status.", ["provider", "status"]),
        "pushworker_webpush_encryption_cpu_seconds_total": ("counter", "CPU seconds spent encrypting Web Push messages (RFC 8291: ECDH, HKDF, AES-GCM).", []),
        "pushworker_webpush_encryptions_total": ("counter", "Web Push messages encrypted.", []),
        "pushworker_in_flight": ("gauge", "Recipients currently being delivered.", []),
        "pushworker_jobs_total": ("counter", "Jobs consumed, by outcome.", ["outcome"]),
        "pushworker_retries_total": ("counter", "Recipients handed to the retry topic.", []),
        "pushworker_dlq_total": ("counter", "Jobs sent to the dead-letter topic.", []),
        "pushworker_redis_errors_total": ("counter", "Redis errors.", []),
        "pushworker_redis_round_trips_total": ("counter", "Redis round trips (pipelines; one per batch however many cluster nodes it reaches), read at scrape time.", []),
        // Redis Cluster only (`redis+cluster://`), per node, from RedisClusterClient.nodeStats().
        "pushworker_redis_node_round_trips_total": ("counter", "Pipelines sent to a Redis Cluster node.", ["node"]),
        "pushworker_redis_node_errors_total": ("counter", "Connection errors with a Redis Cluster node.", ["node"]),
        "pushworker_redis_node_moved_total": ("counter", "MOVED replies from a Redis Cluster node.", ["node"]),
        "pushworker_redis_node_ask_total": ("counter", "ASK replies from a Redis Cluster node.", ["node"]),
        "pushworker_redis_node_slots": ("gauge", "Slots a Redis Cluster node serves as master in the last slot map (0: replica or gone).", ["node"]),
        "pushworker_kafka_errors_total": ("counter", "Kafka client errors.", []),
        "pushworker_kafka_consumer_lag": ("gauge", "Consumer lag per assigned partition.", ["topic", "partition"]),
        "pushworker_token_refreshes_total": ("counter", "Provider auth tokens minted or fetched.", ["provider"]),
        "pushworker_hms_batches_total": ("counter", "Huawei batches the worker sent: requests of up to 1000 tokens sharing one payload (docs/providers.md).", []),
        "pushworker_apns_certificate_held_total": ("counter", "iOS recipients rejected without a request: APNs refused their app's certificate (docs/providers.md).", []),
        "pushworker_ready": ("gauge", "1 when the worker is ready (Redis reachable, group joined).", []),
        "pushworker_claims_total": ("counter", "Claim verdicts: send, resend (after an unanswered attempt), duplicate, wait (claimed by another processing), known_invalid, unanswered (no resend allowed), capped (a frequency cap).", ["verdict"]),
        "pushworker_unanswered_total": ("counter", "Requests written and never answered, by what followed: resend (once, same replace key), left (drain: for the job's next processing), failed (final, reason unanswered).", ["action"]),
        "pushworker_deferred_total": ("counter", "Recipients sent to the retry topic to wait for their local time: the end of their quiet hours or their local send time.", ["reason"]),
        "pushworker_parked_total": ("counter", "Recipients sent to the retry topic instead of waiting in memory for a held endpoint (provider backoff, open breaker, throttle).", []),
        "pushworker_throttle_waits_total": ("counter", "Recipients that found their fleet-wide token bucket (app rate, campaign throttle) empty and waited.", []),
        "pushworker_campaign_controls": ("gauge", "Campaigns with work on this worker, by their control's state.", ["state"]),
        "pushworker_capped_total": ("counter", "Recipients not sent because their user reached a frequency cap of the job's capCategory (the categories of PUSHWORKER_CAPS: a bounded set).", ["category"]),
        "pushworker_campaign_steered_total": ("counter", "Recipients a campaign control stopped: parked while paused, cancelled, or expired past sendBy.", ["action"]),
        "pushworker_breaker_open": ("gauge", "1 while the circuit breaker of an app × provider endpoint is open or half-open (apps come from the credentials folder: a bounded set).", ["app", "provider"]),
        "pushworker_unfinished_recipients": ("gauge", "Recipients of jobs begun and not finished (not every result acknowledged by Kafka yet).", []),
        "pushworker_claims_queued": ("gauge", "Recipients of accepted jobs waiting for their claim.", []),
        "pushworker_claims_lost_total": ("counter", "Claims found taken over before their outcome was recorded (a lease ran out).", []),
        "pushworker_redis_record_skipped_total": ("counter", "Outcomes not recorded because Redis was away (written again when it is back).", []),
        "pushworker_result_delay_seconds": ("histogram", "From a recipient's outcome (the provider's answer) to its result being produced.", []),
        "pushworker_job_seconds": ("histogram", "From a job's start to its last result acknowledged.", []),
        "pushworker_kafka_produce_failures_total": ("counter", "Messages Kafka refused for good (not retried; copied to the dead-letter topic).", ["topic", "error"]),
        // The tracking endpoint (`pushworker events`).
        "pushworker_events_total": ("counter", "Tracking pings by event type and outcome (accepted, bad_msgid).", ["type", "outcome"]),
        "pushworker_events_rate_limited_total": ("counter", "Tracking pings refused with 429 (per-IP EVENT_RATE_LIMIT).", []),
        "pushworker_events_rate_limit_evictions_total": ("counter", "Rate-limit buckets evicted because the table was full (EVENT_RATE_LIMIT_BUCKETS).", []),
        "pushworker_events_published_total": ("counter", "Events acknowledged by Kafka (ok) or failed (error).", ["outcome"]),
        "pushworker_events_counter_flushes_total": ("counter", "Pipelined Redis counter flushes by outcome.", ["outcome"]),
        "pushworker_events_counter_dropped_total": ("counter", "Events not counted in Redis (pending buffer full).", []),
        "pushworker_webhook_deliveries_total": ("counter", "Webhook batch attempts by outcome (delivered, retried, rejected, failed).", ["outcome"]),
        "pushworker_webhook_events_total": ("counter", "Events delivered to webhooks.", []),
        "pushworker_webhook_dropped_total": ("counter", "Events dropped before webhook delivery (queue full or shutdown).", []),
        // The operators' HTTP API (`pushworker api`).
        "pushworker_api_requests_total": ("counter", "HTTP API requests by route (a fixed name per endpoint, unknown for the rest) and status code.", ["route", "code"]),
        "pushworker_api_jobs_total": ("counter", "Jobs the HTTP API produced to the jobs topic (acknowledged by Kafka).", []),
        // Every process (`run`, `events`, `api`): MetricsStartup.swift.
        "pushworker_build_info": ("gauge", "Always 1: the version, git commit and C library versions of this binary.", ["version", "commit", "libcurl", "librdkafka", "openssl"]),
        "process_resident_memory_bytes": ("gauge", "Resident memory size in bytes.", []),
        "process_virtual_memory_bytes": ("gauge", "Virtual memory size in bytes.", []),
        "process_cpu_seconds_total": ("counter", "Total user and system CPU time spent in seconds.", []),
        "process_open_fds": ("gauge", "Number of open file descriptors.", []),
        "process_max_fds": ("gauge", "Maximum number of open file descriptors.", []),
        "process_start_time_seconds": ("gauge", "Start time of the process since unix epoch in seconds.", []),
        "process_threads": ("gauge", "Number of OS threads in the process.", []),
    ]

    public init() {}

    /// Exports the series at 0 until it is first updated (counters and histograms; gauges are
    /// set when known): an `increase()` alert then sees the first event. Keeps a value already there.
    public func declare(_ name: String, _ labels: [(String, String)] = []) {
        if Self.catalogue[name]?.type == "histogram" {
            _ = histogramSeries(name, labels)
        } else {
            _ = counterSeries(name, labels)
        }
    }

    /// The counter series `name{labels}`, created (at 0, so exported) if it is new. Keep it for a
    /// path that updates it per notification.
    public func counterSeries(_ name: String, _ labels: [(String, String)] = []) -> CounterSeries {
        Self.series(in: counters, Key(name: name, labels: labels), make: CounterSeries.init)
    }

    /// The histogram series `name{labels}`, created (empty, so exported) if it is new.
    public func histogramSeries(_ name: String, _ labels: [(String, String)] = []) -> HistogramSeries {
        Self.series(in: histograms, Key(name: name, labels: labels), make: HistogramSeries.init)
    }

    private static func series<Series: Sendable>(in table: borrowing Mutex<[Key: Series]>, _ key: Key, make: () -> Series) -> Series {
        table.withLock { table in
            if let series = table[key] { return series }
            let series = make()
            table[key] = series
            return series
        }
    }

    public func increment(_ name: String, _ labels: [(String, String)] = [], by amount: Double = 1) {
        counterSeries(name, labels).increment(by: amount)
    }

    public func set(_ name: String, _ labels: [(String, String)] = [], _ value: Double) {
        let key = Key(name: name, labels: labels)
        gauges.withLock { $0[key] = value }
    }

    /// A label-less gauge whose value `read` gives at each scrape (exact at that instant, and
    /// nothing to update on the hot path).
    public func gauge(_ name: String, read: @escaping @Sendable () -> Double) {
        liveGauges.withLock { $0[name] = read }
    }

    public func observe(_ name: String, _ labels: [(String, String)] = [], seconds: Double) {
        histogramSeries(name, labels).observe(seconds)
    }

    /// ``observe(_:_:seconds:)`` for each of `values`, under one lock.
    public func observe(_ name: String, _ labels: [(String, String)] = [], secondsEach values: [Double]) {
        histogramSeries(name, labels).observe(each: values)
    }

    /// The current value of a counter (tests, summaries).
    public func counter(_ name: String, _ labels: [(String, String)] = []) -> Double {
        counters.withLock { $0[Key(name: name, labels: labels)] }?.value ?? 0
    }

    /// Prometheus text exposition format 0.0.4: one `# HELP`/`# TYPE` block per metric name,
    /// series sorted by their label set, histogram lines in bucket order (`le` ascending, then
    /// `+Inf`, `_sum`, `_count`).
    public func render() -> String {
        var series: [String: [(labels: String, lines: [String])]] = [:]
        for (key, counter) in counters.withLock({ $0 }) {
            series[key.name, default: []].append((key.rendered, ["\(key.name)\(key.rendered) \(Self.number(counter.value))"]))
        }
        for (key, value) in gauges.withLock({ $0 }) {
            series[key.name, default: []].append((key.rendered, ["\(key.name)\(key.rendered) \(Self.number(value))"]))
        }
        for (key, histogram) in histograms.withLock({ $0 }) {
            series[key.name, default: []].append((key.rendered, histogram.snapshot.lines(name: key.name, labels: key.rendered)))
        }
        for (name, read) in liveGauges.withLock({ $0 }) {
            series[name] = [("", ["\(name) \(Self.number(read()))"])]
        }
        var out = ""
        for name in series.keys.sorted() {
            if let meta = Self.catalogue[name] { out += "# HELP \(name) \(meta.help)\n# TYPE \(name) \(meta.type)\n" }
            for entry in series[name, default: []].sorted(by: { $0.labels < $1.labels }) {
                for line in entry.lines { out += line + "\n" }
            }
        }
        return out
    }

    static func render(_ labels: [(String, String)]) -> String {
        guard !labels.isEmpty else { return "" }
        return "{" + labels.map { "\($0.0)=\"\(escape($0.1))\"" }.joined(separator: ",") + "}"
    }

    static func escape(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == 0x5C || $0 == 0x22 || $0 == 0x0A }) else { return value }
        return value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    /// A sample value: integers without a fraction, `+Inf`/`-Inf`/`NaN` as Prometheus spells them.
    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        return value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

/// One counter series of ``Metrics`` (``Metrics/counterSeries(_:_:)``).
public final class CounterSeries: Sendable {
    private let state = Mutex<Double>(0)

    public func increment(by amount: Double = 1) { state.withLock { $0 += amount } }

    public var value: Double { state.withLock { $0 } }
}

/// One histogram series of ``Metrics`` (``Metrics/histogramSeries(_:_:)``).
public final class HistogramSeries: Sendable {
    private let state = Mutex(Histogram())

    public func observe(_ seconds: Double) { state.withLock { $0.observe(seconds) } }

    public func observe(each values: [Double]) {
        state.withLock { histogram in
            for value in values { histogram.observe(value) }
        }
    }

    var snapshot: Histogram { state.withLock { $0 } }
}

/// A fixed-bucket latency histogram (seconds).
struct Histogram: Sendable {
    static let bounds: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    var counts = [UInt64](repeating: 0, count: Histogram.bounds.count)
    var sum = 0.0
    var count: UInt64 = 0

    mutating func observe(_ value: Double) {
        for (index, bound) in Self.bounds.enumerated() where value <= bound { counts[index] += 1 }
        sum += value
        count += 1
    }

    func lines(name: String, labels: String) -> [String] {
        let inner = labels.isEmpty ? "" : String(labels.dropFirst().dropLast()) + ","
        var lines = Self.bounds.enumerated().map { "\(name)_bucket{\(inner)le=\"\(Metrics.number($0.element))\"} \(counts[$0.offset])" }
        lines.append("\(name)_bucket{\(inner)le=\"+Inf\"} \(count)")
        lines.append("\(name)_sum\(labels) \(Metrics.number(sum))")
        lines.append("\(name)_count\(labels) \(count)")
        return lines
    }
}
