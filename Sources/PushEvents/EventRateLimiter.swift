import Synchronization
import PushCore

/// `EVENT_RATE_LIMIT`: `N/s` or `N/m` per client IP (docs/reference/tracking-api.md): a token bucket holding
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

/// Per-client token buckets (in memory, per process: the fleet-wide limit is N × pods)
/// (docs/reference/tracking-api.md). An IPv4 client is its address; an IPv6 client is its /64 (or
/// ``ipv6PrefixLength``): one subscriber line or host holds a whole /64, so limiting single
/// IPv6 addresses would not limit anyone. Sharded by key hash so threads of the listener's pool
/// rarely contend.
///
/// The table is bounded: at most `maximumClients` buckets. Buckets that have refilled
/// completely are forgotten once a minute (a full bucket is the same as none), so memory
/// follows the number of recently active clients; when a shard is full, its oldest bucket
/// (first created) is evicted for the new one. Never fails open: a new client always gets a
/// bucket and is limited like every other; an attack with more distinct clients than the
/// table holds only makes the oldest ones start over with a full bucket (counted in
/// ``evictions``).
public final class EventRateLimiter: Sendable {
    /// The outcome for one request.
    public enum Decision: Sendable, Equatable {
        case allowed
        /// Refused: retry after this many whole seconds (≥ 1), for `Retry-After`.
        case limited(retryAfterSeconds: Int)
    }

    private struct Bucket { var tokens: Double; var updated: Double }

    /// One shard's buckets and their creation order. Invariant: every key of `buckets` is in
    /// `order[head...]` exactly once (keys leave only through `evictOldest` or `sweep`, which
    /// both keep `order` in step).
    private struct Shard {
        var buckets: [String: Bucket] = [:]
        var order: [String] = []
        var head = 0
        var lastSweep: Double = 0

        mutating func evictOldest() {
            while head < order.count {
                let key = order[head]
                head += 1
                if buckets.removeValue(forKey: key) != nil { break }
            }
            if head >= 1024 && head * 2 >= order.count {
                order.removeFirst(head)
                head = 0
            }
        }

        /// Forgets buckets idle for `seconds` or more (refilled completely).
        mutating func sweep(now: Double, idleSeconds seconds: Double) {
            buckets = buckets.filter { now - $0.value.updated < seconds }
            order = order[head...].filter { buckets[$0] != nil }
            head = 0
            lastSweep = now
        }
    }
    private final class ShardLock: Sendable { let mutex = Mutex(Shard()) }

    public let limit: EventRateLimit
    /// IPv6 clients share a bucket per prefix of this length. Default: 64.
    public let ipv6PrefixLength: Int
    private let shards: [ShardLock]
    private let maximumPerShard: Int
    private let evicted = Atomic<Int>(0)

    /// - Parameters:
    ///   - maximumClients: buckets kept at most (spread over the shards). Default: 1,000,000.
    ///   - ipv6PrefixLength: 1…128; IPv6 addresses sharing this prefix share a bucket. Default: 64.
    public init(limit: EventRateLimit, maximumClients: Int = 1_000_000, shardCount: Int = 32, ipv6PrefixLength: Int = 64) {
        self.limit = limit
        let count = max(1, shardCount)
        self.shards = (0..<count).map { _ in ShardLock() }
        self.maximumPerShard = max(1, maximumClients / count)
        self.ipv6PrefixLength = max(1, min(128, ipv6PrefixLength))
    }

    /// Buckets evicted because their shard was full (since start).
    public var evictions: Int { evicted.load(ordering: .relaxed) }

    /// Buckets currently held (all shards; takes every shard's lock: for tests and metrics).
    public var bucketCount: Int { shards.reduce(0) { $0 + $1.mutex.withLock { $0.buckets.count } } }

    /// The bucket a client counts against: an IPv4 address itself, an IPv6 address its prefix
    /// (`2001:db8:1:2::/64`), an IPv4-mapped one its IPv4 address; text that is not an address is its own key.
    public func bucketKey(client: String) -> String {
        guard client.utf8.contains(UInt8(ascii: ":")), let address = IPAddress(client) else { return client }
        if address.isIPv4 { return address.description }  // IPv4-mapped
        return "\(address.masked(prefixLength: ipv6PrefixLength))/\(ipv6PrefixLength)"
    }

    /// Takes one token from the bucket of `client` (an address as text) at `now` (seconds, monotonic).
    public func take(client: String, now: Double) -> Decision {
        let key = bucketKey(client: client)
        let shard = shards[Int(UInt(bitPattern: key.hashValue) % UInt(shards.count))]
        let limit = self.limit
        let maximum = maximumPerShard
        let (decision, didEvict) = shard.mutex.withLock { shard -> (Decision, Bool) in
            // A bucket idle this long has refilled completely: forgetting it changes nothing.
            let refillSeconds = limit.capacity / limit.perSecond
            if now - shard.lastSweep > max(60, refillSeconds) { shard.sweep(now: now, idleSeconds: refillSeconds) }
            let before = shard.buckets.count
            let decision = Self.take(&shard.buckets[key, default: Bucket(tokens: limit.capacity, updated: now)], limit: limit, now: now)
            guard shard.buckets.count != before else { return (decision, false) }
            shard.order.append(key)
            guard shard.buckets.count > maximum else { return (decision, false) }
            shard.evictOldest()
            return (decision, true)
        }
        if didEvict { evicted.add(1, ordering: .relaxed) }
        return decision
    }

    private static func take(_ bucket: inout Bucket, limit: EventRateLimit, now: Double) -> Decision {
        bucket.tokens = min(limit.capacity, bucket.tokens + max(0, now - bucket.updated) * limit.perSecond)
        bucket.updated = now
        if bucket.tokens >= 1 {
            bucket.tokens -= 1
            return .allowed
        }
        let wait = (1 - bucket.tokens) / limit.perSecond
        return .limited(retryAfterSeconds: max(1, Int((wait - 1e-6).rounded(.up))))
    }
}
