import CPushAllocator
import Foundation
import PushCore
import PushHTTP
import PushKafka
import PushRedis
import Synchronization
import PushEncoding
import PushProviders

/// `pushworker run`: consumes fan-out jobs (and due retries) in a consumer group, claims every
/// recipient in Redis before sending it (DESIGN §8 "Claims": no device is notified twice,
/// whatever the fleet does), delivers, records each outcome and publishes its result as it
/// arrives, and commits a message only after all of its results were acknowledged (DESIGN §1).
///
/// Threads: the caller's thread runs the consumer loop — ``WorkerLoop`` decides, this class
/// performs: polling, planning, claim round trips, pacing and submitting sends, committing;
/// the curl I/O thread completes sends; one serial "finisher" queue records outcomes in Redis
/// (``OutcomeRecorder``) and produces results; librdkafka's threads deliver reports; the lag
/// query and the Redis probe run on queues of their own.
public final class Worker: Sendable {
    let configuration: Configuration
    let logger: Logger
    let metrics: Metrics
    let consumer: KafkaConsumer
    let kafkaProducer: KafkaProducer
    let producer: ReliableProducer
    let redis: any RedisPipelining
    let state: DeliveryStateStore
    let http: HTTP2Client
    let deliverer: Deliverer
    let credentials: CredentialsStore
    let planner: JobPlanner
    let retryPolicy: RetryPolicy
    let offsets = OffsetTracker()
    let finisher = DispatchQueue(label: "pushworker.finisher")
    /// Recipients claimed by this worker and not yet recorded (the bound a crash's duplicates
    /// stay within, DESIGN §1): `PUSHWORKER_MAX_IN_FLIGHT` caps it.
    let inFlight = Atomic<Int>(0)
    let stopRequested = Atomic<Bool>(false)
    let redisHealthy = Atomic<Bool>(true)
    /// Recipients of accepted jobs waiting for their claim (consumer thread and drain).
    let claimQueue = Mutex<[ClaimRequest]>([])
    /// Sends waiting for a provider backoff or a throttle bucket; consumer thread and drain only.
    let pending = Mutex<[PendingSend]>([])
    /// This process's view of provider backoffs (`appId|provider` → Unix seconds), set the moment
    /// a 429/503 arrives; the fleet's view lives in Redis (DESIGN §8).
    let localBackoff = Mutex<[String: Double]>([:])
    /// Processings not finished yet, for lease renewals, re-recording after a Redis loss, drain.
    let activeRuns = Mutex<[ObjectIdentifier: JobRun]>([:])
    /// Recipients of the processings in `activeRuns` (back-pressure: ``WorkerLoop/Settings/unfinishedFactor``).
    let unfinishedRecipients = Atomic<Int>(0)
    /// Readiness must notice Redis loss while idle: a PING every 2 s on its own queue.
    let redisProbe = DispatchQueue(label: "pushworker.redis-probe")
    let redisProbing = Atomic<Bool>(false)
    /// The consumer-lag query blocks for a broker round trip: off the consumer thread.
    let lagQueue = DispatchQueue(label: "pushworker.lag")
    let lagQuerying = Atomic<Bool>(false)
    /// The consumer's assignment as the rebalance events left it (consumer thread).
    let assignment = Mutex<Set<TopicPartition>>([])
    /// Wakes the consumer loop waiting out a short saturation when a recipient is recorded or a
    /// job finishes.
    let room = RoomSignal()
    /// A claim's lease: longer than a send can take (two attempts of the request timeout).
    let leaseMs: Int64
    /// Unique per process: the prefix of every processing's claim owner.
    let ownerPrefix: String
    let processings = Atomic<Int>(0)
    /// Dead-letter copies produced and not yet acknowledged (a drain waits for them).
    let deadLettersInFlight = Atomic<Int>(0)
    /// The most recent sent markers this worker recorded, written again when Redis comes back
    /// after losing its data (bounded: ``recentSentCapacity``).
    let recentSent = Mutex(RecentSent())
    static let recentSentCapacity = 50_000
    private let recorderBox: RecorderBox
    let recorder: OutcomeRecorder

    public init(configuration: Configuration, logger: Logger, metrics: Metrics) throws {
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        let keyring = try MsgIDKeyring(parsing: configuration.msgIDKeys)
        planner = JobPlanner(keyring: keyring, webPushPolicy: WebPushPolicy(extraAllowedHosts: configuration.webPushAllowedHosts))
        retryPolicy = RetryPolicy(maxAttempts: configuration.maxAttempts)
        credentials = CredentialsStore(directory: configuration.credentialsDir, logger: logger)
        leaseMs = Int64(configuration.claimLeaseSeconds) * 1000
        ownerPrefix = String(UInt64.random(in: 1...UInt64.max), radix: 16)

        var httpConfiguration = HTTPClientConfiguration()
        httpConfiguration.caFile = configuration.caFile
        httpConfiguration.maxConnectionsPerHost = configuration.httpConnections
        httpConfiguration.maxConcurrentStreams = configuration.httpStreams
        httpConfiguration.requestTimeout = .milliseconds(configuration.requestTimeoutMs)
        httpConfiguration.proxy = configuration.httpsProxy
        httpConfiguration.noProxy = configuration.noProxy
        http = try HTTP2Client(configuration: httpConfiguration)
        deliverer = Deliverer(http: http, metrics: metrics, logger: logger, requestTimeout: .milliseconds(configuration.requestTimeoutMs),
                              maxInFlightPerOrigin: configuration.httpConnections * configuration.httpStreams,
                              webPushGuard: WebPushAddressGuard(policy: planner.webPushPolicy))

        redis = try configuration.redisClient() // redis:// or redis+cluster://
        state = DeliveryStateStore(client: redis)
        let producerProperties = configuration.kafkaProperties(for: .producer, defaults: Configuration.workerProducerDefaults)
        kafkaProducer = try KafkaProducer(properties: producerProperties)
        producer = ReliableProducer(producer: kafkaProducer, dlqTopic: configuration.topicDLQ, metrics: metrics, logger: logger,
                                    deadLetterMaxBytes: Self.deadLetterMaxBytes(producerProperties))
        consumer = try KafkaConsumer(
            // librdkafka prefetches up to 64 MiB per consumer by default; 16 MiB is still ~128
            // jobs of 500 recipients ahead and keeps peak RSS under 150 MB (docs/performance.md).
            properties: configuration.kafkaProperties(for: .consumer, defaults: ["queued.max.messages.kbytes": "16384"],
                                                      extra: ["group.id": configuration.kafkaGroup]),
            topics: [configuration.topicJobs, configuration.topicRetry])
        let box = RecorderBox()
        recorderBox = box
        recorder = OutcomeRecorder(queue: finisher, delay: .milliseconds(configuration.recordDelayMs)) { entries in box.worker?.record(entries) }
        box.worker = self
        metrics.gauge("pushworker_in_flight") { [weak self] in Double(self?.inFlight.load(ordering: .relaxed) ?? 0) }
        metrics.gauge("pushworker_unfinished_recipients") { [weak self] in Double(self?.unfinishedRecipients.load(ordering: .relaxed) ?? 0) }
        metrics.gauge("pushworker_claims_queued") { [weak self] in Double(self?.claimQueue.withLock { $0.count } ?? 0) }
        let client = redis
        metrics.gauge("pushworker_redis_round_trips_total") { Double(client.roundTripCount) }
    }

    /// Whether `/readyz` should answer 200: Redis answers and the consumer joined its group.
    public var isReady: Bool {
        redisHealthy.load(ordering: .relaxed) && consumer.hasJoinedGroup && !stopRequested.load(ordering: .relaxed)
    }

    var isRedisHealthy: Bool { redisHealthy.load(ordering: .relaxed) }

    /// Asks the loop to drain and stop (SIGTERM).
    public func requestStop() { stopRequested.store(true, ordering: .relaxed) }

    // MARK: - The consumer loop

    /// Runs until ``requestStop()``; then stops fetching, finishes in-flight jobs within the grace
    /// period, commits and closes. Returns the exit status.
    public func run() -> Int32 {
        logger.info("worker started", ["kafka.group": configuration.kafkaGroup, "kafka.topics": "\(configuration.topicJobs),\(configuration.topicRetry)",
                                       "claims.lease_ms": "\(leaseMs)"])
        do { try state.preloadScripts() } catch { redisFailed(error, during: "script load") }
        var loop = WorkerLoop(settings: WorkerLoop.Settings(
            maxInFlight: configuration.maxInFlight, saturationPauseSeconds: Double(configuration.saturationPauseMs) / 1000,
            shutdownGraceSeconds: configuration.shutdownGraceSeconds, leaseRenewalSeconds: max(1, Double(leaseMs) / 3000),
            claimBatch: WorkerLoop.claimBatch(maxInFlight: configuration.maxInFlight)))
        while true {
            applyRebalances(&loop)
            let now = Date().timeIntervalSince1970
            let reading = WorkerLoop.Reading(
                now: now, inFlight: inFlight.load(ordering: .relaxed), unclaimed: claimQueue.withLock { $0.count },
                unfinishedMessages: activeRuns.withLock { $0.count } + deadLettersInFlight.load(ordering: .relaxed),
                assignment: assignment.withLock { $0 },
                redisHealthy: isRedisHealthy, stopRequested: stopRequested.load(ordering: .relaxed),
                unfinishedRecipients: unfinishedRecipients.load(ordering: .relaxed))
            var actions = loop.turn(reading)
            var index = 0
            while index < actions.count {
                let action = actions[index]
                index += 1
                switch action {
                case .process(let message):
                    loop.processed(recipients: process(message, now: now))
                case .claimAndDispatch(let room):
                    claimAndDispatch(room: room, now: now)
                case .pause(let partitions): consumer.pause(partitions)
                case .resume(let partitions): consumer.resume(partitions)
                case .poll(let max, let timeoutMs):
                    let polled = poll(max: max, timeoutMs: timeoutMs, loop: &loop)
                    if reading.stopRequested { continue } // draining: what arrives now is redelivered later
                    actions.insert(contentsOf: loop.polled(polled, now: Date().timeIntervalSince1970), at: index)
                case .waitForRoom(let timeoutMs):
                    let target = configuration.maxInFlight - loop.settings.claimBatch
                    let unfinishedBound = loop.settings.maxUnfinishedRecipients
                    room.wait(until: { inFlight.load(ordering: .relaxed) <= target && unfinishedRecipients.load(ordering: .relaxed) < unfinishedBound },
                              timeout: .milliseconds(timeoutMs))
                case .commit: commit()
                case .reportLag: reportLag()
                case .pingRedis: pingRedis()
                case .trimHeap: trimHeap()
                case .renewLeases: renewLeases(now: now)
                case .beginDrain:
                    logger.info("stopping: draining in-flight jobs", ["pending.jobs": "\(offsets.pendingCount)"])
                case .finish:
                    return finish()
                }
            }
            metrics.set("pushworker_ready", [], isReady ? 1 : 0)
        }
    }

    /// Polls up to `max` messages, one `poll` call at a time: a rebalance is served inside a
    /// call (librdkafka's callback), so its events are applied before the message that call
    /// returned is registered — a message of the new assignment is never wiped by the revoke
    /// that came just before it, and one of a revoked partition is never begun after it.
    private func poll(max: Int, timeoutMs: Int, loop: inout WorkerLoop) -> [WorkerLoop.Polled] {
        var polled: [WorkerLoop.Polled] = []
        while polled.count < max, let result = consumer.poll(timeout: .milliseconds(polled.isEmpty ? timeoutMs : 0)) {
            applyRebalances(&loop)
            switch result {
            case .failure(let error):
                metrics.increment("pushworker_kafka_errors_total")
                logger.warning("kafka consumer error", ["kafka.error": error.description])
            case .success(let message):
                offsets.begin(message.topicPartition, offset: message.offset)
                var notBefore: Double?
                if message.topic == configuration.topicRetry {
                    notBefore = (try? JobDecoder.decode(message.value))?.notBefore?.timeIntervalSince1970
                }
                polled.append(WorkerLoop.Polled(message: message, notBefore: notBefore))
            }
        }
        applyRebalances(&loop)
        return polled
    }

    /// Applies the rebalances librdkafka served since the last call: the assignment (kept here
    /// from the incremental, cooperative-sticky events rather than asked of librdkafka every
    /// turn), the offsets of revoked partitions (forgotten: their new owner redoes them), the
    /// loop's delayed messages and pauses.
    private func applyRebalances(_ loop: inout WorkerLoop) {
        for event in consumer.drainRebalanceEvents() {
            switch event {
            case .assigned(let partitions):
                logger.info("partitions assigned", ["kafka.partitions": Self.describe(partitions)])
                assignment.withLock { $0.formUnion(partitions) }
            case .revoked(let partitions), .lost(let partitions):
                logger.info("partitions revoked", ["kafka.partitions": Self.describe(partitions)])
                assignment.withLock { $0.subtract(partitions) }
                offsets.revoke(partitions)
                loop.revoked(partitions)
            }
        }
    }

    /// The end of a drain: gives back the claims of sends that never started, lets the sends
    /// still running end (their outcomes are recorded and published), waits for Kafka's
    /// acknowledgements, commits what finished, leaves the group. Unfinished jobs are not
    /// committed: another worker redoes them, and the claims (or sent markers) keep it from
    /// notifying twice.
    private func finish() -> Int32 {
        let unsent = pending.withLock { list -> [PendingSend] in defer { list.removeAll() }; return list }
        var released: [DeliveryStateStore.RecordEntry] = []
        for send in unsent {
            for item in send.items where send.run.noteClaimReleased(item.index) {
                if let entry = send.run.recordEntry(item.index, sent: false) { released.append(entry) }
            }
        }
        if !released.isEmpty {
            do { try state.record(released) } catch { redisFailed(error, during: "release") }
            logger.info("claims given back for sends that never started", ["claims": "\(released.count)"])
        }
        // Sends still running finish (or fail as shut down, then go to the retry topic); their
        // outcomes reach the recorder before it is flushed for the last time.
        http.shutdown(drainTimeout: .seconds(2))
        finisher.sync { recorder.flushNow() }
        try? kafkaProducer.flush(timeout: .seconds(5))
        commit()
        let unfinished = activeRuns.withLock { $0.count }
        consumer.close()
        kafkaProducer.close(timeout: .seconds(2))
        logger.info("stopped", ["unfinished.jobs": "\(unfinished)"])
        recorderBox.worker = nil
        return 0
    }

    /// Off the loop's thread, while idle (``WorkerLoop``): returns the allocator's unused pages
    /// to the kernel at once (`pw_allocator_purge`). Without it a burst (10 MB jobs, a
    /// 20,000-recipient job) could leave its memory resident until the next allocations let the
    /// allocator's decay run (`chaos --drill hostile-jobs`, docs/reliability.md).
    private func trimHeap() {
        redisProbe.async { _ = pw_allocator_purge() }
    }

    /// Off the loop's thread: one PING at a time updates `redisHealthy` (for `/readyz`); when
    /// Redis is back, what it may have lost is written again.
    private func pingRedis() {
        guard !redisProbing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        redisProbe.async { [self] in
            let answered = redis.ping()
            if let cluster = redis as? RedisClusterClient { publishNodeStats(cluster.nodeStats()) }
            if answered { redisAnswered() } else if redisHealthy.exchange(false, ordering: .relaxed) {
                metrics.increment("pushworker_redis_errors_total")
                logger.error("redis unreachable: no new claims until it is back", ["redis.check": "ping"])
            }
            redisProbing.store(false, ordering: .releasing)
        }
    }

    /// Per-node counters of a Redis Cluster client as metrics (nodes are few and fixed).
    private func publishNodeStats(_ nodes: [RedisClusterNodeStats]) {
        for node in nodes {
            let name = node.node.description
            metrics.set("pushworker_redis_node_round_trips_total", [("node", name)], Double(node.roundTrips))
            metrics.set("pushworker_redis_node_errors_total", [("node", name)], Double(node.connectionErrors))
            metrics.set("pushworker_redis_node_moved_total", [("node", name)], Double(node.moved))
            metrics.set("pushworker_redis_node_ask_total", [("node", name)], Double(node.ask))
            metrics.set("pushworker_redis_node_slots", [("node", name)], Double(node.slots))
        }
    }

    /// Off the loop's thread: consumer lag per assigned partition.
    private func reportLag() {
        guard !lagQuerying.exchange(true, ordering: .acquiringAndReleasing) else { return }
        lagQueue.async { [self] in
            for (partition, lag) in consumer.lag() {
                metrics.set("pushworker_kafka_consumer_lag", [("topic", partition.topic), ("partition", "\(partition.partition)")], Double(lag))
            }
            lagQuerying.store(false, ordering: .releasing)
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

    // MARK: - Redis health

    /// A Redis call failed: unready, no new claims until a PING or a claim succeeds again.
    func redisFailed(_ error: any Error, during step: String) {
        metrics.increment("pushworker_redis_errors_total")
        if redisHealthy.exchange(false, ordering: .relaxed) {
            logger.error("redis unreachable: no new claims until it is back", ["redis.error": "\(error)", "redis.step": step])
        }
    }

    /// Redis answered: when it was away, it may have lost its data (a restart without
    /// persistence): the sent markers and claims of every unfinished processing are written again,
    /// so a copy of those jobs elsewhere still finds them.
    func redisAnswered() {
        guard !redisHealthy.exchange(true, ordering: .relaxed) else { return }
        logger.info("redis is back: re-recording the unfinished jobs' sent markers and claims")
        finisher.async { [self] in reRecordSent() }
    }

    /// Writes again what unfinished processings know (finisher queue).
    func reRecordSent() {
        let runs = activeRuns.withLock { Array($0.values) }
        var records = recentSent.withLock { $0.entries }
        var claims: [DeliveryStateStore.ClaimItem] = []
        for run in runs {
            for index in run.sentIndices { if let entry = run.recordEntry(index, sent: true) { records.append(entry) } }
            for index in run.heldClaims() { claims.append(run.claimItem(index)) }
        }
        guard !records.isEmpty || !claims.isEmpty else { return }
        do {
            try state.record(records)
            let answers = try state.claim(claims, nowMs: Self.nowMs(), leaseMs: leaseMs)
            let lost = answers.replies.filter { $0 == .alreadySent || $0 == .claimedElsewhere }.count
            if lost > 0 { metrics.increment("pushworker_claims_lost_total", by: Double(lost)) }
            logger.info("re-recorded after a Redis loss", ["sent": "\(records.count)", "claims": "\(claims.count)", "claims.lost": "\(lost)"])
        } catch {
            redisFailed(error, during: "re-record")
        }
    }

    static func nowMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    // MARK: - One job

    /// Starts work on one message: decodes (bad ⇒ DLQ), plans, finalizes what needs no send,
    /// queues the rest for claims. Returns the job's recipient count (0 for a dead letter).
    private func process(_ message: KafkaMessage, now: Double) -> Int {
        let partition = message.topicPartition
        let job: FanOutJob
        do throws(JobValidationError) {
            job = try JobDecoder.decode(message.value)
        } catch {
            deadLetter(message, reason: error.description)
            return 0
        }
        let nowDate = Date(timeIntervalSince1970: now)
        let appCredentials = credentials.credentials(for: job.appID)
        var parts = JobRun.Parts(capacity: job.plannedCount)
        planner.plan(job, profile: appCredentials?.profile, now: nowDate) { parts.add($0) }
        let starts = parts.starts
        let nowMs = Int64(now * 1000)
        let retention = DedupRetention.milliseconds(
            expiresAtMs: job.expiresAt.map { Int64($0.timeIntervalSince1970 * 1000) }, ttlSeconds: job.ttlSeconds, nowMs: nowMs,
            maximumSeconds: configuration.dedupMaxSeconds, minimumSeconds: min(DedupRetention.defaultMinimumSeconds, configuration.dedupMaxSeconds))
        let owner = "\(ownerPrefix)-\(processings.add(1, ordering: .relaxed).newValue)"
        let recipientCount = parts.count
        // The run keeps the job without its recipient list: each plan holds its recipient.
        let run = JobRun(job: job.withoutRecipients, credentials: appCredentials, partition: partition, offset: message.offset,
                         generation: offsets.generation(of: partition) ?? -1, parts: consume parts,
                         owner: owner, retentionMs: retention, worker: self)
        activeRuns.withLock { $0[ObjectIdentifier(run)] = run }
        unfinishedRecipients.add(recipientCount, ordering: .relaxed)
        metrics.increment("pushworker_jobs_total", [("outcome", "accepted")])
        logger.info("job started", ["job.id": job.jobID, "campaign.id": job.campaignID, "job.recipients": "\(recipientCount)",
                                    "kafka.partition": "\(message.partition)", "kafka.offset": "\(message.offset)"])

        var requests: [ClaimRequest] = []
        for (index, start) in starts.enumerated() {
            switch start {
            case .expired:
                run.complete(index, .final(run.result(index, .expired, reason: nil, atMs: nowMs)))
            case .rejected(let reason):
                run.complete(index, .final(run.result(index, .rejected, reason: reason, atMs: nowMs)))
            case .ready:
                if appCredentials == nil || run.keys[index] == nil {
                    run.complete(index, .final(run.result(index, .rejected, reason: "no_credentials", atMs: nowMs)))
                } else {
                    requests.append(ClaimRequest(run: run, index: index, due: now))
                }
            }
        }
        if recipientCount == 0 { run.finishIfEmpty() }
        if !requests.isEmpty { claimQueue.withLock { $0.append(contentsOf: requests) } }
        return recipientCount
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
        headers.append(KafkaHeader(name: "failed-at", value: Array(RFC3339Timestamp.format(Date(), milliseconds: true).utf8)))
        // A copy over the producer's message.max.bytes would fail on every retry and hold the
        // partition's offsets forever: keep a bounded prefix and record the original size.
        var value = message.value
        if value.count > producer.deadLetterMaxBytes {
            headers.append(KafkaHeader(name: "truncated-from", value: Array("\(value.count)".utf8)))
            value = Array(value.prefix(producer.deadLetterMaxBytes))
        }
        let partition = message.topicPartition
        let generation = offsets.generation(of: partition) ?? -1
        deadLettersInFlight.add(1, ordering: .relaxed)
        producer.produceReliably(topic: configuration.topicDLQ, key: message.key, value: value, headers: headers) { [self] in
            offsets.finish(partition, offset: message.offset, generation: generation)
            deadLettersInFlight.subtract(1, ordering: .relaxed)
        }
    }

    /// The largest DLQ value: the producer's `message.max.bytes` (librdkafka default 1,000,000)
    /// less 64 KiB for the key and headers.
    static func deadLetterMaxBytes(_ producerProperties: [String: String]) -> Int {
        let messageMax = producerProperties["message.max.bytes"].flatMap { Int($0) } ?? 1_000_000
        return max(1024, messageMax - 65_536)
    }

    // MARK: - Claims (DESIGN §8 "Claims")

    /// Claims up to `room` queued recipients in one Redis round trip (which also reads their
    /// dead-token records and the providers' fleet backoffs), then dispatches what was claimed.
    /// Due scheduled sends go first.
    func claimAndDispatch(room: Int, now: Double) {
        dispatchDuePending(now: now)
        guard room > 0 else { return }
        let taken: [ClaimRequest] = claimQueue.withLock { queue in
            guard queue.contains(where: { $0.due <= now }) else { return [] }
            var taken: [ClaimRequest] = []
            var kept: [ClaimRequest] = []
            kept.reserveCapacity(queue.count)
            for request in queue {
                if taken.count < room && request.due <= now { taken.append(request) } else { kept.append(request) }
            }
            queue = kept
            return taken
        }
        guard !taken.isEmpty else { return }
        var items: [DeliveryStateStore.ClaimItem] = []
        items.reserveCapacity(taken.count)
        var pairs: [(appID: String, provider: String)] = []
        var pairIndex: [String: Int] = [:]
        for request in taken {
            // process() queues only recipients with a msgId, so every one has its claim item.
            let item = request.run.claimItem(request.index)
            if let platform = request.run.plans[request.index].recipient.platform {
                let provider = Deliverer.providerLabel(platform)
                // Recipients of one job come together: the pair of the one before is checked first.
                if let last = pairs.last, last.provider == provider, last.appID == item.appID {} else {
                    let name = item.appID + "|" + provider
                    if pairIndex[name] == nil { pairIndex[name] = pairs.count; pairs.append((item.appID, provider)) }
                }
            }
            items.append(item)
        }
        let nowMs = Int64(now * 1000)
        let answers: DeliveryStateStore.ClaimAnswers
        do {
            answers = try state.claim(items, nowMs: nowMs, leaseMs: leaseMs, backoffs: pairs)
            redisAnswered()
        } catch {
            redisFailed(error, during: "claim")
            let later = now + 1
            claimQueue.withLock { queue in queue.insert(contentsOf: taken.map { var r = $0; r.due = later; return r }, at: 0) }
            return
        }
        var fleetBackoff: [String: Double] = [:]
        for (name, position) in pairIndex {
            if let until = answers.backoffUntilMs[position] { fleetBackoff[name] = Double(until) / 1000 }
        }
        var sends: [ObjectIdentifier: (run: JobRun, items: [SendItem])] = [:]
        var waits: [ClaimRequest] = []
        var counts = (send: 0, duplicate: 0, wait: 0, invalid: 0)
        for (position, request) in taken.enumerated() {
            let run = request.run, index = request.index
            let verdict = ClaimDecision.verdict(answers.replies[position], invalidSinceMs: answers.invalidSinceMs[position],
                                                tokenUpdatedAtMs: run.plans[index].recipient.tokenUpdatedAt.map { Int64($0.timeIntervalSince1970 * 1000) })
            switch verdict {
            case .send:
                guard let request = run.takeRequest(index) else { continue }
                run.noteClaimed(index, atMs: nowMs)
                sends[ObjectIdentifier(run), default: (run, [])].items.append(SendItem(index: index, request: request))
                counts.send += 1
            case .duplicate:
                _ = run.takeRequest(index) // never sent: its payload need not wait for the run's end
                run.complete(index, .final(run.result(index, .duplicate, reason: nil, atMs: nowMs)))
                counts.duplicate += 1
            case .wait:
                var again = request
                again.waits += 1
                again.due = now + min(1.0, 0.05 * Double(1 << min(again.waits, 5)))
                waits.append(again)
                counts.wait += 1
            case .knownInvalid:
                _ = run.takeRequest(index)
                run.noteClaimed(index, atMs: nowMs) // released when its outcome is recorded
                run.complete(index, .final(run.result(index, .invalidToken, reason: "known_invalid", atMs: nowMs)))
                counts.invalid += 1
            }
        }
        if !waits.isEmpty { claimQueue.withLock { $0.append(contentsOf: waits) } }
        for (verdict, count) in [("send", counts.send), ("duplicate", counts.duplicate), ("wait", counts.wait), ("known_invalid", counts.invalid)] where count > 0 {
            metrics.increment("pushworker_claims_total", [("verdict", verdict)], by: Double(count))
        }
        if counts.send > 0 { inFlight.add(counts.send, ordering: .relaxed) }
        // The batch's sends leave in one I/O-loop turn (HTTP2Client.holdWakeUps): with Web Push
        // encryption or FCM among them, they were picked up a few at a time as they were made.
        http.holdWakeUps()
        defer { http.releaseWakeUps() }
        for (_, group) in sends { dispatch(group.run, group.items, now: now, fleetBackoff: fleetBackoff) }
    }

    /// Renews the leases of claims held longer than a third of the lease (a slow provider, a
    /// long throttle): one round trip for all of them.
    func renewLeases(now: Double) {
        let nowMs = Int64(now * 1000)
        let cutoff = nowMs - leaseMs / 3
        let runs = activeRuns.withLock { Array($0.values) }
        var items: [DeliveryStateStore.ClaimItem] = []
        var owners: [(run: JobRun, index: Int)] = []
        for run in runs {
            for index in run.claimsOlder(than: cutoff) {
                items.append(run.claimItem(index))
                owners.append((run, index))
            }
        }
        guard !items.isEmpty, isRedisHealthy else { return }
        do {
            let answers = try state.claim(items, nowMs: nowMs, leaseMs: leaseMs)
            var lost = 0
            for (position, reply) in answers.replies.enumerated() {
                switch reply {
                case .claimed, .alreadyOurs: owners[position].run.noteClaimed(owners[position].index, atMs: nowMs)
                case .alreadySent, .claimedElsewhere: lost += 1
                }
            }
            if lost > 0 {
                metrics.increment("pushworker_claims_lost_total", by: Double(lost))
                logger.warning("claims lost before their outcome (a lease ran out)", ["claims": "\(lost)"])
            }
        } catch {
            redisFailed(error, during: "lease renewal")
        }
    }

    /// Recorded outcomes give their in-flight slots back.
    func releaseSlots(_ count: Int) {
        if inFlight.subtract(count, ordering: .relaxed).newValue < configuration.maxInFlight { room.signal() }
    }
}

/// A bounded ring of the sent markers a worker recorded last (newest overwrite oldest).
struct RecentSent: Sendable {
    private(set) var entries: [DeliveryStateStore.RecordEntry] = []
    private var next = 0

    mutating func append(contentsOf new: [DeliveryStateStore.RecordEntry], capacity: Int) {
        for entry in new {
            if entries.count < capacity { entries.append(entry) } else if capacity > 0 {
                entries[next] = entry
                next = (next + 1) % capacity
            }
        }
    }
}

/// A recipient waiting for its claim (consumer thread).
struct ClaimRequest: Sendable {
    let run: JobRun
    let index: Int
    /// Not before (Unix seconds): now for a new one; later for one claimed elsewhere.
    var due: Double
    /// Times it found another processing's claim.
    var waits = 0
}

/// Sends held until `due` (Unix seconds).
struct PendingSend: Sendable {
    var due: Double
    var run: JobRun
    var items: [SendItem]
}

/// Lets the recorder (made before `self` is complete in `Worker.init`) reach its worker without
/// a reference cycle.
final class RecorderBox: @unchecked Sendable {
    // Thread safety: `worker` is written at the end of Worker.init, before the worker can add
    // an outcome, and at the end of `finish`, after the last flush on the finisher queue; the
    // flushes read it on that queue.
    weak var worker: Worker?
}
