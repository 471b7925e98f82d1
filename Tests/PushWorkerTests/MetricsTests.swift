import Foundation
@testable import PushRuntime
import PushCore
@testable import PushWorker
import Testing
import PushProviders

/// `Metrics` renders Prometheus text format 0.0.4 (docs/reference/metrics.md).
@Suite("Metrics")
struct MetricsTests {
    /// One parsed sample line: `name{labels} value`.
    struct Sample: Equatable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    /// A strict reader of the text format: every line is `# HELP`, `# TYPE` or a sample, label
    /// values use only the three escapes, and a metric's lines form one group after its TYPE.
    static func parse(_ text: String) throws -> (samples: [Sample], types: [String: String], help: [String: String]) {
        var samples: [Sample] = [], types: [String: String] = [:], help: [String: String] = [:]
        var finished = Set<String>()
        var current = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
            if line.hasPrefix("# HELP ") {
                let parts = line.dropFirst(7).split(separator: " ", maxSplits: 1)
                help[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
                continue
            }
            if line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst(7).split(separator: " ")
                try #require(parts.count == 2 && ["counter", "gauge", "histogram", "summary", "untyped"].contains(String(parts[1])))
                try #require(types[String(parts[0])] == nil, "TYPE given twice for \(parts[0])")
                types[String(parts[0])] = String(parts[1])
                continue
            }
            var scalars = Array(line.unicodeScalars)[...]
            var name = ""
            while let c = scalars.first, c.properties.isAlphabetic || c == "_" || c == ":" || ("0"..."9").contains(c) {
                name.unicodeScalars.append(c); scalars = scalars.dropFirst()
            }
            try #require(!name.isEmpty, "no metric name in: \(line)")
            var labels: [String: String] = [:]
            if scalars.first == "{" {
                scalars = scalars.dropFirst()
                while scalars.first != "}" {
                    var label = ""
                    while let c = scalars.first, c != "=" { label.unicodeScalars.append(c); scalars = scalars.dropFirst() }
                    try #require(scalars.first == "=" && scalars.dropFirst().first == "\"", "bad label in: \(line)")
                    scalars = scalars.dropFirst(2)
                    var value = ""
                    while let c = scalars.first, c != "\"" {
                        scalars = scalars.dropFirst()
                        if c == "\\" {
                            let escaped = scalars.first
                            scalars = scalars.dropFirst()
                            switch escaped {
                            case "\\": value += "\\"
                            case "\"": value += "\""
                            case "n": value += "\n"
                            default: Issue.record("bad escape in: \(line)")
                            }
                        } else {
                            try #require(c != "\n")
                            value.unicodeScalars.append(c)
                        }
                    }
                    try #require(scalars.first == "\"")
                    scalars = scalars.dropFirst()
                    try #require(labels[label] == nil, "label \(label) twice")
                    labels[label] = value
                    if scalars.first == "," { scalars = scalars.dropFirst() }
                }
                scalars = scalars.dropFirst()
            }
            try #require(scalars.first == " ", "no space before the value in: \(line)")
            let valueText = String(String.UnicodeScalarView(scalars.dropFirst()))
            let value: Double? = valueText == "+Inf" ? .infinity : valueText == "-Inf" ? -.infinity : valueText == "NaN" ? .nan : Double(valueText)
            let parsed = try #require(value, "bad value '\(valueText)' in: \(line)")
            let family = ["_bucket", "_sum", "_count"].reduce(name) { family, suffix in
                family.hasSuffix(suffix) && types[String(family.dropLast(suffix.count))] == "histogram" ? String(family.dropLast(suffix.count)) : family
            }
            if family != current {
                try #require(!finished.contains(family), "\(family)'s lines are not one group")
                if !current.isEmpty { finished.insert(current) }
                current = family
            }
            samples.append(Sample(name: name, labels: labels, value: parsed))
        }
        return (samples, types, help)
    }

    @Test("counters and gauges: one HELP and TYPE per name, a line per label set")
    func countersAndGauges() throws {
        let metrics = Metrics()
        metrics.increment("pushworker_notifications_total", [("platform", "ios"), ("status", "sent"), ("reason", "")])
        metrics.increment("pushworker_notifications_total", [("platform", "ios"), ("status", "sent"), ("reason", "")])
        metrics.increment("pushworker_notifications_total", [("platform", "android"), ("status", "invalid_token"), ("reason", "UNREGISTERED")])
        metrics.increment("pushworker_retries_total", by: 3)
        metrics.set("pushworker_in_flight", [], 17)
        metrics.set("pushworker_in_flight", [], 12)
        let text = metrics.render()
        #expect(text.contains("""
        # HELP pushworker_notifications_total Final delivery results by platform, status and reason.
        # TYPE pushworker_notifications_total counter
        pushworker_notifications_total{platform="android",status="invalid_token",reason="UNREGISTERED"} 1
        pushworker_notifications_total{platform="ios",status="sent",reason=""} 2

        """))
        #expect(text.contains("# TYPE pushworker_in_flight gauge\npushworker_in_flight 12\n"))
        #expect(text.contains("pushworker_retries_total 3\n"))
        let parsed = try Self.parse(text)
        #expect(parsed.samples.count == 4)
        #expect(metrics.counter("pushworker_notifications_total", [("platform", "ios"), ("status", "sent"), ("reason", "")]) == 2)
    }

    @Test("label values escape backslash, double quote and newline", arguments: [
        ("plain", "plain"), ("a\"b", "a\\\"b"), ("back\\slash", "back\\\\slash"), ("two\nlines", "two\\nlines"),
        ("ünïcødé", "ünïcødé"), ("\\\"\n", "\\\\\\\"\\n"),
    ])
    func escaping(raw: String, escaped: String) throws {
        let metrics = Metrics()
        metrics.increment("pushworker_jobs_total", [("outcome", raw)])
        #expect(metrics.render().contains("pushworker_jobs_total{outcome=\"\(escaped)\"} 1\n"))
        #expect(try Self.parse(metrics.render()).samples.first?.labels["outcome"] == raw)
    }

    @Test("histograms: cumulative buckets in ascending le, +Inf equal to _count, then _sum and _count")
    func histogram() throws {
        let metrics = Metrics()
        for seconds in [0.0004, 0.003, 0.003, 0.2, 1.0, 42.0] {
            metrics.observe("pushworker_provider_request_seconds", [("provider", "apns")], seconds: seconds)
        }
        metrics.observe("pushworker_provider_request_seconds", [("provider", "fcm")], seconds: 0.05)
        let text = metrics.render()
        let parsed = try Self.parse(text)
        #expect(parsed.types["pushworker_provider_request_seconds"] == "histogram")
        let apns = parsed.samples.filter { $0.labels["provider"] == "apns" }
        let buckets = apns.filter { $0.name == "pushworker_provider_request_seconds_bucket" }
        let bounds = buckets.compactMap { $0.labels["le"] == "+Inf" ? Double.infinity : Double($0.labels["le"] ?? "") }
        #expect(bounds.count == buckets.count && bounds == bounds.sorted() && bounds.last == .infinity, "le ascending, +Inf last")
        #expect(buckets.map(\.value) == buckets.map(\.value).sorted(), "cumulative")
        #expect(buckets.first { $0.labels["le"] == "0.001" }?.value == 1)
        #expect(buckets.first { $0.labels["le"] == "0.005" }?.value == 3)
        #expect(buckets.first { $0.labels["le"] == "1" }?.value == 5, "a value equal to a bound counts in it")
        #expect(buckets.first { $0.labels["le"] == "10" }?.value == 5)
        #expect(buckets.last?.value == 6)
        // After the buckets of a series: _sum then _count.
        let names = apns.map(\.name)
        #expect(Array(names.suffix(2)) == ["pushworker_provider_request_seconds_sum", "pushworker_provider_request_seconds_count"])
        #expect(abs((apns.first { $0.name.hasSuffix("_sum") }?.value ?? 0) - 43.2064) < 1e-9)
        #expect(apns.first { $0.name.hasSuffix("_count") }?.value == 6)
        #expect(parsed.samples.filter { $0.labels["provider"] == "fcm" }.count == Histogram.bounds.count + 3)
    }

    @Test("sample values: integers plain, fractions as decimals, infinities and NaN as Prometheus spells them", arguments: [
        (3.0, "3"), (0.25, "0.25"), (-2.0, "-2"), (Double.infinity, "+Inf"), (-Double.infinity, "-Inf"), (Double.nan, "NaN"),
    ])
    func numbers(value: Double, text: String) {
        #expect(Metrics.number(value) == text)
    }

    @Test("every metric is named pushworker_… (the standard process_* ones aside); notifications carry exactly platform, status, reason")
    func catalogue() {
        let standardProcess: Set<String> = ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
                                            "process_open_fds", "process_max_fds", "process_start_time_seconds", "process_threads"]
        #expect(Set(Metrics.catalogue.keys.filter { !$0.hasPrefix("pushworker_") }) == standardProcess)
        for (name, meta) in Metrics.catalogue {
            #expect(name.hasPrefix("pushworker_") || standardProcess.contains(name), "\(name)")
            #expect(["counter", "gauge", "histogram"].contains(meta.type))
            #expect(meta.type != "counter" || name.hasSuffix("_total"), "counters end in _total: \(name)")
            #expect(meta.labels.count <= 3 || name == "pushworker_build_info", "small label sets: \(name)")
            // `app` only where the value set is the credentials folder's apps (bounded by configuration).
            let forbidden = name == "pushworker_breaker_open" ? ["token", "appId", "campaign", "campaignId", "userId", "msgId"]
                : ["token", "app", "appId", "campaign", "campaignId", "userId", "msgId"]
            for label in meta.labels { #expect(!forbidden.contains(label), "\(name): \(label)") }
        }
        #expect(Metrics.catalogue["pushworker_notifications_total"]?.labels == ["platform", "status", "reason"])
        #expect(Metrics.catalogue["pushworker_notifications_total"]?.type == "counter")
    }

    /// Every `metrics.increment/set/observe("name", [labels…])` in Sources uses a catalogued
    /// name and the catalogued label names (in order).
    @Test("the sources use only catalogued names and label sets")
    func sourcesUseTheCatalogue() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        let call = try Regex(#"metrics\.(increment|set|observe)\("([a-z_]+)"(?:,\s*\[([^\]]*)\])?"#)
        let labelName = try Regex(#"\(\"([a-z_]+)\","#)
        var seen = 0
        for case let url as URL in files where url.pathExtension == "swift" {
            let text = try String(contentsOf: url, encoding: .utf8)
            for match in text.matches(of: call) {
                seen += 1
                let name = String(match.output[2].substring ?? "")
                let labels = (match.output[3].substring.map(String.init) ?? "").matches(of: labelName).map { String($0.output[1].substring ?? "") }
                let meta = Metrics.catalogue[name]
                #expect(meta != nil, "\(name) used in \(url.lastPathComponent) is not in Metrics.catalogue")
                #expect(meta?.labels == labels, "\(name) in \(url.lastPathComponent): labels \(labels), catalogue \(meta?.labels ?? [])")
            }
        }
        #expect(seen >= 12)
    }

    @Test("ten thousand distinct provider reasons add one series per platform and status, not ten thousand")
    func reasonCardinality() throws {
        let metrics = Metrics()
        for index in 0..<10_000 {
            for (platform, status) in [("ios", DeliveryStatus.rejected), ("android", .rejected), ("web", .failed),
                                       ("x-\(index % 500)", .rejected)] {
                let result = ResultRecord(jobID: "j", appID: "a", campaignID: "c", subscriptionID: "s\(index)", platform: platform,
                                          status: status, reason: "Reason \(index) {\"weird\": true}", attempts: 1, atUnixMs: 0)
                ResultTally.countNotification(result, in: metrics)
                #expect(result.reason == "Reason \(index) {\"weird\": true}", "the result keeps it verbatim")
            }
        }
        for known in ["BadDeviceToken", "UNREGISTERED", "bad_token", "http_503", "http_599"] {
            let platform = known == "UNREGISTERED" ? "android" : "ios"
            ResultTally.countNotification(ResultRecord(jobID: "j", appID: "a", campaignID: "c", subscriptionID: "s", platform: platform,
                                                           status: .rejected, reason: known, attempts: 1, atUnixMs: 0), in: metrics)
        }
        let samples = try Self.parse(metrics.render()).samples.filter { $0.name == "pushworker_notifications_total" }
        #expect(samples.count == 8, "\(samples.map(\.labels))")
        #expect(samples.first { $0.labels == ["platform": "ios", "status": "rejected", "reason": "other"] }?.value == 10_001)
        #expect(samples.first { $0.labels == ["platform": "other", "status": "rejected", "reason": "other"] }?.value == 10_000)
        #expect(samples.contains { $0.labels["reason"] == "BadDeviceToken" } && samples.contains { $0.labels["reason"] == "http_503" })
        #expect(samples.contains { $0.labels == ["platform": "android", "status": "rejected", "reason": "UNREGISTERED"] })
    }

    @Test("a batch's results tallied together render exactly as counted one by one")
    func batchTally() {
        let results = [("ios", DeliveryStatus.sent, nil), ("ios", .sent, nil), ("android", .invalidToken, "UNREGISTERED"),
                       ("web", .failed, "http_503"), ("ios", .sent, nil), ("x-1", .rejected, "Odd")].enumerated().map {
            ResultRecord(jobID: "j", appID: "a", campaignID: "c", subscriptionID: "s\($0.offset)", platform: $0.element.0,
                         status: $0.element.1, reason: $0.element.2, attempts: 1, atUnixMs: 0)
        }
        let delays = [0.0004, 0.003, 0.003, 0.2, 7, 11]
        let oneByOne = Metrics(), batched = Metrics()
        for result in results { ResultTally.countNotification(result, in: oneByOne) }
        for delay in delays { oneByOne.observe("pushworker_result_delay_seconds", seconds: delay) }
        var tally = ResultTally()
        for result in results { tally.count(result) }
        tally.delays = delays
        tally.flush(into: batched)
        #expect(batched.render() == oneByOne.render())
        #expect(batched.counter("pushworker_notifications_total", [("platform", "ios"), ("status", "sent"), ("reason", "")]) == 3)
    }

    /// Every reason string the sources give a result (`reason: "…"`) is a label of its own,
    /// not `other`: the fixed sets cover our own reasons.
    @Test("every reason the sources produce is in the fixed label sets")
    func sourceReasonsAreLabels() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        let literal = try Regex(#"reason: "([A-Za-z_0-9]+)""#)
        var seen = Set<String>()
        for case let url as URL in files where url.pathExtension == "swift" && !url.path.contains("/PushSandbox/") {
            for match in try String(contentsOf: url, encoding: .utf8).matches(of: literal) {
                seen.insert(String(match.output[1].substring ?? ""))
            }
        }
        #expect(seen.count >= 15)
        let all = MetricLabels.possibleReasons(platform: .ios).union(MetricLabels.possibleReasons(platform: .android))
        for reason in seen { #expect(all.contains(reason), "\(reason) would be counted as other") }
    }

    @Test("from start-up: every counter at 0 for its known label sets, the build info, the process metrics")
    func startupSeries() throws {
        let metrics = Metrics()
        metrics.registerStartup(.worker)
        let text = metrics.render()
        #expect(text.contains("\npushworker_dlq_total 0\n"))
        #expect(text.contains(#"pushworker_jobs_total{outcome="dead_letter"} 0"#))
        for platform in ["ios", "android", "web"] {
            for status in ["sent", "invalid_token", "rejected", "failed", "expired", "duplicate"] {
                #expect(text.contains(#"pushworker_notifications_total{platform="\#(platform)",status="\#(status)",reason=""} 0"#))
            }
        }
        #expect(text.contains(#"pushworker_job_seconds_count 0"#))
        #expect(text.contains(#"pushworker_build_info{version="\#(BuildInfo.version)",commit=""#))
        let rss = try #require(text.split(separator: "\n").first { $0.hasPrefix("process_resident_memory_bytes ") })
        #expect((Double(rss.split(separator: " ")[1]) ?? 0) > 1_000_000)
        let fds = try #require(text.split(separator: "\n").first { $0.hasPrefix("process_open_fds ") })
        #expect((Int(fds.split(separator: " ")[1]) ?? 0) >= 3)
        #expect(text.contains("process_cpu_seconds_total "))
        // A first increment counts from the declared 0; a declaration never resets a value.
        metrics.increment("pushworker_dlq_total")
        metrics.declare("pushworker_dlq_total")
        #expect(metrics.counter("pushworker_dlq_total") == 1)
    }

    @Test("every catalogued counter and histogram is declared at start-up or has an open label set")
    func startupSeriesAreComplete() {
        let declared = Set((Metrics.startupSeries(.worker) + Metrics.startupSeries(.events) + Metrics.startupSeries(.api)).map(\.name))
        for (name, meta) in Metrics.catalogue where meta.type != "gauge" {
            #expect(declared.contains(name) || Metrics.openLabelSeries.contains(name), "\(name) is neither declared nor open")
        }
        for (name, labelSets) in Metrics.startupSeries(.worker) + Metrics.startupSeries(.events) + Metrics.startupSeries(.api) {
            for labels in labelSets { #expect(labels.map(\.0) == Metrics.catalogue[name]?.labels, "\(name) \(labels)") }
        }
    }
}

/// docs/configuration.md documents every variable and every metric with its label set.
@Suite("Configuration docs")
struct ConfigurationDocsTests {
    static func document() throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/configuration.md")
        return try String(contentsOf: url, encoding: .utf8)
    }

    @Test("every variable has a row with its default")
    func variables() throws {
        let text = try Self.document()
        for variable in Configuration.variables {
            let row = text.split(separator: "\n").first { $0.hasPrefix("| `\(variable.name)` |") }
            #expect(row != nil, "\(variable.name) missing")
            if let row, let value = variable.defaultValue { #expect(row.contains("`\(value)`"), "\(variable.name) default") }
        }
    }

    @Test("every metric has a row with its type and labels")
    func metrics() throws {
        let text = try Self.document()
        for (name, meta) in Metrics.catalogue {
            let labels = meta.labels.isEmpty ? "" : meta.labels.joined(separator: ", ") + " "
            let expected = "| `\(name)` | \(meta.type) | \(labels)|"
            #expect(text.contains(expected), "\(expected)")
        }
    }
}
