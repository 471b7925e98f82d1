import Foundation
import PushCore
import PushHTTP
import PushKafka
import PushRedis

/// The worker's configuration (contract: docs/reference/configuration.md): environment first (12-factor), then an
/// optional JSON file (`PUSHWORKER_CONFIG_FILE`, keys are the variable names), then flags.
public struct Configuration: Sendable {
    public var kafkaBrokers = ""
    public var kafkaGroup = "pushworker"
    public var topicJobs = "push.jobs.v1"
    /// The transactional lane's jobs (docs/lanes.md).
    public var topicJobsTransactional = "push.jobs.transactional.v1"
    public var topicRetry = "push.retry.v1"
    public var topicResults = "push.results.v1"
    public var topicTokens = "push.tokens.v1"
    public var topicDLQ = "push.dlq.v1"
    public var topicEvents = "push.events.v1"
    public var redisURL = ""
    /// `PUSHWORKER_REDIS_PASSWORD`: overrides the password of `redisURL` (a Kubernetes Secret key,
    /// so the URL itself need not be secret).
    public var redisPassword: String?
    /// `PUSHWORKER_REDIS_CA_FILE`: PEM CA certificates that verify Redis's TLS certificates
    /// (`rediss…://`); nil: the system's store.
    public var redisCAFile: String?
    /// `PUSHWORKER_REDIS_CERT_FILE` / `PUSHWORKER_REDIS_KEY_FILE`: the client certificate and its
    /// key, for Redis servers that require one (`tls-auth-clients yes`).
    public var redisCertFile: String?
    public var redisKeyFile: String?
    /// `PUSHWORKER_REDIS_SENTINEL_PASSWORD`: the Sentinels' own password (`redis+sentinel://`);
    /// the URL's password is the master's.
    public var redisSentinelPassword: String?
    public var credentialsDir: String?
    /// `kid:base64key[,kid:base64key…]`; the first signs, all verify.
    public var msgIDKeys = ""
    public var caFile: String?
    /// Proxy for outbound HTTPS (providers, webhooks): `http://`, `https://` or `socks…://` URL.
    /// nil = none; never taken from `https_proxy` & co.
    public var httpsProxy: String?
    /// Hosts reached directly although `httpsProxy` is set (comma-separated, libcurl's NOPROXY syntax).
    public var noProxy: String?
    public var webPushAllowedHosts: [String] = []
    /// Metrics/health listener. Default `0.0.0.0:9400`.
    public var httpAddr = "0.0.0.0:9400"
    /// Recipients being delivered at once. Default 2000.
    public var maxInFlight = 2000
    /// Share of `maxInFlight` kept for transactional work: bulk work uses at most
    /// (1 − reserve) × `maxInFlight` slots (docs/lanes.md). Default 0.2.
    public var transactionalReserve = 0.2
    /// The lanes whose job topics this worker consumes (docs/lanes.md). Default both.
    public var lanes: LaneSelection = .both
    /// Per-app default quiet hours (`PUSHWORKER_QUIET_HOURS`, docs/local-time.md), by app id.
    public var quietHours: [String: QuietHours] = [:]
    /// A saturation (`maxInFlight` reached) lasting this long pauses the consumer's partitions;
    /// shorter ones are waited out without polling. Default 5000 ms.
    public var saturationPauseMs: Int = 5000
    /// Attempts per recipient, the first included. Default 5.
    public var maxAttempts = 5
    /// SIGTERM drain budget (`PUSHWORKER_DRAIN_SECONDS`; `PUSHWORKER_SHUTDOWN_GRACE_SECONDS` is
    /// its older name). Default 25 s.
    public var shutdownGraceSeconds: Double = 25
    /// HTTP/2 connections per provider origin. Default 2.
    public var httpConnections = 2
    /// Concurrent streams per connection. Default 100.
    public var httpStreams = 100
    /// Per-request timeout. Default 10 000 ms.
    public var requestTimeoutMs = 10_000
    /// How long a claim holds a recipient for the processing that claimed it (docs/reference/redis.md
    /// "Claims"); renewed every third of it while the send runs; a dead worker's claims end with
    /// it. More than two request timeouts. Default 30 s.
    public var claimLeaseSeconds: Int = 30
    /// The longest a sent marker is kept (docs/reference/redis.md; a job's `expiresAt` or `ttlSeconds`
    /// shortens it). Default 7 days.
    public var dedupMaxSeconds: Int = 604_800
    /// How long outcomes gather before one Redis record round trip and their results' produce
    /// (``OutcomeRecorder``). Longer: fewer, larger round trips and batches (less CPU per
    /// notification), results later by as much. Default 25 ms.
    public var recordDelayMs: Int = 25
    /// What happens to a request that was written and never answered: resent once with the same
    /// replace key (`replace`), or final `failed`/`unanswered` (`never`). Default `replace`.
    public var resendUnanswered: String = "replace"
    /// Recipients of one app × provider in flight at once. Default: half of `maxInFlight`.
    public var maxInFlightPerApp: Int = 1000
    /// A recipient held by its endpoint (provider backoff, open breaker, throttle) longer than
    /// this goes to the retry topic instead of waiting in memory. Default 30 s.
    public var holdMaxSeconds: Int = 30
    /// The campaign guardrail (docs/campaigns.md): the share of `invalid_token` + `rejected`
    /// results above which a campaign pauses itself, and the results counted first.
    public var guardInvalidShare: Double = 0.5
    public var guardMinSends: Int = 200
    /// How long a paused campaign's recipients wait on the retry topic before another look.
    public var pauseRecheckSeconds: Int = 10
    /// Frequency caps per category (docs/caps.md). Default: none.
    public var caps = FrequencyCaps()
    /// A retry message due further ahead than this goes to the dead-letter topic. Default 3600 s.
    public var retryMaxDelaySeconds: Int = 3600
    /// `pushworker api`'s listener (docs/reference/api.md). Default `0.0.0.0:9500`.
    public var apiAddr = "0.0.0.0:9500"
    /// The API's bearer tokens file (a path; the tokens are read by `pushworker api`, never here).
    public var apiTokensFile = ""
    /// Request bodies over this many bytes get 413. Default 8 MiB.
    public var apiMaxBody = 8 << 20
    /// The API listener's threads. Default 4.
    public var apiThreads = 4
    /// How long an `Idempotency-Key`'s first answer is kept. Default 24 h.
    public var apiIdempotencyTTLSeconds = 86_400
    /// Longest wait for the jobs of one request to be acknowledged by Kafka. Default 30 s.
    public var apiProduceTimeoutSeconds = 30
    public var logLevel = LogLevel.info
    public var logFormat = LogFormat.json
    /// `PUSHWORKER_RDKAFKA_<NAME>` ⇒ librdkafka property `<name>` (lower-cased, `_` → `.`).
    public var rdkafkaProperties: [String: String] = [:]

    public enum LogLevel: String, Sendable, CaseIterable, Comparable {
        case trace, debug, info, notice, warning, error, critical
        /// Severity rank, `trace` lowest.
        var rank: Int { Self.allCases.firstIndex(of: self) ?? 0 }
        public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rank < b.rank }
    }
    public enum LogFormat: String, Sendable, CaseIterable { case json, text }

    /// Variables, defaults and meaning (docs/reference/configuration.md documents each;
    /// scripts/check_docs.py keeps the two in step): ``table`` without where each value goes.
    public static let variables: [(name: String, defaultValue: String?, meaning: String)] =
        table.map { ($0.name, $0.defaultValue, $0.meaning) }

    /// Every problem found, at once (`config check` prints them all and exits 78).
    public struct Problems: Error, Sendable, CustomStringConvertible {
        public var messages: [String]
        public init(messages: [String]) { self.messages = messages }
        public var description: String { messages.map { "- \($0)" }.joined(separator: "\n") }
    }

    /// What the configuration will be used for: `run` needs Kafka and Redis, `send` neither,
    /// `api` both and its tokens file, `campaign` Redis.
    public enum Purpose: Sendable { case worker, send, render, enqueue, events, api, campaign }

    /// Reads the configuration from `environment` (and the JSON file it names), then `overrides`:
    /// each variable of ``table`` into its field, then the checks of values that do not go
    /// together or that a library would misread. Every problem is reported at once.
    public static func load(environment: [String: String] = ProcessInfo.processInfo.environment,
                            overrides: [String: String] = [:], purpose: Purpose) throws(Problems) -> Configuration {
        var reader = ConfigurationReader(environment: environment, overrides: overrides, purpose: purpose)
        var configuration = Configuration()
        for variable in table { reader.read(variable, into: &configuration) }
        reader.check(configuration)
        if !reader.problems.isEmpty { throw Problems(messages: reader.problems.sorted()) }
        return configuration
    }

    /// Where Redis is: `PUSHWORKER_REDIS_URL` (docs/redis.md "URLs"), its password replaced by
    /// `PUSHWORKER_REDIS_PASSWORD` when that is set; a `rediss…://` URL gets the TLS files
    /// (`PUSHWORKER_REDIS_CA_FILE`, `_CERT_FILE`, `_KEY_FILE`), a Sentinel URL the Sentinels'
    /// password (`PUSHWORKER_REDIS_SENTINEL_PASSWORD`).
    public func redisTarget() throws(RedisError) -> RedisTarget {
        var target = try RedisTarget(url: redisURL)
        if let redisPassword { target.password = redisPassword }
        if target.usesTLS { target.tls = RedisTLS(caFile: redisCAFile, certificateFile: redisCertFile, keyFile: redisKeyFile) }
        if case .sentinel(var endpoint) = target, let redisSentinelPassword {
            endpoint.sentinelPassword = redisSentinelPassword
            target = .sentinel(endpoint)
        }
        return target
    }

    /// A client for ``redisTarget()`` (it connects at its first command).
    public func redisClient(timeout: Duration = .seconds(2)) throws(RedisError) -> any RedisPipelining {
        try redisTarget().makeClient(timeout: timeout)
    }

    /// Printable `NAME=value` lines with secrets redacted (`config print`).
    public func redactedLines() -> [String] {
        var lines = [
            "PUSHWORKER_KAFKA_BROKERS=\(kafkaBrokers)", "PUSHWORKER_KAFKA_GROUP=\(kafkaGroup)",
            "PUSHWORKER_TOPIC_JOBS=\(topicJobs)", "PUSHWORKER_TOPIC_JOBS_TRANSACTIONAL=\(topicJobsTransactional)",
            "PUSHWORKER_TOPIC_RETRY=\(topicRetry)",
            "PUSHWORKER_TOPIC_RESULTS=\(topicResults)", "PUSHWORKER_TOPIC_TOKENS=\(topicTokens)",
            "PUSHWORKER_TOPIC_DLQ=\(topicDLQ)", "PUSHWORKER_TOPIC_EVENTS=\(topicEvents)",
            "PUSHWORKER_REDIS_URL=\(Self.redactURL(redisURL))",
            "PUSHWORKER_REDIS_PASSWORD=\(redisPassword == nil ? "" : "<redacted>")",
            "PUSHWORKER_REDIS_CA_FILE=\(redisCAFile ?? "")",
            "PUSHWORKER_REDIS_CERT_FILE=\(redisCertFile ?? "")", "PUSHWORKER_REDIS_KEY_FILE=\(redisKeyFile ?? "")",
            "PUSHWORKER_REDIS_SENTINEL_PASSWORD=\(redisSentinelPassword == nil ? "" : "<redacted>")",
            "PUSHWORKER_CREDENTIALS_DIR=\(credentialsDir ?? "")",
            "PUSHWORKER_MSGID_KEYS=\(Self.redactKeys(msgIDKeys))",
            "PUSHWORKER_CA_FILE=\(caFile ?? "")",
            "PUSHWORKER_HTTPS_PROXY=\(httpsProxy.map(HTTPClientConfiguration.redacted) ?? "")",
            "PUSHWORKER_NO_PROXY=\(noProxy ?? "")",
            "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS=\(webPushAllowedHosts.joined(separator: ","))",
            "PUSHWORKER_HTTP_ADDR=\(httpAddr)", "PUSHWORKER_MAX_IN_FLIGHT=\(maxInFlight)",
            "PUSHWORKER_SATURATION_PAUSE_MS=\(saturationPauseMs)",
            "PUSHWORKER_TRANSACTIONAL_RESERVE=\(transactionalReserve)", "PUSHWORKER_LANES=\(lanes.rawValue)",
            "PUSHWORKER_QUIET_HOURS=\(QuietHours.describe(quietHours))",
            "PUSHWORKER_MAX_ATTEMPTS=\(maxAttempts)", "PUSHWORKER_DRAIN_SECONDS=\(Int(shutdownGraceSeconds))",
            "PUSHWORKER_RESEND_UNANSWERED=\(resendUnanswered)", "PUSHWORKER_MAX_IN_FLIGHT_PER_APP=\(maxInFlightPerApp)",
            "PUSHWORKER_HOLD_MAX_SECONDS=\(holdMaxSeconds)", "PUSHWORKER_GUARD_INVALID_SHARE=\(guardInvalidShare)",
            "PUSHWORKER_GUARD_MIN_SENDS=\(guardMinSends)", "PUSHWORKER_PAUSE_RECHECK_SECONDS=\(pauseRecheckSeconds)",
            "PUSHWORKER_CAPS=\(caps.text)", "PUSHWORKER_RETRY_MAX_DELAY_SECONDS=\(retryMaxDelaySeconds)",
            "PUSHWORKER_HTTP_CONNECTIONS=\(httpConnections)", "PUSHWORKER_HTTP_STREAMS=\(httpStreams)",
            "PUSHWORKER_REQUEST_TIMEOUT_MS=\(requestTimeoutMs)",
            "PUSHWORKER_CLAIM_LEASE_SECONDS=\(claimLeaseSeconds)", "PUSHWORKER_DEDUP_MAX_SECONDS=\(dedupMaxSeconds)",
            "PUSHWORKER_RECORD_DELAY_MS=\(recordDelayMs)",
            "PUSHWORKER_API_ADDR=\(apiAddr)", "PUSHWORKER_API_TOKENS_FILE=\(apiTokensFile)",
            "PUSHWORKER_API_MAX_BODY=\(apiMaxBody)", "PUSHWORKER_API_THREADS=\(apiThreads)",
            "PUSHWORKER_API_IDEMPOTENCY_TTL_SECONDS=\(apiIdempotencyTTLSeconds)",
            "PUSHWORKER_API_PRODUCE_TIMEOUT_SECONDS=\(apiProduceTimeoutSeconds)",
            "PUSHWORKER_LOG_LEVEL=\(logLevel.rawValue)", "PUSHWORKER_LOG_FORMAT=\(logFormat.rawValue)",
        ]
        for (name, value) in rdkafkaProperties.sorted(by: { $0.key < $1.key }) {
            let secret = Self.isSecretKafkaProperty(name)
            lines.append("PUSHWORKER_RDKAFKA_\(name.uppercased().replacingOccurrences(of: ".", with: "_"))=\(secret ? "<redacted>" : value)")
        }
        return lines
    }

    /// librdkafka properties whose values are never printed: passwords, secrets, private keys
    /// (`ssl.key.pem`, `ssl.key.password`, `sasl.password`, …) and SASL configuration strings.
    static func isSecretKafkaProperty(_ name: String) -> Bool {
        ["password", "secret", "key", "jaas", "oauthbearer.config", "token"].contains { name.contains($0) }
    }

    /// `redis://user:password@host` ⇒ `redis://<redacted>@host` (the last `@` ends the userinfo);
    /// `unix:///sock?password=P` ⇒ `unix:///sock?password=<redacted>`.
    static func redactURL(_ url: String) -> String {
        var text = url
        if let query = text.firstIndex(of: "?") {
            let parameters = text[text.index(after: query)...].split(separator: "&", omittingEmptySubsequences: false).map { parameter in
                parameter.lowercased().hasPrefix("password=") ? "password=<redacted>" : String(parameter)
            }
            text = String(text[...query]) + parameters.joined(separator: "&")
        }
        guard let scheme = text.range(of: "://") else { return text }
        let authorityEnd = text[scheme.upperBound...].firstIndex(of: "/") ?? text.firstIndex(of: "?") ?? text.endIndex
        guard let at = text[scheme.upperBound..<authorityEnd].lastIndex(of: "@") else {
            // An unescaped '/' or '?' inside a password: redact everything up to the last '@'.
            guard let at = text.lastIndex(of: "@"), scheme.upperBound <= at else { return text }
            return String(text[..<scheme.upperBound]) + "<redacted>" + String(text[at...])
        }
        return String(text[..<scheme.upperBound]) + "<redacted>" + String(text[at...])
    }

    static func redactKeys(_ keys: String) -> String {
        keys.split(separator: ",").map { entry in
            let parts = entry.split(separator: ":", maxSplits: 1)
            return parts.count == 2 ? "\(parts[0]):<redacted>" : "<redacted>"
        }.joined(separator: ",")
    }

    /// Which librdkafka client a property set is for: pass-through properties that belong only
    /// to the other kind are left out (librdkafka warns about them otherwise).
    public enum KafkaClientKind: Sendable { case producer, consumer }

    static let consumerOnlyPrefixes = ["group.", "session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms",
                                       "auto.offset.reset", "enable.auto.", "auto.commit.", "partition.assignment.strategy",
                                       "fetch.", "queued.", "isolation.level", "check.crcs", "coordinator."]
    static let producerOnlyPrefixes = ["acks", "request.required.acks", "linger.ms", "queue.buffering.", "batch.",
                                       "compression.", "enable.idempotence", "message.timeout.ms", "delivery.timeout.ms",
                                       "retries", "message.send.max.retries", "retry.backoff.ms", "transactional.id",
                                       "sticky.partitioning.linger.ms", "partitioner"]

    /// Defaults of `pushworker run`'s producer, under any `PUSHWORKER_RDKAFKA_*`. Results are keyed
    /// by subscription and spread over every partition: a 50 ms linger lets each partition's
    /// batch hold many results instead of one or two, each compressed and framed on its own
    /// (results reach the topic that much later). Snappy rather than LZ4: as small on result
    /// records, without the large per-batch context librdkafka's LZ4 allocates. Every Kafka
    /// client reads snappy.
    public static let workerProducerDefaults = ["linger.ms": "50", "compression.type": "snappy"]

    /// Defaults of `pushworker run`'s consumer, under any `PUSHWORKER_RDKAFKA_*`. librdkafka
    /// prefetches up to 64 MiB by default; 16 MiB is still ~128 jobs of 500 recipients ahead and
    /// bounds peak RSS (docs/performance.md). A fetch waits at most 100 ms (librdkafka: 500) for
    /// data: a broker that answers an empty fetch only when that wait ends (the dev broker) would
    /// otherwise hold a transactional job up to half a second (docs/lanes.md). A Kafka broker
    /// answers as soon as data arrives; on an idle topic the worker then sends up to ten fetches
    /// a second per broker instead of two.
    public static let workerConsumerDefaults = ["queued.max.messages.kbytes": "16384", "fetch.wait.max.ms": "100"]

    /// librdkafka properties for a client of this configuration.
    /// `defaults` are ours and yield to pass-through properties; `extra` overrides both.
    public func kafkaProperties(for kind: KafkaClientKind, defaults: [String: String] = [:],
                                extra: [String: String] = [:]) -> [String: String] {
        var properties = ["bootstrap.servers": kafkaBrokers, "client.id": "pushworker"]
        for (key, value) in defaults { properties[key] = value }
        let foreign = kind == .producer ? Self.consumerOnlyPrefixes : Self.producerOnlyPrefixes
        for (key, value) in rdkafkaProperties where !foreign.contains(where: { key.hasPrefix($0) }) { properties[key] = value }
        for (key, value) in extra { properties[key] = value }
        return properties
    }
}
