import PushKafka

/// The consumer loop's decisions, as a state machine with an explicit ``Phase`` that returns
/// actions and does no I/O. ``Worker`` feeds it one ``Reading`` per turn (with the messages the
/// previous turn's poll returned) and the rebalances it served; it performs the actions in order
/// and never calls back in during a turn. Unit-tested without services (WorkerLoopTests).
///
/// Back-pressure (docs/pipeline.md "Back-pressure and shutdown"): a short saturation is waited
/// out without polling (pausing makes librdkafka drop and re-fetch what it prefetched); one
/// lasting `saturationPauseSeconds` pauses every partition, and the loop keeps polling so
/// rebalances are served and `max.poll.interval.ms` holds.
///
/// Retries (docs/reliability.md "Tenants never stall each other"): a retry message due later is
/// held in memory without pausing its partition, so a due one behind it is not delayed (only when
/// held retries pass ``Settings/maxHeldRetries`` or ``Settings/maxHeldRetryBytes`` are their
/// partitions paused); one due further ahead than ``Settings/retryMaxDelaySeconds`` goes to the
/// dead-letter topic (`not_before_too_far`).
///
/// Drain (docs/reliability.md "A drain that aborts nothing"): SIGTERM stops claiming at once;
/// the loop waits for the requests in flight to be answered and recorded, committing what
/// finished, until none is left or the drain deadline passes.
struct WorkerLoop {
    struct Settings: Equatable {
        var maxInFlight: Int
        var saturationPauseSeconds: Double
        /// `PUSHWORKER_DRAIN_SECONDS`.
        var drainSeconds: Double
        var lagIntervalSeconds = 5.0
        var redisPingIntervalSeconds = 2.0
        var heapTrimIntervalSeconds = 2.0
        /// How often claims in flight are renewed (a third of the lease).
        var leaseRenewalSeconds = 10.0
        /// How often the controls of campaigns with work here are read again (docs/campaigns.md).
        var controlRefreshSeconds = 1.0
        var pollTimeoutMs = 50
        var roomWaitMs = 20
        /// Room worth a claim: below it (and with something in flight) the loop waits for more
        /// rather than claiming the few slots that just freed (``claimBatch(maxInFlight:)``).
        var claimBatch = 1
        /// Recipients of unfinished processings at which the loop takes no new job:
        /// `unfinishedFactor` × `maxInFlight` (a processing holds its job until Kafka
        /// acknowledged its last result).
        var unfinishedFactor = 3
        var maxUnfinishedRecipients: Int { unfinishedFactor * maxInFlight }
        /// `PUSHWORKER_RETRY_MAX_DELAY_SECONDS`: a retry due further ahead is dead-lettered.
        var retryMaxDelaySeconds = 3600.0
        /// Held retry messages kept without pausing their partitions.
        var maxHeldRetries = 10_000
        var maxHeldRetryBytes = 64 << 20
        /// The transactional lane's job topic when this worker consumes it (docs/lanes.md): its
        /// partitions stay unpaused and polled while bulk work saturates the worker.
        var priorityTopics: Set<String> = []
    }

    /// The claim batch for a worker bounded at `maxInFlight`: an eighth of it, 1…256.
    static func claimBatch(maxInFlight: Int) -> Int { max(1, min(256, maxInFlight / 8)) }

    /// Where the loop is.
    enum Phase: Equatable {
        /// Taking jobs.
        case running
        /// At a bound since `since`: waiting for room without polling.
        case saturated(since: Double)
        /// Every partition paused (a long saturation, or Redis away); still polling.
        case paused(since: Double)
        /// SIGTERM: no new claims; answers awaited until `deadline`.
        case draining(deadline: Double)
        case finished
    }

    /// What the worker read at the top of a turn.
    struct Reading: Equatable {
        /// Unix seconds (retries' `notBefore` are wall-clock times).
        var now: Double
        /// Recipients claimed for sending and not yet recorded.
        var inFlight: Int
        /// Recipients of accepted jobs not claimed yet (due now or later).
        var unclaimed: Int
        /// Messages begun and not finished.
        var unfinishedMessages: Int
        var assignment: Set<TopicPartition>
        /// False after a Redis error until Redis answers again: no new jobs are taken then.
        var redisHealthy: Bool
        var stopRequested: Bool
        /// Recipients of the processings begun and not finished.
        var unfinishedRecipients = 0
        /// Transactional recipients among `unclaimed` (docs/lanes.md).
        var priorityUnclaimed = 0
    }

    /// A message a poll returned; `notBefore` (Unix seconds) decoded by the worker for retries.
    struct Polled {
        var message: KafkaMessage
        var notBefore: Double?
    }

    enum Action {
        /// Hand a message to the pipeline (decode, plan, queue its recipients for claims).
        case process(KafkaMessage)
        /// Copy a message to the dead-letter topic with `reason` (its offset then moves on).
        case deadLetter(KafkaMessage, reason: String)
        /// Claim (up to `room`) queued recipients and dispatch them; `parkHeld`: recipients held
        /// by their endpoint go to the retry topic now (the worker is saturated by load).
        case claimAndDispatch(room: Int, parkHeld: Bool)
        case pause([TopicPartition])
        case resume([TopicPartition])
        case poll(max: Int, timeoutMs: Int)
        /// Wait (at most `timeoutMs`) until a claim batch's worth of room is free.
        case waitForRoom(timeoutMs: Int)
        /// Wait (at most `timeoutMs`) until nothing is in flight.
        case waitForAnswers(timeoutMs: Int)
        case commit
        case reportLag
        case pingRedis
        case trimHeap
        case renewLeases
        /// Read again the controls of the campaigns with work here.
        case refreshControls
        /// Stop claiming for good; draining until `deadline`.
        case beginDrain(deadline: Double)
        /// End the drain: what is still unanswered is aborted, outcomes recorded, commit, close.
        case finish
    }

    let settings: Settings
    private(set) var phase: Phase = .running
    private(set) var paused: Set<TopicPartition> = []
    private(set) var delayed: [(due: Double, message: KafkaMessage)] = []
    private var delayedBytes = 0
    private var lastLag = -Double.infinity
    private var lastPing = -Double.infinity
    private var lastTrim = -Double.infinity
    private var lastRenewal: Double?
    private var lastControlRefresh: Double?
    /// Recipients of the last job processed: sizes the next poll. Starts pessimistic.
    private var lastJobRecipients: Int

    init(settings: Settings) {
        self.settings = settings
        lastJobRecipients = max(1, settings.maxInFlight)
    }

    // MARK: events

    /// Partitions left this member: their held messages belong to the new owner.
    mutating func revoked(_ partitions: [TopicPartition]) {
        let gone = Set(partitions)
        paused.subtract(gone)
        delayed.removeAll { gone.contains($0.message.topicPartition) }
        delayedBytes = delayed.reduce(0) { $0 + $1.message.value.count }
    }

    /// A job was processed: its size sizes the next poll.
    mutating func processed(recipients: Int) {
        lastJobRecipients = max(1, recipients)
    }

    /// When a polled retry may run.
    enum RetryTiming: Equatable {
        case due
        case hold(until: Double)
        /// Due further ahead than the maximum delay.
        case tooFar
    }

    /// The dead-letter `error` of a retry due too far ahead.
    static let notBeforeTooFar = "not_before_too_far"

    static func timing(notBefore: Double?, now: Double, maxDelaySeconds: Double) -> RetryTiming {
        guard let notBefore, notBefore > now else { return .due }
        return notBefore - now > maxDelaySeconds ? .tooFar : .hold(until: notBefore)
    }

    // MARK: a turn

    /// The actions of one loop turn, in order. `polled`: what the previous turn's poll returned.
    mutating func turn(_ reading: Reading, polled: [Polled] = []) -> [Action] {
        let now = reading.now
        var actions: [Action] = []
        switch phase {
        case .finished:
            return []
        case .draining(let deadline):
            return drainTurn(reading, deadline: deadline)
        case .running, .saturated, .paused:
            break
        }
        if reading.stopRequested {
            let deadline = now + settings.drainSeconds
            phase = .draining(deadline: deadline)
            actions.append(.beginDrain(deadline: deadline))
            let toPause = reading.assignment.subtracting(paused)
            if !toPause.isEmpty { actions.append(.pause(Self.sorted(toPause))) }
            paused.formUnion(reading.assignment)
            // What the last poll returned is left for whoever owns the partition next.
            return actions + drainTurn(reading, deadline: deadline)
        }

        // Retries whose notBefore has come (not while Redis is away: they would only queue).
        if reading.redisHealthy && !delayed.isEmpty {
            let due = delayed.filter { $0.due <= now }
            if !due.isEmpty {
                delayed.removeAll { $0.due <= now }
                delayedBytes -= due.reduce(0) { $0 + $1.message.value.count }
                for entry in due { actions.append(.process(entry.message)) }
            }
        }
        for item in polled {
            switch Self.timing(notBefore: item.notBefore, now: now, maxDelaySeconds: settings.retryMaxDelaySeconds) {
            case .due: actions.append(.process(item.message))
            case .hold(let until):
                delayed.append((until, item.message))
                delayedBytes += item.message.value.count
            case .tooFar: actions.append(.deadLetter(item.message, reason: Self.notBeforeTooFar))
            }
        }

        let room = max(0, settings.maxInFlight - reading.inFlight)
        let claimRoom = room >= settings.claimBatch || reading.inFlight == 0 ? room : 0
        let loadSaturated = reading.unclaimed >= settings.maxInFlight || reading.unfinishedRecipients >= settings.maxUnfinishedRecipients
        actions.append(.claimAndDispatch(room: claimRoom, parkHeld: loadSaturated))
        // Recipients wait for a claim batch's worth of room: wait for it rather than block in a poll.
        let waitingForBatch = claimRoom == 0 && room > 0 && reading.unclaimed > 0

        // Back-pressure: queued recipients and unacknowledged processings count as load too.
        let saturated = reading.inFlight >= settings.maxInFlight || loadSaturated
        phase = Self.next(phase, saturated: saturated, redisHealthy: reading.redisHealthy, now: now, pauseAfter: settings.saturationPauseSeconds)
        let pausedAll: Bool
        if case .paused = phase { pausedAll = true } else { pausedAll = false }
        // docs/lanes.md: while bulk work saturates the worker, the transactional topic's
        // partitions stay unpaused and polled (the others are paused at once, not waited out),
        // until transactional work itself fills the worker or Redis is away.
        let priorityOpen = saturated && reading.redisHealthy && reading.priorityUnclaimed < settings.maxInFlight
            && reading.assignment.contains { settings.priorityTopics.contains($0.topic) }
        // Held retries pause their partitions only past the memory bound.
        var wanted = delayed.count > settings.maxHeldRetries || delayedBytes > settings.maxHeldRetryBytes
            ? Set(delayed.map { $0.message.topicPartition }) : []
        if priorityOpen {
            wanted.formUnion(reading.assignment.filter { !settings.priorityTopics.contains($0.topic) })
        } else if pausedAll {
            wanted.formUnion(reading.assignment)
        }
        let toPause = wanted.subtracting(paused), toResume = paused.subtracting(wanted)
        if !toPause.isEmpty { actions.append(.pause(Self.sorted(toPause))) }
        if !toResume.isEmpty { actions.append(.resume(Self.sorted(toResume))) }
        paused = wanted

        if priorityOpen {
            // A short poll: the loop comes back for the slots that free meanwhile.
            actions.append(.poll(max: 1, timeoutMs: settings.roomWaitMs))
        } else if case .saturated = phase {
            actions.append(.waitForRoom(timeoutMs: settings.roomWaitMs))
        } else if waitingForBatch && !pausedAll {
            actions.append(.waitForRoom(timeoutMs: settings.roomWaitMs))
        } else {
            let free = max(0, settings.maxInFlight - reading.inFlight - reading.unclaimed)
            let batch = max(1, min(64, free / lastJobRecipients))
            actions.append(.poll(max: batch, timeoutMs: settings.pollTimeoutMs))
        }
        actions.append(.commit)
        actions += chores(reading)
        return actions
    }

    /// The phase after a turn's readings (running, saturated or paused).
    static func next(_ phase: Phase, saturated: Bool, redisHealthy: Bool, now: Double, pauseAfter: Double) -> Phase {
        let since: Double?
        switch phase {
        case .saturated(let start), .paused(let start): since = start
        default: since = nil
        }
        if saturated {
            let start = since ?? now
            return now - start >= pauseAfter || !redisHealthy ? .paused(since: start) : .saturated(since: start)
        }
        return redisHealthy ? .running : .paused(since: since ?? now)
    }

    /// A draining turn: wait for the answers in flight, commit what finished; finish when none is
    /// left or at the deadline.
    private mutating func drainTurn(_ reading: Reading, deadline: Double) -> [Action] {
        if reading.inFlight == 0 || reading.now >= deadline {
            phase = .finished
            return [.commit, .finish]
        }
        return [.waitForAnswers(timeoutMs: settings.roomWaitMs), .commit]
    }

    private mutating func chores(_ reading: Reading) -> [Action] {
        let now = reading.now
        var actions: [Action] = []
        if now - lastLag >= settings.lagIntervalSeconds { lastLag = now; actions.append(.reportLag) }
        if now - lastPing >= settings.redisPingIntervalSeconds { lastPing = now; actions.append(.pingRedis) }
        // Busy, the allocator returns unused pages by itself; an idle worker gives back the rest
        // at once, so RSS falls to its idle level after a burst.
        let idle = reading.inFlight == 0 && reading.unclaimed == 0 && reading.unfinishedMessages == 0
        if idle && now - lastTrim >= settings.heapTrimIntervalSeconds { lastTrim = now; actions.append(.trimHeap) }
        let busy = reading.inFlight > 0 || reading.unclaimed > 0 || reading.unfinishedMessages > 0
        // A campaign's control is read with its first claim; this keeps it fresh while its work lasts.
        if !busy {
            lastControlRefresh = nil
        } else if let last = lastControlRefresh {
            if now - last >= settings.controlRefreshSeconds { lastControlRefresh = now; actions.append(.refreshControls) }
        } else {
            lastControlRefresh = now
        }
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
