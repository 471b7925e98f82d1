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
    /// (`-n N -c C -m S -d BODY -H … URL`). `cpus`: run under `taskset -c cpus` like h2load.
    static func run(requestArguments: [String], requests: Int, cpus: String?, output: String, sandboxPID: Int32?) throws -> Outcome {
        guard let binary = binaryPath else {
            return Outcome(report: ["skipped": "pushworker-curl-floor not found next to the pushworker binary (swift build -c release builds both)"],
                           cpuMicrosPerRequest: nil)
        }
        let run = try ReferenceRun.measure([binary] + requestArguments, cpus: cpus, output: output, sandboxPID: sandboxPID)
        let parsed = parse(run.text)
        let succeeded = parsed.succeeded ?? 0
        let perRequest = run.cpuMicrosPerRequest(succeeded: succeeded)
        var report = run.entry(requests: requests, succeeded: succeeded, requestsPerSecond: parsed.requestsPerSecond)
        report["libcurl"] = parsed.version ?? NSNull()
        return Outcome(report: report, cpuMicrosPerRequest: perRequest)
    }

    /// Parses "requests: N total, K succeeded, R req/s, cpu S s, U us/request (libcurl/x.y.z …)".
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
