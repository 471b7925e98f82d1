import Foundation

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
        var arguments = [binary] + requestArguments
        if let cpus { arguments = ["taskset", "-c", cpus] + arguments }
        let sandboxBefore = sandboxPID.flatMap { ProcessStats.cpuSeconds(pid: $0) } ?? 0
        let finished = try ProcessStats.runMeasured(arguments, output: output)
        let sandboxCPU = (sandboxPID.flatMap { ProcessStats.cpuSeconds(pid: $0) } ?? 0) - sandboxBefore
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        let parsed = parse(text)
        let succeeded = parsed.succeeded ?? 0
        let perRequest = succeeded > 0 ? finished.cpuSeconds / Double(succeeded) * 1e6 : nil
        var report: [String: Any] = [
            "exitStatus": Int(finished.status), "requests": requests, "succeeded": succeeded,
            "requestsPerSecond": BenchE2E.round(parsed.requestsPerSecond ?? 0, 0),
            "cpuSeconds": BenchE2E.round(finished.cpuSeconds, 3),
            "cpuMicrosPerRequest": perRequest.map { BenchE2E.round($0, 2) } ?? NSNull(),
            "peakRSSBytes": finished.maxRSSBytes, "wallSeconds": BenchE2E.round(finished.wallSeconds, 3),
            "sandboxCPUMicrosPerRequest": succeeded > 0 ? BenchE2E.round(sandboxCPU / Double(succeeded) * 1e6, 2) : NSNull(),
            "libcurl": parsed.version ?? NSNull(),
            "command": arguments.map { $0.hasPrefix("authorization:") ? "authorization: bearer <ES256 JWT>" : $0 }
                .map { $0.contains(" ") ? "'\($0)'" : $0 }.joined(separator: " "),
        ]
        if finished.status != 0 || succeeded == 0 { report["output"] = String(text.suffix(1500)) }
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
