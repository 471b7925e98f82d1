import CPushAllocator
import PushRuntime
import Foundation
import PushCore
import PushDelivery
import PushEncoding
import PushHTTP
import PushKafka
import PushPipeline
import PushProviders
import PushRedis
import Synchronization

/// `pushworker run`: consumes fan-out jobs (and due retries) in a consumer group, claims every
/// recipient in the fleet's state before sending it (no device is notified twice, whatever the
/// fleet does), delivers, records each outcome and publishes its result as it arrives, and
/// commits a message only after all of its results were acknowledged (docs/pipeline.md).
///
/// The worker composes four stages and a loop:
/// - ``ClaimStage``: the claim queue, admission, token buckets, the claim round trip, verdicts,
///   lease renewals;
/// - ``DispatchStage``: writes claimed requests through the ``ProviderTransport`` and decides each
///   attempt (``PushPipeline/AttemptRule``, breakers, provider backoffs);
/// - ``ResultPublisher``: records outcomes, publishes results, retry jobs and dead letters;
/// - ``JobRegistry``: the processings begun and the offsets they hold back;
/// - ``WorkerLoop``: the consumer loop's decisions; this class performs them.
///
/// Threads: the caller's thread runs the loop (polling, planning, claims, dispatch, commits); the
/// transport's I/O thread completes sends; the publisher's serial queue records and produces;
/// librdkafka's threads deliver reports; the lag query and the Redis probe run on queues of their own.
public final class Worker: Sendable {
    let configuration: Configuration
    let logger: Logger
    let metrics: Metrics
    let clock: any PipelineClock
    let consumer: any JobSource
    let kafkaProducer: KafkaProducer
    let state: DeliveryStateStore
    let http: HTTP2Client
    let deliverer: Deliverer
    let credentials: CredentialsStore
    let planner: JobPlanner
    let registry: JobRegistry
    let slots: InFlightSlots
    let health: RedisHealth
    let publisher: ResultPublisher
    let intake: JobIntake
    let claims: ClaimStage
    let dispatcher: DispatchStage
    let stopRequested = Atomic<Bool>(false)
    /// The consumer's assignment as the rebalance events left it (consumer thread).
    let assignment = Mutex<Set<TopicPartition>>([])
    /// Readiness must notice Redis loss while idle: a PING every 2 s on its own queue.
    let redisProbe = DispatchQueue(label: "pushworker.redis-probe")
    let redisProbing = Atomic<Bool>(false)
    /// The Sentinel client's master switches the probe has seen.
    let redisMasterSwitches = Atomic<Int>(0)
    /// The consumer-lag query blocks for a broker round trip: off the consumer thread.
    let lagQueue = DispatchQueue(label: "pushworker.lag")
    let lagQuerying = Atomic<Bool>(false)
    /// Wakes the loop waiting for room when a recipient is recorded or a job finishes.
    let room = RoomSignal()

    public init(configuration: Configuration, logger: Logger, metrics: Metrics) throws {
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        let clock = SystemClock()
        self.clock = clock
        let keyring = try MsgIDKeyring(parsing: configuration.msgIDKeys)
        planner = JobPlanner(keyring: keyring, webPushPolicy: WebPushPolicy(extraAllowedHosts: configuration.webPushAllowedHosts))
        credentials = CredentialsStore(directory: configuration.credentialsDir, logger: logger)

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

        // One server, a Cluster, or Sentinel's master.
        state = DeliveryStateStore(client: try configuration.redisClient(),
                                   guardSettings: CampaignGuard(invalidShare: configuration.guardInvalidShare, minSends: configuration.guardMinSends))
        let controls = CampaignControls(state: state, metrics: metrics, logger: logger)
        let producerProperties = configuration.kafkaProperties(for: .producer, defaults: Configuration.workerProducerDefaults)
        kafkaProducer = try KafkaProducer(properties: producerProperties)
        let producer = ReliableProducer(producer: kafkaProducer, dlqTopic: configuration.topicDLQ, metrics: metrics, logger: logger,
                                        deadLetterMaxBytes: Self.deadLetterMaxBytes(producerProperties))
        ReliableProducer.declareFailures(in: metrics, topics: [configuration.topicResults, configuration.topicTokens, configuration.topicRetry],
                                         dlq: configuration.topicDLQ)
        consumer = try KafkaConsumer(
            properties: configuration.kafkaProperties(for: .consumer, defaults: Configuration.workerConsumerDefaults,
                                                      extra: ["group.id": configuration.kafkaGroup]),
            topics: Self.consumedTopics(configuration))

        registry = JobRegistry(room: room)
        slots = InFlightSlots(limit: configuration.maxInFlight, reserve: configuration.transactionalReserve, room: room)
        health = RedisHealth(metrics: metrics, logger: logger)
        let endpoints = EndpointTable()
        let claimQueue = ClaimQueue()
        let policy = UnansweredPolicy(rawValue: configuration.resendUnanswered) ?? .replace
        let leaseMs = Int64(configuration.claimLeaseSeconds) * 1000
        let finisher = DispatchQueue(label: "pushworker.finisher")
        publisher = ResultPublisher(
            sink: producer, state: state,
            topics: .init(results: configuration.topicResults, tokens: configuration.topicTokens, retry: configuration.topicRetry,
                          dlq: configuration.topicDLQ),
            metrics: metrics, logger: logger, clock: clock, health: health, slots: slots, endpoints: endpoints, registry: registry,
            claimQueue: claimQueue, queue: finisher, delay: .milliseconds(configuration.recordDelayMs))
        claims = ClaimStage(
            settings: .init(leaseMs: leaseMs, unansweredLimit: policy.claimLimit,
                            admission: Admission(maxInFlightPerEndpoint: configuration.maxInFlightPerApp,
                                                 holdMaxSeconds: Double(configuration.holdMaxSeconds),
                                                 transactionalReserve: configuration.transactionalReserve),
                            pauseRecheckSeconds: Double(configuration.pauseRecheckSeconds)),
            state: state, clock: clock, queue: claimQueue, endpoints: endpoints, slots: slots, registry: registry, outcomes: publisher,
            health: health, controls: controls, metrics: metrics, logger: logger)
        dispatcher = DispatchStage(
            settings: .init(leaseSeconds: Double(leaseMs) / 1000, requestTimeoutSeconds: Double(configuration.requestTimeoutMs) / 1000,
                            rule: AttemptRule(policy: policy, retryPolicy: RetryPolicy(maxAttempts: configuration.maxAttempts))),
            transport: deliverer, clock: clock, endpoints: endpoints, outcomes: publisher, state: state, health: health, metrics: metrics,
            logger: logger, background: finisher)
        let store = credentials
        intake = JobIntake(
            settings: .init(dedupMaxSeconds: configuration.dedupMaxSeconds, caps: configuration.caps, quietHours: configuration.quietHours,
                            maxDeferSeconds: Double(max(1, configuration.retryMaxDelaySeconds - 60))), planner: planner,
            credentials: { store.credentials(for: $0) }, clock: clock, registry: registry, queue: claimQueue, endpoints: endpoints,
            outcomes: publisher, deadLetter: { [publisher] in publisher.deadLetter($0, reason: $1) }, controls: controls, metrics: metrics,
            logger: logger)
        health.onBack { [publisher] in
            finisher.async { publisher.reRecord(leaseMs: leaseMs, unansweredLimit: policy.claimLimit) }
        }

        for category in configuration.caps.rules.keys.sorted() { metrics.declare("pushworker_capped_total", [("category", category)]) }
        metrics.gauge("pushworker_in_flight") { [slots] in Double(slots.current) }
        metrics.gauge("pushworker_unfinished_recipients") { [registry] in Double(registry.unfinishedRecipients) }
        metrics.gauge("pushworker_claims_queued") { [claimQueue] in Double(claimQueue.count) }
        let client = state.client
        metrics.gauge("pushworker_redis_round_trips_total") { Double(client.roundTripCount) }
    }

    /// Whether `/readyz` should answer 200: Redis answers and the consumer joined its group.
    public var isReady: Bool { readiness.isReady }

    /// What `/readyz` says: each dependency that keeps the worker from taking jobs, and why.
    public var readiness: Readiness {
        var failing: [Readiness.Failure] = []
        if let detail = health.unhealthyDetail { failing.append(.init(dependency: "redis", detail: detail)) }
        if !consumer.hasJoinedGroup {
            failing.append(.init(dependency: "kafka_consumer_group",
                                 detail: "not joined group \(configuration.kafkaGroup) yet: no partitions assigned (brokers \(configuration.kafkaBrokers))"))
        }
        if stopRequested.load(ordering: .relaxed) { failing.append(.init(dependency: "shutdown", detail: "draining after SIGTERM: taking no new jobs")) }
        return Readiness(failing: failing)
    }

    /// Asks the loop to drain and stop (SIGTERM).
    public func requestStop() { stopRequested.store(true, ordering: .relaxed) }

    // MARK: - The consumer loop

    /// Runs until ``requestStop()``; then stops claiming, waits for the answers in flight within
    /// the drain period, commits and closes. Returns the exit status.
    public func run() -> Int32 {
        logger.info("worker started", ["kafka.group": configuration.kafkaGroup, "kafka.topics": Self.consumedTopics(configuration).joined(separator: ","),
                                       "claims.lease_ms": "\(claims.settings.leaseMs)", "unanswered.policy": configuration.resendUnanswered])
        do { try state.prepare() } catch { health.failed(error, during: "script load") }
        var loop = WorkerLoop(settings: WorkerLoop.Settings(
            maxInFlight: configuration.maxInFlight, saturationPauseSeconds: Double(configuration.saturationPauseMs) / 1000,
            drainSeconds: configuration.shutdownGraceSeconds, leaseRenewalSeconds: max(1, claims.leaseSeconds / 3),
            claimBatch: WorkerLoop.claimBatch(maxInFlight: configuration.maxInFlight),
            retryMaxDelaySeconds: Double(configuration.retryMaxDelaySeconds),
            priorityTopics: configuration.lanes.consumes(.transactional) ? [configuration.topicJobsTransactional] : []))
        var polled: [WorkerLoop.Polled] = []
        while true {
            applyRebalances(&loop)
            let reading = WorkerLoop.Reading(
                now: clock.wallSeconds, inFlight: slots.current, unclaimed: claims.queue.count,
                unfinishedMessages: registry.unfinishedMessages, assignment: assignment.withLock { $0 },
                redisHealthy: health.isHealthy, stopRequested: stopRequested.load(ordering: .relaxed),
                unfinishedRecipients: registry.unfinishedRecipients, priorityUnclaimed: claims.queue.transactionalCount)
            let actions = loop.turn(reading, polled: polled)
            polled = []
            for action in actions {
                switch action {
                case .process(let message):
                    let recipients = intake.process(message)
                    loop.processed(recipients: recipients)
                    // Decoding and planning a large job leave megabytes freed that the allocator
                    // would keep resident for its decay time while the sends allocate anew: given
                    // back at once, so a job's peak is its live memory (docs/performance.md "Memory").
                    if message.value.count >= Self.largeJobBytes { trimHeap() }
                case .deadLetter(let message, let reason):
                    publisher.deadLetter(message, reason: reason)
                case .claimAndDispatch(let room, let parkHeld):
                    dispatcher.dispatch(claims.round(room: room, parkHeld: parkHeld))
                case .pause(let partitions): consumer.pause(partitions)
                case .resume(let partitions): consumer.resume(partitions)
                case .poll(let max, let timeoutMs):
                    polled = poll(max: max, timeoutMs: timeoutMs, loop: &loop)
                case .waitForRoom(let timeoutMs):
                    // Until a claim batch's worth of slots is free and unfinished work is below its
                    // bound — or, when that already holds (the queued recipients wait for their
                    // endpoint's cap or hold, not for slots), until anything in flight or
                    // unfinished ends: the loop never spins on a queue it cannot take from.
                    let target = configuration.maxInFlight - loop.settings.claimBatch
                    let unfinishedBound = loop.settings.maxUnfinishedRecipients
                    let roomWasFree = reading.inFlight <= target && reading.unfinishedRecipients < unfinishedBound
                    room.wait(until: {
                        let inFlight = slots.current, unfinished = registry.unfinishedRecipients
                        return roomWasFree ? inFlight < reading.inFlight || unfinished < reading.unfinishedRecipients
                            : inFlight <= target && unfinished < unfinishedBound
                    }, timeout: .milliseconds(timeoutMs))
                case .waitForAnswers(let timeoutMs):
                    room.wait(until: { slots.current == 0 }, timeout: .milliseconds(timeoutMs))
                case .commit: commit()
                case .reportLag: reportLag()
                case .pingRedis: pingRedis()
                case .trimHeap: trimHeap()
                case .renewLeases: claims.renewLeases()
                case .refreshControls: claims.controls.refresh(active: registry.runs.map(\.campaign), now: clock.monotonicSeconds)
                case .beginDrain:
                    logger.info("stopping: no new claims; waiting for the answers in flight",
                                ["in_flight": "\(slots.current)", "pending.jobs": "\(registry.offsets.pendingCount)"])
                    dispatcher.beginDrain()
                case .finish:
                    return finish()
                }
            }
            metrics.set("pushworker_ready", [], isReady ? 1 : 0)
        }
    }

    /// Polls up to `max` messages, one `poll` call at a time: a rebalance is served inside a
    /// call, so its events are applied before the message that call returned is registered.
    private func poll(max: Int, timeoutMs: Int, loop: inout WorkerLoop) -> [WorkerLoop.Polled] {
        var polled: [WorkerLoop.Polled] = []
        while polled.count < max, let result = consumer.poll(timeout: .milliseconds(polled.isEmpty ? timeoutMs : 0)) {
            applyRebalances(&loop)
            switch result {
            case .failure(let error):
                metrics.increment("pushworker_kafka_errors_total")
                logger.warning("kafka consumer error", ["kafka.error": error.description])
            case .success(let message):
                registry.offsets.begin(message.topicPartition, offset: message.offset)
                var notBefore: Double?
                if message.topic == configuration.topicRetry {
                    notBefore = JobDecoder.notBefore(message.value)?.timeIntervalSince1970
                }
                polled.append(WorkerLoop.Polled(message: message, notBefore: notBefore))
            }
        }
        applyRebalances(&loop)
        return polled
    }

    /// Applies the rebalances librdkafka served since the last call: the assignment, the offsets
    /// of revoked partitions (forgotten: their new owner redoes them), the loop's held messages.
    private func applyRebalances(_ loop: inout WorkerLoop) {
        for event in consumer.drainRebalanceEvents() {
            switch event {
            case .assigned(let partitions):
                logger.info("partitions assigned", ["kafka.partitions": Self.describe(partitions)])
                assignment.withLock { $0.formUnion(partitions) }
            case .revoked(let partitions), .lost(let partitions):
                logger.info("partitions revoked", ["kafka.partitions": Self.describe(partitions)])
                assignment.withLock { $0.subtract(partitions) }
                registry.offsets.revoke(partitions)
                loop.revoked(partitions)
            }
        }
    }

    /// The end of a drain: requests still unanswered are aborted (their outcome is unknown: the
    /// unanswered rule applies), every outcome is recorded and published, Kafka's
    /// acknowledgements are awaited, what finished is committed, the consumer leaves the group.
    /// Unfinished jobs are not committed: another worker redoes them, and the claims, sent
    /// markers and unanswered counts keep it from notifying twice.
    private func finish() -> Int32 {
        deliverer.shutdown(drainTimeout: .zero)
        publisher.queue.sync { publisher.flushNow() }
        publisher.sink.flush(timeout: .seconds(5))
        commit()
        let unfinished = registry.unfinishedMessages
        consumer.close()
        kafkaProducer.close(timeout: .seconds(2))
        logger.info("stopped", ["unfinished.jobs": "\(unfinished)"])
        return 0
    }

    /// The topics a worker consumes: its lanes' job topics (`PUSHWORKER_LANES`, docs/lanes.md)
    /// and, unless it is dedicated to the transactional lane, the retry topic.
    static func consumedTopics(_ configuration: Configuration) -> [String] {
        var topics: [String] = []
        if configuration.lanes.consumes(.transactional) { topics.append(configuration.topicJobsTransactional) }
        if configuration.lanes.consumes(.bulk) { topics.append(configuration.topicJobs) }
        if configuration.lanes.consumes(.bulk) { topics.append(configuration.topicRetry) }
        return topics
    }

    /// A job at least this large (bytes) is followed by a heap trim.
    static let largeJobBytes = 256 * 1024

    /// Off the loop's thread, while idle: returns the allocator's unused pages to the kernel.
    private func trimHeap() {
        redisProbe.async { _ = pw_allocator_purge() }
    }

    /// Off the loop's thread: one PING at a time (for `/readyz`; with Sentinel, a Sentinel's word
    /// on where the master is and the master's `ROLE`); when Redis is back, or the master moved,
    /// what it may have lost is written again.
    private func pingRedis() {
        guard !redisProbing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        redisProbe.async { [self] in
            let answered = state.isReachable()
            if let cluster = state.client as? RedisClusterClient { publishNodeStats(cluster.nodeStats()) }
            let sentinel = state.client as? RedisSentinelClient
            if answered {
                var newMaster: String?
                if let sentinel, redisMasterSwitches.exchange(sentinel.masterSwitchCount, ordering: .relaxed) != sentinel.masterSwitchCount {
                    newMaster = sentinel.master?.description ?? "?"
                }
                health.answered(newMaster: newMaster)
            } else {
                health.probeFailed(detail: sentinel?.problem)
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
            for (partition, lag) in consumer.lag(timeout: .seconds(5)) {
                metrics.set("pushworker_kafka_consumer_lag", [("topic", partition.topic), ("partition", "\(partition.partition)")], Double(lag))
            }
            lagQuerying.store(false, ordering: .releasing)
        }
    }

    private func commit() {
        let next = registry.offsets.committable()
        guard !next.isEmpty else { return }
        do {
            try consumer.commit(next)
            registry.offsets.markCommitted(next)
        } catch {
            metrics.increment("pushworker_kafka_errors_total")
            logger.warning("offset commit failed", ["kafka.error": error.description])
        }
    }

    static func describe(_ partitions: [TopicPartition]) -> String {
        partitions.map { "\($0.topic)[\($0.partition)]" }.joined(separator: ",")
    }

    /// The largest DLQ value: the producer's `message.max.bytes` (librdkafka default 1,000,000)
    /// less 64 KiB for the key and headers.
    static func deadLetterMaxBytes(_ producerProperties: [String: String]) -> Int {
        let messageMax = producerProperties["message.max.bytes"].flatMap { Int($0) } ?? 1_000_000
        return max(1024, messageMax - 65_536)
    }
}
