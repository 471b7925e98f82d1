import Foundation
import PushRuntime
import PushCore
import PushDelivery
import PushKafkaMock
import PushSandbox
import PushWorker
import PushEvents

/// The APNs request the benchmarks compare with `h2load`: one live iOS recipient of a bench job,
/// planned exactly as the worker plans it (URL `/3/device/<token>`, `apns-*` headers, payload),
/// with a provider JWT minted from `credentials` the way the worker mints it.
struct BenchSampleRequest {
    var url: String
    var headers: [(name: String, value: String)]
    var body: [UInt8]
    /// Average APNs body size over the job's live iOS recipients.
    var averageAPNsBody: Int

    /// The live iOS recipient of `job` whose body is closest to the job's average.
    static func apns(job: [UInt8], credentials: AppCredentials) throws -> BenchSampleRequest {
        let decoded = try JobDecoder.decode(job)
        guard let apns = credentials.apns else { throw DemoError("no APNs credentials: \(credentials.problems)") }
        var key = [UInt8](repeating: 7, count: 32)
        key[0] = 1
        let keyring = try MsgIDKeyring(parsing: "bench1:" + Data(key).base64EncodedString())
        let planner = JobPlanner(keyring: keyring, webPushPolicy: WebPushPolicy(extraAllowedHosts: ["127.0.0.1"]))
        let requests: [ProviderRequest] = planner.plan(decoded, profile: credentials.profile, now: Date()).compactMap {
            guard case .ready(let request) = $0.state, request.platform == .ios, !request.url.contains("/dead") else { return nil }
            return request
        }
        let average = requests.isEmpty ? 0 : requests.reduce(0) { $0 + $1.body.count } / requests.count
        guard let chosen = requests.min(by: { abs($0.body.count - average) < abs($1.body.count - average) }) else {
            throw DemoError("the job has no live iOS recipient to model the request on (use a mix with ios)")
        }
        let jwt = try APNSTokenCache(metrics: Metrics()).token(for: apns, now: Date().timeIntervalSince1970)
        var headers = chosen.headers.map { (name: $0.key, value: $0.value) }
        headers.append((name: "authorization", value: "bearer " + jwt))
        return BenchSampleRequest(url: chosen.url, headers: headers, body: chosen.body, averageAPNsBody: average)
    }
}

/// A reference load generator (`h2load`, `pushworker-curl-floor`) run as a child and measured
/// like a worker: its own CPU time from `wait4`'s rusage (the child is reaped), the sandbox's
/// from `/proc` over the same interval when its pid is given.
struct ReferenceRun {
    var finished: ProcessStats.Finished
    var sandboxCPUSeconds: Double?
    /// What the child printed (stdout and stderr).
    var text: String
    /// The command line as run, the provider JWT redacted.
    var command: String

    /// Runs `arguments` (under `taskset -c cpus` if given), output to the file `output`.
    static func measure(_ arguments: [String], cpus: String?, output: String, sandboxPID: Int32?) throws -> ReferenceRun {
        let command = cpus.map { ["taskset", "-c", $0] + arguments } ?? arguments
        let sandboxBefore = sandboxPID.flatMap { ProcessStats.cpuSeconds(pid: $0) } ?? 0
        let finished = try ProcessStats.runMeasured(command, output: output)
        let sandboxCPU = sandboxPID.flatMap { ProcessStats.cpuSeconds(pid: $0) }.map { $0 - sandboxBefore }
        return ReferenceRun(
            finished: finished, sandboxCPUSeconds: sandboxCPU,
            text: (try? String(contentsOfFile: output, encoding: .utf8)) ?? "",
            command: command.map { $0.hasPrefix("authorization:") ? "authorization: bearer <ES256 JWT>" : $0 }
                .map { $0.contains(" ") ? "'\($0)'" : $0 }.joined(separator: " "))
    }

    /// The child's CPU µs per succeeded request, nil if none succeeded.
    func cpuMicrosPerRequest(succeeded: Int) -> Double? {
        succeeded > 0 ? finished.cpuSeconds / Double(succeeded) * 1e6 : nil
    }

    /// The report fields every reference has (plus its output's tail when it failed).
    func entry(requests: Int, succeeded: Int, requestsPerSecond: Double?) -> [String: Any] {
        var entry: [String: Any] = [
            "exitStatus": Int(finished.status), "requests": requests, "succeeded": succeeded,
            "wallSeconds": BenchE2E.round(finished.wallSeconds, 3),
            "requestsPerSecond": BenchE2E.round(requestsPerSecond ?? 0, 0), "cpuSeconds": BenchE2E.round(finished.cpuSeconds, 3),
            "cpuMicrosPerRequest": cpuMicrosPerRequest(succeeded: succeeded).map { BenchE2E.round($0, 2) } ?? NSNull(),
            "peakRSSBytes": finished.maxRSSBytes,
            "sandboxCPUSeconds": sandboxCPUSeconds.map { BenchE2E.round($0, 3) } ?? NSNull(),
            "sandboxCPUMicrosPerRequest": succeeded > 0 ? sandboxCPUSeconds.map { BenchE2E.round($0 / Double(succeeded) * 1e6, 2) } ?? NSNull() : NSNull(),
            "command": command,
        ]
        if finished.status != 0 || succeeded == 0 { entry["output"] = String(text.suffix(1500)) }
        return entry
    }
}

/// `h2load` with one request, `connections` x `streams`, measured like a worker: its own CPU time
/// from `wait4`'s rusage (the child is reaped), the sandbox's from `/proc` when its pid is given.
enum BenchH2load {
    /// The report entry, and h2load's CPU µs per succeeded request (nil if none succeeded).
    struct Outcome {
        var entry: [String: Any]
        var cpuMicrosPerRequest: Double?
        var succeeded: Int
        /// h2load's arguments after the program name (`-n … URL`): the libcurl floor
        /// (`pushworker-curl-floor`) takes the same command line.
        var requestArguments: [String]
    }

    /// h2load's arguments after the program name for `sample` (`-n … URL`; the body is written
    /// to `folder`): what the libcurl floor takes too.
    static func requestArguments(requests: Int, connections: Int, streams: Int, sample: BenchSampleRequest, folder: URL) -> [String] {
        let bodyFile = folder.appendingPathComponent("apns-body.json").path
        _ = FileManager.default.createFile(atPath: bodyFile, contents: Data(sample.body))
        var arguments = ["-n", "\(requests)", "-c", "\(connections)", "-m", "\(streams)", "-d", bodyFile]
        for header in sample.headers { arguments += ["-H", "\(header.name): \(header.value)"] }
        arguments.append(sample.url)
        return arguments
    }

    static func run(requests: Int, connections: Int, streams: Int, sample: BenchSampleRequest, folder: URL,
                    cpus: String?, sandboxPID: Int32?) throws -> Outcome {
        let requestArguments = Self.requestArguments(requests: requests, connections: connections, streams: streams,
                                                     sample: sample, folder: folder)
        let run = try ReferenceRun.measure(["h2load"] + requestArguments, cpus: cpus,
                                           output: folder.appendingPathComponent("h2load.out").path, sandboxPID: sandboxPID)
        let parsed = parse(run.text)
        let succeeded = parsed.succeeded ?? 0
        let perRequest = run.cpuMicrosPerRequest(succeeded: succeeded)
        var entry = run.entry(requests: requests, succeeded: succeeded, requestsPerSecond: parsed.requestsPerSecond)
        entry["status2xx"] = parsed.status2xx ?? 0
        entry["bodyBytes"] = sample.body.count
        return Outcome(entry: entry, cpuMicrosPerRequest: perRequest, succeeded: succeeded, requestArguments: requestArguments)
    }

    static func parse(_ text: String) -> (succeeded: Int?, status2xx: Int?, requestsPerSecond: Double?) {
        var succeeded: Int?, status2xx: Int?, rate: Double?
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            if line.hasPrefix("requests:"), let index = words.firstIndex(of: "succeeded,"), index > 0 { succeeded = Int(words[index - 1]) }
            if line.hasPrefix("status codes:"), words.count > 2 { status2xx = Int(words[2]) }
            if line.hasPrefix("finished in"), let index = words.firstIndex(where: { $0.hasPrefix("req/s") }), index > 0 {
                rate = Double(words[index - 1])
            }
        }
        return (succeeded, status2xx, rate)
    }
}
