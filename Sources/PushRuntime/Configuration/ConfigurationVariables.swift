import Foundation
import PushCore
import PushEncoding
import PushHTTP
import PushRedis

extension Configuration {
    /// One `PUSHWORKER_*` variable: its name, default and meaning (docs/reference/configuration.md)
    /// and where its value goes.
    struct Variable: Sendable {
        enum Target: Sendable {
            /// Text; the default when unset.
            case text(any WritableKeyPath<Configuration, String> & Sendable)
            /// Text, nil when unset.
            case optionalText(any WritableKeyPath<Configuration, String?> & Sendable)
            /// Text the purposes listed cannot do without (`NAME is required`).
            case required(any WritableKeyPath<Configuration, String> & Sendable, for: Set<Purpose>)
            /// A whole number in a range.
            case integer(any WritableKeyPath<Configuration, Int> & Sendable, ClosedRange<Int>)
            /// Read by its own code (a choice, a list, a value that depends on another variable).
            case custom(@Sendable (inout ConfigurationReader, inout Configuration) -> Void)
            /// Documented here, read elsewhere (the file, the pass-through, an older name).
            case elsewhere
        }

        var name: String
        var defaultValue: String?
        var meaning: String
        var target: Target

        init(_ name: String, _ defaultValue: String?, _ meaning: String, _ target: Target) {
            self.name = name; self.defaultValue = defaultValue; self.meaning = meaning; self.target = target
        }
    }

    static let kafkaPurposes: Set<Purpose> = [.worker, .enqueue, .events, .api]
    static let redisPurposes: Set<Purpose> = [.worker, .events, .api, .campaign]
    static let keyPurposes: Set<Purpose> = [.worker, .send, .render, .events]

    /// Every variable, in the order `config check` and the reference list them.
    static let table: [Variable] = [
        Variable("PUSHWORKER_KAFKA_BROKERS", nil, "Kafka bootstrap servers (required for run/enqueue)",
                 .required(\.kafkaBrokers, for: kafkaPurposes)),
        Variable("PUSHWORKER_KAFKA_GROUP", "pushworker", "consumer group of the fleet", .text(\.kafkaGroup)),
        Variable("PUSHWORKER_TOPIC_JOBS", "push.jobs.v1", "fan-out jobs topic", .text(\.topicJobs)),
        Variable("PUSHWORKER_TOPIC_JOBS_TRANSACTIONAL", "push.jobs.transactional.v1", "fan-out jobs topic of the transactional lane",
                 .text(\.topicJobsTransactional)),
        Variable("PUSHWORKER_TOPIC_RETRY", "push.retry.v1", "retry topic", .text(\.topicRetry)),
        Variable("PUSHWORKER_TOPIC_RESULTS", "push.results.v1", "delivery results topic", .text(\.topicResults)),
        Variable("PUSHWORKER_TOPIC_TOKENS", "push.tokens.v1", "invalidated tokens topic", .text(\.topicTokens)),
        Variable("PUSHWORKER_TOPIC_DLQ", "push.dlq.v1", "dead-letter topic", .text(\.topicDLQ)),
        Variable("PUSHWORKER_TOPIC_EVENTS", "push.events.v1", "tracking events topic", .text(\.topicEvents)),
        Variable("PUSHWORKER_REDIS_URL", nil,
                 "redis[s]://[user:password@]host:port[/db], redis[s]+cluster://…, redis[s]+sentinel://h1:p1,h2:p2/<master>[/db] or unix:// (required for run)",
                 .required(\.redisURL, for: redisPurposes)),
        Variable("PUSHWORKER_REDIS_PASSWORD", nil, "Redis password (overrides the URL's; e.g. from a Secret key)",
                 .optionalText(\.redisPassword)),
        Variable("PUSHWORKER_REDIS_CA_FILE", nil, "PEM CA certificates that verify Redis's TLS certificates (rediss…:// URLs; unset: the system store)",
                 .optionalText(\.redisCAFile)),
        Variable("PUSHWORKER_REDIS_CERT_FILE", nil, "client certificate (PEM) for Redis servers that require one (rediss…://; with PUSHWORKER_REDIS_KEY_FILE)",
                 .optionalText(\.redisCertFile)),
        Variable("PUSHWORKER_REDIS_KEY_FILE", nil, "private key (PEM) of PUSHWORKER_REDIS_CERT_FILE", .optionalText(\.redisKeyFile)),
        Variable("PUSHWORKER_REDIS_SENTINEL_PASSWORD", nil, "the Sentinels' own password (redis+sentinel://; the URL's password is the master's)",
                 .optionalText(\.redisSentinelPassword)),
        Variable("PUSHWORKER_CREDENTIALS_DIR", nil, "folder with one sub-folder of credentials per app", .optionalText(\.credentialsDir)),
        Variable("PUSHWORKER_MSGID_KEYS", nil, "kid:base64key[,…] msgId HMAC keys (≥ 32 bytes); first signs (required)",
                 .required(\.msgIDKeys, for: keyPurposes)),
        Variable("PUSHWORKER_CA_FILE", nil, "extra CA bundle trusted for provider TLS (adds trust, never disables verification)",
                 .optionalText(\.caFile)),
        Variable("PUSHWORKER_WEBPUSH_ALLOWED_HOSTS", nil,
                 "extra Web Push host names, comma-separated (exact, .suffix or an IP literal; no URLs, ports or wildcards)",
                 .custom { reader, configuration in
                     let allowList = ConfigurationChecks.allowedHosts(reader.string("PUSHWORKER_WEBPUSH_ALLOWED_HOSTS") ?? "")
                     configuration.webPushAllowedHosts = allowList.hosts
                     reader.problems += allowList.problems
                 }),
        Variable("PUSHWORKER_HTTPS_PROXY", nil,
                 "proxy for provider (and webhook) HTTPS: http://, https:// or socks5h:// URL; unset = none (https_proxy & co. are never read)",
                 .optionalText(\.httpsProxy)),
        Variable("PUSHWORKER_NO_PROXY", nil,
                 "hosts reached directly despite PUSHWORKER_HTTPS_PROXY: comma-separated names (.suffix), IPs, CIDRs or *",
                 .optionalText(\.noProxy)),
        Variable("PUSHWORKER_HTTP_ADDR", "0.0.0.0:9400", "metrics/health listener (IPv4:port or localhost:port)", .text(\.httpAddr)),
        Variable("PUSHWORKER_MAX_IN_FLIGHT", "2000", "recipients in delivery at once (back-pressure)",
                 .integer(\.maxInFlight, 1...1_000_000)),
        Variable("PUSHWORKER_TRANSACTIONAL_RESERVE", "0.2",
                 "share of PUSHWORKER_MAX_IN_FLIGHT kept for transactional jobs (bulk uses at most the rest; 0 keeps none)",
                 .custom { reader, configuration in
                     guard let text = reader.string("PUSHWORKER_TRANSACTIONAL_RESERVE") else { return }
                     if let share = Double(text), share >= 0, share < 1 { configuration.transactionalReserve = share }
                     else { reader.problems.append("PUSHWORKER_TRANSACTIONAL_RESERVE must be a number from 0 to below 1, got '\(text)'") }
                 }),
        Variable("PUSHWORKER_LANES", "both", "which lanes' job topics the worker consumes: both, transactional or bulk",
                 .custom { reader, configuration in
                     guard let text = reader.string("PUSHWORKER_LANES") else { return }
                     if let lanes = LaneSelection(rawValue: text.lowercased()) { configuration.lanes = lanes }
                     else { reader.problems.append("PUSHWORKER_LANES must be both, transactional or bulk, got '\(text)'") }
                 }),
        Variable("PUSHWORKER_QUIET_HOURS", nil,
                 "per-app default quiet hours of bulk jobs, app=HH:MM-HH:MM[,…] (e.g. app_shop=22:00-08:00)",
                 .custom { reader, configuration in
                     guard let text = reader.string("PUSHWORKER_QUIET_HOURS") else { return }
                     switch QuietHours.parseDefaults(text) {
                     case .success(let table): configuration.quietHours = table
                     case .failure(let problem): reader.problems.append("PUSHWORKER_QUIET_HOURS: \(problem.message)")
                     }
                 }),
        Variable("PUSHWORKER_SATURATION_PAUSE_MS", "5000", "a saturation lasting this long pauses the partitions (shorter: waited out)",
                 .integer(\.saturationPauseMs, 0...600_000)),
        Variable("PUSHWORKER_MAX_ATTEMPTS", "5", "attempts per recipient before `failed`", .integer(\.maxAttempts, 1...100)),
        Variable("PUSHWORKER_DRAIN_SECONDS", "25", "SIGTERM drain: how long written requests may still be answered before they are aborted",
                 .custom { reader, configuration in
                     // The older name counts only when the new one is not given.
                     let name = reader.isGiven("PUSHWORKER_DRAIN_SECONDS") || reader.string("PUSHWORKER_SHUTDOWN_GRACE_SECONDS") == nil
                         ? "PUSHWORKER_DRAIN_SECONDS" : "PUSHWORKER_SHUTDOWN_GRACE_SECONDS"
                     configuration.shutdownGraceSeconds = Double(reader.integer(name, 0...3600))
                 }),
        Variable("PUSHWORKER_SHUTDOWN_GRACE_SECONDS", nil, "older name of PUSHWORKER_DRAIN_SECONDS (used when that is unset)", .elsewhere),
        Variable("PUSHWORKER_RESEND_UNANSWERED", "replace",
                 "a request written and never answered: replace (resend once, same replace key) or never (failed/unanswered)",
                 .custom { reader, configuration in
                     guard let policy = reader.string("PUSHWORKER_RESEND_UNANSWERED") else { return }
                     if ["replace", "never"].contains(policy) { configuration.resendUnanswered = policy }
                     else { reader.problems.append("PUSHWORKER_RESEND_UNANSWERED must be replace or never, got '\(policy)'") }
                 }),
        Variable("PUSHWORKER_MAX_IN_FLIGHT_PER_APP", nil,
                 "recipients of one app × provider in flight at once (default: half of PUSHWORKER_MAX_IN_FLIGHT)",
                 .custom { reader, configuration in
                     configuration.maxInFlightPerApp = reader.string("PUSHWORKER_MAX_IN_FLIGHT_PER_APP") == nil
                         ? max(1, configuration.maxInFlight / 2) : reader.integer("PUSHWORKER_MAX_IN_FLIGHT_PER_APP", 1...1_000_000)
                 }),
        Variable("PUSHWORKER_HOLD_MAX_SECONDS", "30",
                 "a recipient held by a provider backoff, open breaker or throttle longer than this goes to the retry topic",
                 .integer(\.holdMaxSeconds, 0...3600)),
        Variable("PUSHWORKER_GUARD_INVALID_SHARE", "0.5",
                 "a campaign whose invalid_token + rejected results pass this share of its results pauses itself (1 turns the guardrail off)",
                 .custom { reader, configuration in
                     guard let text = reader.string("PUSHWORKER_GUARD_INVALID_SHARE") else { return }
                     if let share = Double(text), share >= 0, share <= 1 { configuration.guardInvalidShare = share }
                     else { reader.problems.append("PUSHWORKER_GUARD_INVALID_SHARE must be a number from 0 to 1, got '\(text)'") }
                 }),
        Variable("PUSHWORKER_GUARD_MIN_SENDS", "200", "results a campaign has before the guardrail judges it (0 turns it off)",
                 .integer(\.guardMinSends, 0...100_000_000)),
        Variable("PUSHWORKER_PAUSE_RECHECK_SECONDS", "10",
                 "a paused campaign's recipients wait on the retry topic this long before they are looked at again",
                 .integer(\.pauseRecheckSeconds, 1...3600)),
        Variable("PUSHWORKER_CAPS", nil,
                 "frequency caps: category=count/window[,…] with windows in s, m, h or d (marketing=3/1d,marketing=1/1h); jobs name theirs in capCategory",
                 .custom { reader, configuration in
                     guard let text = reader.string("PUSHWORKER_CAPS") else { return }
                     do { configuration.caps = try FrequencyCaps(parsing: text) } catch {
                         reader.problems.append("PUSHWORKER_CAPS: \(error)")
                     }
                 }),
        Variable("PUSHWORKER_RETRY_MAX_DELAY_SECONDS", "3600",
                 "a retry message due further ahead than this goes to the dead-letter topic (not_before_too_far)",
                 .integer(\.retryMaxDelaySeconds, 1...31_536_000)),
        Variable("PUSHWORKER_HTTP_CONNECTIONS", "2", "HTTP/2 connections per provider origin", .integer(\.httpConnections, 1...64)),
        Variable("PUSHWORKER_HTTP_STREAMS", "100", "concurrent streams per connection", .integer(\.httpStreams, 1...1000)),
        Variable("PUSHWORKER_REQUEST_TIMEOUT_MS", "10000", "per-request timeout", .integer(\.requestTimeoutMs, 100...600_000)),
        Variable("PUSHWORKER_CLAIM_LEASE_SECONDS", "30", "how long a claim holds a recipient for its processing (> 2 request timeouts)",
                 .integer(\.claimLeaseSeconds, 2...3600)),
        Variable("PUSHWORKER_DEDUP_MAX_SECONDS", "604800", "longest a sent msgId is remembered (a job's expiresAt/ttlSeconds shortens it)",
                 .integer(\.dedupMaxSeconds, 60...31_536_000)),
        Variable("PUSHWORKER_RECORD_DELAY_MS", "25", "outcomes gather this long before one Redis record round trip and their results' produce",
                 .integer(\.recordDelayMs, 0...1000)),
        Variable("PUSHWORKER_API_ADDR", "0.0.0.0:9500", "`pushworker api` listener: the HTTP API, /metrics, /healthz, /readyz (IPv4:port or localhost:port)",
                 .text(\.apiAddr)),
        Variable("PUSHWORKER_API_TOKENS_FILE", nil,
                 "`pushworker api` bearer tokens: one per line (≥ 16 characters), blank lines and # comments ignored (required for api)",
                 .required(\.apiTokensFile, for: [.api])),
        Variable("PUSHWORKER_API_MAX_BODY", "8388608", "`pushworker api`: request bodies over this many bytes are answered 413",
                 .integer(\.apiMaxBody, 1024...268_435_456)),
        Variable("PUSHWORKER_API_THREADS", "4", "`pushworker api`: listener threads (each serves its connections one request at a time)",
                 .integer(\.apiThreads, 1...256)),
        Variable("PUSHWORKER_API_IDEMPOTENCY_TTL_SECONDS", "86400",
                 "`pushworker api`: how long the answer to a POST /v1/jobs with an Idempotency-Key is kept (Redis)",
                 .integer(\.apiIdempotencyTTLSeconds, 60...2_592_000)),
        Variable("PUSHWORKER_API_PRODUCE_TIMEOUT_SECONDS", "30",
                 "`pushworker api`: longest wait for Kafka to acknowledge the jobs of one POST /v1/jobs",
                 .integer(\.apiProduceTimeoutSeconds, 1...300)),
        Variable("PUSHWORKER_LOG_LEVEL", "info", "trace, debug, info, notice, warning, error, critical",
                 .custom { reader, configuration in
                     guard let level = reader.string("PUSHWORKER_LOG_LEVEL") else { return }
                     if let parsed = LogLevel(rawValue: level.lowercased()) { configuration.logLevel = parsed }
                     else { reader.problems.append("PUSHWORKER_LOG_LEVEL must be one of \(LogLevel.allCases.map(\.rawValue).joined(separator: ", ")), got '\(level)'") }
                 }),
        Variable("PUSHWORKER_LOG_FORMAT", "json", "json or text",
                 .custom { reader, configuration in
                     guard let format = reader.string("PUSHWORKER_LOG_FORMAT") else { return }
                     if let parsed = LogFormat(rawValue: format.lowercased()) { configuration.logFormat = parsed }
                     else { reader.problems.append("PUSHWORKER_LOG_FORMAT must be json or text, got '\(format)'") }
                 }),
        Variable("PUSHWORKER_CONFIG_FILE", nil, "optional JSON file of the same names (environment wins)", .elsewhere),
        Variable("PUSHWORKER_RDKAFKA_<NAME>", nil, "librdkafka property pass-through, e.g. PUSHWORKER_RDKAFKA_SASL_MECHANISM",
                 .custom { reader, configuration in
                     for (key, value) in reader.values where key.hasPrefix("PUSHWORKER_RDKAFKA_") {
                         let name = key.dropFirst("PUSHWORKER_RDKAFKA_".count).lowercased().replacingOccurrences(of: "_", with: ".")
                         if name.isEmpty { reader.problems.append("\(key): empty librdkafka property name") }
                         else { configuration.rdkafkaProperties[name] = value }
                     }
                 }),
    ]
}

/// The values `Configuration.load` reads (the JSON file, then the environment, then the
/// overrides) and the problems found so far.
struct ConfigurationReader {
    private(set) var values: [String: String] = [:]
    var problems: [String] = []
    let purpose: Configuration.Purpose
    private let defaults: [String: String]

    init(environment: [String: String], overrides: [String: String], purpose: Configuration.Purpose) {
        self.purpose = purpose
        defaults = Dictionary(Configuration.table.compactMap { variable in variable.defaultValue.map { (variable.name, $0) } },
                              uniquingKeysWith: { first, _ in first })
        if let path = environment["PUSHWORKER_CONFIG_FILE"], !path.isEmpty { readFile(path) }
        // The environment wins over the file; an empty variable counts as unset (it does not
        // hide the file's value).
        for (key, value) in environment where key.hasPrefix("PUSHWORKER_") {
            if value.trimmingCharacters(in: .whitespaces).isEmpty && values[key] != nil { continue }
            values[key] = value
        }
        for (key, value) in overrides { values[key] = value }
    }

    /// `PUSHWORKER_CONFIG_FILE`: a JSON object whose keys are the variables' names and whose
    /// values are strings or numbers.
    private mutating func readFile(_ path: String) {
        let object: JSONObject
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            guard let parsed = try JSONParser.parse([UInt8](data), maxDepth: 8).objectValue else {
                problems.append("PUSHWORKER_CONFIG_FILE: \(path) is not a JSON object")
                return
            }
            object = parsed
        } catch {
            problems.append("PUSHWORKER_CONFIG_FILE: cannot read \(path): \(Self.reason(error))")
            return
        }
        for (key, value) in object.members {
            if !key.hasPrefix("PUSHWORKER_") {
                problems.append("PUSHWORKER_CONFIG_FILE: \(key) is not a pushworker setting (names are the environment variables' names)")
            } else if let text = value.stringValue {
                values[key] = text
            } else if case .number(let number) = value {
                values[key] = number.intValue.map(String.init) ?? number.literal
            } else {
                problems.append("PUSHWORKER_CONFIG_FILE: \(key) must be a string or number")
            }
        }
    }

    private static func reason(_ error: any Error) -> String {
        (error as? JSONParseError)?.description ?? error.localizedDescription
    }

    /// The trimmed value of `name`, its default when unset or blank, else nil.
    func string(_ name: String) -> String? {
        guard let value = values[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return defaults[name] }
        return value
    }

    /// Whether `name` was given at all (an empty value counts).
    func isGiven(_ name: String) -> Bool { values[name] != nil }

    /// `name` as a whole number in `range`; a problem (and the range's lower bound) otherwise.
    mutating func integer(_ name: String, _ range: ClosedRange<Int>) -> Int {
        let text = string(name) ?? "0"
        guard let number = Int(text), range.contains(number) else {
            problems.append("\(name) must be a whole number in \(range.lowerBound)…\(range.upperBound), got '\(text)'")
            return range.lowerBound
        }
        return number
    }

    /// Reads `variable` into its field.
    mutating func read(_ variable: Configuration.Variable, into configuration: inout Configuration) {
        switch variable.target {
        case .text(let field):
            configuration[keyPath: field] = string(variable.name) ?? ""
        case .optionalText(let field):
            configuration[keyPath: field] = string(variable.name)
        case .required(let field, let purposes):
            let value = string(variable.name)
            if purposes.contains(purpose) && value == nil { problems.append("\(variable.name) is required") }
            configuration[keyPath: field] = value ?? ""
        case .integer(let field, let range):
            configuration[keyPath: field] = integer(variable.name, range)
        case .custom(let read):
            read(&self, &configuration)
        case .elsewhere:
            break
        }
    }

    /// The problems of values that are fine alone but not together, or that a library would
    /// misread (docs/reference/configuration.md: refuse what cannot be used, naming the variable).
    mutating func check(_ configuration: Configuration) {
        if configuration.claimLeaseSeconds * 1000 <= 2 * configuration.requestTimeoutMs {
            problems.append("PUSHWORKER_CLAIM_LEASE_SECONDS (\(configuration.claimLeaseSeconds) s) must be more than two request timeouts (PUSHWORKER_REQUEST_TIMEOUT_MS \(configuration.requestTimeoutMs) ms): a claim must outlive its send")
        }
        if let problem = HTTPClientConfiguration.proxyProblem(configuration.httpsProxy) {
            problems.append("PUSHWORKER_HTTPS_PROXY: \(problem)")
        }
        if let noProxy = configuration.noProxy,
           noProxy.contains(where: { $0.isWhitespace && $0 != " " }) || noProxy.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            problems.append("PUSHWORKER_NO_PROXY must be a comma-separated list of hosts, IPs or CIDRs")
        }
        if let problem = ConfigurationChecks.listenAddress(configuration.httpAddr, variable: "PUSHWORKER_HTTP_ADDR") {
            problems.append(problem)
        }
        if let problem = ConfigurationChecks.listenAddress(configuration.apiAddr, variable: "PUSHWORKER_API_ADDR") {
            problems.append(problem)
        }
        if purpose == .api, !configuration.apiTokensFile.isEmpty, !FileManager.default.isReadableFile(atPath: configuration.apiTokensFile) {
            problems.append("PUSHWORKER_API_TOKENS_FILE: \(configuration.apiTokensFile) is not a readable file")
        }
        checkTopics(configuration)
        if !configuration.kafkaBrokers.isEmpty { problems += ConfigurationChecks.brokers(configuration.kafkaBrokers) }
        if Configuration.keyPurposes.contains(purpose) && !configuration.msgIDKeys.isEmpty {
            do { _ = try MsgIDKeyring(parsing: configuration.msgIDKeys) }
            catch {
                // The keyring's messages name the variable already; they never hold key material.
                let text = "\(error)"
                problems.append(text.hasPrefix("PUSHWORKER_MSGID_KEYS") ? text : "PUSHWORKER_MSGID_KEYS: \(text)")
            }
        }
        // `api` and `campaign` read no credentials: the image's default folder need not exist for them.
        if let dir = configuration.credentialsDir, purpose != .api, purpose != .campaign {
            var isDirectory: ObjCBool = false
            if !FileManager.default.fileExists(atPath: dir, isDirectory: &isDirectory) || !isDirectory.boolValue {
                problems.append("PUSHWORKER_CREDENTIALS_DIR: \(dir) is not a folder")
            }
        }
        if let ca = configuration.caFile, let problem = ConfigurationChecks.caFile(ca) { problems.append(problem) }
        if Configuration.redisPurposes.contains(purpose), !configuration.redisURL.isEmpty { checkRedis(configuration) }
        if Configuration.kafkaPurposes.contains(purpose) { problems += ConfigurationChecks.kafkaProperties(configuration) }
        let known = Set(Configuration.table.map(\.name))
        for key in values.keys where key.hasPrefix("PUSHWORKER_") && !key.hasPrefix("PUSHWORKER_RDKAFKA_") && !known.contains(key) {
            let hint = Suggestion.closestVariable(to: key, prefix: "PUSHWORKER_", in: known).map { "did you mean \($0)?" } ?? "typo?"
            problems.append("\(key) is not a pushworker setting (\(hint))")
        }
    }

    /// The Redis URL parses (RedisTarget's errors never contain the password), the TLS and
    /// Sentinel settings belong to its scheme, and the TLS files load (read as the client will).
    private mutating func checkRedis(_ configuration: Configuration) {
        let target: RedisTarget
        do { target = try RedisTarget(url: configuration.redisURL) } catch {
            problems.append("PUSHWORKER_REDIS_URL: \(error)")
            return
        }
        let files = [("PUSHWORKER_REDIS_CA_FILE", configuration.redisCAFile, "-----BEGIN CERTIFICATE-----"),
                     ("PUSHWORKER_REDIS_CERT_FILE", configuration.redisCertFile, "-----BEGIN CERTIFICATE-----"),
                     ("PUSHWORKER_REDIS_KEY_FILE", configuration.redisKeyFile, "PRIVATE KEY-----")]
        let given = files.filter { $0.1 != nil }
        if !target.usesTLS, let first = given.first {
            problems.append("\(first.0) is set but PUSHWORKER_REDIS_URL does not use TLS: write rediss://, rediss+cluster:// or rediss+sentinel://")
            return
        }
        if (configuration.redisCertFile == nil) != (configuration.redisKeyFile == nil) {
            problems.append("PUSHWORKER_REDIS_CERT_FILE and PUSHWORKER_REDIS_KEY_FILE go together (a client certificate and its key)")
        }
        if configuration.redisSentinelPassword != nil {
            if case .sentinel = target {} else {
                problems.append("PUSHWORKER_REDIS_SENTINEL_PASSWORD is set but PUSHWORKER_REDIS_URL names no Sentinels (redis+sentinel://…)")
            }
        }
        var filesReadable = true
        for (name, path, marker) in given {
            guard let path, let problem = ConfigurationChecks.pemFile(path, variable: name, marker: marker) else { continue }
            problems.append(problem)
            filesReadable = false
        }
        // OpenSSL reads the files as the client will: a key that does not match its certificate.
        if target.usesTLS, filesReadable, (configuration.redisCertFile == nil) == (configuration.redisKeyFile == nil) {
            do { try configuration.redisTarget().makeClient().close() } catch { problems.append("PUSHWORKER_REDIS_CA_FILE / _CERT_FILE / _KEY_FILE: \(error)") }
        }
    }

    /// Topic names Kafka accepts, and no consumed topic among the produced ones.
    private mutating func checkTopics(_ configuration: Configuration) {
        let consumed = [("PUSHWORKER_TOPIC_JOBS", configuration.topicJobs),
                        ("PUSHWORKER_TOPIC_JOBS_TRANSACTIONAL", configuration.topicJobsTransactional),
                        ("PUSHWORKER_TOPIC_RETRY", configuration.topicRetry)]
        let produced = [("PUSHWORKER_TOPIC_RESULTS", configuration.topicResults), ("PUSHWORKER_TOPIC_TOKENS", configuration.topicTokens),
                        ("PUSHWORKER_TOPIC_DLQ", configuration.topicDLQ), ("PUSHWORKER_TOPIC_EVENTS", configuration.topicEvents)]
        problems += (consumed + produced).compactMap { ConfigurationChecks.topic($0.1, variable: $0.0) }
        problems += ConfigurationChecks.topicOverlap(consumed: consumed.map { ($0.0, $0.1) }, produced: produced.map { ($0.0, $0.1) })
    }
}
