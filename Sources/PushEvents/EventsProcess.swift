import Dispatch
import PushRuntime
import Foundation
import PushCore
import PushHTTP
import PushHTTPServer
import PushKafka
import PushRedis
import Synchronization
import PushEncoding

/// The `pushworker events` process: the tracking endpoint's listener, Kafka producer, Redis
/// counters and webhooks, until SIGTERM (docs/reference/tracking-api.md; docs/events.md).
public enum EventsProcess {
    /// The events-only settings (`EVENT_*`, not `PUSHWORKER_*`: docs/reference/configuration.md).
    /// Every `EVENT_*` variable is read here; an unknown one is refused (typo).
    public struct Settings: Sendable {
        public var rateLimit = EventRateLimit.default
        public var proxies = TrustedProxies.none
        public var threads = max(1, ProcessInfo.processInfo.activeProcessorCount)
        /// IPv6 clients share a rate-limit bucket per prefix of this length. Default: 64.
        public var ipv6PrefixLength = 64
        /// Rate-limit buckets held at most (the oldest are evicted past it). Default: 1,000,000.
        public var rateLimitBuckets = 1_000_000
        /// Seconds a connection may be idle, mid-request or between requests. Default: 30.
        public var idleTimeoutSeconds = 30
        /// Connections at once from one peer address, 0 for no cap. Default: 64, or 1024 when
        /// `EVENT_TRUSTED_PROXIES` is set (the peers are then proxies carrying many clients).
        public var connectionsPerIP = 64

        public init() {}

        /// The variables, their defaults and meaning (docs/events.md and `pushworker events --help`).
        public static let variables: [(name: String, defaultValue: String, meaning: String)] = [
            ("EVENT_RATE_LIMIT", "20/s", "per client: N/s or N/m, a bucket holding N"),
            ("EVENT_TRUSTED_PROXIES", "", "IPs/CIDRs whose X-Forwarded-For is believed (every line of it)"),
            ("EVENT_HTTP_THREADS", "CPUs", "listener threads, 1…256"),
            ("EVENT_IPV6_PREFIX", "64", "IPv6 clients share a bucket per prefix of this length, 1…128"),
            ("EVENT_RATE_LIMIT_BUCKETS", "1000000", "rate-limit buckets held at most (oldest evicted), 64…100000000"),
            ("EVENT_IDLE_TIMEOUT_SECONDS", "30", "a connection idle this long (mid-request too) is closed, 1…3600"),
            ("EVENT_CONNECTIONS_PER_IP", "64", "connections at once per peer address (1024 with EVENT_TRUSTED_PROXIES; 0: no cap), 0…100000"),
        ]

        /// The listener limits these settings ask for (the 4 KiB body and 16 KiB header caps are fixed).
        public var listenerLimits: HTTPListener.Limits {
            var limits = HTTPListener.Limits()
            limits.idleTimeoutSeconds = UInt32(idleTimeoutSeconds)
            limits.connectionsPerAddress = UInt32(connectionsPerIP)
            return limits
        }

        /// Reads every `EVENT_*` variable of `environment`; all problems at once, each naming its variable.
        public static func load(_ environment: [String: String]) -> Result<Settings, Configuration.Problems> {
            var settings = Settings()
            var problems: [String] = []
            func value(_ name: String) -> String? {
                guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
                return text
            }
            func integer(_ name: String, _ range: ClosedRange<Int>) -> Int? {
                guard let text = value(name) else { return nil }
                guard text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int(text), range.contains(number) else {
                    problems.append("\(name) must be a whole number in \(range.lowerBound)…\(range.upperBound), got '\(text)'")
                    return nil
                }
                return number
            }
            if let text = value("EVENT_RATE_LIMIT") {
                if let limit = EventRateLimit(text) { settings.rateLimit = limit }
                else { problems.append("EVENT_RATE_LIMIT must be N/s or N/m (N a whole number ≥ 1), got '\(text)'") }
            }
            if let text = environment["EVENT_TRUSTED_PROXIES"] {
                do { settings.proxies = try TrustedProxies(parsing: text) } catch { problems.append(error.description) }
            }
            if let threads = integer("EVENT_HTTP_THREADS", 1...256) { settings.threads = threads }
            if let prefix = integer("EVENT_IPV6_PREFIX", 1...128) { settings.ipv6PrefixLength = prefix }
            if let buckets = integer("EVENT_RATE_LIMIT_BUCKETS", 64...100_000_000) { settings.rateLimitBuckets = buckets }
            if let seconds = integer("EVENT_IDLE_TIMEOUT_SECONDS", 1...3600) { settings.idleTimeoutSeconds = seconds }
            if !settings.proxies.isEmpty { settings.connectionsPerIP = 1024 }
            if let connections = integer("EVENT_CONNECTIONS_PER_IP", 0...100_000) { settings.connectionsPerIP = connections }
            let known = Set(variables.map(\.name))
            for name in environment.keys.sorted() where name.hasPrefix("EVENT_") && !known.contains(name) {
                if let suggestion = Suggestion.closestVariable(to: name, prefix: "EVENT_", in: known) {
                    problems.append("\(name) is not a tracking-endpoint setting (did you mean \(suggestion)?)")
                } else {
                    problems.append("\(name) is not a tracking-endpoint setting (typo?); known: \(variables.map(\.name).joined(separator: ", "))")
                }
            }
            return problems.isEmpty ? .success(settings) : .failure(Configuration.Problems(messages: problems))
        }
    }

    public static func run(_ configuration: Configuration, settings: Settings) -> Int32 {
        let logger = Logger(level: configuration.logLevel, format: configuration.logFormat)
        logger.receiveKafkaLogs()
        let metrics = Metrics()
        metrics.registerStartup(.events)
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
            limiter: EventRateLimiter(limit: settings.rateLimit, maximumClients: settings.rateLimitBuckets,
                                      ipv6PrefixLength: settings.ipv6PrefixLength),
            proxies: settings.proxies,
            hasher: ClientAddressHasher(secret: Array(configuration.msgIDKeys.utf8)), metrics: metrics,
            redisPing: { healthRedis.ping() }))
        serviceBox.withLock { $0 = service }
        counters.start()
        webhooks?.start()
        guard let address = HostPort(configuration.httpAddr) else { return ExitCode.config }
        let listener: HTTPListener
        do {
            listener = try HTTPListener(address: address, threads: UInt32(settings.threads), limits: settings.listenerLimits) { service.handle($0) }
        } catch {
            logger.error("cannot listen", ["http.addr": configuration.httpAddr, "error": "\(error)"])
            return ExitCode.unavailable
        }
        logger.info("events endpoint listening", [
            "http.addr": configuration.httpAddr, "http.port": "\(listener.port)", "http.threads": "\(settings.threads)",
            "events.rate_limit": settings.rateLimit.description, "events.topic": configuration.topicEvents,
            "events.trusted_proxies": settings.proxies.isEmpty ? "none" : "configured",
            "events.ipv6_prefix": "\(settings.ipv6PrefixLength)", "events.rate_limit_buckets": "\(settings.rateLimitBuckets)",
            "events.idle_timeout_seconds": "\(settings.idleTimeoutSeconds)",
            "events.connections_per_ip": settings.connectionsPerIP == 0 ? "no cap" : "\(settings.connectionsPerIP)",
            "events.webhooks": webhooks == nil ? "off (no PUSHWORKER_CREDENTIALS_DIR)" : "on",
        ])

        let stop = DispatchSemaphore(value: 0)
        let signals = Signals()
        signals.handleTermination(logger: logger) { stop.signal() }
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
        signals.cancel()
        logger.info("events endpoint stopped")
        return ExitCode.ok
    }
}
