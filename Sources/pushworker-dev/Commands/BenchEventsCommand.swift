import Foundation
import PushRuntime
import PushProcess
import PushCLI
import PushCore
import PushKafka
import PushWorker
import PushEvents
import PushDevTools

/// `pushworker-dev bench events`: the tracking endpoint under `wrk` (docs/events.md). Starts a
/// `pushworker-dev dev-broker` and a `redis-server`, then `pushworker events` pinned to ONE core
/// with `taskset`, and drives it from another core with `wrk` (a Lua script POSTing a valid,
/// signed msgId over HTTP/1.1 keep-alive). Prints the wrk summary and one JSON line
/// `{"requestsPerSecond", "non2xx", "accepted", "cores":1, ...}`; exits 1 if the rate is below
/// `--min-rps` (default 0: report only).
public enum BenchEventsCommand {
    static let usage = """
    usage: pushworker-dev bench events [--duration S] [--connections N] [--threads N] [--server-core C]
                                   [--client-cores LIST] [--min-rps N]

    Measures valid tracking pings per second with wrk (apt: wrk) against `pushworker events`
    pinned to one core (taskset). Defaults: 10 s, 64 connections, 1 wrk thread, server on core 0,
    wrk/broker/redis on the other cores. Build with -c release for meaningful numbers.
    """

    public static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage,
                                                values: ["duration", "connections", "threads", "server-core", "client-cores", "min-rps"],
                                                exitCode: &code) else { return code }
        guard parsed.positionals.isEmpty else { return CommandSupport.usageError("unexpected argument '\(parsed.positionals[0])'", usage: usage) }
        func number(_ name: String, _ fallback: Int) -> Int? {
            guard let text = parsed.value(name) else { return fallback }
            return Int(text)
        }
        let cores = ProcessInfo.processInfo.activeProcessorCount
        guard let duration = number("duration", 10), let connections = number("connections", 64),
              let threads = number("threads", 1), let serverCore = number("server-core", 0),
              let minimum = number("min-rps", 0), duration > 0, connections > 0, threads > 0 else {
            return CommandSupport.usageError("--duration, --connections, --threads, --server-core and --min-rps take whole numbers (the first three > 0)", usage: usage)
        }
        let clientCores = parsed.value("client-cores")
            ?? (cores > 1 ? (0..<cores).filter { $0 != serverCore }.map(String.init).joined(separator: ",") : "0")
        for tool in ["/usr/bin/wrk", "/usr/bin/taskset"] where !FileManager.default.isExecutableFile(atPath: tool) {
            printError("bench events: \(tool) is missing (apt-get install -y wrk util-linux)")
            return ExitCode.unavailable
        }
        do {
            return try run(duration: duration, connections: connections, threads: threads, serverCore: serverCore,
                           clientCores: clientCores, minimum: minimum)
        } catch {
            printError("bench events: \(error)")
            return ExitCode.software
        }
    }

    struct BenchError: Error, CustomStringConvertible { let description: String }

    static func run(duration: Int, connections: Int, threads: Int, serverCore: Int, clientCores: String, minimum: Int) throws -> Int32 {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-bench-events-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let me = ChildProcess.selfPath
        printError("bench events: starting dev-broker and redis-server on cores \(clientCores)")
        let bootstrapFile = folder.appendingPathComponent("bootstrap").path
        let broker = try ChildProcess("/usr/bin/taskset", ["-c", clientCores, me, "dev-broker", "--bootstrap-file", bootstrapFile,
                                                            "--topic", "push.events.v1:4"],
                                      log: folder.appendingPathComponent("broker.log"))
        defer { broker.stop() }
        var bootstrap = ""
        guard ChildProcess.waitFor(timeout: 20, {
            bootstrap = (try? String(contentsOfFile: bootstrapFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            return !bootstrap.isEmpty
        }) else { throw BenchError(description: "dev-broker did not start: \(broker.log().suffix(500))") }
        let redis = try LocalRedis(folder: folder)
        defer { redis.child.stop() }

        var keyBytes = [UInt8](repeating: 0, count: 32)
        for index in keyBytes.indices { keyBytes[index] = UInt8.random(in: 0...255) }
        let keys = "bench:" + Data(keyBytes).base64EncodedString()
        let keyring = try MsgIDKeyring(parsing: keys)
        let msgID = MsgID.sign(MsgIDFields(appID: "app_bench", campaignID: "cmp_bench", userID: "u1", subscriptionID: "sub_1",
                                           platform: "ios", variant: "A"), keyring: keyring)
        let port = ChildProcess.freePort()
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PUSHWORKER_") && !$0.key.hasPrefix("EVENT_") }
        environment["PUSHWORKER_KAFKA_BROKERS"] = bootstrap
        environment["PUSHWORKER_REDIS_URL"] = redis.url
        environment["PUSHWORKER_MSGID_KEYS"] = keys
        environment["PUSHWORKER_HTTP_ADDR"] = "127.0.0.1:\(port)"
        environment["PUSHWORKER_LOG_LEVEL"] = "warning"
        environment["EVENT_RATE_LIMIT"] = "100000000/s"
        environment["EVENT_HTTP_THREADS"] = "1"
        // Every wrk connection comes from 127.0.0.1: no per-address connection cap here.
        environment["EVENT_CONNECTIONS_PER_IP"] = "0"
        printError("bench events: starting `pushworker events` pinned to core \(serverCore)")
        let server = try ChildProcess("/usr/bin/taskset", ["-c", String(serverCore), ChildProcess.workerPath, "events"],
                                      log: folder.appendingPathComponent("events.log"), environment: environment)
        defer { server.stop() }
        guard ChildProcess.waitFor(timeout: 20, { LocalRedis.answers(port: port) }) else {
            throw BenchError(description: "events did not start: \(server.log().suffix(800))")
        }
        let script = folder.appendingPathComponent("ping.lua")
        try """
        wrk.method = "POST"
        wrk.path = "/v1/e/o/\(msgID)"
        wrk.headers["Content-Length"] = "0"
        """.write(to: script, atomically: true, encoding: .utf8)
        // Warm up (connections, librdkafka batches), then measure.
        _ = try capture("/usr/bin/taskset", ["-c", clientCores, "/usr/bin/wrk", "-t", "1", "-c", "8", "-d", "2s", "-s", script.path,
                                             "http://127.0.0.1:\(port)"])
        let before = acceptedCount(port: port)
        let pid = server.process.processIdentifier
        let cpuBefore = cpuSeconds(pid: pid)
        printError("bench events: wrk -t\(threads) -c\(connections) -d\(duration)s")
        let output = try capture("/usr/bin/taskset", ["-c", clientCores, "/usr/bin/wrk", "-t", String(threads), "-c", String(connections),
                                                      "-d", "\(duration)s", "--latency", "-s", script.path, "http://127.0.0.1:\(port)"])
        let cpu = cpuSeconds(pid: pid) - cpuBefore
        let accepted = acceptedCount(port: port) - before
        print(output)
        let rps = output.split(separator: "\n").first { $0.hasPrefix("Requests/sec:") }
            .flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
        let non2xx = output.split(separator: "\n").first { $0.contains("Non-2xx") }
            .flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
        // The server's own CPU time (user + system) during the run: on a shared machine the wall-clock
        // rate understates what one dedicated core does; accepted / CPU seconds does not.
        let perCPUSecond = cpu > 0 ? Int(Double(accepted) / cpu) : 0
        let microseconds = accepted > 0 ? cpu * 1e6 / Double(accepted) : 0
        print("{\"benchmark\":\"events\",\"requestsPerSecond\":\(Int(rps)),\"non2xx\":\(non2xx),\"accepted\":\(accepted),"
              + "\"serverCPUSeconds\":\(String(format: "%.2f", cpu)),\"cpuMicrosecondsPerRequest\":\(String(format: "%.1f", microseconds)),"
              + "\"requestsPerCPUSecond\":\(perCPUSecond),\"cores\":1,\"connections\":\(connections),\"durationSeconds\":\(duration)}")
        if non2xx > 0 { printError("bench events: \(non2xx) responses were not 204"); return ExitCode.failure }
        if minimum > 0 && rps < Double(minimum) {
            printError("bench events: \(Int(rps)) req/s is below --min-rps \(minimum)")
            return ExitCode.failure
        }
        return ExitCode.ok
    }

    /// Runs a tool to completion and returns its standard output.
    static func capture(_ executable: String, _ arguments: [String]) throws -> String {
        try Subprocess.capture(executable, arguments, stderr: .inherit, timeout: 600).stdout
    }

    /// User + system CPU seconds of process `pid` (`/proc/<pid>/stat` fields 14 and 15).
    static func cpuSeconds(pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After "pid (comm)": field 3 is at index 0, so utime (14) is index 11, stime (15) index 12.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Sum of `pushworker_events_total{…outcome="accepted"}` from the server's /metrics.
    static func acceptedCount(port: UInt16) -> Int {
        guard let text = try? capture("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/metrics"]) else { return 0 }
        return text.split(separator: "\n").filter { $0.hasPrefix("pushworker_events_total{") && $0.contains("outcome=\"accepted\"") }
            .compactMap { Int($0.split(separator: " ").last ?? "") }.reduce(0, +)
    }
}
