import Dispatch
import PushRuntime
import Foundation
import PushCore
import PushEncoding
import PushKafka
import PushPipeline
import PushProviders
import PushRedis
import Synchronization

/// The pipeline's last stage (docs/pipeline.md "Record, then publish"): outcomes gathered for a
/// few milliseconds are recorded in the fleet's state in one round trip (a sent msgId joins its
/// bucket's set and loses its claim; an unanswered attempt is counted; other outcomes release
/// their claim; dead tokens are recorded), then each recipient's result and token invalidation is
/// produced at once, retry hand-offs join their processing's retry jobs, resends and withheld
/// writes go back to the claim queue, and in-flight slots are given back.
///
/// The results path never waits for Redis: a record that fails marks the state unreachable (no
/// new claims) and the results go out anyway; sent markers are written again when it is back
/// (``reRecord()``).
///
/// Thread safety: ``add(_:_:_:holdsSlot:)`` from any thread; records and publishing run on the
/// serial `queue`. Not generic over its sink: its hot path (``add(_:_:_:holdsSlot:)`` on the
/// transport's thread, ``record(_:)``) runs specialized code, and the sink is one existential call
/// per message.
final class ResultPublisher: Sendable {
    struct Entry: Sendable {
        var run: JobRun
        var index: Int
        var outcome: RecipientOutcome
        /// Counts in the worker's in-flight bound until recorded.
        var holdsSlot: Bool
    }

    struct Topics: Sendable {
        var results: String
        var tokens: String
        var retry: String
        var dlq: String
    }

    let sink: any MessageSink
    let state: any DeliveryStatePort
    let topics: Topics
    let metrics: Metrics
    let logger: Logger
    let clock: any PipelineClock
    let health: RedisHealth
    let slots: InFlightSlots
    let endpoints: EndpointTable
    let registry: JobRegistry
    let claimQueue: ClaimQueue
    /// The serial queue records and publishing run on.
    let queue: DispatchQueue
    /// How long outcomes gather before one record round trip (`PUSHWORKER_RECORD_DELAY_MS`).
    let delay: DispatchTimeInterval
    /// A batch this large is flushed at once.
    let batchLimit: Int

    private struct Buffer {
        var entries: [Entry] = []
        var isTimerSet = false
        var isFlushQueued = false
    }
    private let buffer = Mutex(Buffer())
    private enum Wake { case none, timer, now }
    /// The most recent sent markers recorded, written again when Redis comes back after losing
    /// its data (bounded: ``recentSentCapacity``).
    private let recentSent = Mutex(RecentSent())
    static var recentSentCapacity: Int { 50_000 }

    init(sink: any MessageSink, state: any DeliveryStatePort, topics: Topics, metrics: Metrics, logger: Logger, clock: any PipelineClock,
         health: RedisHealth, slots: InFlightSlots, endpoints: EndpointTable, registry: JobRegistry, claimQueue: ClaimQueue,
         queue: DispatchQueue, delay: DispatchTimeInterval, batchLimit: Int = 1000) {
        self.sink = sink; self.state = state; self.topics = topics; self.metrics = metrics; self.logger = logger
        self.clock = clock; self.health = health; self.slots = slots; self.endpoints = endpoints; self.registry = registry
        self.claimQueue = claimQueue; self.queue = queue; self.delay = delay; self.batchLimit = batchLimit
    }

    // MARK: gathering

    /// Hands one outcome over. A second final outcome for the same recipient is dropped (its
    /// slot, if it holds one, is still given back).
    func add(_ run: JobRun, _ index: Int, _ outcome: consuming RecipientOutcome, holdsSlot: Bool) {
        guard run.decide(index, outcome) else {
            if holdsSlot {
                var byEndpoint = Array(repeating: 0, count: run.endpoint(index) + 1)
                byEndpoint[run.endpoint(index)] = -1
                giveBack(byEndpoint, count: 1, bulk: run.transactional ? 0 : 1)
            }
            return
        }
        var pending: Entry? = Entry(run: run, index: index, outcome: consume outcome, holdsSlot: holdsSlot)
        let wake: Wake = buffer.withLock { state in
            if let moved = pending.take() { state.entries.append(moved) }
            if state.entries.count >= batchLimit {
                guard !state.isFlushQueued else { return .none }
                state.isFlushQueued = true
                return .now
            }
            guard !state.isTimerSet else { return .none }
            state.isTimerSet = true
            return .timer
        }
        switch wake {
        case .none: break
        case .now: queue.async { [self] in flushNow() }
        case .timer: queue.asyncAfter(deadline: .now() + delay) { [self] in flushNow() }
        }
    }

    /// Records and publishes what gathered (on `queue`).
    func flushNow() {
        let entries: [Entry] = buffer.withLock { state in
            state.isTimerSet = false
            state.isFlushQueued = false
            defer { state.entries.removeAll(keepingCapacity: true) }
            return state.entries
        }
        if !entries.isEmpty { record(entries) }
    }

    /// Outcomes waiting for their flush.
    var pendingCount: Int { buffer.withLock { $0.entries.count } }

    // MARK: record, then publish

    func record(_ entries: [Entry]) {
        var records: [DeliveryStateStore.RecordEntry] = []
        var invalid: [(appID: String, platform: String, tokenHash: String, invalidSinceMs: Int64)] = []
        var campaignCounts = CampaignTally()
        records.reserveCapacity(entries.count)
        // Read in place: a copy of an entry retains every string of its result.
        for position in entries.indices {
            let run = entries[position].run, index = entries[position].index
            let held = run.noteClaimReleased(index)
            let kind: JobRun.RecordKind?
            var cap: JobRun.CapRecord?
            switch entries[position].outcome {
            case .final(let result, let token, let isSent, let countsUnanswered):
                campaignCounts.count(run.campaign, result.status)
                kind = isSent ? .sent : countsUnanswered ? .unanswered : held ? .released : nil
                // docs/caps.md: a sent notification counts; a claimed one that was not sent gives
                // its reservation back, unless it may have been shown (written, never answered).
                if run.capPolicy != nil {
                    cap = isSent ? .confirm : held && !countsUnanswered && result.reason != "unanswered" ? .giveBack : nil
                }
                if isSent { run.noteSent(index) }
                if let token { invalid.append((token.appID, token.platform, token.tokenHash, token.invalidSinceMs)) }
            case .resend, .leaveUnanswered:
                kind = .unanswered
            case .retry, .requeue, .release:
                kind = held ? .released : nil
            }
            if let kind, let record = run.recordEntry(index, kind, cap: cap) { records.append(record) }
        }
        var recorded = false
        if !records.isEmpty || !invalid.isEmpty || !campaignCounts.isEmpty {
            if health.isHealthy {
                do {
                    let steered = try state.record(records, invalid: invalid, counts: campaignCounts.counts)
                    campaignCounts.noteSteered(steered, logger: logger)
                    recorded = true
                } catch {
                    health.failed(error, during: "record")
                }
            } else {
                // Redis is away: the results go out anyway; sent markers are written again when
                // it is back (reRecord), released claims end with their lease.
                metrics.increment("pushworker_redis_record_skipped_total", by: Double(records.count))
            }
            // Kept whether the record succeeded or not: a processing whose records did not reach
            // Redis can finish before Redis is back, and then only this ring still knows them.
            let sent = records.filter { $0.sentRetentionMs != nil }
            if !sent.isEmpty { recentSent.withLock { $0.append(contentsOf: sent, capacity: Self.recentSentCapacity) } }
        }
        var released = 0, releasedBulk = 0
        var releasedBy: [Int] = []
        var tally = ResultTally()
        var output = ResultOutput()
        var requeues: [ClaimRequest] = []
        let now = clock.monotonicSeconds
        for position in entries.indices {
            let run = entries[position].run, index = entries[position].index
            if entries[position].holdsSlot {
                released += 1
                if !run.transactional { releasedBulk += 1 }
                let endpoint = run.endpoint(index)
                if endpoint >= releasedBy.count { releasedBy += Array(repeating: 0, count: endpoint + 1 - releasedBy.count) }
                releasedBy[endpoint] -= 1
            }
            switch entries[position].outcome {
            case .final(let result, let token, _, _):
                publish(run, result, token, &tally, &output)
            case .retry(let recipient, let attempts, let delay, let keepsLocalTime):
                metrics.increment("pushworker_retries_total")
                perform(run, run.deferToRetry(recipient, attempts: attempts, delay: delay, keepsLocalTime: keepsLocalTime))
            case .resend(let attempts):
                if recorded {
                    // The unknown attempt is counted: the claim that follows says "resend".
                    run.noteAttempts(index, total: attempts)
                    requeues.append(ClaimRequest(run: run, index: index, due: now, endpoint: run.endpoint(index)))
                    metrics.increment("pushworker_unanswered_total", [("action", "resend")])
                } else {
                    // Not counted in the fleet's state: a resend could not be told apart from a
                    // first send, so none is made.
                    let result = run.result(index, .failed, reason: "unanswered", atMs: Int64(clock.wallSeconds * 1000), attempts: attempts)
                    if run.decide(index, RecipientOutcome.final(result)) { publish(run, result, nil, &tally, &output) }
                }
            case .requeue:
                requeues.append(ClaimRequest(run: run, index: index, due: now, endpoint: run.endpoint(index)))
            case .leaveUnanswered:
                metrics.increment("pushworker_unanswered_total", [("action", "left")])
            case .release:
                break
            }
        }
        tally.flush(into: metrics)
        claimQueue.append(requeues)
        if released > 0 { giveBack(releasedBy, count: released, bulk: releasedBulk) }
    }

    private func giveBack(_ byEndpoint: [Int], count: Int, bulk: Int) {
        endpoints.addInFlight(byEndpoint)
        slots.release(count, bulk: bulk)
    }

    /// Produces one recipient's result (and token invalidation).
    private func publish(_ run: JobRun, _ result: ResultRecord, _ token: TokenRecord?, _ tally: inout ResultTally,
                         _ output: inout ResultOutput) {
        tally.count(result)
        if result.reason == "unanswered" { metrics.increment("pushworker_unanswered_total", [("action", "failed")]) }
        // From the outcome (the provider's answer, for a send) to its result going out.
        tally.delays.append(max(0, clock.wallSeconds - Double(result.atUnixMs) / 1000))
        var produced = 1
        let acknowledgement = output.acknowledgement(for: run, sink: sink, publisher: self)
        output.writer.reset()
        result.writeJSON(into: &output.writer)
        var resultKey = result.subscriptionID
        output.writer.bytes.withUnsafeBytes { value in
            resultKey.withUTF8 { key in
                sink.produce(topic: topics.results, key: UnsafeRawBufferPointer(key), value: value, acknowledgement: acknowledgement)
            }
        }
        if let token {
            produced += 1
            var json = token.json(), tokenKey = token.subscriptionID
            json.withUTF8 { value in
                tokenKey.withUTF8 { key in
                    sink.produce(topic: topics.tokens, key: UnsafeRawBufferPointer(key), value: UnsafeRawBufferPointer(value),
                                 acknowledgement: acknowledgement)
                }
            }
        }
        perform(run, run.published(producedMessages: produced, status: result.status))
    }

    /// Does what a run's state change asks for.
    func perform(_ run: JobRun, _ next: JobRun.Next) {
        switch next {
        case .nothing: return
        case .produceRetryJobs(let groups): for group in groups { produceRetryJob(run, group) }
        case .finish: finished(run)
        }
    }

    /// One retry job: the group's recipients, the most attempts and the longest wait of the group
    /// (docs/reference: retry messages).
    private func produceRetryJob(_ run: JobRun, _ retries: [JobRun.RetryEntry]) {
        let attempts = retries.map(\.attempts).max() ?? 1
        let delay = retries.map(\.delay).max() ?? 1
        let notBefore = Date(timeIntervalSince1970: clock.wallSeconds + delay)
        // Past its local send time (a claimed retry, or deferred to that time), a recipient
        // waits for it no more (docs/local-time.md).
        let dropped = run.job.sendAtLocal != nil && !(retries.first?.keepsLocalTime ?? false) ? ["sendAtLocal"] : []
        let value = run.job.encoded(recipients: retries.map(\.recipient), attempt: attempts, notBefore: notBefore, without: dropped)
        sink.produce(topic: topics.retry, key: Array(run.job.jobID.utf8), value: value, headers: []) { [self] in
            perform(run, run.acknowledged())
        }
    }

    /// Every result of `run` was acknowledged: its offset may be committed.
    private func finished(_ run: JobRun) {
        registry.finished(run)
        let elapsed = clock.wallSeconds - run.startedAt
        metrics.observe("pushworker_job_seconds", [], seconds: elapsed)
        if logger.isEnabled(.info) {
            logger.info("job finished", ["job.id": run.job.jobID, "campaign.id": run.job.campaignID, "job.recipients": "\(run.recipientCount)",
                                         "job.outcomes": run.outcomeSummary, "job.ms": "\(Int((elapsed * 1000).rounded()))",
                                         "kafka.partition": "\(run.partition.partition)", "kafka.offset": "\(run.offset)"])
        }
    }

    // MARK: dead letters

    /// Bad bytes go to the DLQ with the reason; the offset is committed once the copy is acked.
    func deadLetter(_ message: KafkaMessage, reason: String) {
        metrics.increment("pushworker_dlq_total")
        metrics.increment("pushworker_jobs_total", [("outcome", "dead_letter")])
        logger.warning("job sent to the dead-letter topic", ["kafka.topic": message.topic, "kafka.partition": "\(message.partition)",
                                                             "kafka.offset": "\(message.offset)", "error": String(reason.prefix(300))])
        var headers = message.headers
        headers.append(KafkaHeader(name: "error", value: Array(reason.prefix(1000).utf8)))
        headers.append(KafkaHeader(name: "source-topic", value: Array(message.topic.utf8)))
        headers.append(KafkaHeader(name: "source-partition", value: Array("\(message.partition)".utf8)))
        headers.append(KafkaHeader(name: "source-offset", value: Array("\(message.offset)".utf8)))
        headers.append(KafkaHeader(name: "failed-at",
                                   value: Array(RFC3339Timestamp.format(Date(timeIntervalSince1970: clock.wallSeconds), milliseconds: true).utf8)))
        // A copy over the producer's message.max.bytes would fail on every retry and hold the
        // partition's offsets forever: keep a bounded prefix and record the original size.
        var value = message.value
        if value.count > sink.deadLetterMaxBytes {
            headers.append(KafkaHeader(name: "truncated-from", value: Array("\(value.count)".utf8)))
            value = Array(value.prefix(sink.deadLetterMaxBytes))
        }
        let partition = message.topicPartition
        let offset = message.offset
        let generation = registry.offsets.generation(of: partition) ?? -1
        registry.deadLetterStarted()
        sink.produce(topic: topics.dlq, key: message.key, value: value, headers: headers) { [registry] in
            registry.offsets.finish(partition, offset: offset, generation: generation)
            registry.deadLetterFinished()
        }
    }

    // MARK: Redis coming back

    /// Writes again what unfinished processings know (on `queue`): their sent markers and claims,
    /// and the last sent markers recorded, in case Redis lost its data.
    func reRecord(leaseMs: Int64, unansweredLimit: Int) {
        let runs = registry.runs
        var records = recentSent.withLock { $0.entries }
        var claims: [DeliveryStateStore.ClaimItem] = []
        var owners: [(run: JobRun, index: Int)] = []
        for run in runs {
            for index in run.sentIndices { if let entry = run.recordEntry(index, .sent) { records.append(entry) } }
            for index in run.heldClaims() {
                claims.append(run.claimItem(index))
                owners.append((run, index))
            }
        }
        guard !records.isEmpty || !claims.isEmpty else { return }
        let startedAt = clock.monotonicSeconds
        do {
            try state.record(records, invalid: [])
            let answers = try state.claim(claims, leaseMs: leaseMs, unansweredLimit: unansweredLimit, backoffs: [])
            var lost = 0
            for (position, reply) in answers.replies.enumerated() {
                switch reply {
                case .claimed, .alreadyOurs, .claimedResend: owners[position].run.noteClaimed(owners[position].index, at: startedAt)
                case .alreadySent, .claimedElsewhere, .unansweredFinal, .paused, .cancelled, .capped:
                    owners[position].run.noteLost(owners[position].index)
                    lost += 1
                }
            }
            if lost > 0 { metrics.increment("pushworker_claims_lost_total", by: Double(lost)) }
            logger.info("re-recorded after a Redis loss", ["sent": "\(records.count)", "claims": "\(claims.count)", "claims.lost": "\(lost)"])
        } catch {
            health.failed(error, during: "re-record")
        }
    }
}

/// A bounded ring of the sent markers recorded last (newest overwrite oldest).
struct RecentSent: Sendable {
    private(set) var entries: [DeliveryStateStore.RecordEntry] = []
    private var next = 0

    mutating func append(contentsOf new: [DeliveryStateStore.RecordEntry], capacity: Int) {
        for entry in new {
            if entries.count < capacity {
                // Grown by doubling up to the capacity, never past it (an append's doubling
                // would reserve up to twice the ring).
                if entries.count == entries.capacity { entries.reserveCapacity(min(capacity, max(64, entries.count * 2))) }
                entries.append(entry)
            } else if capacity > 0 {
                entries[next] = entry
                next = (next + 1) % capacity
            }
        }
    }
}

/// What one recorded batch's results are produced with: one JSON buffer, written again for each
/// result, and one acknowledgement handler per run (consecutive results mostly share a run), so a
/// result costs no allocation of its own on the way to the sink.
struct ResultOutput {
    var writer = JSONWriter(capacity: 512)
    private var run: JobRun?
    private var handler: MessageAcknowledgement?

    mutating func acknowledgement(for run: JobRun, sink: any MessageSink, publisher: ResultPublisher) -> MessageAcknowledgement {
        if let handler, self.run === run { return handler }
        let made = sink.acknowledgement { publisher.perform(run, run.acknowledged()) }
        self.run = run
        handler = made
        return made
    }
}

/// The metrics of one recorded batch's results, added with one lock and one key per distinct
/// label set (a batch holds hundreds of results and a handful of label sets).
struct ResultTally {
    private var counts: [(platform: String, status: String, reason: String, count: Int)] = []
    /// `pushworker_result_delay_seconds` observations.
    var delays: [Double] = []

    /// One final result in `pushworker_notifications_total` (labels from ``MetricLabels``).
    mutating func count(_ result: ResultRecord) {
        let platform = MetricLabels.platform(result.platform)
        let status = result.status.rawValue
        let reason = MetricLabels.reason(result.reason, platform: Platform(rawValue: result.platform))
        for index in counts.indices where counts[index].platform == platform && counts[index].status == status && counts[index].reason == reason {
            counts[index].count += 1
            return
        }
        counts.append((platform, status, reason, 1))
    }

    func flush(into metrics: Metrics) {
        for entry in counts {
            metrics.increment("pushworker_notifications_total", [("platform", entry.platform), ("status", entry.status), ("reason", entry.reason)],
                              by: Double(entry.count))
        }
        if !delays.isEmpty { metrics.observe("pushworker_result_delay_seconds", [], secondsEach: delays) }
    }
}

extension ResultTally {
    /// Counts one final result in `pushworker_notifications_total` (`send`).
    static func countNotification(_ result: ResultRecord, in metrics: Metrics) {
        var tally = ResultTally()
        tally.count(result)
        tally.flush(into: metrics)
    }
}

/// A flush's final results counted per campaign (docs/campaigns.md: the status counts and the
/// guardrail), recorded with the flush's outcomes in one round trip.
struct CampaignTally {
    private var cells: [CampaignCell] = []
    private var tallies: [[Int]] = []

    var isEmpty: Bool { cells.isEmpty }

    mutating func count(_ cell: CampaignCell, _ status: DeliveryStatus) {
        let slot = Self.slot(status)
        // Results of one processing come together: the last campaign is checked first.
        if let last = cells.indices.last, cells[last] === cell {
            tallies[last][slot] += 1
            return
        }
        if let found = cells.firstIndex(where: { $0 === cell }) {
            tallies[found][slot] += 1
            return
        }
        cells.append(cell)
        var tally = [Int](repeating: 0, count: DeliveryStatus.allCases.count)
        tally[slot] = 1
        tallies.append(tally)
    }

    var counts: [DeliveryStateStore.CampaignCount] {
        zip(cells, tallies).map { cell, tally in
            DeliveryStateStore.CampaignCount(appID: cell.appID, campaignID: cell.campaignID,
                                             counts: zip(DeliveryStatus.allCases, tally).filter { $0.1 > 0 }.map { ($0.0, $0.1) })
        }
    }

    /// The campaigns the count found paused or cancelled (the guardrail may just have paused
    /// one): this worker stops writing their requests at once.
    func noteSteered(_ steered: [(appID: String, campaignID: String, state: CampaignState)], logger: Logger) {
        for (appID, campaignID, state) in steered {
            guard let cell = cells.first(where: { $0.appID == appID && $0.campaignID == campaignID }), cell.state != state else { continue }
            cell.update(state: state)
            logger.warning("campaign \(state.rawValue) (found while counting its results)", ["app.id": appID, "campaign.id": campaignID])
        }
    }

    private static func slot(_ status: DeliveryStatus) -> Int {
        switch status {
        case .sent: 0
        case .invalidToken: 1
        case .rejected: 2
        case .failed: 3
        case .expired: 4
        case .duplicate: 5
        case .cancelled: 6
        case .capped: 7
        }
    }
}
