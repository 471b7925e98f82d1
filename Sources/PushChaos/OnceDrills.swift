import Foundation
import PushCore
import PushDevTools
import PushEncoding
import PushKafka
import PushProcess

/// The drills of docs/reliability.md's table "the once-promise when the provider does not
/// answer": real processes, real harm, one count each.
extension ChaosDrills {
    // MARK: clock-skew — leases on one clock

    /// A preload that shifts the wall clock (`CLOCK_REALTIME`, `gettimeofday`, `time`) of one
    /// process by `PW_CLOCK_SHIFT_SECONDS`, through the raw system call: no `dlsym`, no
    /// allocation, so it is safe inside jemalloc's own start-up (Debian's libfaketime hangs there).
    static let clockShiftSource = """
        #define _GNU_SOURCE
        #include <stdlib.h>
        #include <sys/syscall.h>
        #include <sys/time.h>
        #include <time.h>
        #include <unistd.h>

        static long long pw_shift_ns(void) {
            static long long shift = 0;
            static int ready = 0;
            if (!ready) {
                const char *value = getenv("PW_CLOCK_SHIFT_SECONDS");
                shift = value ? (long long)(strtod(value, 0) * 1e9) : 0;
                ready = 1;
            }
            return shift;
        }

        int clock_gettime(clockid_t clock, struct timespec *ts) {
            long result = syscall(SYS_clock_gettime, clock, ts);
            if (result == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) {
                long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + pw_shift_ns();
                ts->tv_sec = ns / 1000000000LL;
                ts->tv_nsec = ns % 1000000000LL;
            }
            return (int)result;
        }

        int gettimeofday(struct timeval *tv, void *tz) {
            struct timespec ts;
            (void)tz;
            if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
            if (tv) { tv->tv_sec = ts.tv_sec; tv->tv_usec = ts.tv_nsec / 1000; }
            return 0;
        }

        time_t time(time_t *out) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            if (out) *out = ts.tv_sec;
            return ts.tv_sec;
        }
        """

    /// Builds the clock-shift preload into `folder` with the system C compiler.
    static func buildClockShift(in folder: URL) throws -> String {
        let source = folder.appendingPathComponent("clockshift.c")
        let library = folder.appendingPathComponent("clockshift.so").path
        try clockShiftSource.write(to: source, atomically: true, encoding: .utf8)
        let compiler = ["/usr/bin/cc", "/usr/bin/gcc", "/usr/bin/clang"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let compiler else { throw ChaosError("no C compiler (cc, gcc or clang) to build the clock-shift preload") }
        let errors = folder.appendingPathComponent("clockshift.err").path
        let result = try Subprocess.capture(compiler, ["-shared", "-fPIC", "-O2", "-o", library, source.path], stderr: .file(errors), timeout: 60)
        guard result.status == 0 else {
            throw ChaosError("building the clock-shift preload failed: \((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "")")
        }
        return library
    }

    /// The wall clock of a worker as it logs it: its first log line's `at` minus the time the
    /// line was read (seconds; positive = ahead).
    static func loggedClockShift(_ worker: ChaosHarness.Worker, startedAt: Date) -> Double? {
        let log = worker.child.log()
        guard let line = log.split(separator: "\n").first(where: { $0.hasPrefix("{\"at\":\"") }),
              let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let text = object["at"] as? String, let at = RFC3339Timestamp.parse(text) else { return nil }
        return at.timeIntervalSince(startedAt)
    }

    /// Three workers — one 30 s ahead, one 30 s behind, one on time — process copies of the same
    /// jobs at once against a slow provider (so claims overlap): leases are judged by Redis's
    /// clock, so none takes a live lease from another and no device is notified twice.
    static func clockSkew(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "300"], partitions: 4)
        let preload = try buildClockShift(in: harness.folder)
        let campaign = ChaosCampaign.make(prefix: "skew", jobs: options.scaled(20, minimum: 4), perJob: 50, seed: options.seed)
        let copies = 3
        let watcher = try ResultWatcher(harness, expected: campaign.expected)
        let started = Date()
        let workers = try [30.0, -30.0, 0.0].map { shift in
            try harness.startWorker(extra: shift == 0 ? ["PUSHWORKER_MAX_IN_FLIGHT": "100"]
                                    : ["LD_PRELOAD": preload, "PW_CLOCK_SHIFT_SECONDS": "\(shift)", "PUSHWORKER_MAX_IN_FLIGHT": "100"])
        }
        guard ChildProcess.waitFor(timeout: 90, { workers.allSatisfy { $0.readyz() == 200 } }) else {
            report.check("three workers ready", workers.map { "\($0.readyz())" }.joined(separator: " / "), false)
            for worker in workers { worker.signal(SIGKILL) }
            return
        }
        let ahead = loggedClockShift(workers[0], startedAt: started) ?? 0
        let behind = loggedClockShift(workers[1], startedAt: started) ?? 0
        report.check("the shifted workers' clocks run 30 s ahead and behind (their logs)", String(format: "%+.1f s / %+.1f s", ahead, behind),
                     ahead > 25 && ahead < 40 && behind < -25 && behind > -40)
        var messages: [(key: String, value: [UInt8])] = []
        for job in campaign.jobs { for copy in 0..<copies { messages.append((key: "\(job.key)#\(copy)", value: job.value)) } }
        try harness.produce(messages)
        let expectedResults = copies * campaign.recipientCount
        let deadline = Date().addingTimeInterval(180)
        while Date() < deadline && watcher.results < expectedResults { watcher.update(0.2) }
        let duplicates = sandboxDuplicates(harness)
        let tally = Self.tally(watcher)
        report.figure("results", "\(watcher.results) (\(watcher.statusSummary))")
        report.check("every copy's recipient has a result", "\(watcher.results)/\(expectedResults)", watcher.results >= expectedResults)
        report.check("each device notified once (msgIds accepted twice)", "\(duplicates)", duplicates == 0)
        report.check("exactly one sent result per recipient", "\(tally.exactlyOneSent)/\(campaign.recipientCount), \(tally.moreThanOneSent) with more",
                     tally.exactlyOneSent == campaign.recipientCount && tally.moreThanOneSent == 0)
        for worker in workers { worker.signal(SIGTERM) }
        for worker in workers { _ = worker.wait(timeout: 30) }
    }

    // MARK: retry-too-far — a held retry never delays a due one

    /// A retry message due in 2099 goes to the dead-letter topic (`not_before_too_far`); one due
    /// in 20 s is held without pausing its partition; a due retry behind both, on the same
    /// partition, gets its results at once.
    static func retryTooFar(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        let harness = try ChaosHarness(options, name: report.name, partitions: 1)
        let far = ChaosCampaign.make(prefix: "far", jobs: 1, perJob: 5, seed: options.seed)
        let later = ChaosCampaign.make(prefix: "later", jobs: 1, perJob: 5, seed: options.seed + 1)
        let due = ChaosCampaign.make(prefix: "due", jobs: 1, perJob: 10, seed: options.seed + 2)
        func retry(_ campaign: ChaosCampaign, notBefore: String) throws -> [UInt8] {
            guard case .object(var root) = try JSONParser.parse(campaign.jobs[0].value) else { throw ChaosError("not a job") }
            root["attempt"] = .number(JSONNumber(1))
            root["notBefore"] = .string(notBefore)
            return JSONValue.object(root).jsonBytes()
        }
        let inTwenty = RFC3339Timestamp.format(Date().addingTimeInterval(20))
        let dlq = try harness.reader("push.dlq.v1")
        let watcher = try ResultWatcher(harness, expected: due.expected.union(later.expected))
        try harness.produce([(key: "far", value: try retry(far, notBefore: "2099-01-01T00:00:00Z")),
                             (key: "later", value: try retry(later, notBefore: inTwenty)),
                             (key: "due", value: try retry(due, notBefore: RFC3339Timestamp.format(Date().addingTimeInterval(-1))))],
                            topic: "push.retry.v1")
        let worker = try harness.startWorker()
        let start = Date()
        var dueAt: Double?
        let deadline = Date().addingTimeInterval(90)
        while Date() < deadline && (dueAt == nil || watcher.covered.count < due.recipientCount + later.recipientCount) {
            watcher.update(0.2)
            if dueAt == nil && due.expected.isSubset(of: watcher.covered) { dueAt = Date().timeIntervalSince(start) }
        }
        dlq.poll(until: 10) { messages in messages.contains { Self.header($0, "error") == "not_before_too_far" } }
        let farDead = dlq.messages.filter { Self.header($0, "error") == "not_before_too_far" }
        let laterResults = later.expected.intersection(watcher.covered).count
        report.check("the retry due in 2099 is dead-lettered (not_before_too_far)", "\(farDead.count)", farDead.count == 1)
        report.check("the due retry behind it is not delayed", dueAt.map { format($0) } ?? "no results",
                     (dueAt ?? 999) < 15)
        report.check("the retry due in 20 s is sent when due", "\(laterResults)/\(later.recipientCount)", laterResults == later.recipientCount)
        report.figure("results", watcher.statusSummary)
        stop(worker, &report)
    }

    static func header(_ message: KafkaMessage, _ name: String) -> String? {
        message.headers.first { $0.name == name }.map { String(decoding: $0.value ?? [], as: UTF8.self) }
    }
}

extension ChaosDrills {
    // MARK: what the sandbox accepted, by msgId

    /// Per msgId the sandbox accepted: how many times, and the replace keys the copies carried
    /// (APNs `apns-collapse-id`, Web Push `topic`, FCM `android.collapse_key`, Huawei
    /// `android.notification.tag`).
    struct Acceptances {
        var count: [String: Int] = [:]
        var keys: [String: Set<String>] = [:]

        /// msgIds accepted more than once.
        var acceptedTwice: Int { count.values.filter { $0 > 1 }.count }
        /// msgIds accepted more than twice (one resend at most).
        var acceptedThrice: Int { count.values.filter { $0 > 2 }.count }
        /// Copies a device would show twice: a msgId accepted more than once whose copies do not
        /// all carry one replace key.
        var deviceVisibleDuplicates: Int { count.filter { $0.value > 1 && (keys[$0.key]?.count ?? 0) != 1 }.count }
    }

    static func acceptances(_ harness: ChaosHarness) -> Acceptances {
        let text = ChaosHarness.curl(["-s", "--max-time", "10", "--cacert", harness.certificate, harness.origin + "/_sandbox/messages"])
        var result = Acceptances()
        for line in text.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let msgID = object["msgId"] as? String else { continue }
            result.count[msgID, default: 0] += 1
            if let key = replaceKey(object) { result.keys[msgID, default: []].insert(key) }
        }
        return result
    }

    static func replaceKey(_ record: [String: Any]) -> String? {
        let headers = record["headers"] as? [String: Any] ?? [:]
        let body = record["body"] as? [String: Any]
        let message = body?["message"] as? [String: Any]
        let android = message?["android"] as? [String: Any]
        switch record["platform"] as? String {
        case "ios": return headers["apns-collapse-id"] as? String
        case "web": return headers["topic"] as? String
        case "android": return android?["collapse_key"] as? String
        case "huawei": return (android?["notification"] as? [String: Any])?["tag"] as? String
        default: return nil
        }
    }

    // MARK: slow-provider — answers later than the request timeout

    /// The provider answers in 800–1400 ms, the worker gives up after 1000 ms and makes 3
    /// attempts: under `replace` a request written and never answered is resent once with the
    /// same replace key (no copy a device would show twice), under `never` it is not resent
    /// (no msgId accepted twice); no result says `timeout`.
    static func slowProvider(_ options: ChaosOptions, policy: String, _ report: inout DrillReport) throws {
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "800", "--latency-jitter-ms", "600"])
        let campaign = ChaosCampaign.make(prefix: "slow", jobs: options.scaled(5, minimum: 1), perJob: 20, platforms: ["ios"],
                                          seed: options.seed, collapseID: nil)
        let watcher = try ResultWatcher(harness, expected: campaign.expected)
        try harness.produce(campaign.jobs)
        let worker = try harness.startWorker(extra: ["PUSHWORKER_REQUEST_TIMEOUT_MS": "1000", "PUSHWORKER_CLAIM_LEASE_SECONDS": "5",
                                                     "PUSHWORKER_MAX_ATTEMPTS": "3", "PUSHWORKER_RESEND_UNANSWERED": policy])
        watcher.wait(timeout: 120)
        let accepted = acceptances(harness)
        report.figure("results", "\(watcher.statusSummary); reasons \(watcher.reasons.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
        report.figure("accepted by the sandbox", "\(accepted.count.values.reduce(0, +)) requests for \(accepted.count.count) msgIds")
        report.figure("sent after an unanswered attempt (unanswered_resent)", "\(watcher.certainties["unanswered_resent"] ?? 0)")
        report.check("every recipient has a final result", "\(watcher.covered.count)/\(campaign.recipientCount)", watcher.complete)
        report.check("no result says timeout for a request the provider may have shown", "\(watcher.reasons["timeout"] ?? 0)",
                     (watcher.reasons["timeout"] ?? 0) == 0)
        report.check("copies a device would show twice (a msgId accepted twice with different replace keys)",
                     "\(accepted.deviceVisibleDuplicates)", accepted.deviceVisibleDuplicates == 0)
        if policy == "never" {
            report.check("under never, msgIds accepted twice", "\(accepted.acceptedTwice)", accepted.acceptedTwice == 0)
        } else {
            report.figure("msgIds accepted twice (one replace key each)", "\(accepted.acceptedTwice)")
            report.check("no msgId accepted more than twice (one resend at most)", "\(accepted.acceptedThrice)", accepted.acceptedThrice == 0)
        }
        stop(worker, &report)
    }

    // MARK: drain-slow — SIGTERM while the provider takes 3–6 s

    /// SIGTERM with a 3–6 s provider and a 3 s drain: the worker stops claiming at once, keeps
    /// the answers that come within the drain, aborts the rest (counted as unanswered), exits 0;
    /// a second worker redoes the jobs: no copy a device would show twice, nothing lost.
    static func drainSlow(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "3000", "--latency-jitter-ms", "3000"])
        let campaign = ChaosCampaign.make(prefix: "drain", jobs: options.scaled(10, minimum: 2), perJob: 20, platforms: ["ios"],
                                          seed: options.seed, collapseID: nil)
        let watcher = try ResultWatcher(harness, expected: campaign.expected)
        try harness.produce(campaign.jobs)
        let settings = ["PUSHWORKER_DRAIN_SECONDS": "3", "PUSHWORKER_REQUEST_TIMEOUT_MS": "10000", "PUSHWORKER_CLAIM_LEASE_SECONDS": "25",
                        "PUSHWORKER_MAX_IN_FLIGHT": "100"]
        let first = try harness.startWorker(extra: settings)
        guard ChildProcess.waitFor(timeout: 60, { (first.inFlight() ?? 0) >= 30 }) else {
            report.check("sends in flight before SIGTERM", "\(first.inFlight() ?? -1)", false)
            first.signal(SIGKILL)
            return
        }
        let inFlight = first.inFlight() ?? -1
        let signalled = Date()
        first.signal(SIGTERM)
        let status = first.wait(timeout: 30)
        let drain = Date().timeIntervalSince(signalled)
        report.figure("in flight at SIGTERM", "\(inFlight)")
        report.check("the worker exits 0 within the drain (3 s) and its wind-down", "\(status.map { "\($0)" } ?? "running") after \(format(drain))",
                     status == 0 && drain < 15)
        let second = try harness.startWorker(extra: settings)
        watcher.wait(timeout: 120)
        let accepted = acceptances(harness)
        report.figure("results", watcher.statusSummary)
        report.figure("msgIds accepted twice (one replace key each)", "\(accepted.acceptedTwice)")
        report.check("every recipient has a final result", "\(watcher.covered.count)/\(campaign.recipientCount)", watcher.complete)
        report.check("copies a device would show twice", "\(accepted.deviceVisibleDuplicates)", accepted.deviceVisibleDuplicates == 0)
        report.check("no msgId accepted more than twice", "\(accepted.acceptedThrice)", accepted.acceptedThrice == 0)
        stop(second, &report)
    }

    // MARK: tenant-429 — one app's long backoff does not stall another app

    /// App A's FCM answers 429 `QUOTA_EXCEEDED` with `Retry-After: 3600`: its waiting recipients
    /// leave for the retry topic (no in-flight slot held); app B's job, enqueued after, is sent
    /// within 10 s.
    static func tenant429(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        let other = "app_other"
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "50", "--app", other])
        let busy = ChaosCampaign.make(prefix: "busy", jobs: 1, perJob: 150, platforms: ["android"], seed: options.seed)
        let small = ChaosCampaign.make(prefix: "small", jobs: 1, perJob: 10, platforms: ["android"], seed: options.seed + 1, app: other)
        let project = "sandbox-" + ChaosHarness.app.lowercased().filter { $0.isLetter || $0.isNumber || $0 == "-" }
        try harness.setFaults(#"{"pathPrefix":"/v1/projects/\#(project)/","throttleShare":1,"retryAfter":3600}"#)
        let watcher = try ResultWatcher(harness, expected: small.expected)
        let worker = try harness.startWorker(extra: ["PUSHWORKER_MAX_IN_FLIGHT": "100"])
        guard ChildProcess.waitFor(timeout: 60, { worker.readyz() == 200 }) else {
            report.check("worker ready", "\(worker.readyz())", false)
            worker.signal(SIGKILL)
            return
        }
        try harness.produce(busy.jobs)
        guard ChildProcess.waitFor(timeout: 30, { ((harness.sandboxStats()["responses"] as? [String: Any])?["429"] as? Int ?? 0) > 0 }) else {
            report.check("app A answered 429", "none", false)
            stop(worker, &report)
            return
        }
        let enqueued = Date()
        try harness.produce(small.jobs)
        var sentAt: Double?
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline && sentAt == nil {
            watcher.update(0.1)
            if (watcher.statuses["sent"] ?? 0) >= small.recipientCount { sentAt = Date().timeIntervalSince(enqueued) }
        }
        let requests = (harness.sandboxStats()["responses"] as? [String: Any])?["429"] as? Int ?? 0
        report.figure("app A's requests answered 429", "\(requests)")
        report.check("app B's 10 recipients all sent within 10 s", sentAt.map { format($0) } ?? "not all sent",
                     (sentAt ?? 999) <= 10)
        let parked = Int(worker.metricsText().split(separator: "\n").first { $0.hasPrefix("pushworker_parked_total ") }?
            .split(separator: " ").last.flatMap { Double($0) } ?? 0)
        report.check("app A's waiting recipients went to the retry topic (parked)", "\(parked)", parked > 0)
        stop(worker, &report)
    }

    // MARK: provider-outage — 20 s without a connection

    /// Every connection to the provider is refused for 20 s mid-campaign: the endpoint's
    /// breaker opens, its recipients wait without spending attempts, and after the outage every
    /// recipient is sent: none `failed`.
    static func providerOutage(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "100"])
        let campaign = ChaosCampaign.make(prefix: "outage", jobs: options.scaled(20, minimum: 4), perJob: 50, seed: options.seed)
        let watcher = try ResultWatcher(harness, expected: campaign.expected)
        let worker = try harness.startWorker(extra: ["PUSHWORKER_MAX_IN_FLIGHT": "200", "PUSHWORKER_REQUEST_TIMEOUT_MS": "2000",
                                                     "PUSHWORKER_CLAIM_LEASE_SECONDS": "5"])
        // The first half before the outage, the second half into it: however fast the worker,
        // half the campaign meets the outage.
        let half = campaign.jobs.count / 2
        try harness.produce(Array(campaign.jobs[..<half]))
        guard watcher.wait(fraction: 0.2, timeout: 60) else {
            report.check("campaign started", "\(watcher.covered.count) results", false)
            stop(worker, &report)
            return
        }
        try harness.setFaults(#"{"outageSeconds":20}"#)
        let outageStart = Date()
        try harness.produce(Array(campaign.jobs[half...]))
        watcher.wait(timeout: 180)
        let done = Date().timeIntervalSince(outageStart)
        let failed = watcher.statuses["failed"] ?? 0
        let breaker = worker.metricsText().split(separator: "\n").contains { $0.hasPrefix("pushworker_breaker_open{") }
        report.figure("results", watcher.statusSummary)
        report.figure("complete after the outage began", format(done))
        report.check("every recipient has a final result", "\(watcher.covered.count)/\(campaign.recipientCount)", watcher.complete)
        report.check("none failed", "\(failed)", failed == 0)
        report.check("every recipient sent", "\(watcher.statuses["sent"] ?? 0)/\(campaign.recipientCount)",
                     (watcher.statuses["sent"] ?? 0) >= campaign.recipientCount)
        report.check("the endpoint's breaker opened (pushworker_breaker_open)", breaker ? "yes" : "no", breaker)
        stop(worker, &report)
    }
}
