import PushKafka

/// The consumer loop's decisions, as a state machine that returns actions and does no I/O
/// (the shape of swift-kafka-client's `KafkaConsumer.StateMachine` and of PushHTTP's
/// `HTTPClientState`). ``Worker`` feeds it what it observed — a turn's readings, the messages a
/// poll returned, the outcome of processing one, rebalances — and performs what it answers:
/// poll, wait for room, pause, resume, process, claim, dispatch, commit, drain, and the periodic
/// chores. Unit-tested without services (WorkerLoopTests).
///
/// Back-pressure (docs/pipeline.md, "Back-pressure and shutdown"): a short saturation is waited
/// out without polling (pausing makes librdkafka drop and re-fetch what it prefetched); only one
/// lasting `saturationPauseSeconds` pauses every partition, and then the loop keeps polling so
/// rebalances are served and `max.poll.interval.ms` holds.
struct WorkerLoop {
    struct Settings: Equatable {
        var maxInFlight: Int
        var saturationPauseSeconds: Double
        var shutdownGraceSeconds: Double
        var lagIntervalSeconds = 5.0
        var redisPingIntervalSeconds = 2.0
        var heapTrimIntervalSeconds = 2.0
        /// How often claims in flight are renewed (a third of the lease).
        var leaseRenewalSeconds = 10.0
        var pollTimeoutMs = 50
        var roomWaitMs = 20
        /// Room worth a claim: below it (and with something in flight) the loop waits for more
        /// rather than claiming the few slots that just freed. Under provider latency slots free
        /// a few at a time, and a claim per few recipients was a Redis round trip and a dispatch
        /// per few recipients (80–89 round trips per 500-recipient job at 50 ms, against 31 at
        /// 0 ms: docs/performance.md). 1 claims whatever frees up. See ``claimBatch(maxInFlight:)``.
        var claimBatch = 1
        /// Recipients of unfinished processings at which the loop takes no new job:
        /// `unfinishedFactor` × `maxInFlight`. A processing holds its job until Kafka has
        /// acknowledged its last result, so when acknowledgements lag (a slow broker, or the
        /// burst of a backlog being enqueued) jobs would otherwise keep being taken and held:
        /// 37 processings, +60 MB of RSS within a second at the start of `bench e2e`, against
        /// 7–9 in steady state (docs/performance.md, eighth session).
        var unfinishedFactor = 3
        var maxUnfinishedRecipients: Int { unfinishedFactor * maxInFlight }
    }

    /// The claim batch for a worker bounded at `maxInFlight`: an eighth of it, 1…256 (1 for
    /// bounds below 16, so small bounds behave as before; 250 at the default 2000). The cap was
    /// 32: at 50 ms provider latency, with the bound reached, 250 took 0.95 × the CPU per
    /// notification (the rest of the pipeline 0.89 ×; 0 ms level; docs/performance.md "Ninth session").
    static func claimBatch(maxInFlight: Int) -> Int { max(1, min(256, maxInFlight / 8)) }

    /// What the worker read at the top of a turn.
    struct Reading: Equatable {
        var now: Double
        /// Recipients claimed (or waiting for another processing) and not yet recorded.
        var inFlight: Int
        /// Recipients of accepted jobs not claimed yet (due now or later).
        var unclaimed: Int
        /// Messages begun and not finished (OffsetTracker).
        var unfinishedMessages: Int
        var assignment: Set<TopicPartition>
        /// False after a Redis error until Redis answers again: no new jobs are taken then
        /// (every partition paused), claims already queued are retried.
        var redisHealthy: Bool
        var stopRequested: Bool
        /// Recipients of the processings begun and not finished (their last result not yet
        /// acknowledged by Kafka).
        var unfinishedRecipients = 0
    }

    /// A message a poll returned; `notBefore` decoded by the worker for retry-topic messages.
    struct Polled {
        var message: KafkaMessage
        var notBefore: Double?
    }

    enum Action {
        /// Hand a message to the pipeline (decode, plan, queue its recipients for claims).
        case process(KafkaMessage)
        /// Claim (up to `room`) queued recipients and dispatch what was claimed; dispatch due
        /// scheduled sends.
        case claimAndDispatch(room: Int)
        case pause([TopicPartition])
        case resume([TopicPartition])
        case poll(max: Int, timeoutMs: Int)
        /// Saturated: wait (woken early by a completion) instead of polling.
        /// Wait (at most `timeoutMs`) until a claim batch's worth of room is free: in flight ≤
        /// maxInFlight − claimBatch.
        case waitForRoom(timeoutMs: Int)
        case commit
        case reportLag
        case pingRedis
        case trimHeap
        case renewLeases
        /// Stop fetching for good; draining until `deadline`.
        case beginDrain(deadline: Double)
        /// Give back what is left (claims of unsent recipients), close, exit.
        case finish
    }

    let settings: Settings
    private(set) var paused: Set<TopicPartition> = []
    private(set) var delayed: [(due: Double, message: KafkaMessage)] = []
    private(set) var saturatedSince: Double?
    private(set) var drainDeadline: Double?
    private(set) var isFinished = false
    private var lastLag = -Double.infinity
    private var lastPing = -Double.infinity
    private var lastTrim = -Double.infinity
    private var lastRenewal: Double?
    /// Recipients of the last job processed: sizes the next poll so one batch cannot overshoot
    /// the in-flight bound by more than about one job. Starts pessimistic.
    private var lastJobRecipients: Int

    init(settings: Settings) {
        self.settings = settings
        lastJobRecipients = max(1, settings.maxInFlight)
    }

    // MARK: events

    /// Partitions left this member: their delayed messages belong to the new owner.
    mutating func revoked(_ partitions: [TopicPartition]) {
        let gone = Set(partitions)
        paused.subtract(gone)
        delayed.removeAll { gone.contains($0.message.topicPartition) }
    }

    /// What to do with messages a poll returned: retries not yet due wait in memory (their
    /// partition is paused meanwhile), the rest are processed now.
    mutating func polled(_ messages: [Polled], now: Double) -> [Action] {
        var actions: [Action] = []
        for item in messages {
            if let due = item.notBefore, due > now {
                delayed.append((due, item.message))
            } else {
                actions.append(.process(item.message))
            }
        }
        return actions
    }

    /// A job was processed: its size sizes the next poll.
    mutating func processed(recipients: Int) {
        lastJobRecipients = max(1, recipients)
    }

    // MARK: a turn

    /// The actions of one loop turn, in order.
    mutating func turn(_ reading: Reading) -> [Action] {
        if isFinished { return [] }
        let now = reading.now
        var actions: [Action] = []

        if reading.stopRequested && drainDeadline == nil {
            let deadline = now + settings.shutdownGraceSeconds
            drainDeadline = deadline
            actions.append(.beginDrain(deadline: deadline))
            let toPause = reading.assignment.subtracting(paused)
            if !toPause.isEmpty { actions.append(.pause(Self.sorted(toPause))) }
            paused.formUnion(reading.assignment)
        }
        if let deadline = drainDeadline {
            // Draining: no new messages; the accepted jobs' recipients are still claimed and
            // sent (they are in-flight work), scheduled ones go when due, results are recorded
            // and committed.
            actions.append(.claimAndDispatch(room: max(0, settings.maxInFlight - reading.inFlight)))
            if reading.unfinishedMessages == 0 || now >= deadline {
                actions.append(.commit)
                actions.append(.finish)
                isFinished = true
                return actions
            }
            actions.append(.poll(max: 1, timeoutMs: settings.roomWaitMs))
            actions.append(.commit)
            return actions
        }

        // Retries whose notBefore has come (not while Redis is away: they would only queue).
        if reading.redisHealthy {
            let due = delayed.filter { $0.due <= now }.map(\.message)
            if !due.isEmpty {
                delayed.removeAll { $0.due <= now }
                for message in due { actions.append(.process(message)) }
            }
        }

        let room = max(0, settings.maxInFlight - reading.inFlight)
        let claimRoom = room >= settings.claimBatch || reading.inFlight == 0 ? room : 0
        actions.append(.claimAndDispatch(room: claimRoom))
        // Recipients wait for a claim batch's worth of room: wait for it (as when saturated)
        // rather than block in a poll while slots free.
        let waitingForBatch = claimRoom == 0 && room > 0 && reading.unclaimed > 0

        // Back-pressure. Queued recipients not claimed yet count as load too: polling more jobs
        // while a job's recipients wait for room would only grow the queue; so do processings
        // whose results wait for Kafka's acknowledgement (``Settings/unfinishedFactor``).
        let saturated = reading.inFlight >= settings.maxInFlight || reading.unclaimed >= settings.maxInFlight
            || reading.unfinishedRecipients >= settings.maxUnfinishedRecipients
        if saturated { saturatedSince = saturatedSince ?? now } else { saturatedSince = nil }
        let saturatedLong = saturatedSince.map { now - $0 >= settings.saturationPauseSeconds } ?? false
        var wanted = Set(delayed.map { $0.message.topicPartition })
        if saturatedLong || !reading.redisHealthy { wanted.formUnion(reading.assignment) }
        let toPause = wanted.subtracting(paused), toResume = paused.subtracting(wanted)
        if !toPause.isEmpty { actions.append(.pause(Self.sorted(toPause))) }
        if !toResume.isEmpty { actions.append(.resume(Self.sorted(toResume))) }
        paused = wanted

        if (saturated || waitingForBatch) && !saturatedLong {
            actions.append(.waitForRoom(timeoutMs: settings.roomWaitMs))
        } else {
            let free = max(0, settings.maxInFlight - reading.inFlight - reading.unclaimed)
            let batch = max(1, min(64, free / lastJobRecipients))
            actions.append(.poll(max: batch, timeoutMs: settings.pollTimeoutMs))
        }
        actions.append(.commit)

        if now - lastLag >= settings.lagIntervalSeconds { lastLag = now; actions.append(.reportLag) }
        if now - lastPing >= settings.redisPingIntervalSeconds { lastPing = now; actions.append(.pingRedis) }
        // Busy, the allocator returns unused pages by itself (jemalloc's decay, CPushAllocator);
        // an idle worker gives back the rest at once, so RSS falls to its idle level after a burst.
        let idle = reading.inFlight == 0 && reading.unclaimed == 0 && reading.unfinishedMessages == 0
        if idle && now - lastTrim >= settings.heapTrimIntervalSeconds { lastTrim = now; actions.append(.trimHeap) }
        if let last = lastRenewal {
            if now - last >= settings.leaseRenewalSeconds { lastRenewal = now; actions.append(.renewLeases) }
        } else {
            lastRenewal = now
        }
        return actions
    }

    private static func sorted(_ partitions: Set<TopicPartition>) -> [TopicPartition] {
        partitions.sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) }
    }
}
