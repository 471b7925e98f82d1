import CMalloc
import Foundation
import PushCore
import PushHTTP
import PushKafka
import PushRedis
import Synchronization

/// `pushworker run`: consumes fan-out jobs (and due retries) in a consumer group, delivers every
/// recipient, publishes one final result per recipient, and commits a message only after all of
/// its results were acknowledged (DESIGN §1).
///
/// Threads: the caller's thread runs the consumer loop (polling, planning, the Redis check of a
/// job, submitting sends, committing); the curl I/O thread completes sends; one serial
/// "finisher" queue records to Redis and produces results; librdkafka's threads deliver reports.
public final class Worker: Sendable {
    let configuration: Configuration
    let logger: Logger
    let metrics: Metrics
    let consumer: KafkaConsumer
    let producer: KafkaProducer
    let redis: RedisClient
    let state: DeliveryStateStore
    let http: HTTP2Client
    let deliverer: Deliverer
    let credentials: CredentialsStore
    let planner: JobPlanner
    let retryPolicy: RetryPolicy
    let offsets = OffsetTracker()
    let finisher = DispatchQueue(label: "pushworker.finisher")
    let inFlight = Atomic<Int>(0)
    let stopRequested = Atomic<Bool>(false)
    let redisHealthy = Atomic<Bool>(true)
    /// Sends waiting for a provider backoff or a throttle bucket; consumer thread and drain only.
    let pending = Mutex<[PendingSend]>([])
    /// This process's view of provider backoffs (`appId|provider` → Unix seconds), set the moment
    /// a 429/503 arrives; the fleet's view lives in Redis (DESIGN §8).
    let localBackoff = Mutex<[String: Double]>([:])
    /// Readiness must notice Redis loss while idle: a PING every 2 s on its own queue.
    let redisProbe = DispatchQueue(label: "pushworker.redis-probe")
    let redisProbing = Atomic<Bool>(false)
    /// Recipients of the last job started: sizes the next poll so one batch cannot overshoot
    /// `maxInFlight` by more than about one job (a poll of 64 jobs of 500 would start 32 000).
    /// Starts pessimistic (one message per poll until a job's size is known).
    let lastJobRecipients: Atomic<Int>
    /// Wakes the consumer loop waiting out a short saturation when a recipient finishes.
    let room = RoomSignal()

    public init(configuration: Configuration, logger: Logger, metrics: Metrics) throws {
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        lastJobRecipients = Atomic(max(1, configuration.maxInFlight))
        let keyring = try MsgIDKeyring(parsing: configuration.msgIDKeys)
        planner = JobPlanner(keyring: keyring, webPushPolicy: WebPushPolicy(extraAllowedHosts: configuration.webPushAllowedHosts))
        retryPolicy = RetryPolicy(maxAttempts: configuration.maxAttempts)
        credentials = CredentialsStore(directory: configuration.credentialsDir, logger: logger)

        var httpConfiguration = HTTPClientConfiguration()
        httpConfiguration.caFile = configuration.caFile
        httpConfiguration.proxy = configuration.httpsProxy
        httpConfiguration.noProxy = configuration.noProxy
        httpConfiguration.maxConnectionsPerHost = configuration.httpConnections
        httpConfiguration.maxConcurrentStreams = configuration.httpStreams
        httpConfiguration.requestTimeout = .milliseconds(configuration.requestTimeoutMs)
        http = try HTTP2Client(configuration: httpConfiguration)
        deliverer = Deliverer(http: http, metrics: metrics, logger: logger, requestTimeout: .milliseconds(configuration.requestTimeoutMs),
                              maxInFlightPerOrigin: configuration.httpConnections * configuration.httpStreams,
                              webPushGuard: WebPushAddressGuard(policy: planner.webPushPolicy))

        redis = try RedisClient(url: configuration.redisURL)
        state = DeliveryStateStore(client: redis)
        producer = try KafkaProducer(properties: configuration.kafkaProperties(for: .producer))
        consumer = try KafkaConsumer(
            // librdkafka prefetches up to 64 MiB per consumer by default; 16 MiB is still ~128
            // jobs of 500 recipients ahead and keeps peak RSS under 150 MB (docs/performance.md).
            properties: configuration.kafkaProperties(for: .consumer, defaults: ["queued.max.messages.kbytes": "16384"],
                                                      extra: ["group.id": configuration.kafkaGroup]),
            topics: [configuration.topicJobs, configuration.topicRetry])
    }

    /// Whether `/readyz` should answer 200: Redis answers and the consumer joined its group.
    public var isReady: Bool {
        redisHealthy.load(ordering: .relaxed) && consumer.hasJoinedGroup && !stopRequested.load(ordering: .relaxed)
    }

    /// Asks the loop to drain and stop (SIGTERM).
    public func requestStop() { stopRequested.store(true, ordering: .relaxed) }

    // MARK: - The consumer loop

    /// Runs until ``requestStop()``; then stops fetching, finishes in-flight jobs within the grace
    /// period, commits and closes. Returns the exit status.
    public func run() -> Int32 {
        logger.info("worker started", ["kafka.group": configuration.kafkaGroup, "kafka.topics": "\(configuration.topicJobs),\(configuration.topicRetry)"])
        var paused = Set<TopicPartition>()
        var delayed: [(due: Double, message: KafkaMessage)] = []
        var blocked: KafkaMessage?
        var lastLag = 0.0
        var lastRedisProbe = 0.0
        var lastRedisPing = 0.0
        var saturatedSince: Double?
        var lastTrim = 0.0

        while !stopRequested.load(ordering: .relaxed) {
            let now = Date().timeIntervalSince1970
            for event in consumer.drainRebalanceEvents() {
                switch event {
                case .assigned(let partitions):
                    logger.info("partitions assigned", ["kafka.partitions": Self.describe(partitions)])
                case .revoked(let partitions), .lost(let partitions):
                    logger.info("partitions revoked", ["kafka.partitions": Self.describe(partitions)])
                    offsets.revoke(partitions)
                    let gone = Set(partitions)
                    paused.subtract(gone)
                    delayed.removeAll { gone.contains(TopicPartition(topic: $0.message.topic, partition: $0.message.partition)) }
                    if let message = blocked, gone.contains(TopicPartition(topic: message.topic, partition: message.partition)) { blocked = nil }
                }
            }

            // A job held back by Redis being away: retry it (and only it) once a second.
            if let message = blocked, now - lastRedisProbe >= 1 {
                lastRedisProbe = now
                if process(message) { blocked = nil }
            }
            dispatchDuePending(now: now)
            // Retries whose notBefore has come.
            while blocked == nil, let index = delayed.firstIndex(where: { $0.due <= now }) {
                let message = delayed.remove(at: index).message
                if !process(message) { blocked = message }
            }

            // Back-pressure. A short saturation (the usual case: a few jobs in flight finishing)
            // is waited out without polling. Pausing the partitions instead made librdkafka
            // discard what it had prefetched for them and fetch it again on resume: a stall of
            // 100–200 ms every few jobs, half the throughput (docs/pipeline.md, "Back-pressure
            // and shutdown"). Saturation that lasts (a provider backoff, a slow provider) pauses
            // them and keeps polling, so rebalances are served and `max.poll.interval.ms` holds.
            let saturated = inFlight.load(ordering: .relaxed) >= configuration.maxInFlight
            if saturated { saturatedSince = saturatedSince ?? now } else { saturatedSince = nil }
            let saturatedLong = saturatedSince.map { now - $0 >= Double(configuration.saturationPauseMs) / 1000 } ?? false
            var wanted = Set(delayed.map { TopicPartition(topic: $0.message.topic, partition: $0.message.partition) })
            if saturatedLong || blocked != nil { wanted.formUnion(consumer.assignment) }
            let toPause = wanted.subtracting(paused), toResume = paused.subtracting(wanted)
            if !toPause.isEmpty { consumer.pause(Array(toPause)) }
            if !toResume.isEmpty { consumer.resume(Array(toResume)) }
            paused = wanted

            if saturated && !saturatedLong {
                // Everything else in this loop (due sends, retries, commits, readiness, metrics)
                // keeps running; only the poll waits.
                room.wait(until: { inFlight.load(ordering: .relaxed) < configuration.maxInFlight }, timeout: .milliseconds(20))
            } else {
                let room = configuration.maxInFlight - inFlight.load(ordering: .relaxed)
                let batch = max(1, min(64, room / max(1, lastJobRecipients.load(ordering: .relaxed))))
                for result in consumer.pollBatch(max: batch, timeout: .milliseconds(50)) {
                    switch result {
                    case .failure(let error):
                        metrics.increment("pushworker_kafka_errors_total")
                        logger.warning("kafka consumer error", ["kafka.error": error.description])
                    case .success(let message):
                        let partition = TopicPartition(topic: message.topic, partition: message.partition)
                        offsets.begin(partition, offset: message.offset)
                        // A retry message is decoded once here (for notBefore) and that job is reused.
                        var decoded: FanOutJob?
                        if message.topic == configuration.topicRetry {
                            decoded = try? JobDecoder.decode(message.value)
                            if let due = decoded?.notBefore?.timeIntervalSince1970, due > now {
                                delayed.append((due, message))
                                continue
                            }
                        }
                        if blocked != nil || !process(message, decoded: decoded) {
                            // Redis is away: keep this message (and everything after it) for later.
                            if blocked == nil { blocked = message } else { delayed.append((now + 1, message)) }
                        }
                    }
                }
            }

            commit()
            if now - lastLag >= 5 {
                lastLag = now
                for (partition, lag) in consumer.lag() {
                    metrics.set("pushworker_kafka_consumer_lag", [("topic", partition.topic), ("partition", "\(partition.partition)")], Double(lag))
                }
            }
            if now - lastRedisPing >= 2 {
                lastRedisPing = now
                pingRedis()
            }
            if now - lastTrim >= Self.trimIntervalSeconds {
                lastTrim = now
                trimHeap()
            }
            metrics.set("pushworker_in_flight", [], Double(inFlight.load(ordering: .relaxed)))
            metrics.set("pushworker_ready", [], isReady ? 1 : 0)
        }
        return drain()
    }

    /// SIGTERM: stop fetching, let in-flight jobs finish (bounded by the grace period), commit,
    /// close. Unfinished jobs are not committed: another worker will redo them (de-duplicated).
    private func drain() -> Int32 {
        logger.info("stopping: draining in-flight jobs", ["pending.jobs": "\(offsets.pendingCount)"])
        consumer.pause(consumer.assignment)
        let deadline = Date().addingTimeInterval(configuration.shutdownGraceSeconds)
        while offsets.pendingCount > 0 && Date() < deadline {
            dispatchDuePending(now: Date().timeIntervalSince1970)
            _ = consumer.pollBatch(max: 1, timeout: .milliseconds(20))
            commit()
        }
        commit()
        let unfinished = offsets.pendingCount
        consumer.close()
        try? producer.flush(timeout: .seconds(5))
        http.shutdown(drainTimeout: .seconds(2))
        producer.close(timeout: .seconds(2))
        logger.info("stopped", ["unfinished.jobs": "\(unfinished)"])
        return 0
    }

    /// How often free heap memory is handed back to the kernel (`trimHeap`).
    static let trimIntervalSeconds = 2.0

    /// Off the loop's thread: returns free memory of every malloc arena to the kernel. Without
    /// it a burst (10 MB jobs, a 20,000-recipient job) left ~20 MiB in an arena a pool thread
    /// had used, and RSS stepped up and stayed (`chaos --drill hostile-jobs`,
    /// docs/reliability.md). A trim walks the arenas' free lists: well under a millisecond here.
    private func trimHeap() {
        redisProbe.async { _ = pw_malloc_trim() }
    }

    /// Off the loop's thread: one PING at a time updates `redisHealthy` (for `/readyz`).
    private func pingRedis() {
        guard !redisProbing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        redisProbe.async { [self] in
            let answered = redis.ping()
            if redisHealthy.exchange(answered, ordering: .relaxed) != answered {
                if answered { logger.info("redis is back") } else {
                    metrics.increment("pushworker_redis_errors_total")
                    logger.error("redis unreachable", ["redis.check": "ping"])
                }
            }
            redisProbing.store(false, ordering: .releasing)
        }
    }

    private func commit() {
        let next = offsets.committable()
        guard !next.isEmpty else { return }
        do {
            try consumer.commit(next)
            offsets.markCommitted(next)
        } catch {
            metrics.increment("pushworker_kafka_errors_total")
            logger.warning("offset commit failed", ["kafka.error": error.description])
        }
    }

    static func describe(_ partitions: [TopicPartition]) -> String {
        partitions.map { "\($0.topic)[\($0.partition)]" }.joined(separator: ",")
    }

    // MARK: - One job

    /// Starts work on one message. Returns false, having done nothing, when Redis is away.
    private func process(_ message: KafkaMessage, decoded: FanOutJob? = nil) -> Bool {
        let partition = TopicPartition(topic: message.topic, partition: message.partition)
        let job: FanOutJob
        do throws(JobValidationError) {
            if let decoded { job = decoded } else { job = try JobDecoder.decode(message.value) }
        } catch {
            deadLetter(message, reason: error.description)
            return true
        }
        lastJobRecipients.store(job.recipients.count, ordering: .relaxed)
        let now = Date()
        let appCredentials = credentials.credentials(for: job.appID)
        let plans = planner.plan(job, profile: appCredentials?.profile, now: now)

        // One pipelined Redis round trip for the whole job: duplicates and known-dead tokens.
        var checks: [DeliveryStateStore.CheckItem] = []
        var checkIndex: [Int] = []
        for (index, plan) in plans.enumerated() {
            guard case .ready = plan.state, let msgID = plan.msgID else { continue }
            checks.append(DeliveryStateStore.CheckItem(appID: job.appID, msgID: msgID, platform: plan.platform,
                                                       tokenHash: plan.tokenHash, tokenUpdatedAtMs: plan.recipient.tokenUpdatedAt.map { Int64($0.timeIntervalSince1970 * 1000) }))
            checkIndex.append(index)
        }
        var checked = [DeliveryStateStore.CheckResult](repeating: .fresh, count: plans.count)
        if !checks.isEmpty {
            do {
                let answers = try state.check(checks)
                for (position, index) in checkIndex.enumerated() where position < answers.count { checked[index] = answers[position] }
                if !redisHealthy.exchange(true, ordering: .relaxed) { logger.info("redis is back") }
            } catch {
                metrics.increment("pushworker_redis_errors_total")
                if redisHealthy.exchange(false, ordering: .relaxed) {
                    logger.error("redis unreachable: holding jobs until it is back", ["redis.error": error.description])
                }
                return false
            }
        }

        metrics.increment("pushworker_jobs_total", [("outcome", "accepted")])
        let run = JobRun(job: job, credentials: appCredentials, partition: partition, offset: message.offset, count: plans.count, worker: self)
        let nowMs = Int64(now.timeIntervalSince1970 * 1000)
        var sends: [SendItem] = []
        for (index, plan) in plans.enumerated() {
            switch plan.state {
            case .expired:
                run.complete(index, .final(run.result(plan, .expired, reason: nil, atMs: nowMs)))
            case .rejected(let reason):
                run.complete(index, .final(run.result(plan, .rejected, reason: reason, atMs: nowMs)))
            case .ready(let request):
                switch checked[index] {
                case .duplicate:
                    run.complete(index, .final(run.result(plan, .duplicate, reason: nil, atMs: nowMs)))
                case .knownInvalid:
                    run.complete(index, .final(run.result(plan, .invalidToken, reason: "known_invalid", atMs: nowMs)))
                case .fresh:
                    if appCredentials == nil {
                        run.complete(index, .final(run.result(plan, .rejected, reason: "no_credentials", atMs: nowMs)))
                    } else {
                        sends.append(SendItem(index: index, plan: plan, request: request))
                    }
                }
            }
        }
        if !sends.isEmpty {
            inFlight.add(sends.count, ordering: .relaxed)
            dispatch(run, sends, now: now.timeIntervalSince1970)
        }
        return true
    }

    // MARK: - Pacing: provider backoff and fleet-wide token buckets (DESIGN §8, §15 429 scope)

    /// Sends `items` now, or schedules them: after a provider's backoff deadline, or when the
    /// app+provider (`app.json` `ratePerSecond`) and campaign (`throttlePerMinute`) buckets,
    /// shared by the fleet in Redis, have tokens. One Redis round trip per provider group.
    func dispatch(_ run: JobRun, _ items: [SendItem], now: Double) {
        var groups: [Platform: [SendItem]] = [:]
        for item in items { groups[item.request.platform, default: []].append(item) }
        let platforms = Array(groups.keys)
        let appID = run.job.appID
        var deadlines: [Double] = platforms.map { localBackoffUntil(appID: appID, platform: $0) }
        do {
            let fleet = try state.backoffs(platforms.map { (appID: appID, provider: Deliverer.providerLabel($0)) })
            for (position, until) in fleet.enumerated() where position < deadlines.count {
                if let until { deadlines[position] = max(deadlines[position], Double(until) / 1000) }
            }
        } catch {
            redisFailed(error)
            schedule(run, items, due: now + 1)
            return
        }
        for (position, platform) in platforms.enumerated() {
            let group = groups[platform] ?? []
            if deadlines[position] > now {
                schedule(run, group, due: deadlines[position])
                continue
            }
            let buckets = self.buckets(for: run, platform: platform)
            var granted = group.count
            if !buckets.isEmpty {
                do {
                    let answer = try state.acquire(count: group.count, from: buckets, nowMs: Int64(now * 1000))
                    granted = min(max(answer.granted, 0), group.count)
                    if granted < group.count {
                        schedule(run, Array(group[granted...]), due: now + max(0.02, Double(answer.retryAfterMs) / 1000))
                    }
                } catch {
                    redisFailed(error)
                    schedule(run, group, due: now + 1)
                    continue
                }
            }
            for item in group.prefix(granted) { submit(run, item) }
        }
    }

    func buckets(for run: JobRun, platform: Platform) -> [DeliveryStateStore.Bucket] {
        var buckets: [DeliveryStateStore.Bucket] = []
        if let rate = run.credentials?.ratePerSecond, rate > 0 {
            buckets.append(DeliveryStateStore.Bucket(key: RedisKeys.providerBucket(appID: run.job.appID, provider: Deliverer.providerLabel(platform)),
                                                     ratePerSecond: rate, burst: max(1, rate)))
        }
        if let perMinute = run.job.throttlePerMinute, perMinute > 0 {
            let rate = Double(perMinute) / 60
            buckets.append(DeliveryStateStore.Bucket(key: RedisKeys.campaignBucket(appID: run.job.appID, campaignID: run.job.campaignID),
                                                     ratePerSecond: rate, burst: max(1, rate)))
        }
        return buckets
    }

    private func submit(_ run: JobRun, _ item: SendItem) {
        guard let credentials = run.credentials else { return }
        deliverer.deliver(item.request, credentials: credentials) { [self] attempt in
            if inFlight.subtract(1, ordering: .relaxed).newValue < configuration.maxInFlight { room.signal() }
            run.complete(item.index, run.outcome(of: attempt, plan: item.plan))
        }
    }

    private func schedule(_ run: JobRun, _ items: [SendItem], due: Double) {
        guard !items.isEmpty else { return }
        pending.withLock { $0.append(PendingSend(due: due, run: run, items: items)) }
    }

    /// Dispatches the scheduled sends whose time has come (consumer thread).
    func dispatchDuePending(now: Double) {
        let due: [PendingSend] = pending.withLock { list in
            guard list.contains(where: { $0.due <= now }) else { return [] }
            let ready = list.filter { $0.due <= now }
            list.removeAll { $0.due <= now }
            return ready
        }
        for send in due { dispatch(send.run, send.items, now: now) }
    }

    private func localBackoffUntil(appID: String, platform: Platform) -> Double {
        localBackoff.withLock { $0[appID + "|" + Deliverer.providerLabel(platform)] ?? 0 }
    }

    /// A provider asked the whole app to wait (429 naming no device, 503 with Retry-After):
    /// this process waits at once; the fleet learns it through Redis (finisher queue).
    func noteProviderBackoff(appID: String, platform: Platform, seconds: Double) {
        let until = Date().timeIntervalSince1970 + min(seconds, 3600)
        let provider = Deliverer.providerLabel(platform)
        let isLater = localBackoff.withLock { map -> Bool in
            let key = appID + "|" + provider
            guard until > (map[key] ?? 0) else { return false }
            map[key] = until
            return true
        }
        guard isLater else { return }
        finisher.async { [self] in
            do { try state.setBackoff(appID: appID, provider: provider, untilMs: Int64(until * 1000)) } catch { redisFailed(error) }
        }
    }

    private func redisFailed(_ error: any Error) {
        metrics.increment("pushworker_redis_errors_total")
        if redisHealthy.exchange(false, ordering: .relaxed) {
            logger.error("redis unreachable", ["redis.error": "\(error)"])
        }
    }

    /// Bad bytes go to the DLQ with the reason; the offset is committed once the copy is acked.
    private func deadLetter(_ message: KafkaMessage, reason: String) {
        metrics.increment("pushworker_dlq_total")
        metrics.increment("pushworker_jobs_total", [("outcome", "dead_letter")])
        logger.warning("job sent to the dead-letter topic", ["kafka.topic": message.topic, "kafka.partition": "\(message.partition)",
                                                             "kafka.offset": "\(message.offset)", "error": String(reason.prefix(300))])
        var headers = message.headers
        headers.append(KafkaHeader(name: "error", value: Array(reason.prefix(1000).utf8)))
        headers.append(KafkaHeader(name: "source-topic", value: Array(message.topic.utf8)))
        headers.append(KafkaHeader(name: "source-partition", value: Array("\(message.partition)".utf8)))
        headers.append(KafkaHeader(name: "source-offset", value: Array("\(message.offset)".utf8)))
        headers.append(KafkaHeader(name: "failed-at", value: Array(Timestamp.rfc3339Millis(Date()).utf8)))
        // A copy over the producer's message.max.bytes would fail on every retry and hold the
        // partition's offsets forever: keep a bounded prefix and record the original size.
        var value = message.value
        let limit = Self.deadLetterMaxBytes(configuration.kafkaProperties(for: .producer))
        if value.count > limit {
            headers.append(KafkaHeader(name: "truncated-from", value: Array("\(value.count)".utf8)))
            value = Array(value.prefix(limit))
        }
        let partition = TopicPartition(topic: message.topic, partition: message.partition)
        produceReliably(topic: configuration.topicDLQ, key: message.key, value: value, headers: headers) { [offsets] in
            offsets.finish(partition, offset: message.offset)
        }
    }

    /// The largest DLQ value: the producer's `message.max.bytes` (librdkafka default 1,000,000)
    /// less 64 KiB for the key and headers.
    static func deadLetterMaxBytes(_ producerProperties: [String: String]) -> Int {
        let messageMax = producerProperties["message.max.bytes"].flatMap { Int($0) } ?? 1_000_000
        return max(1024, messageMax - 65_536)
    }

    /// Produces, re-trying after a pause until Kafka acknowledges (librdkafka already retries
    /// within `message.timeout.ms`; this covers longer outages). `acked` runs once.
    func produceReliably(topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader] = [], acked: @escaping @Sendable () -> Void) {
        producer.produce(topic: topic, key: key, value: value, headers: headers) { [self] result in
            switch result {
            case .success: acked()
            case .failure(let error):
                metrics.increment("pushworker_kafka_errors_total")
                logger.warning("produce failed, retrying", ["kafka.topic": topic, "kafka.error": error.description])
                finisher.asyncAfter(deadline: .now() + 1) { [self] in
                    produceReliably(topic: topic, key: key, value: value, headers: headers, acked: acked)
                }
            }
        }
    }
}

/// One recipient ready to send.
struct SendItem: Sendable {
    var index: Int
    var plan: PlannedRecipient
    var request: ProviderRequest
}

/// Sends held until `due` (Unix seconds).
struct PendingSend: Sendable {
    var due: Double
    var run: JobRun
    var items: [SendItem]
}

/// What happened to one recipient in this processing.
enum RecipientOutcome: Sendable {
    case final(ResultRecord, token: TokenRecord? = nil, sentMsgID: String? = nil)
    /// Handed to the retry topic after `attempts` attempts in all.
    case retry(Recipient, attempts: Int, delaySeconds: Double)
}

/// One job in flight: collects an outcome per recipient, then hands itself to the finisher.
final class JobRun: Sendable {
    let job: FanOutJob
    let credentials: AppCredentials?
    let partition: TopicPartition
    let offset: Int64
    unowned let worker: Worker
    private let outcomes: Mutex<(slots: [RecipientOutcome?], remaining: Int)>

    init(job: FanOutJob, credentials: AppCredentials?, partition: TopicPartition, offset: Int64, count: Int, worker: Worker) {
        self.job = job
        self.credentials = credentials
        self.partition = partition
        self.offset = offset
        self.worker = worker
        outcomes = Mutex((Array(repeating: nil, count: count), count))
        if count == 0 { worker.finisher.async { self.finish([]) } }
    }

    /// Records recipient `index`'s outcome; the last one hands the job to the finisher queue.
    func complete(_ index: Int, _ outcome: RecipientOutcome) {
        let all: [RecipientOutcome]? = outcomes.withLock { state in
            guard state.slots[index] == nil else { return nil }
            state.slots[index] = outcome
            state.remaining -= 1
            return state.remaining == 0 ? state.slots.compactMap { $0 } : nil
        }
        if let all { worker.finisher.async { self.finish(all) } }
    }

    func result(_ plan: PlannedRecipient, _ status: DeliveryStatus, reason: String?, atMs: Int64, httpStatus: Int? = nil,
                providerMessageID: String? = nil, attempts: Int? = nil, latencyMs: Double? = nil) -> ResultRecord {
        ResultRecord(jobID: job.jobID, msgID: plan.msgID, appID: job.appID, campaignID: job.campaignID, variant: job.variant,
                     userID: plan.recipient.userID, subscriptionID: plan.recipient.subscriptionID, platform: plan.platform,
                     status: status, reason: reason, httpStatus: httpStatus, providerMessageID: providerMessageID,
                     attempts: attempts ?? job.attempt, latencyMs: latencyMs, atUnixMs: atMs)
    }

    /// Maps a provider attempt onto a final result or a retry hand-off (runs on the I/O thread).
    func outcome(of attempt: Deliverer.Attempt, plan: PlannedRecipient) -> RecipientOutcome {
        let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
        let attempts = job.attempt + attempt.attempts
        func final(_ status: DeliveryStatus, _ reason: String?, id: String? = nil) -> ResultRecord {
            result(plan, status, reason: reason, atMs: nowMs, httpStatus: attempt.httpStatus, providerMessageID: id,
                   attempts: attempts, latencyMs: attempt.latencyMs)
        }
        switch attempt.outcome {
        case .sent(let id):
            return .final(final(.sent, nil, id: id), sentMsgID: plan.msgID)
        case .invalidToken(let reason, let since):
            let token = TokenRecord(appID: job.appID, platform: plan.platform, subscriptionID: plan.recipient.subscriptionID,
                                    userID: plan.recipient.userID, tokenHash: plan.tokenHash, reason: reason,
                                    invalidSinceMs: since ?? nowMs, atUnixMs: nowMs)
            return .final(final(.invalidToken, reason), token: token)
        case .rejected(let reason):
            return .final(final(.rejected, reason))
        case .retry(let reason, let retryAfter, let scope):
            if scope == .provider, let retryAfter, let platform = plan.recipient.platform {
                worker.noteProviderBackoff(appID: job.appID, platform: platform, seconds: retryAfter)
            }
            return retryOrFail(reason, retryAfter)
        case .authExpired(let reason):
            return retryOrFail(reason, nil)
        }

        func retryOrFail(_ reason: String?, _ retryAfter: Double?) -> RecipientOutcome {
            let policy = worker.retryPolicy
            guard policy.allowsRetry(afterAttempts: attempts) else { return .final(final(.failed, reason)) }
            let delay = policy.delay(afterAttempts: attempts, retryAfterSeconds: retryAfter, jitter: Double.random(in: 0..<1))
            return .retry(plan.recipient, attempts: attempts, delaySeconds: delay)
        }
    }

    /// Finisher queue: record to Redis, publish results/tokens/retries, then release the offset.
    func finish(_ all: [RecipientOutcome]) {
        worker.finish(self, all)
    }
}

/// Counts acknowledgements down; runs `done` once when the last one arrives.
final class Countdown: Sendable {
    private let remaining: Atomic<Int>
    private let done: @Sendable () -> Void
    init(_ count: Int, done: @escaping @Sendable () -> Void) {
        remaining = Atomic(count)
        self.done = done
        if count == 0 { done() }
    }
    func tick() {
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done() }
    }
}

extension Worker {
    /// Runs on the finisher queue once every recipient of `run` has an outcome.
    func finish(_ run: JobRun, _ all: [RecipientOutcome]) {
        var sent: [(appID: String, msgID: String)] = []
        var invalid: [(appID: String, platform: String, tokenHash: String, invalidSinceMs: Int64)] = []
        for outcome in all {
            guard case .final(_, let token, let sentMsgID) = outcome else { continue }
            if let sentMsgID { sent.append((run.job.appID, sentMsgID)) }
            if let token { invalid.append((token.appID, token.platform, token.tokenHash, token.invalidSinceMs)) }
        }
        if !sent.isEmpty || !invalid.isEmpty {
            // Recording protects against a re-delivered job notifying twice; a few tries, then
            // publish anyway (results must not wait forever on Redis).
            for attempt in 1...5 {
                do { try state.record(sent: sent, invalid: invalid); break } catch {
                    metrics.increment("pushworker_redis_errors_total")
                    logger.warning("redis record failed", ["redis.error": error.description, "attempt": "\(attempt)"])
                    if attempt < 5 { usleep(200_000 * UInt32(attempt)) }
                }
            }
        }

        var retries: [(recipient: Recipient, attempts: Int, delay: Double)] = []
        var produced: [(topic: String, key: String, value: [UInt8])] = []
        for outcome in all {
            switch outcome {
            case .final(let result, let token, _):
                produced.append((configuration.topicResults, result.subscriptionID, result.jsonBytes()))
                if let token { produced.append((configuration.topicTokens, token.subscriptionID, Array(token.json().utf8))) }
                metrics.increment("pushworker_notifications_total",
                                  [("platform", result.platform), ("status", result.status.rawValue), ("reason", Self.reasonLabel(result.reason))])
            case .retry(let recipient, let attempts, let delay):
                retries.append((recipient, attempts, delay))
            }
        }
        if !retries.isEmpty {
            // One retry job per processing: the longest wait and the most attempts of the group.
            let attempts = retries.map(\.attempts).max() ?? 1
            let delay = retries.map(\.delay).max() ?? 1
            let notBefore = Date().addingTimeInterval(delay)
            let value = run.job.encoded(recipients: retries.map(\.recipient), attempt: attempts, notBefore: notBefore)
            produced.append((configuration.topicRetry, run.job.jobID, value))
            metrics.increment("pushworker_retries_total", by: Double(retries.count))
        }
        let countdown = Countdown(produced.count) { [offsets] in offsets.finish(run.partition, offset: run.offset) }
        for message in produced {
            produceReliably(topic: message.topic, key: Array(message.key.utf8), value: message.value) { countdown.tick() }
        }
    }

    /// Reasons become a label only from a small fixed set (provider strings are bounded lists).
    static func reasonLabel(_ reason: String?) -> String {
        guard let reason else { return "" }
        return reason.count <= 40 && reason.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F })
            ? reason : "other"
    }
}
