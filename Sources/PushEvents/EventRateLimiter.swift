import Synchronization
import PushWorker

/// `EVENT_RATE_LIMIT`: `N/s` or `N/m` per client IP (DESIGN §15 Events): a token bucket holding
/// `N` tokens (the burst), refilled at N per second or per minute.
public struct EventRateLimit: Sendable, Equatable, CustomStringConvertible {
    /// Bucket size: requests allowed in a burst.
    public var capacity: Double
    /// Refill rate, tokens per second.
    public var perSecond: Double

    public init(capacity: Double, perSecond: Double) { self.capacity = capacity; self.perSecond = perSecond }

    /// Parses `20/s`, `600/m` (also `sec`, `second`, `min`, `minute`). N is a whole number ≥ 1.
    public init?(_ text: String) {
        let parts = text.trimmingCharacters(in: " ").split(separator: "/")
        guard parts.count == 2, let count = Int(parts[0].trimmingCharacters(in: " ")), count >= 1, count <= 100_000_000 else { return nil }
        switch parts[1].trimmingCharacters(in: " ").lowercased() {
        case "s", "sec", "second": perSecond = Double(count)
        case "m", "min", "minute": perSecond = Double(count) / 60
        default: return nil
        }
        capacity = Double(count)
    }

    public var description: String { "\(Int(capacity)) per \(perSecond == capacity ? "second" : "minute")" }

    /// Default: `20/s`.
    public static let `default` = EventRateLimit(capacity: 20, perSecond: 20)
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Character) -> Substring {
        var result = self
        while result.first == set { result.removeFirst() }
        while result.last == set { result.removeLast() }
        return result
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> Substring { Substring(self).trimmingCharacters(in: set) }
}

/// Per-client-IP token buckets (in memory, per process: the fleet-wide limit is N × pods).
/// Sharded by address hash so threads of the listener's pool rarely contend. Buckets that
/// have refilled completely are forgotten, so memory follows the number of recently active
/// clients; past `maximumClients` the oldest full buckets go first and, in an attack with more
/// distinct addresses than that, new addresses start with a full bucket (fail open, counted).
public final class EventRateLimiter: Sendable {
    /// The outcome for one request.
    public enum Decision: Sendable, Equatable {
        case allowed
        /// Refused: retry after this many whole seconds (≥ 1), for `Retry-After`.
        case limited(retryAfterSeconds: Int)
    }

    private struct Bucket { var tokens: Double; var updated: Double }
    private struct Shard { var buckets: [String: Bucket] = [:]; var lastSweep: Double = 0 }
    private final class ShardLock: Sendable { let mutex = Mutex(Shard()) }

    public let limit: EventRateLimit
    private let shards: [ShardLock]
    private let maximumPerShard: Int

    public init(limit: EventRateLimit, maximumClients: Int = 1_000_000, shardCount: Int = 32) {
        self.limit = limit
        self.shards = (0..<max(1, shardCount)).map { _ in ShardLock() }
        self.maximumPerShard = max(1, maximumClients / shardCount)
    }

    /// Takes one token from `client`'s bucket at `now` (seconds, monotonic).
    public func take(client: String, now: Double) -> Decision {
        let shard = shards[Int(UInt(bitPattern: client.hashValue) % UInt(shards.count))]
        let limit = self.limit
        let maximum = maximumPerShard
        return shard.mutex.withLock { shard in
            // Sweep at most once a second when full (never per request under a flood), else once a minute.
            if (shard.buckets.count >= maximum && now - shard.lastSweep >= 1) || now - shard.lastSweep > 60 {
                let full = limit.capacity / limit.perSecond
                shard.buckets = shard.buckets.filter { now - $0.value.updated < full }
                shard.lastSweep = now
            }
            var bucket = shard.buckets[client] ?? Bucket(tokens: limit.capacity, updated: now)
            bucket.tokens = min(limit.capacity, bucket.tokens + max(0, now - bucket.updated) * limit.perSecond)
            bucket.updated = now
            let decision: Decision
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                decision = .allowed
            } else {
                let wait = (1 - bucket.tokens) / limit.perSecond
                decision = .limited(retryAfterSeconds: max(1, Int((wait - 1e-6).rounded(.up))))
            }
            if shard.buckets.count < maximum || shard.buckets[client] != nil { shard.buckets[client] = bucket }
            return decision
        }
    }
}
