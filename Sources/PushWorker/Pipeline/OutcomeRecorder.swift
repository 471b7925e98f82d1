import Dispatch
import Foundation
import PushCore
import PushKafka
import PushEncoding
import PushRedis
import Synchronization
import PushProviders

/// Records outcomes as they arrive and publishes each recipient's result (DESIGN §4, §8
/// "Claims"): outcomes gathered for a few milliseconds go to Redis in one pipelined round trip
/// (sent msgIds join their bucket's set and lose their claim; other outcomes release their
/// claim; dead tokens are recorded), then their results, token invalidations and retry
/// hand-offs are produced at once.
///
/// The results path never waits on Redis retries: when the record fails, the worker is marked
/// unready (no new claims) and the results still go out; the sent markers are written again
/// when Redis is back (``Worker/reRecordSent()``), and until then a crash can repeat at most
/// those sends.
///
/// Thread safety: `add` from any thread; flushes run on the worker's serial finisher queue.
final class OutcomeRecorder: Sendable {
    struct Entry: Sendable {
        var run: JobRun
        var index: Int
        var outcome: RecipientOutcome
        /// Counts in the worker's in-flight bound until recorded.
        var holdsSlot: Bool
    }

    /// How long outcomes gather before one record round trip (the worker: `PUSHWORKER_RECORD_DELAY_MS`, 25 ms).
    let delay: DispatchTimeInterval
    /// A batch this large is flushed at once.
    let batchLimit: Int
    private let queue: DispatchQueue
    private struct Buffer {
        var entries: [Entry] = []
        /// A timed flush is on its way.
        var isTimerSet = false
        /// An immediate flush is on its way.
        var isFlushQueued = false
    }
    private let buffer = Mutex(Buffer())
    private let flushBody: @Sendable ([Entry]) -> Void

    init(queue: DispatchQueue, delay: DispatchTimeInterval = .milliseconds(2), batchLimit: Int = 1000,
         flush: @escaping @Sendable ([Entry]) -> Void) {
        self.queue = queue
        self.delay = delay
        self.batchLimit = batchLimit
        self.flushBody = flush
    }

    func add(_ entry: consuming Entry) {
        enum Wake { case none, timer, now }
        // Moved into the buffer, not copied (a copy retains every string of the result, and
        // the original is released afterwards: on the I/O thread, for every answer).
        var pending: Entry? = consume entry
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

    /// Takes what gathered and records it (finisher queue).
    func flushNow() {
        let entries: [Entry] = buffer.withLock { state in
            state.isTimerSet = false
            state.isFlushQueued = false
            defer { state.entries.removeAll(keepingCapacity: true) }
            return state.entries
        }
        if !entries.isEmpty { flushBody(entries) }
    }

    /// Entries waiting for their flush.
    var pendingCount: Int { buffer.withLock { $0.entries.count } }
}

extension Worker {
    /// One record round trip for `entries`, then their results (finisher queue).
    func record(_ entries: [OutcomeRecorder.Entry]) {
        var records: [DeliveryStateStore.RecordEntry] = []
        var invalid: [(appID: String, platform: String, tokenHash: String, invalidSinceMs: Int64)] = []
        records.reserveCapacity(entries.count)
        // Entries are read in place: a copy of one retains every string of its result (8 % of
        // the finisher's samples went to copying them).
        for position in entries.indices {
            let run = entries[position].run, index = entries[position].index
            switch entries[position].outcome {
            case .final(_, let token, let isSent):
                if run.noteClaimReleased(index) || isSent, let record = run.recordEntry(index, sent: isSent) {
                    records.append(record)
                }
                if isSent { run.noteSent(index) }
                if let token { invalid.append((token.appID, token.platform, token.tokenHash, token.invalidSinceMs)) }
            case .retry:
                if run.noteClaimReleased(index), let record = run.recordEntry(index, sent: false) { records.append(record) }
            }
        }
        if !records.isEmpty || !invalid.isEmpty {
            if isRedisHealthy {
                do {
                    try state.record(records, invalid: invalid)
                } catch {
                    redisFailed(error, during: "record")
                }
            } else {
                // Redis is away: the results go out anyway; the sent markers are written again
                // when it is back (reRecordSent), and released claims expire with their lease.
                metrics.increment("pushworker_redis_record_skipped_total", by: Double(records.count))
            }
            // Kept whether the record succeeded, failed or was skipped: a processing whose
            // records did not reach Redis can finish before Redis is back, and then only this
            // ring still knows its sent markers for reRecordSent (a failover: the cluster drill).
            let sent = records.filter { $0.sentRetentionMs != nil }
            if !sent.isEmpty { recentSent.withLock { $0.append(contentsOf: sent, capacity: Self.recentSentCapacity) } }
        }
        var released = 0
        var tally = ResultTally()
        var output = ResultOutput()
        for position in entries.indices {
            if entries[position].holdsSlot { released += 1 }
            publish(entries[position], &tally, &output)
        }
        tally.flush(into: metrics)
        if released > 0 { releaseSlots(released) }
    }

    /// Produces one recipient's result (and token invalidation), or adds it to its processing's
    /// retry job.
    private func publish(_ entry: borrowing OutcomeRecorder.Entry, _ tally: inout ResultTally, _ output: inout ResultOutput) {
        let run = entry.run
        switch entry.outcome {
        case .final(let result, let token, _):
            tally.count(result)
            // From the outcome (the provider's answer, for a send) to its result going out.
            tally.delays.append(max(0, Date().timeIntervalSince1970 - Double(result.atUnixMs) / 1000))
            var produced = 1
            let acknowledgement = output.acknowledgement(for: run, producer: producer)
            output.writer.reset()
            result.writeJSON(into: &output.writer)
            var resultKey = result.subscriptionID
            output.writer.bytes.withUnsafeBytes { value in
                resultKey.withUTF8 { key in
                    producer.produceReliably(topic: configuration.topicResults, key: UnsafeRawBufferPointer(key), value: value,
                                             acknowledgement: acknowledgement)
                }
            }
            if let token {
                produced += 1
                var json = token.json(), tokenKey = token.subscriptionID
                json.withUTF8 { value in
                    tokenKey.withUTF8 { key in
                        producer.produceReliably(topic: configuration.topicTokens, key: UnsafeRawBufferPointer(key),
                                                 value: UnsafeRawBufferPointer(value), acknowledgement: acknowledgement)
                    }
                }
            }
            run.published(producedMessages: produced, status: result.status)
        case .retry(let recipient, let attempts, let delay):
            metrics.increment("pushworker_retries_total")
            run.deferToRetry(recipient, attempts: attempts, delay: delay)
        }
    }

    /// The retry job of one processing: its recipients to retry, the most attempts and the
    /// longest wait of the group (DESIGN §15 "Retry messages").
    func produceRetryJob(_ run: JobRun, _ retries: [(recipient: Recipient, attempts: Int, delay: Double)]) {
        let attempts = retries.map(\.attempts).max() ?? 1
        let delay = retries.map(\.delay).max() ?? 1
        let value = run.job.encoded(recipients: retries.map(\.recipient), attempt: attempts, notBefore: Date().addingTimeInterval(delay))
        producer.produceReliably(topic: configuration.topicRetry, key: Array(run.job.jobID.utf8), value: value) {
            run.acknowledged()
        }
    }

    /// Every result of `run` was acknowledged: its offset may be committed.
    func finished(_ run: JobRun) {
        if activeRuns.withLock({ $0.removeValue(forKey: ObjectIdentifier(run)) != nil }) {
            unfinishedRecipients.subtract(run.recipientCount, ordering: .relaxed)
            room.signal() // the loop may be waiting for unfinished jobs to end (WorkerLoop back-pressure)
        }
        offsets.finish(run.partition, offset: run.offset, generation: run.generation)
        let elapsed = Date().timeIntervalSince1970 - run.startedAt
        metrics.observe("pushworker_job_seconds", [], seconds: elapsed)
        if logger.isEnabled(.info) {
            logger.info("job finished", ["job.id": run.job.jobID, "campaign.id": run.job.campaignID, "job.recipients": "\(run.recipientCount)",
                                         "job.outcomes": run.outcomeSummary, "job.ms": "\(Int((elapsed * 1000).rounded()))",
                                         "kafka.partition": "\(run.partition.partition)", "kafka.offset": "\(run.offset)"])
        }
    }

    /// Counts one final result in `pushworker_notifications_total`; its platform and reason
    /// labels come from fixed sets (``MetricLabels``), the result keeps the reason verbatim.
    static func countNotification(_ result: ResultRecord, in metrics: Metrics) {
        var tally = ResultTally()
        tally.count(result)
        tally.flush(into: metrics)
    }
}

/// What one recorded batch's results are produced with: one JSON buffer, written again for each
/// result, and one acknowledgement handler per run (consecutive results mostly share a run), so a
/// result costs no allocation of its own on the way to librdkafka (docs/performance.md "Twelfth
/// session").
struct ResultOutput {
    var writer = JSONWriter(capacity: 512)
    private var run: JobRun?
    private var handler: KafkaDeliveryHandler?

    mutating func acknowledgement(for run: JobRun, producer: ReliableProducer) -> KafkaDeliveryHandler {
        if let handler, self.run === run { return handler }
        let made = producer.acknowledgement { run.acknowledged() }
        self.run = run
        handler = made
        return made
    }
}

/// The metrics of one recorded batch's results, gathered and then added with one lock and one
/// key per distinct label set (a batch holds hundreds of results and a handful of label sets;
/// per-result `increment`/`observe` calls were ~1 µs a notification, docs/performance.md).
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
