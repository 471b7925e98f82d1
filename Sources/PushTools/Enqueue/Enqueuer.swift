import Foundation
import PushCore
import PushKafka
import Synchronization

/// Validates and produces `enqueue` input (docs/reference/cli.md): pass 1 validates every document with
/// ``JobDecoder``; pass 2 produces (the exact input bytes, or the `--batch` batches) keyed by
/// jobId and waits for every delivery report.
public struct Enqueuer: Sendable {
    public struct Options: Sendable {
        public var topic: String
        /// Where transactional jobs go (docs/lanes.md); nil sends every job to `topic` (`--topic`).
        public var transactionalTopic: String? = nil
        /// Recipients per batch; nil produces each job as it is.
        public var batchSize: Int?
        /// Produce the valid documents when some are invalid (listed on stderr, counted as skipped).
        public var skipInvalid: Bool
        /// Outstanding deliveries at most. Default: 10000.
        public var maxInFlight: Int
        /// Outstanding record bytes at most (one record is always allowed), well under
        /// librdkafka's `queue.buffering.max.kbytes` (1 GiB), so big batches wait instead of
        /// failing with `_QUEUE_FULL`. Default: 256 MiB.
        public var maxInFlightBytes = 256 << 20
        /// How often a progress line is reported. Default: 1 s.
        public var progressInterval: Duration
        /// Warnings (unknown fields, template variables) make a document invalid (`--strict`).
        public var strict = false
        public init(topic: String, batchSize: Int? = nil, skipInvalid: Bool = false, maxInFlight: Int = 10_000,
                    progressInterval: Duration = .seconds(1), strict: Bool = false) {
            self.topic = topic; self.batchSize = batchSize; self.skipInvalid = skipInvalid; self.maxInFlight = maxInFlight
            self.progressInterval = progressInterval; self.strict = strict
        }
    }

    /// What was produced.
    public struct Summary: Sendable, Equatable {
        /// Valid input jobs.
        public var jobs = 0
        /// Records produced (= jobs without `--batch`).
        public var batches = 0
        public var recipients = 0
        /// Invalid documents skipped (`--skip-invalid`).
        public var skipped = 0
        /// Of `batches`, the records produced to the transactional topic.
        public var transactionalBatches = 0
        public var seconds = 0.0
        /// The summary line printed on stdout.
        /// `transactionalTopic`: named after `topic` when transactional jobs went there.
        public func line(topic: String, transactionalTopic: String? = nil) -> String {
            var topics = batches > transactionalBatches ? topic : ""
            if let transactionalTopic, transactionalBatches > 0 { topics += (topics.isEmpty ? "" : ",") + transactionalTopic }
            return "enqueued jobs=\(jobs) batches=\(batches) recipients=\(recipients) skipped=\(skipped) topic=\(topics.isEmpty ? topic : topics) seconds=\(String(format: "%.2f", seconds))"
        }
    }

    /// Why nothing (or not everything) was produced; `messages` go to stderr.
    public struct Failure: Error, Sendable {
        public var exitCode: Int32
        public var messages: [String]
        public init(exitCode: Int32, messages: [String]) { self.exitCode = exitCode; self.messages = messages }
    }

    public var options: Options
    /// Called about once a second with a progress line (stderr in the CLI).
    public var progress: @Sendable (String) -> Void

    public init(options: Options, progress: @escaping @Sendable (String) -> Void = { _ in }) {
        self.options = options
        self.progress = progress
    }

    /// What pass 1 found.
    public struct Validation: Sendable {
        /// The usable documents (relative dates resolved: JobInputCheck).
        public var valid: [EnqueueDocument]
        /// `line N: $.path: reason`, one per problem (and per warning refused by `strict`).
        public var errors: [String]
        /// Documents that cannot be produced.
        public var invalidCount: Int
        /// `line N: warning: $.path: …`, one per warning of a usable document.
        public var warnings: [String]
        public var recipients: Int
        /// Valid jobs whose lane is transactional (docs/lanes.md).
        public var transactionalJobs = 0
    }

    /// Pass 1: checks every document the way `render` and `send` do (every problem listed,
    /// relative dates resolved as of `now`, warnings, `strict`).
    public func validate(_ documents: [EnqueueDocument], now: Date = Date()) -> Validation {
        var result = Validation(valid: [], errors: [], invalidCount: 0, warnings: [], recipients: 0)
        var ticker = ProgressTicker(interval: options.progressInterval)
        for (position, document) in documents.enumerated() {
            switch JobInputCheck.check(document.bytes, now: now, strict: options.strict) {
            case .success(let checked):
                result.recipients += checked.job.audience == nil ? checked.job.recipients.count : 1
                if checked.job.lane == .transactional { result.transactionalJobs += 1 }
                var usable = document
                if !checked.resolvedDates.isEmpty { usable.bytes = ArraySlice(checked.job.document.jsonBytes()) }
                result.valid.append(usable)
                result.warnings += checked.warnings.map { "line \(document.line): warning: \($0)" }
            case .failure(let failure):
                result.invalidCount += 1
                result.errors += failure.lines.map { "line \(document.line): \($0)" }
            }
            if ticker.due() { progress("validating: \(position + 1)/\(documents.count) documents, \(result.recipients) recipients") }
        }
        return result
    }

    /// The validated input (pass 1).
    public struct Checked: Sendable {
        public var valid: [EnqueueDocument]
        /// `line N: $.path: reason` per problem of the invalid documents.
        public var errors: [String]
        /// Invalid documents (skipped with `skipInvalid`).
        public var invalidCount: Int
        /// `line N: warning: …` per warning of a valid document.
        public var warnings: [String]
        public var recipients: Int
        /// Valid jobs whose lane is transactional.
        public var transactionalJobs = 0
        var started: ContinuousClock.Instant
    }

    /// Pass 1: splits and validates; throws (exit 65) when a document is invalid and
    /// `skipInvalid` is off, or when there is no job at all.
    public func check(_ input: [UInt8]) throws(Failure) -> Checked {
        let started = ContinuousClock.now
        let documents = EnqueueInput.documents(input)
        guard !documents.isEmpty else { throw Failure(exitCode: ExitCode.dataError, messages: ["no job in the input"]) }
        let checked = validate(documents)
        if checked.invalidCount > 0 && !options.skipInvalid {
            let shown = checked.errors.prefix(20)
            var messages = Array(shown)
            if checked.errors.count > shown.count { messages.append("… and \(checked.errors.count - shown.count) more problems") }
            messages.append("nothing produced: \(checked.invalidCount) invalid of \(documents.count) (use --skip-invalid to produce the valid ones)")
            throw Failure(exitCode: ExitCode.dataError, messages: messages)
        }
        if checked.valid.isEmpty { throw Failure(exitCode: ExitCode.dataError, messages: checked.errors + ["no valid job in the input"]) }
        return Checked(valid: checked.valid, errors: checked.errors, invalidCount: checked.invalidCount, warnings: checked.warnings,
                       recipients: checked.recipients, transactionalJobs: checked.transactionalJobs, started: started)
    }

    /// Validates, then produces with `producer`. Blocking: call from a thread of your own.
    public func run(_ input: [UInt8], producer: KafkaProducer) throws(Failure) -> Summary {
        try produce(check(input), producer: producer)
    }

    /// Pass 2: produces the valid documents and waits for every acknowledgement. Blocking.
    public func produce(_ checked: Checked, producer: KafkaProducer) throws(Failure) -> Summary {
        let started = checked.started
        for message in checked.errors { progress("skipped \(message)") }

        let state = Mutex(DeliveryState())
        let group = DispatchGroup()
        var summary = Summary()
        summary.skipped = checked.invalidCount
        var ticker = ProgressTicker(interval: options.progressInterval)
        for (position, document) in checked.valid.enumerated() {
            let records: [(key: String, recipients: Int, bytes: [UInt8])]
            let topic: String
            do {
                let job = try JobDecoder.decode(Array(document.bytes))
                topic = job.lane == .transactional ? options.transactionalTopic ?? options.topic : options.topic
                if let size = options.batchSize {
                    records = JobBatcher.batches(job, size: size).map { ($0.jobID, $0.recipients, $0.bytes) }
                } else {
                    records = [(job.jobID, job.plannedCount, Array(document.bytes))]
                }
            } catch {
                continue   // validated above; cannot happen
            }
            summary.jobs += 1
            for record in records {
                if state.withLock({ $0.failure != nil }) { break }
                let size = record.bytes.count
                while !state.withLock({ $0.admits(size, maxCount: options.maxInFlight, maxBytes: options.maxInFlightBytes) }) {
                    usleep(1000)
                }
                group.enter()
                let line = document.line
                producer.produce(topic: topic, key: Array(record.key.utf8), value: record.bytes) { result in
                    state.withLock { s in
                        s.inFlight -= 1
                        s.inFlightBytes -= size
                        switch result {
                        case .success: s.delivered += 1
                        case .failure(let error): if s.failure == nil { s.failure = (line, record.key, error, topic) }
                        }
                    }
                    group.leave()
                }
                summary.batches += 1
                if topic != options.topic { summary.transactionalBatches += 1 }
                summary.recipients += record.recipients
            }
            if state.withLock({ $0.failure != nil }) { break }
            if ticker.due() {
                let delivered = state.withLock { $0.delivered }
                progress("producing: \(position + 1)/\(checked.valid.count) jobs read, \(summary.batches) produced, \(delivered) acknowledged, \(summary.recipients) recipients")
            }
        }
        let slice = max(0.01, Double(options.progressInterval.components.seconds) + Double(options.progressInterval.components.attoseconds) / 1e18)
        while group.wait(timeout: .now() + slice) == .timedOut {
            let delivered = state.withLock { $0.delivered }
            progress("waiting for acknowledgements: \(delivered)/\(summary.batches)")
        }
        if let failure = state.withLock({ $0.failure }) {
            var message = "line \(failure.line): jobId \(failure.key): not produced to \(failure.topic): \(failure.error.message) [\(failure.error.name)]"
            if failure.error.name == "MSG_SIZE_TOO_LARGE" { message += " (split it with --batch N)" }
            let delivered = state.withLock { $0.delivered }
            throw Failure(exitCode: ExitCode.unavailable, messages: [message, "\(delivered) of \(summary.batches) records were acknowledged before the failure"])
        }
        let elapsed = ContinuousClock.now - started
        summary.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return summary
    }

    struct DeliveryState {
        var delivered = 0
        var inFlight = 0
        var inFlightBytes = 0

        /// Takes room for one record of `size` bytes if the limits allow it.
        mutating func admits(_ size: Int, maxCount: Int, maxBytes: Int) -> Bool {
            guard inFlight == 0 || (inFlight < maxCount && inFlightBytes + size <= maxBytes) else { return false }
            inFlight += 1
            inFlightBytes += size
            return true
        }
        var failure: (line: Int, key: String, error: KafkaError, topic: String)?
    }
}

/// True about once per `interval` (the first time after one interval).
struct ProgressTicker {
    let interval: Duration
    private var last = ContinuousClock.now
    init(interval: Duration) { self.interval = interval }
    mutating func due() -> Bool {
        let now = ContinuousClock.now
        guard now - last >= interval else { return false }
        last = now
        return true
    }
}
