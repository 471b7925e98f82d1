import Foundation
import PushRuntime
import PushProcess
import PushCore
import PushKafkaMock
import PushSandbox
import PushKafka
import Synchronization
import PushWorker
import PushEvents
import PushDevTools

/// Options of a chaos run (`pushworker-dev chaos`, `make chaos`, the reliability tests).
public struct ChaosOptions: Sendable {
    /// The `pushworker-dev` executable to start as dev-broker and sandbox.
    public var executable: String
    /// The production `pushworker` to start as workers. Default: the one in `executable`'s folder.
    public var workerExecutable: String
    /// Multiplies campaign sizes (1 = the documented figures; tests use less).
    public var scale: Double
    /// Seed of the fuzz drill and of generated tokens.
    public var seed: UInt64
    /// Time budget of the fuzz drill, seconds.
    public var fuzzSeconds: Double
    /// Keep the temporary folders (logs, credentials) and print their paths.
    public var keep: Bool
    /// Progress lines on standard error.
    public var verbose: Bool

    public init(executable: String, workerExecutable: String? = nil, scale: Double = 1, seed: UInt64 = 1, fuzzSeconds: Double = 60,
                keep: Bool = false, verbose: Bool = false) {
        self.executable = executable
        self.workerExecutable = workerExecutable ?? ChildProcess.sibling("pushworker", of: executable)
        self.scale = scale; self.seed = seed; self.fuzzSeconds = fuzzSeconds
        self.keep = keep; self.verbose = verbose
    }

    func scaled(_ count: Int, minimum: Int = 1) -> Int { max(minimum, Int((Double(count) * scale).rounded())) }
}

/// What one drill checked: a table row per check; the drill passes when every row does.
public struct DrillReport: Sendable {
    public struct Check: Sendable {
        public var what: String
        public var value: String
        public var ok: Bool
    }
    public var name: String
    public var checks: [Check] = []
    /// Measured figures that are reported but not pass conditions (duplicates, times).
    public var figures: [(String, String)] = []
    public var seconds: Double = 0
    public var passed: Bool { !checks.isEmpty && checks.allSatisfy(\.ok) }

    public init(name: String) { self.name = name }

    mutating func check(_ what: String, _ value: String, _ ok: Bool) { checks.append(Check(what: what, value: value, ok: ok)) }
    mutating func figure(_ what: String, _ value: String) { figures.append((what, value)) }
}

struct ChaosError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Real services as separate processes for one drill: `pushworker-dev dev-broker`, `redis-server`
/// (restartable on the same port), `pushworker-dev sandbox` and `pushworker run` workers.
final class ChaosHarness {
    static let topics = ["push.jobs.v1", "push.jobs.transactional.v1", "push.retry.v1", "push.results.v1", "push.tokens.v1", "push.dlq.v1", "push.events.v1"]
    static let app = "app_chaos"

    let options: ChaosOptions
    let folder: URL
    let broker: ChildProcess
    let bootstrap: String
    let redisPort: UInt16
    private(set) var redis: ChildProcess?
    let sandbox: ChildProcess
    let sandboxPort: UInt16
    let certificate: String
    let credentialsDir: String
    let seed = "chaos-seed"
    let msgIDKeys: String
    /// The Redis Cluster the workers use instead of the harness's own redis-server (cluster drills).
    let cluster: LocalRedisCluster?
    /// A Redis URL the workers use instead of the harness's own redis-server (the Sentinel drill).
    let externalRedisURL: String?
    private var workerCount = 0

    init(_ options: ChaosOptions, name: String, sandboxArguments: [String] = [], partitions: Int = 2, cluster: LocalRedisCluster? = nil,
         redisURL: String? = nil) throws {
        self.options = options
        self.cluster = cluster
        self.externalRedisURL = redisURL
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-chaos-\(name)-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var keyBytes = [UInt8](repeating: 0, count: 32)
        for index in keyBytes.indices { keyBytes[index] = UInt8(truncatingIfNeeded: index &* 31 &+ 7) }
        msgIDKeys = "chaos1:" + Data(keyBytes).base64EncodedString()

        let bootstrapFile = folder.appendingPathComponent("bootstrap").path
        var brokerArguments = ["dev-broker", "--bootstrap-file", bootstrapFile]
        for topic in Self.topics { brokerArguments += ["--topic", "\(topic):\(partitions)"] }
        broker = try ChildProcess(options.executable, brokerArguments, log: folder.appendingPathComponent("broker.log"))
        var address = ""
        guard ChildProcess.waitFor(timeout: 20, {
            address = (try? String(contentsOfFile: bootstrapFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            return !address.isEmpty
        }) else { throw ChaosError("dev-broker did not start: \(broker.log().suffix(500))") }
        bootstrap = address

        redisPort = ChildProcess.freePort()
        let portFile = folder.appendingPathComponent("sandbox.port").path
        certificate = folder.appendingPathComponent("sandbox.pem").path
        credentialsDir = folder.appendingPathComponent("credentials").path
        sandbox = try ChildProcess(options.executable, [
            "sandbox", "--listen", "127.0.0.1:0", "--port-file", portFile, "--cert-out", certificate,
            "--credentials-out", credentialsDir, "--app", Self.app, "--seed", seed,
        ] + sandboxArguments, log: folder.appendingPathComponent("sandbox.log"))
        var port: UInt16 = 0
        guard ChildProcess.waitFor(timeout: 20, {
            let text = (try? String(contentsOfFile: portFile, encoding: .utf8)) ?? ""
            port = UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ":").last ?? "") ?? 0
            return port != 0
        }) else { throw ChaosError("sandbox did not start: \(sandbox.log().suffix(500))") }
        sandboxPort = port
        if cluster == nil && redisURL == nil { try startRedis() }
    }

    deinit {
        redis?.stop(grace: 2)
        sandbox.stop(grace: 2)
        broker.stop(grace: 2)
        if options.keep { printError("kept \(folder.path)") } else { try? FileManager.default.removeItem(at: folder) }
    }

    var origin: String { "https://127.0.0.1:\(sandboxPort)" }
    var redisURL: String { externalRedisURL ?? cluster?.url ?? "redis://127.0.0.1:\(redisPort)" }

    func log(_ text: String) { if options.verbose { printError("    · \(text)") } }

    // MARK: Redis (same port across restarts; nothing persisted)

    func startRedis() throws {
        let executable = ["/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"]
            .first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/bin/redis-server"
        let child = try ChildProcess(executable, ["--port", "\(redisPort)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                                  "--dir", folder.path, "--daemonize", "no"],
                                     log: folder.appendingPathComponent("redis-\(UUID().uuidString.prefix(4)).log"))
        redis = child
        let port = redisPort
        guard ChildProcess.waitFor(timeout: 10, { LocalRedis.answers(port: port) }) else {
            throw ChaosError("redis-server did not start: \(child.log().suffix(500))")
        }
    }

    func stopRedis() {
        redis?.stop(grace: 5)
        redis = nil
    }

    // MARK: Workers

    final class Worker {
        let child: ChildProcess
        let httpPort: UInt16
        init(child: ChildProcess, httpPort: UInt16) { self.child = child; self.httpPort = httpPort }
        var pid: Int32 { child.process.processIdentifier }
        func signal(_ signal: Int32) { child.process.signal(signal) }
        /// Waits for the exit; nil if still running after `timeout`.
        func wait(timeout: Double) -> Int32? { child.process.wait(timeout: timeout)?.status }
        /// `/proc/<pid>/status` VmRSS in KiB.
        func rssKiB() -> Int? {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                  let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
            return Int(line.split(separator: " ").dropFirst().first ?? "")
        }
        /// The `pushworker_in_flight` gauge from `/metrics` (recipients in delivery), nil if unreadable.
        func inFlight() -> Int? {
            let text = ChaosHarness.curl(["-s", "--max-time", "2", "http://127.0.0.1:\(httpPort)/metrics"])
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("pushworker_in_flight") }),
                  let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { return nil }
            return Int(value)
        }
        /// `GET /metrics` (Prometheus text; empty when the listener does not answer).
        func metricsText() -> String {
            ChaosHarness.curl(["-s", "--max-time", "2", "http://127.0.0.1:\(httpPort)/metrics"])
        }
        /// `GET /readyz` status code (0 when the listener does not answer).
        func readyz() -> Int {
            let result = ChaosHarness.curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2", "http://127.0.0.1:\(httpPort)/readyz"])
            return Int(result.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
    }

    func startWorker(extra: [String: String] = [:]) throws -> Worker {
        workerCount += 1
        let port = ChildProcess.freePort()
        var environment = [
            "PUSHWORKER_KAFKA_BROKERS": bootstrap,
            "PUSHWORKER_KAFKA_GROUP": "pushworker-chaos",
            "PUSHWORKER_REDIS_URL": redisURL,
            "PUSHWORKER_CREDENTIALS_DIR": credentialsDir,
            "PUSHWORKER_MSGID_KEYS": msgIDKeys,
            "PUSHWORKER_CA_FILE": certificate,
            "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS": "127.0.0.1",
            "PUSHWORKER_HTTP_ADDR": "127.0.0.1:\(port)",
            "PUSHWORKER_LOG_LEVEL": "info",
            "PUSHWORKER_DRAIN_SECONDS": "15",
            "PUSHWORKER_RDKAFKA_SESSION_TIMEOUT_MS": "6000",
            "PUSHWORKER_RDKAFKA_HEARTBEAT_INTERVAL_MS": "500",
        ]
        if let path = ProcessInfo.processInfo.environment["PATH"] { environment["PATH"] = path }
        for (key, value) in extra { environment[key] = value }
        let child = try ChildProcess(options.workerExecutable, ["run"], log: folder.appendingPathComponent("worker-\(workerCount).log"),
                                     environment: environment)
        return Worker(child: child, httpPort: port)
    }

    // MARK: Kafka

    func producer(extra: [String: String] = [:]) throws -> KafkaProducer {
        var properties = ["bootstrap.servers": bootstrap]
        for (key, value) in extra { properties[key] = value }
        return try KafkaProducer(properties: properties)
    }

    /// Produces every (key, value) to `topic` and waits for the acknowledgements.
    func produce(_ messages: [(key: String, value: [UInt8])], topic: String = "push.jobs.v1", properties: [String: String] = [:]) throws {
        let producer = try producer(extra: properties)
        defer { producer.close(timeout: .seconds(2)) }
        let failures = FailureCounter()
        for message in messages {
            producer.produce(topic: topic, key: Array(message.key.utf8), value: message.value) { result in
                if case .failure(let error) = result { failures.add(error.description) }
            }
        }
        try producer.flush(timeout: .seconds(60))
        if let first = failures.first { throw ChaosError("\(failures.count) produce failures, first: \(first)") }
    }

    func reader(_ topic: String) throws -> TopicReader { try TopicReader(bootstrap: bootstrap, topic: topic) }

    // MARK: Sandbox

    static func curl(_ arguments: [String]) -> String {
        (try? Subprocess.capture("/usr/bin/curl", arguments, timeout: 30).stdout) ?? ""
    }

    func sandboxStats() -> [String: Any] {
        let text = Self.curl(["-s", "--max-time", "5", "--cacert", certificate, origin + "/_sandbox/stats"])
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
    }

    /// `POST /_sandbox/faults` with `json` (e.g. `{"throttleShare":1,"retryAfter":2}`).
    func setFaults(_ json: String) throws {
        let text = Self.curl(["-s", "--max-time", "5", "--cacert", certificate, "-w", "\n%{http_code}", "-X", "POST",
                              "-H", "content-type: application/json", "--data", json, origin + "/_sandbox/faults"])
        guard text.hasSuffix("200") else { throw ChaosError("POST /_sandbox/faults \(json) → \(text)") }
    }

    /// `count` Web Push subscriptions the sandbox can decrypt for.
    func subscriptions(_ count: Int, prefix: String = "sub") throws -> [String] {
        try Sandbox.subscriptions(executable: options.executable, origin: origin, seed: seed, count: count, prefix: prefix)
    }
}

/// Collects produce failures from delivery callbacks.
final class FailureCounter: Sendable {
    private let state = Mutex<(count: Int, first: String?)>((0, nil))
    func add(_ text: String) { state.withLock { $0.count += 1; if $0.first == nil { $0.first = text } } }
    var count: Int { state.withLock { $0.count } }
    var first: String? { state.withLock { $0.first } }
}

/// Reads one topic from the beginning with a fresh group, accumulating messages.
final class TopicReader {
    let consumer: KafkaConsumer
    private(set) var messages: [KafkaMessage] = []

    init(bootstrap: String, topic: String) throws {
        consumer = try KafkaConsumer(properties: ["bootstrap.servers": bootstrap, "group.id": "chaos-reader-\(UUID().uuidString.prefix(8))",
                                                  "auto.offset.reset": "earliest", "enable.auto.commit": "false"], topics: [topic])
    }

    deinit { consumer.close() }

    /// Polls for about `seconds`.
    func poll(_ seconds: Double = 0.2) {
        let deadline = Date().addingTimeInterval(seconds)
        repeat {
            for case .success(let message) in consumer.pollBatch(max: 500, timeout: .milliseconds(100)) { messages.append(message) }
        } while Date() < deadline
    }

    /// Polls until `condition` holds on the messages so far, or `timeout`; returns whether it held.
    @discardableResult
    func poll(until timeout: Double, _ condition: ([KafkaMessage]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(messages) { return true }
            poll(0.2)
        }
        return condition(messages)
    }
}
