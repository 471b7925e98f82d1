import Dispatch
import Foundation
import PushCore
import PushHTTPServer
import PushKafka
import PushRedis
import PushRuntime
import Synchronization

/// The `pushworker api` process (docs/reference/api.md): the listener on `PUSHWORKER_API_ADDR`,
/// one Kafka producer for the jobs topic, Redis for campaign controls and idempotency keys, a
/// health check every 2 seconds, until SIGTERM (requests in progress are answered, then it
/// exits 0).
public enum APIProcess {
    /// The listener limits of the API: bodies collected up to `maximumBody` (413 JSON past it),
    /// raw paths (segments are decoded by ``APIRouting``), 64 KiB per connection for the request
    /// line and headers (a long campaign id fits), 30 s idle.
    public static func listenerLimits(maximumBody: Int) -> HTTPListener.Limits {
        var limits = HTTPListener.Limits()
        limits.collectsBodies = true
        limits.rawPaths = true
        limits.maximumBodyBytes = maximumBody
        limits.connectionMemoryBytes = 64 << 10
        limits.connectionsPerAddress = 0
        limits.bodyTooLarge = APIError.bodyTooLarge(maximum: maximumBody).response
        return limits
    }

    /// The producer's properties: the configuration's, acknowledgement within the API's produce
    /// timeout, 4 MiB records unless `PUSHWORKER_RDKAFKA_MESSAGE_MAX_BYTES` says otherwise (as `enqueue`).
    public static func producerProperties(_ configuration: Configuration) -> [String: String] {
        var extra = ["message.timeout.ms": "\(configuration.apiProduceTimeoutSeconds * 1000)"]
        if configuration.rdkafkaProperties["message.max.bytes"] == nil { extra["message.max.bytes"] = "4194304" }
        return configuration.kafkaProperties(for: .producer, extra: extra)
    }

    /// Runs the API until SIGTERM/SIGINT; 0 after a clean stop, 69 when a dependency cannot be
    /// set up or the address cannot be listened on.
    public static func run(_ configuration: Configuration, tokens: APITokens) -> Int32 {
        let logger = Logger(level: configuration.logLevel, format: configuration.logFormat)
        logger.receiveKafkaLogs()
        let metrics = Metrics()
        metrics.registerStartup(.api)
        let producer: KafkaProducer
        let admin: KafkaAdmin
        let redis: any RedisPipelining
        let healthRedis: any RedisPipelining
        do {
            producer = try KafkaProducer(properties: producerProperties(configuration))
            admin = try KafkaAdmin(properties: configuration.kafkaProperties(for: .producer), timeout: .seconds(2))
            redis = try configuration.redisClient()
            healthRedis = try configuration.redisClient(timeout: .milliseconds(500))
        } catch {
            logger.error("cannot start the API", ["error": "\(error)"])
            return ExitCode.unavailable
        }
        let store = DeliveryStateStore(client: redis, guardSettings: CampaignGuard(invalidShare: configuration.guardInvalidShare,
                                                                                   minSends: configuration.guardMinSends))
        let health = APIHealth(redis: healthRedis, admin: admin, producer: producer, topic: configuration.topicJobs, tokens: tokens,
                               metrics: metrics, logger: logger)
        health.check()
        health.start()
        let service = APIService(.init(
            tokens: tokens, campaigns: store,
            idempotency: IdempotencyStore(redis: redis, ttlMs: Int64(configuration.apiIdempotencyTTLSeconds) * 1000,
                                          pendingTTLMs: Int64(configuration.apiProduceTimeoutSeconds + 60) * 1000),
            publisher: JobPublisher(producer: producer, topic: configuration.topicJobs, transactionalTopic: configuration.topicJobsTransactional, timeout: .seconds(configuration.apiProduceTimeoutSeconds)),
            metrics: metrics, logger: logger, readiness: { health.readiness }))
        guard let address = HostPort(configuration.apiAddr) else { return ExitCode.config }
        let listener: HTTPListener
        do {
            listener = try HTTPListener(address: address, threads: UInt32(configuration.apiThreads),
                                        limits: listenerLimits(maximumBody: configuration.apiMaxBody),
                                        headerNames: APIService.headerNames) { service.handle($0) }
        } catch {
            logger.error("cannot listen", ["api.addr": configuration.apiAddr, "error": "\(error)"])
            return ExitCode.unavailable
        }
        logger.info("api listening", [
            "api.addr": configuration.apiAddr, "api.port": "\(listener.port)", "api.threads": "\(configuration.apiThreads)",
            "api.tokens": "\(tokens.count)", "api.max_body": "\(configuration.apiMaxBody)", "api.topic": configuration.topicJobs,
            "version": BuildInfo.version,
        ])
        let stop = DispatchSemaphore(value: 0)
        let signals = Signals()
        signals.handleTermination(logger: logger) { stop.signal() }
        stop.wait()
        listener.stop()
        health.stop()
        do { try producer.flush(timeout: .seconds(5)) } catch { logger.warning("jobs not all acknowledged at exit", ["error": "\(error)"]) }
        producer.close(timeout: .seconds(1))
        admin.close()
        redis.close()
        healthRedis.close()
        signals.cancel()
        logger.info("api stopped")
        return ExitCode.ok
    }
}

/// The API's readiness, checked every 2 seconds on a thread of its own (so `/readyz` never
/// waits): Redis answers PING, the Kafka cluster answers metadata with the jobs topic in it,
/// and the producer reported no fatal error. Also counts the producer's client errors and logs
/// a tokens file that changed and could not be read.
final class APIHealth: Sendable {
    private let redis: any RedisPipelining
    private let admin: KafkaAdmin
    private let producer: KafkaProducer
    private let topic: String
    private let tokens: APITokens
    private let metrics: Metrics
    private let logger: Logger
    private let state = Mutex(Readiness(failing: [.init(dependency: "starting", detail: "the first check has not run yet")]))
    private let reportedTokensProblem = Mutex<String?>(nil)
    private let fatal = Mutex<String?>(nil)
    private let stopped = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    init(redis: any RedisPipelining, admin: KafkaAdmin, producer: KafkaProducer, topic: String, tokens: APITokens, metrics: Metrics,
         logger: Logger) {
        self.redis = redis; self.admin = admin; self.producer = producer; self.topic = topic; self.tokens = tokens
        self.metrics = metrics; self.logger = logger
    }

    var readiness: Readiness { state.withLock { $0 } }

    /// One check of every dependency (blocking: at most about 2.5 s).
    func check() {
        var failing: [Readiness.Failure] = []
        if !redis.ping() { failing.append(.init(dependency: "redis", detail: "unreachable: no answer to PING")) }
        do {
            if try admin.metadata().topic(topic) == nil {
                failing.append(.init(dependency: "kafka", detail: "the jobs topic \(topic) does not exist (pushworker topics apply)"))
            }
        } catch {
            failing.append(.init(dependency: "kafka", detail: "no metadata from the cluster: \(error.message) [\(error.name)]"))
        }
        for error in producer.drainErrors() {
            metrics.increment("pushworker_kafka_errors_total")
            if error.isFatal { fatal.withLock { $0 = $0 ?? error.message } }
        }
        // A fatal producer error does not heal: the process must be restarted.
        if let message = fatal.withLock({ $0 }) {
            failing.append(.init(dependency: "kafka_producer", detail: "fatal producer error (restart the process): \(message)"))
        }
        metrics.set("pushworker_ready", [], failing.isEmpty ? 1 : 0)
        let previous = state.withLock { state in
            defer { state = Readiness(failing: failing) }
            return state
        }
        if previous.failing.map(\.dependency) != failing.map(\.dependency), !failing.isEmpty {
            logger.warning("api not ready", ["failing": failing.map { "\($0.dependency): \($0.detail)" }.joined(separator: "; ")])
        }
        let problem = tokens.reloadProblem
        if reportedTokensProblem.withLock({ reported in defer { reported = problem }; return reported != problem }), let problem {
            logger.error("the tokens file changed and cannot be used: the previous tokens stay in force", ["error": problem])
        }
    }

    /// Checks every 2 seconds until ``stop()``.
    func start() {
        let thread = Thread { [self] in
            while stopped.wait(timeout: .now() + 2) == .timedOut { check() }
            done.signal()
        }
        thread.name = "pushworker-api-health"
        thread.start()
    }

    func stop() {
        stopped.signal()
        _ = done.wait(timeout: .now() + 5)
    }
}
