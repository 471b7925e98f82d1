import Foundation
import PushWorker
import PushEvents
import PushCore
import PushKafkaMock
import PushSandbox

/// Runs `pushworker-curl-floor` (Sources/CurlFloor/main.c, built next to `pushworker`) with the
/// same request, connections × streams and request count as the h2load comparison, and
/// measures it the same way (`wait4` rusage of the reaped process ÷ succeeded requests).
///
/// What it shows: the per-request CPU of libcurl itself (plus nghttp2, OpenSSL, libc and the
/// kernel) with nothing of ours around it — easy handles configured once and re-added, no
/// per-request option, header list or body copy. The worker's HTTP I/O thread
/// (`pw-http-io` in `threadsOfFirstWorker`) does the same work plus its own bookkeeping, so
/// `ioThread ÷ curlFloor` is what the adapter adds and `curlFloor ÷ h2load` is what choosing
/// libcurl costs before any line of ours runs (docs/performance.md).
enum CurlFloorReference {
    /// The reference binary: next to the running executable (both are products of this package).
    static var binaryPath: String? {
        let candidate = URL(fileURLWithPath: ChildProcess.selfPath).deletingLastPathComponent()
            .appendingPathComponent("pushworker-curl-floor").path
        return FileManager.default.isExecutableFile(atPath: candidate) ? candidate : nil
    }

    struct Outcome {
        var report: [String: Any]
        var cpuMicrosPerRequest: Double?
    }

    /// `requestArguments`: the h2load-compatible arguments after the program name
    /// (`-n N -c C -m S -d BODY -H … URL`). `mode`: `tuned` (the reference line: cork per loop
    /// turn, pre-parsed URL, lean headers, no proxy look-up, socket API) or `plain` (the textbook
    /// perform/poll loop, kept for the record). `cpus`: run under `taskset -c cpus` like h2load.
    static func run(mode: String, requestArguments: [String], requests: Int, cpus: String?, output: String, sandboxPID: Int32?) throws -> Outcome {
        guard let binary = binaryPath else {
            return Outcome(report: ["skipped": "pushworker-curl-floor not found next to the pushworker binary (swift build -c release builds both)"],
                           cpuMicrosPerRequest: nil)
        }
        var outcome = try runSender(binary, arguments: ["--mode", mode] + requestArguments, requests: requests, cpus: cpus,
                                    output: output, sandboxPID: sandboxPID)
        outcome.report["mode"] = mode
        return outcome
    }

    /// Runs any sender that takes h2load's arguments and prints the floor's result line (the
    /// libcurl floor, or a peer such as scripts/peers/go-h2-sender), measured like h2load.
    static func runSender(_ binary: String, arguments: [String], requests: Int, cpus: String?, output: String, sandboxPID: Int32?) throws -> Outcome {
        let run = try ReferenceRun.measure([binary] + arguments, cpus: cpus, output: output, sandboxPID: sandboxPID)
        let parsed = parse(run.text)
        let succeeded = parsed.succeeded ?? 0
        let perRequest = run.cpuMicrosPerRequest(succeeded: succeeded)
        var report = run.entry(requests: requests, succeeded: succeeded, requestsPerSecond: parsed.requestsPerSecond)
        report["libcurl"] = parsed.version ?? NSNull()
        report["version"] = parsed.version ?? NSNull()
        return Outcome(report: report, cpuMicrosPerRequest: perRequest)
    }

    /// The references every bench runs after h2load with h2load's arguments: the tuned libcurl
    /// floor (the reference line), the plain one (for the record) and each `peers` binary.
    struct All {
        var tuned: Outcome
        var plain: Outcome
        var peers: [[String: Any]]
    }

    static func runAll(requestArguments: [String], requests: Int, cpus: String?, folder: URL, sandboxPID: Int32?,
                       peers: [String], step: (String) -> Void) throws -> All {
        step("libcurl floor (tuned): pushworker-curl-floor --mode tuned with the same arguments")
        let tuned = try run(mode: "tuned", requestArguments: requestArguments, requests: requests, cpus: cpus,
                            output: folder.appendingPathComponent("curl-floor-tuned.out").path, sandboxPID: sandboxPID)
        step("libcurl floor (plain, for the record): --mode plain")
        let plain = try run(mode: "plain", requestArguments: requestArguments, requests: requests, cpus: cpus,
                            output: folder.appendingPathComponent("curl-floor-plain.out").path, sandboxPID: sandboxPID)
        var entries: [[String: Any]] = []
        for (index, peer) in peers.enumerated() {
            step("peer: \(peer) with the same arguments")
            var outcome = try runSender(peer, arguments: requestArguments, requests: requests, cpus: cpus,
                                        output: folder.appendingPathComponent("peer-\(index).out").path, sandboxPID: sandboxPID)
            outcome.report["binary"] = peer
            outcome.report.removeValue(forKey: "libcurl")
            entries.append(outcome.report)
        }
        return All(tuned: tuned, plain: plain, peers: entries)
    }

    /// Parses "requests: N total, K succeeded, R req/s, cpu S s, U us/request (libcurl/x.y.z …)"
    /// (a peer prints its own version, e.g. "(go1.19.8 net/http …)").
    static func parse(_ text: String) -> (succeeded: Int?, requestsPerSecond: Double?, version: String?) {
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("requests:") }) else { return (nil, nil, nil) }
        let words = line.split(separator: " ")
        var succeeded: Int?, rate: Double?, version: String?
        if let index = words.firstIndex(where: { $0.hasPrefix("succeeded") }), index > 0 { succeeded = Int(words[index - 1]) }
        if let index = words.firstIndex(where: { $0.hasPrefix("req/s") }), index > 0 { rate = Double(words[index - 1]) }
        if let open = line.firstIndex(of: "(") {
            version = line[line.index(after: open)...].split(separator: " ").first.map(String.init)
        }
        return (succeeded, rate, version)
    }
}
