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
