import Dispatch
import Foundation
import PushCore
import PushHTTP
import PushHTTPServer
import PushKafka
import PushRedis
import PushWorker
import Synchronization

/// The `pushworker events` process: the tracking endpoint's listener, Kafka producer, Redis
/// counters and webhooks, until SIGTERM (DESIGN §6, §15 Events; docs/events.md).
public enum EventsProcess {
    /// The events-only settings (not PUSHWORKER_* names: DESIGN §15 names EVENT_RATE_LIMIT).
    public struct Settings: Sendable {
        public var rateLimit = EventRateLimit.default
        public var proxies = TrustedProxies.none
        public var threads = max(1, ProcessInfo.processInfo.activeProcessorCount)

        public init() {}

        public static func load(_ environment: [String: String]) -> Result<Settings, Configuration.Problems> {
            var settings = Settings()
            var problems: [String] = []
            if let text = environment["EVENT_RATE_LIMIT"], !text.isEmpty {
                if let limit = EventRateLimit(text) { settings.rateLimit = limit }
                else { problems.append("EVENT_RATE_LIMIT must be N/s or N/m (N ≥ 1), got '\(text)'") }
            }
            if let text = environment["EVENT_TRUSTED_PROXIES"] {
                do { settings.proxies = try TrustedProxies(parsing: text) } catch { problems.append(error.description) }
            }
            if let text = environment["EVENT_HTTP_THREADS"], !text.isEmpty {
                if let threads = Int(text), (1...256).contains(threads) { settings.threads = threads }
                else { problems.append("EVENT_HTTP_THREADS must be a whole number in 1…256, got '\(text)'") }
            }
            return problems.isEmpty ? .success(settings) : .failure(Configuration.Problems(messages: problems))
        }
    }

    public static func run(_ configuration: Configuration, settings: Settings) -> Int32 {
        let logger = Logger(level: configuration.logLevel, format: configuration.logFormat)
        KafkaLogging.setLogHandler { level, facility, message in
            let mapped: Logger.Level = level <= 3 ? .error : level == 4 ? .warning : level <= 6 ? .info : .debug
            logger.log(mapped, "librdkafka", ["kafka.facility": facility, "kafka.log": message])
        }
        let metrics = Metrics()
        let keyring: MsgIDKeyring
        let producer: KafkaProducer
        let redis: any RedisPipelining
        let healthRedis: any RedisPipelining
        do {
            keyring = try MsgIDKeyring(parsing: configuration.msgIDKeys)
            producer = try KafkaProducer(properties: configuration.kafkaProperties(for: .producer))
            redis = try configuration.redisClient()
            healthRedis = try configuration.redisClient(timeout: .milliseconds(500))
        } catch {
            logger.error("cannot start the events endpoint", ["error": "\(error)"])
            return ExitCode.unavailable
        }
        var webhooks: WebhookDispatcher?
        var httpClient: HTTP2Client?
        if let directory = configuration.credentialsDir {
            var clientConfiguration = HTTPClientConfiguration()
            clientConfiguration.caFile = configuration.caFile
            clientConfiguration.proxy = configuration.httpsProxy
            clientConfiguration.noProxy = configuration.noProxy
            clientConfiguration.requestTimeout = .seconds(10)
            do {
                let client = try HTTP2Client(configuration: clientConfiguration)
                httpClient = client
                let store = CredentialsStore(directory: directory, logger: logger)
                webhooks = WebhookDispatcher(client: client, lookup: { appID in
                    // appId comes from a msgId we signed (validated when the job was decoded); check anyway,
                    // it becomes a path component.
                    guard !appID.isEmpty, appID != ".", appID != "..",
                          appID.utf8.allSatisfy({ Base64URL.isAlphabetByte($0) || $0 == UInt8(ascii: ".") }) else { return nil }
                    return store.credentials(for: appID)?.webhook
                }, metrics: metrics, logger: logger)
            } catch {
                logger.error("cannot start the webhook client", ["error": "\(error)"])
                return ExitCode.unavailable
            }
        }
        let serviceBox = Mutex<EventsService?>(nil)
        let counters = EventCounterFlusher(redis: redis, metrics: metrics, logger: logger, onTick: {
            let service = serviceBox.withLock { $0 }
            service?.checkProducer()
            service?.syncMetrics()
        })
        let service = EventsService(.init(
            keyring: keyring, producer: producer, topic: configuration.topicEvents, counters: counters, webhooks: webhooks,
            limiter: EventRateLimiter(limit: settings.rateLimit), proxies: settings.proxies,
            hasher: ClientAddressHasher(secret: Array(configuration.msgIDKeys.utf8)), metrics: metrics,
            redisPing: { healthRedis.ping() }))
        serviceBox.withLock { $0 = service }
        counters.start()
        webhooks?.start()
        guard let address = HostPort(configuration.httpAddr) else { return ExitCode.config }
        let listener: HTTPListener
        do {
            listener = try HTTPListener(address: address, threads: UInt32(settings.threads)) { service.handle($0) }
        } catch {
            logger.error("cannot listen", ["http.addr": configuration.httpAddr, "error": "\(error)"])
            return ExitCode.unavailable
        }
        logger.info("events endpoint listening", [
            "http.addr": configuration.httpAddr, "http.port": "\(listener.port)", "http.threads": "\(settings.threads)",
            "events.rate_limit": settings.rateLimit.description, "events.topic": configuration.topicEvents,
            "events.trusted_proxies": settings.proxies.isEmpty ? "none" : "configured",
            "events.webhooks": webhooks == nil ? "off (no PUSHWORKER_CREDENTIALS_DIR)" : "on",
        ])

        let stop = DispatchSemaphore(value: 0)
        let signals = Signals()
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if signals.received() > 1 { _exit(1) }
                logger.info("signal received: draining", ["signal": "\(number)"])
                stop.signal()
            }
            source.resume()
            sources.append(source)
        }
        stop.wait()
        let grace = max(1, configuration.shutdownGraceSeconds)
        listener.stop()
        webhooks?.stop(timeout: .milliseconds(Int(grace * 500)))
        counters.stop()
        do { try producer.flush(timeout: .seconds(5)) } catch { logger.warning("events not all published", ["error": "\(error)"]) }
        producer.close(timeout: .seconds(1))
        httpClient?.shutdown(drainTimeout: .seconds(1))
        redis.close()
        healthRedis.close()
        logger.info("events endpoint stopped")
        _ = sources
        return ExitCode.ok
    }
}
