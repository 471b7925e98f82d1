import Foundation
import PushCore
import PushHTTP
import PushKafka
import PushRedis

/// The worker's configuration (contract: docs/reference/configuration.md): environment first (12-factor), then an
/// optional JSON file (`PUSHWORKER_CONFIG_FILE`, keys are the variable names), then flags.
public struct Configuration: Sendable {
    public var kafkaBrokers: String
    public var kafkaGroup: String
    public var topicJobs: String
    public var topicRetry: String
    public var topicResults: String
    public var topicTokens: String
    public var topicDLQ: String
    public var topicEvents: String
    public var redisURL: String
    /// `PUSHWORKER_REDIS_PASSWORD`: overrides the password of `redisURL` (a Kubernetes Secret key,
    /// so the URL itself need not be secret).
    public var redisPassword: String?
    public var credentialsDir: String?
    /// `kid:base64key[,kid:base64key…]`; the first signs, all verify.
    public var msgIDKeys: String
    public var caFile: String?
    /// Proxy for outbound HTTPS (providers, webhooks): `http://`, `https://` or `socks…://` URL.
    /// nil = none; never taken from `https_proxy` & co.
    public var httpsProxy: String?
    /// Hosts reached directly although `httpsProxy` is set (comma-separated, libcurl's NOPROXY syntax).
    public var noProxy: String?
    public var webPushAllowedHosts: [String]
    /// Metrics/health listener. Default `0.0.0.0:9400`.
    public var httpAddr: String
    /// Recipients being delivered at once. Default 2000.
    public var maxInFlight: Int
    /// A saturation (`maxInFlight` reached) lasting this long pauses the consumer's partitions;
    /// shorter ones are waited out without polling. Default 5000 ms.
    public var saturationPauseMs: Int = 5000
    /// Attempts per recipient, the first included. Default 5.
    public var maxAttempts: Int
    /// SIGTERM drain budget (`PUSHWORKER_DRAIN_SECONDS`; `PUSHWORKER_SHUTDOWN_GRACE_SECONDS` is
    /// its older name). Default 25 s.
    public var shutdownGraceSeconds: Double
    /// HTTP/2 connections per provider origin. Default 2.
    public var httpConnections: Int
    /// Concurrent streams per connection. Default 100.
    public var httpStreams: Int
    /// Per-request timeout. Default 10 000 ms.
    public var requestTimeoutMs: Int
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
    /// A retry message due further ahead than this goes to the dead-letter topic. Default 3600 s.
    public var retryMaxDelaySeconds: Int = 3600
    public var logLevel: LogLevel
    public var logFormat: LogFormat
    /// `PUSHWORKER_RDKAFKA_<NAME>` ⇒ librdkafka property `<name>` (lower-cased, `_` → `.`).
    public var rdkafkaProperties: [String: String]

    public enum LogLevel: String, Sendable, CaseIterable, Comparable {
        case trace, debug, info, notice, warning, error, critical
        /// Severity rank, `trace` lowest.
        var rank: Int { Self.allCases.firstIndex(of: self) ?? 0 }
        public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rank < b.rank }
    }
    public enum LogFormat: String, Sendable, CaseIterable { case json, text }

    /// Variables, defaults and meaning (docs/reference/configuration.md documents each;
    /// scripts/check_docs.py keeps the two in step).
    public static let variables: [(name: String, defaultValue: String?, meaning: String)] = [
        ("PUSHWORKER_KAFKA_BROKERS", nil, "Kafka bootstrap servers (required for run/enqueue)"),
        ("PUSHWORKER_KAFKA_GROUP", "pushworker", "consumer group of the fleet"),
        ("PUSHWORKER_TOPIC_JOBS", "push.jobs.v1", "fan-out jobs topic"),
        ("PUSHWORKER_TOPIC_RETRY", "push.retry.v1", "retry topic"),
        ("PUSHWORKER_TOPIC_RESULTS", "push.results.v1", "delivery results topic"),
        ("PUSHWORKER_TOPIC_TOKENS", "push.tokens.v1", "invalidated tokens topic"),
        ("PUSHWORKER_TOPIC_DLQ", "push.dlq.v1", "dead-letter topic"),
        ("PUSHWORKER_TOPIC_EVENTS", "push.events.v1", "tracking events topic"),
        ("PUSHWORKER_REDIS_URL", nil, "redis://[:password@]host:port[/db] (required for run)"),
        ("PUSHWORKER_REDIS_PASSWORD", nil, "Redis password (overrides the URL's; e.g. from a Secret key)"),
        ("PUSHWORKER_CREDENTIALS_DIR", nil, "folder with one sub-folder of credentials per app"),
        ("PUSHWORKER_MSGID_KEYS", nil, "kid:base64key[,…] msgId HMAC keys (≥ 32 bytes); first signs (required)"),
        ("PUSHWORKER_CA_FILE", nil, "extra CA bundle trusted for provider TLS (adds trust, never disables verification)"),
        ("PUSHWORKER_WEBPUSH_ALLOWED_HOSTS", nil, "extra Web Push host names, comma-separated (exact, .suffix or an IP literal; no URLs, ports or wildcards)"),
        ("PUSHWORKER_HTTPS_PROXY", nil, "proxy for provider (and webhook) HTTPS: http://, https:// or socks5h:// URL; unset = none (https_proxy & co. are never read)"),
        ("PUSHWORKER_NO_PROXY", nil, "hosts reached directly despite PUSHWORKER_HTTPS_PROXY: comma-separated names (.suffix), IPs, CIDRs or *"),
        ("PUSHWORKER_HTTP_ADDR", "0.0.0.0:9400", "metrics/health listener (IPv4:port or localhost:port)"),
        ("PUSHWORKER_MAX_IN_FLIGHT", "2000", "recipients in delivery at once (back-pressure)"),
        ("PUSHWORKER_SATURATION_PAUSE_MS", "5000", "a saturation lasting this long pauses the partitions (shorter: waited out)"),
        ("PUSHWORKER_MAX_ATTEMPTS", "5", "attempts per recipient before `failed`"),
        ("PUSHWORKER_DRAIN_SECONDS", "25", "SIGTERM drain: how long written requests may still be answered before they are aborted"),
        ("PUSHWORKER_SHUTDOWN_GRACE_SECONDS", nil, "older name of PUSHWORKER_DRAIN_SECONDS (used when that is unset)"),
        ("PUSHWORKER_RESEND_UNANSWERED", "replace", "a request written and never answered: replace (resend once, same replace key) or never (failed/unanswered)"),
        ("PUSHWORKER_MAX_IN_FLIGHT_PER_APP", nil, "recipients of one app × provider in flight at once (default: half of PUSHWORKER_MAX_IN_FLIGHT)"),
        ("PUSHWORKER_HOLD_MAX_SECONDS", "30", "a recipient held by a provider backoff, open breaker or throttle longer than this goes to the retry topic"),
        ("PUSHWORKER_RETRY_MAX_DELAY_SECONDS", "3600", "a retry message due further ahead than this goes to the dead-letter topic (not_before_too_far)"),
        ("PUSHWORKER_HTTP_CONNECTIONS", "2", "HTTP/2 connections per provider origin"),
        ("PUSHWORKER_HTTP_STREAMS", "100", "concurrent streams per connection"),
        ("PUSHWORKER_REQUEST_TIMEOUT_MS", "10000", "per-request timeout"),
        ("PUSHWORKER_CLAIM_LEASE_SECONDS", "30", "how long a claim holds a recipient for its processing (> 2 request timeouts)"),
        ("PUSHWORKER_DEDUP_MAX_SECONDS", "604800", "longest a sent msgId is remembered (a job's expiresAt/ttlSeconds shortens it)"),
        ("PUSHWORKER_RECORD_DELAY_MS", "25", "outcomes gather this long before one Redis record round trip and their results' produce"),
        ("PUSHWORKER_LOG_LEVEL", "info", "trace, debug, info, notice, warning, error, critical"),
        ("PUSHWORKER_LOG_FORMAT", "json", "json or text"),
        ("PUSHWORKER_CONFIG_FILE", nil, "optional JSON file of the same names (environment wins)"),
        ("PUSHWORKER_RDKAFKA_<NAME>", nil, "librdkafka property pass-through, e.g. PUSHWORKER_RDKAFKA_SASL_MECHANISM"),
    ]

    /// Every problem found, at once (`config check` prints them all and exits 78).
    public struct Problems: Error, Sendable, CustomStringConvertible {
        public var messages: [String]
        public init(messages: [String]) { self.messages = messages }
        public var description: String { messages.map { "- \($0)" }.joined(separator: "\n") }
    }

    /// What the configuration will be used for: `run` needs Kafka and Redis, `send` neither.
    public enum Purpose: Sendable { case worker, send, render, enqueue, events }

    /// Reads the configuration from `environment` (and the JSON file it names), then `overrides`.
    public static func load(environment: [String: String] = ProcessInfo.processInfo.environment,
                            overrides: [String: String] = [:], purpose: Purpose) throws(Problems) -> Configuration {
        var problems: [String] = []
        var values: [String: String] = [:]
        if let path = environment["PUSHWORKER_CONFIG_FILE"], !path.isEmpty {
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: path))
                guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                    throw Problems(messages: ["PUSHWORKER_CONFIG_FILE: \(path) is not a JSON object"])
                }
                for (key, value) in object {
                    if !key.hasPrefix("PUSHWORKER_") {
                        problems.append("PUSHWORKER_CONFIG_FILE: \(key) is not a pushworker setting (names are the environment variables' names)")
                    } else if let text = value as? String { values[key] = text }
                    else if let number = value as? NSNumber { values[key] = number.stringValue }
                    else { problems.append("PUSHWORKER_CONFIG_FILE: \(key) must be a string or number") }
                }
            } catch let error as Problems {
                problems += error.messages
            } catch {
                problems.append("PUSHWORKER_CONFIG_FILE: cannot read \(path): \(error.localizedDescription)")
            }
        }
        // The environment wins over the file; an empty variable counts as unset (it does not
        // hide the file's value).
        for (key, value) in environment where key.hasPrefix("PUSHWORKER_") {
            if value.trimmingCharacters(in: .whitespaces).isEmpty && values[key] != nil { continue }
            values[key] = value
        }
        for (key, value) in overrides { values[key] = value }

        func string(_ name: String) -> String? {
            guard let value = values[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else {
                return variables.first { $0.name == name }?.defaultValue
            }
            return value
        }
        func required(_ name: String, when needed: Bool) -> String {
            let value = string(name)
            if needed && value == nil { problems.append("\(name) is required") }
            return value ?? ""
        }
        func integer(_ name: String, _ range: ClosedRange<Int>) -> Int {
            let text = string(name) ?? "0"
            guard let number = Int(text), range.contains(number) else {
                problems.append("\(name) must be a whole number in \(range.lowerBound)…\(range.upperBound), got '\(text)'")
                return range.lowerBound
            }
            return number
        }

        // The older name counts only when the new one is not given.
        let drainVariable = string("PUSHWORKER_DRAIN_SECONDS") != nil && values["PUSHWORKER_DRAIN_SECONDS"] != nil
            || string("PUSHWORKER_SHUTDOWN_GRACE_SECONDS") == nil ? "PUSHWORKER_DRAIN_SECONDS" : "PUSHWORKER_SHUTDOWN_GRACE_SECONDS"
        let needsKafka = purpose == .worker || purpose == .enqueue || purpose == .events
        let needsRedis = purpose == .worker || purpose == .events
        let needsKeys = purpose != .enqueue
        var configuration = Configuration(
            kafkaBrokers: required("PUSHWORKER_KAFKA_BROKERS", when: needsKafka),
            kafkaGroup: string("PUSHWORKER_KAFKA_GROUP") ?? "pushworker",
            topicJobs: string("PUSHWORKER_TOPIC_JOBS") ?? "push.jobs.v1",
            topicRetry: string("PUSHWORKER_TOPIC_RETRY") ?? "push.retry.v1",
            topicResults: string("PUSHWORKER_TOPIC_RESULTS") ?? "push.results.v1",
            topicTokens: string("PUSHWORKER_TOPIC_TOKENS") ?? "push.tokens.v1",
            topicDLQ: string("PUSHWORKER_TOPIC_DLQ") ?? "push.dlq.v1",
            topicEvents: string("PUSHWORKER_TOPIC_EVENTS") ?? "push.events.v1",
            redisURL: required("PUSHWORKER_REDIS_URL", when: needsRedis),
            credentialsDir: string("PUSHWORKER_CREDENTIALS_DIR"),
            msgIDKeys: required("PUSHWORKER_MSGID_KEYS", when: needsKeys),
            caFile: string("PUSHWORKER_CA_FILE"),
            webPushAllowedHosts: [],
            httpAddr: string("PUSHWORKER_HTTP_ADDR") ?? "0.0.0.0:9400",
            maxInFlight: integer("PUSHWORKER_MAX_IN_FLIGHT", 1...1_000_000),
            maxAttempts: integer("PUSHWORKER_MAX_ATTEMPTS", 1...100),
            shutdownGraceSeconds: Double(integer(drainVariable, 0...3600)),
            httpConnections: integer("PUSHWORKER_HTTP_CONNECTIONS", 1...64),
            httpStreams: integer("PUSHWORKER_HTTP_STREAMS", 1...1000),
            requestTimeoutMs: integer("PUSHWORKER_REQUEST_TIMEOUT_MS", 100...600_000),
            logLevel: .info, logFormat: .json, rdkafkaProperties: [:])
        configuration.saturationPauseMs = integer("PUSHWORKER_SATURATION_PAUSE_MS", 0...600_000)
        configuration.claimLeaseSeconds = integer("PUSHWORKER_CLAIM_LEASE_SECONDS", 2...3600)
        configuration.dedupMaxSeconds = integer("PUSHWORKER_DEDUP_MAX_SECONDS", 60...31_536_000)
        configuration.recordDelayMs = integer("PUSHWORKER_RECORD_DELAY_MS", 0...1000)
        configuration.redisPassword = string("PUSHWORKER_REDIS_PASSWORD")
        if let policy = string("PUSHWORKER_RESEND_UNANSWERED") {
            if ["replace", "never"].contains(policy) { configuration.resendUnanswered = policy }
            else { problems.append("PUSHWORKER_RESEND_UNANSWERED must be replace or never, got '\(policy)'") }
        }
        configuration.maxInFlightPerApp = string("PUSHWORKER_MAX_IN_FLIGHT_PER_APP") == nil
            ? max(1, configuration.maxInFlight / 2) : integer("PUSHWORKER_MAX_IN_FLIGHT_PER_APP", 1...1_000_000)
        configuration.holdMaxSeconds = integer("PUSHWORKER_HOLD_MAX_SECONDS", 0...3600)
        configuration.retryMaxDelaySeconds = integer("PUSHWORKER_RETRY_MAX_DELAY_SECONDS", 1...31_536_000)
        if configuration.claimLeaseSeconds * 1000 <= 2 * configuration.requestTimeoutMs {
            problems.append("PUSHWORKER_CLAIM_LEASE_SECONDS (\(configuration.claimLeaseSeconds) s) must be more than two request timeouts (PUSHWORKER_REQUEST_TIMEOUT_MS \(configuration.requestTimeoutMs) ms): a claim must outlive its send")
        }
        configuration.httpsProxy = string("PUSHWORKER_HTTPS_PROXY")
        configuration.noProxy = string("PUSHWORKER_NO_PROXY")
        if let problem = HTTPClientConfiguration.proxyProblem(configuration.httpsProxy) {
            problems.append("PUSHWORKER_HTTPS_PROXY: \(problem)")
        }
        if let noProxy = configuration.noProxy, noProxy.contains(where: { $0.isWhitespace && $0 != " " }) || noProxy.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            problems.append("PUSHWORKER_NO_PROXY must be a comma-separated list of hosts, IPs or CIDRs")
        }

        if let level = string("PUSHWORKER_LOG_LEVEL") {
            if let parsed = LogLevel(rawValue: level.lowercased()) { configuration.logLevel = parsed }
            else { problems.append("PUSHWORKER_LOG_LEVEL must be one of \(LogLevel.allCases.map(\.rawValue).joined(separator: ", ")), got '\(level)'") }
        }
        if let format = string("PUSHWORKER_LOG_FORMAT") {
            if let parsed = LogFormat(rawValue: format.lowercased()) { configuration.logFormat = parsed }
            else { problems.append("PUSHWORKER_LOG_FORMAT must be json or text, got '\(format)'") }
        }
        if let problem = ConfigurationChecks.listenAddress(configuration.httpAddr, variable: "PUSHWORKER_HTTP_ADDR") {
            problems.append(problem)
        }
        let allowList = ConfigurationChecks.allowedHosts(string("PUSHWORKER_WEBPUSH_ALLOWED_HOSTS") ?? "")
        configuration.webPushAllowedHosts = allowList.hosts
        problems += allowList.problems
        let topics = [("PUSHWORKER_TOPIC_JOBS", configuration.topicJobs), ("PUSHWORKER_TOPIC_RETRY", configuration.topicRetry),
                      ("PUSHWORKER_TOPIC_RESULTS", configuration.topicResults), ("PUSHWORKER_TOPIC_TOKENS", configuration.topicTokens),
                      ("PUSHWORKER_TOPIC_DLQ", configuration.topicDLQ), ("PUSHWORKER_TOPIC_EVENTS", configuration.topicEvents)]
        problems += topics.compactMap { ConfigurationChecks.topic($0.1, variable: $0.0) }
        problems += ConfigurationChecks.topicOverlap(consumed: Array(topics[0..<2]).map { ($0.0, $0.1) },
                                                     produced: Array(topics[2...]).map { ($0.0, $0.1) })
        if !configuration.kafkaBrokers.isEmpty { problems += ConfigurationChecks.brokers(configuration.kafkaBrokers) }
        if needsKeys && !configuration.msgIDKeys.isEmpty {
            do { _ = try MsgIDKeyring(parsing: configuration.msgIDKeys) }
            catch {
                // The keyring's messages name the variable already; they never hold key material.
                let text = "\(error)"
                problems.append(text.hasPrefix("PUSHWORKER_MSGID_KEYS") ? text : "PUSHWORKER_MSGID_KEYS: \(text)")
            }
        }
        if let dir = configuration.credentialsDir {
            var isDirectory: ObjCBool = false
            if !FileManager.default.fileExists(atPath: dir, isDirectory: &isDirectory) || !isDirectory.boolValue {
                problems.append("PUSHWORKER_CREDENTIALS_DIR: \(dir) is not a folder")
            }
        }
        if let ca = configuration.caFile, let problem = ConfigurationChecks.caFile(ca) {
            problems.append(problem)
        }
        if needsRedis, !configuration.redisURL.isEmpty {
            // RedisTarget's errors never contain the password (redis://, unix:// or redis+cluster://).
            do { _ = try RedisTarget(url: configuration.redisURL) } catch { problems.append("PUSHWORKER_REDIS_URL: \(error)") }
        }
        for (key, value) in values where key.hasPrefix("PUSHWORKER_RDKAFKA_") {
            let name = key.dropFirst("PUSHWORKER_RDKAFKA_".count).lowercased().replacingOccurrences(of: "_", with: ".")
            if name.isEmpty { problems.append("\(key): empty librdkafka property name") }
            else { configuration.rdkafkaProperties[name] = value }
        }
        if needsKafka { problems += ConfigurationChecks.kafkaProperties(configuration) }
        let known = Set(variables.map(\.name))
        for key in values.keys where key.hasPrefix("PUSHWORKER_") && !key.hasPrefix("PUSHWORKER_RDKAFKA_") && !known.contains(key) {
            problems.append("\(key) is not a pushworker setting (typo?)")
        }
        if !problems.isEmpty { throw Problems(messages: problems.sorted()) }
        return configuration
    }

    /// Where Redis is: `PUSHWORKER_REDIS_URL` (`redis://`, `unix://` or `redis+cluster://`), its
    /// password replaced by `PUSHWORKER_REDIS_PASSWORD` when that is set.
    public func redisTarget() throws(RedisError) -> RedisTarget {
        switch try RedisTarget(url: redisURL) {
        case .standalone(var endpoint):
            if let redisPassword { endpoint.password = redisPassword }
            return .standalone(endpoint)
        case .cluster(var endpoint):
            if let redisPassword { endpoint.password = redisPassword }
            return .cluster(endpoint)
        }
    }

    /// A client for ``redisTarget()`` (it connects at its first command).
    public func redisClient(timeout: Duration = .seconds(2)) throws(RedisError) -> any RedisPipelining {
        try redisTarget().makeClient(timeout: timeout)
    }

    /// Printable `NAME=value` lines with secrets redacted (`config print`).
    public func redactedLines() -> [String] {
        var lines = [
            "PUSHWORKER_KAFKA_BROKERS=\(kafkaBrokers)", "PUSHWORKER_KAFKA_GROUP=\(kafkaGroup)",
            "PUSHWORKER_TOPIC_JOBS=\(topicJobs)", "PUSHWORKER_TOPIC_RETRY=\(topicRetry)",
            "PUSHWORKER_TOPIC_RESULTS=\(topicResults)", "PUSHWORKER_TOPIC_TOKENS=\(topicTokens)",
            "PUSHWORKER_TOPIC_DLQ=\(topicDLQ)", "PUSHWORKER_TOPIC_EVENTS=\(topicEvents)",
            "PUSHWORKER_REDIS_URL=\(Self.redactURL(redisURL))",
            "PUSHWORKER_REDIS_PASSWORD=\(redisPassword == nil ? "" : "<redacted>")",
            "PUSHWORKER_CREDENTIALS_DIR=\(credentialsDir ?? "")",
            "PUSHWORKER_MSGID_KEYS=\(Self.redactKeys(msgIDKeys))",
            "PUSHWORKER_CA_FILE=\(caFile ?? "")",
            "PUSHWORKER_HTTPS_PROXY=\(httpsProxy.map(HTTPClientConfiguration.redacted) ?? "")",
            "PUSHWORKER_NO_PROXY=\(noProxy ?? "")",
            "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS=\(webPushAllowedHosts.joined(separator: ","))",
            "PUSHWORKER_HTTP_ADDR=\(httpAddr)", "PUSHWORKER_MAX_IN_FLIGHT=\(maxInFlight)",
            "PUSHWORKER_SATURATION_PAUSE_MS=\(saturationPauseMs)",
            "PUSHWORKER_MAX_ATTEMPTS=\(maxAttempts)", "PUSHWORKER_DRAIN_SECONDS=\(Int(shutdownGraceSeconds))",
            "PUSHWORKER_RESEND_UNANSWERED=\(resendUnanswered)", "PUSHWORKER_MAX_IN_FLIGHT_PER_APP=\(maxInFlightPerApp)",
            "PUSHWORKER_HOLD_MAX_SECONDS=\(holdMaxSeconds)", "PUSHWORKER_RETRY_MAX_DELAY_SECONDS=\(retryMaxDelaySeconds)",
            "PUSHWORKER_HTTP_CONNECTIONS=\(httpConnections)", "PUSHWORKER_HTTP_STREAMS=\(httpStreams)",
            "PUSHWORKER_REQUEST_TIMEOUT_MS=\(requestTimeoutMs)",
            "PUSHWORKER_CLAIM_LEASE_SECONDS=\(claimLeaseSeconds)", "PUSHWORKER_DEDUP_MAX_SECONDS=\(dedupMaxSeconds)",
            "PUSHWORKER_RECORD_DELAY_MS=\(recordDelayMs)",
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
