import Dispatch
import PushRuntime
import Foundation
import PushCore
import PushRedis
import Synchronization

/// Campaign counters of tracking events in Redis, batched: `record` only adds to an in-memory
/// accumulator (a short lock, no I/O); a dedicated flusher thread sends everything accumulated
/// in ONE pipelined round trip every `interval` (default 100 ms) or as soon as `batchSize`
/// events (default 1000) are waiting. Never a Redis round trip per request.
///
/// Per flush and per key touched: `HINCRBY` per (campaign, type) and (campaign, variant, type),
/// `PFADD` of the msgIds per (campaign, type) and (campaign, variant, type) so repeated pings
/// do not inflate uniques, and one `EXPIRE` (default TTL 90 days, refreshed by activity). If
/// Redis fails, the batch is merged back and retried at the next tick (bounded: past
/// `maximumPendingKeys` distinct counters/msgIds, new ones are dropped and counted).
public final class EventCounterFlusher: Sendable {
    struct CounterKey: Hashable { var appID: String; var campaignID: String; var variant: String?; var type: TrackingEventType }

    struct Batch {
        var counts: [CounterKey: Int64] = [:]
        var uniques: [CounterKey: Set<String>] = [:]
        var events = 0
        var distinct = 0
        var isEmpty: Bool { events == 0 }

        mutating func merge(_ other: Batch) {
            for (key, value) in other.counts { counts[key, default: 0] += value }
            for (key, set) in other.uniques {
                let before = uniques[key]?.count ?? 0
                uniques[key, default: []].formUnion(set)
                distinct += (uniques[key]?.count ?? 0) - before
            }
            events += other.events
        }
    }

    private let redis: any RedisPipelining
    private let metrics: Metrics
    private let logger: Logger
    private let interval: Duration
    private let batchSize: Int
    private let ttlSeconds: Int64
    private let maximumPendingKeys: Int
    private let pending = Mutex(Batch())
    private let wake = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let flushes = Atomic<Int>(0)
    /// Extra work run on the flusher thread at every tick (e.g. draining producer errors).
    private let onTick: (@Sendable () -> Void)?

    public init(redis: any RedisPipelining, metrics: Metrics, logger: Logger, interval: Duration = .milliseconds(100),
                batchSize: Int = 1000, ttlSeconds: Int64 = 90 * 86_400, maximumPendingKeys: Int = 200_000,
                onTick: (@Sendable () -> Void)? = nil) {
        self.redis = redis; self.metrics = metrics; self.logger = logger; self.interval = interval
        self.batchSize = batchSize; self.ttlSeconds = ttlSeconds; self.maximumPendingKeys = maximumPendingKeys
        self.onTick = onTick
    }

    /// Starts the flusher thread.
    public func start() {
        let thread = Thread { [self] in loop() }
        thread.name = "pushworker.events.counters"
        thread.start()
    }

    /// Counts one accepted event. Cheap and non-blocking (a short lock).
    public func record(_ event: TrackingEvent) {
        let fields = event.fields
        let campaign = CounterKey(appID: fields.appID, campaignID: fields.campaignID, variant: nil, type: event.type)
        let variant = fields.variant.map { CounterKey(appID: fields.appID, campaignID: fields.campaignID, variant: $0, type: event.type) }
        let maximum = maximumPendingKeys
        let (shouldWake, dropped) = pending.withLock { batch -> (Bool, Bool) in
            guard batch.distinct < maximum else { return (true, true) }
            batch.events += 1
            batch.counts[campaign, default: 0] += 1
            if batch.uniques[campaign, default: []].insert(event.msgID).inserted { batch.distinct += 1 }
            if let variant {
                batch.counts[variant, default: 0] += 1
                if batch.uniques[variant, default: []].insert(event.msgID).inserted { batch.distinct += 1 }
            }
            return (batch.events == batchSize, false)
        }
        if dropped { metrics.increment("pushworker_events_counter_dropped_total") }
        if shouldWake { wake.signal() }
    }

    /// Flushes what is pending and stops the thread (waits at most `timeout`).
    public func stop(timeout: Duration = .seconds(5)) {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        wake.signal()
        _ = finished.wait(timeout: .now() + .milliseconds(Int(timeout.components.seconds * 1000)))
    }

    /// Flushes run so far (tests).
    public var flushCount: Int { flushes.load(ordering: .relaxed) }

    private func loop() {
        let intervalNanos = Int(interval.components.seconds) * 1_000_000_000 + Int(interval.components.attoseconds / 1_000_000_000)
        while !stopping.load(ordering: .relaxed) {
            _ = wake.wait(timeout: .now() + .nanoseconds(intervalNanos))
            onTick?()
            flushOnce()
        }
        flushOnce()
        finished.signal()
    }

    /// Sends everything pending in one pipeline; merges it back on failure.
    func flushOnce() {
        let batch = pending.withLock { batch -> Batch in
            let taken = batch
            batch = Batch()
            return taken
        }
        guard !batch.isEmpty else { return }
        let commands = Self.commands(for: batch, ttlSeconds: ttlSeconds)
        do {
            let replies = try redis.pipeline(commands)
            flushes.add(1, ordering: .relaxed)
            let errors = replies.compactMap(\.errorMessage)
            metrics.increment("pushworker_events_counter_flushes_total", [("outcome", errors.isEmpty ? "ok" : "error")])
            if let first = errors.first { logger.error("event counter command refused", ["redis.error": first]) }
        } catch {
            metrics.increment("pushworker_events_counter_flushes_total", [("outcome", "error")])
            metrics.increment("pushworker_redis_errors_total")
            logger.warning("event counters not flushed; will retry", ["error": "\(error)", "events": "\(batch.events)"])
            pending.withLock { $0.merge(batch) }
        }
    }

    /// The pipeline for one batch (pure; tested).
    static func commands(for batch: Batch, ttlSeconds: Int64) -> [[RedisArgument]] {
        var commands: [[RedisArgument]] = []
        var expiring: [String] = []
        var seen: Set<String> = []
        func touch(_ key: String) { if seen.insert(key).inserted { expiring.append(key) } }
        for (key, count) in batch.counts.sorted(by: { "\($0.key)" < "\($1.key)" }) {
            let redisKey = key.variant.map { RedisKeys.eventVariantCounters(appID: key.appID, campaignID: key.campaignID, variant: $0) }
                ?? RedisKeys.eventCounters(appID: key.appID, campaignID: key.campaignID)
            commands.append(["HINCRBY", .string(redisKey), .string(key.type.rawValue), .int(count)])
            touch(redisKey)
        }
        for (key, msgIDs) in batch.uniques.sorted(by: { "\($0.key)" < "\($1.key)" }) where !msgIDs.isEmpty {
            let redisKey = key.variant.map {
                RedisKeys.eventVariantUniques(appID: key.appID, campaignID: key.campaignID, variant: $0, type: key.type.rawValue)
            } ?? RedisKeys.eventUniques(appID: key.appID, campaignID: key.campaignID, type: key.type.rawValue)
            commands.append(["PFADD", .string(redisKey)] + msgIDs.sorted().map { .string($0) })
            touch(redisKey)
        }
        for key in expiring { commands.append(["EXPIRE", .string(key), .int(ttlSeconds)]) }
        return commands
    }
}
