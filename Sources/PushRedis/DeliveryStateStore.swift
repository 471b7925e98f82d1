/// The delivery fleet's shared state in Redis (DESIGN §8): sent msgIDs (de-duplication), invalid
/// tokens (with the provider's timestamp, §15 Re-registration), fleet-wide token buckets and
/// provider backoff (§15 429 scope).
///
/// Every operation is one pipelined round trip for a whole batch (plus one more only when Redis
/// lost the Lua scripts and answers `NOSCRIPT`). Keys come from ``RedisKeys``; every key is written
/// with a TTL. Generic strings and integers only: the caller maps its domain (platform and provider
/// names, token hashes: SHA-256 hex computed by the caller).
///
/// The blocking methods must not run on the cooperative pool; each has an `async` twin that runs
/// on the client's serial queue. The client is a ``RedisClient`` (one server) or a
/// ``RedisClusterClient``: the store's commands and their round trips are the same on both.
public final class DeliveryStateStore: Sendable {
    public let client: any RedisPipelining
    /// How long a sent msgID is remembered. Default: 7 days.
    public let sentTTL: Duration
    /// How long an invalid token is remembered (refreshed when reported again). Default: 90 days.
    public let invalidTTL: Duration
    private let sentTTLMs: Int64
    private let invalidTTLMs: Int64

    /// A backoff key lives until its deadline plus this grace, so readers with a clock a little
    /// behind Redis's still see it.
    static let backoffGraceMs: Int64 = 60_000

    public init(client: any RedisPipelining, sentTTL: Duration = .seconds(7 * 86400), invalidTTL: Duration = .seconds(90 * 86400)) {
        self.client = client
        self.sentTTL = sentTTL
        self.invalidTTL = invalidTTL
        self.sentTTLMs = max(1, Self.milliseconds(sentTTL))
        self.invalidTTLMs = max(1, Self.milliseconds(invalidTTL))
    }

    // MARK: - De-duplication and invalid tokens

    /// One recipient to check before sending.
    public struct CheckItem: Sendable, Equatable {
        public var appID: String
        public var msgID: String
        public var platform: String
        /// The caller's hash of the token (never the token itself).
        public var tokenHash: String
        /// When the subscription last (re-)registered this token, Unix ms; nil if unknown.
        public var tokenUpdatedAtMs: Int64?

        public init(appID: String, msgID: String, platform: String, tokenHash: String, tokenUpdatedAtMs: Int64? = nil) {
            self.appID = appID
            self.msgID = msgID
            self.platform = platform
            self.tokenHash = tokenHash
            self.tokenUpdatedAtMs = tokenUpdatedAtMs
        }
    }

    /// What Redis knows about a recipient.
    public enum CheckResult: Sendable, Equatable {
        /// Send it.
        case fresh
        /// Its msgID was already sent: result `duplicate`, do not send.
        case duplicate
        /// The token is known dead since `invalidSinceMs` (Unix ms) and was not re-registered
        /// after that: result `invalid_token`, do not send.
        case knownInvalid(invalidSinceMs: Int64)
    }

    /// For each item, in order: msgID already recorded ⇒ `.duplicate`; token recorded invalid with
    /// `invalidSince ≥ tokenUpdatedAt` (or no `tokenUpdatedAt`) ⇒ `.knownInvalid`; else `.fresh`
    /// (a token re-registered after it was declared dead is valid again, as APNs' 410 timestamp
    /// rule asks). One round trip.
    public func check(_ items: [CheckItem]) throws(RedisError) -> [CheckResult] {
        if items.isEmpty { return [] }
        return try Self.checkResults(items, execute(Self.checkCommands(items)))
    }

    /// Async ``check(_:)``.
    public func check(_ items: [CheckItem]) async throws(RedisError) -> [CheckResult] {
        if items.isEmpty { return [] }
        return try Self.checkResults(items, await execute(Self.checkCommands(items)))
    }

    /// Keys per `MGET`: bounds one command's size (and Redis's time inside it) for huge jobs.
    static let checkKeysPerCommand = 1000

    /// Two keys per item (sent msgID, invalid token), fetched with `MGET`: one command per
    /// ``checkKeysPerCommand`` keys instead of two `GET`s per recipient (the per-command
    /// formatting, reply objects and Redis dispatch were most of the check's cost). A command
    /// never mixes apps, so its keys share one hash tag (`{appID}`: one cluster slot).
    static func checkCommands(_ items: [CheckItem]) -> [[RedisArgument]] {
        var commands: [[RedisArgument]] = []
        var current: [RedisArgument] = []
        var currentApp: String?
        for item in items {
            if current.count > checkKeysPerCommand || (currentApp != nil && currentApp != item.appID) {
                commands.append(current)
                current = []
            }
            if current.isEmpty {
                current.reserveCapacity(1 + min(checkKeysPerCommand + 1, 2 * items.count))
                current.append("MGET")
            }
            currentApp = item.appID
            current.append(.string(RedisKeys.sent(appID: item.appID, msgID: item.msgID)))
            current.append(.string(RedisKeys.invalidToken(appID: item.appID, platform: item.platform, tokenHash: item.tokenHash)))
        }
        if !current.isEmpty { commands.append(current) }
        return commands
    }

    static func checkResults(_ items: [CheckItem], _ replies: [RedisReply]) throws(RedisError) -> [CheckResult] {
        var values: [RedisReply] = []
        values.reserveCapacity(items.count * 2)
        for reply in replies {
            try throwIfError(reply)
            guard case .array(let elements) = reply else {
                throw RedisError("MGET answered \(reply) instead of an array")
            }
            values.append(contentsOf: elements)
        }
        try expectCount(values, items.count * 2)
        var results: [CheckResult] = []
        results.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            let sent = values[2 * index], invalid = values[2 * index + 1]
            try throwIfError(sent)
            try throwIfError(invalid)
            if !sent.isNull {
                results.append(.duplicate)
            } else if let invalidSince = invalid.integerValue, item.tokenUpdatedAtMs.map({ invalidSince >= $0 }) ?? true {
                results.append(.knownInvalid(invalidSinceMs: invalidSince))
            } else {
                results.append(.fresh)
            }
        }
        return results
    }

    /// Records sent msgIDs (TTL `sentTTL`) and invalid tokens (TTL `invalidTTL`, keeping the larger
    /// `invalidSince` when a token is reported again, atomically) in one round trip.
    public func record(
        sent: [(appID: String, msgID: String)] = [],
        invalid: [(appID: String, platform: String, tokenHash: String, invalidSinceMs: Int64)] = []
    ) throws(RedisError) {
        let commands = recordCommands(sent: sent, invalid: invalid)
        if commands.isEmpty { return }
        try Self.checkNoErrors(execute(commands))
    }

    /// Async ``record(sent:invalid:)``.
    public func record(
        sent: [(appID: String, msgID: String)] = [],
        invalid: [(appID: String, platform: String, tokenHash: String, invalidSinceMs: Int64)] = []
    ) async throws(RedisError) {
        let commands = recordCommands(sent: sent, invalid: invalid)
        if commands.isEmpty { return }
        try Self.checkNoErrors(await execute(commands))
    }

    private func recordCommands(
        sent: [(appID: String, msgID: String)],
        invalid: [(appID: String, platform: String, tokenHash: String, invalidSinceMs: Int64)]
    ) -> [[RedisArgument]] {
        var commands: [[RedisArgument]] = []
        commands.reserveCapacity(sent.count / Self.checkKeysPerCommand + 1 + invalid.count)
        // Sent msgIDs: one `setAll` script call per app and per 1,000 keys instead of a SET per
        // recipient (the same reasoning as check's MGET; the script is one atomic SET PX each).
        var keys: [String] = []
        var keysApp: String?
        func flush() {
            if !keys.isEmpty { commands.append(Self.setAll.invocation(keys: keys, arguments: ["1", .int(sentTTLMs)])) }
            keys.removeAll(keepingCapacity: true)
        }
        for entry in sent {
            if keys.count >= Self.checkKeysPerCommand || (keysApp != nil && keysApp != entry.appID) { flush() }
            keysApp = entry.appID
            keys.append(RedisKeys.sent(appID: entry.appID, msgID: entry.msgID))
        }
        flush()
        for entry in invalid {
            let key = RedisKeys.invalidToken(appID: entry.appID, platform: entry.platform, tokenHash: entry.tokenHash)
            commands.append(Self.keepMax.invocation(keys: [key], arguments: [.int(entry.invalidSinceMs), "px", .int(invalidTTLMs)]))
        }
        return commands
    }

    // MARK: - Token buckets

    /// A fleet-wide token bucket: `ratePerSecond` tokens refill per second, up to `burst`.
    public struct Bucket: Sendable, Equatable {
        /// From ``RedisKeys/providerBucket(appID:provider:)`` or ``RedisKeys/campaignBucket(appID:campaignID:)``.
        public var key: String
        /// Refill rate, tokens per second; must be > 0 (a campaign's `throttlePerMinute` / 60).
        public var ratePerSecond: Double
        /// Capacity, ≥ 1; a new (or expired) bucket starts full.
        public var burst: Double

        public init(key: String, ratePerSecond: Double, burst: Double) {
            self.key = key
            self.ratePerSecond = ratePerSecond
            self.burst = burst
        }
    }

    /// Asks every bucket for `count` tokens at once, atomically (one Lua script, one round trip).
    ///
    /// `granted` = the whole number of tokens every bucket can give (the minimum over the buckets,
    /// at most `count`), and exactly that many are taken from each bucket, so no bucket gives
    /// tokens another one refuses. If `granted < count`, `retryAfterMs` is how long until every
    /// bucket could give min(`count − granted`, `burst`) more (at least 1 ms); otherwise 0.
    /// `nowMs` is the caller's clock (Unix ms), injected for tests; a bucket last touched by a
    /// clock ahead of it does not refill until that time. No buckets ⇒ everything granted.
    public func acquire(count: Int, from buckets: [Bucket], nowMs: Int64) throws(RedisError) -> (granted: Int, retryAfterMs: Int64) {
        guard let command = try Self.acquireCommand(count: count, buckets: buckets, nowMs: nowMs) else {
            return (buckets.isEmpty ? max(0, count) : 0, 0)
        }
        return try Self.acquireResult(execute([command]), count: count)
    }

    /// Async ``acquire(count:from:nowMs:)``.
    public func acquire(count: Int, from buckets: [Bucket], nowMs: Int64) async throws(RedisError) -> (granted: Int, retryAfterMs: Int64) {
        guard let command = try Self.acquireCommand(count: count, buckets: buckets, nowMs: nowMs) else {
            return (buckets.isEmpty ? max(0, count) : 0, 0)
        }
        return try Self.acquireResult(await execute([command]), count: count)
    }

    private static func acquireCommand(count: Int, buckets: [Bucket], nowMs: Int64) throws(RedisError) -> [RedisArgument]? {
        if count <= 0 || buckets.isEmpty { return nil }
        var arguments: [RedisArgument] = [.int(Int64(count)), .int(nowMs)]
        for bucket in buckets {
            guard bucket.ratePerSecond.isFinite, bucket.ratePerSecond > 0, bucket.burst.isFinite, bucket.burst >= 1 else {
                throw RedisError("invalid token bucket \(bucket.key): rate \(bucket.ratePerSecond)/s, burst \(bucket.burst)")
            }
            // Past this, the bucket would be full again: expiring it changes nothing.
            let refillMs = (bucket.burst / bucket.ratePerSecond * 1000).rounded(.up)
            let ttlMs = Int64(min(refillMs, 365 * 86_400_000)) + 1000
            arguments.append(.string("\(bucket.ratePerSecond)"))
            arguments.append(.string("\(bucket.burst)"))
            arguments.append(.int(ttlMs))
        }
        return tokenBucket.invocation(keys: buckets.map(\.key), arguments: arguments)
    }

    private static func acquireResult(_ replies: [RedisReply], count: Int) throws(RedisError) -> (granted: Int, retryAfterMs: Int64) {
        try expectCount(replies, 1)
        try throwIfError(replies[0])
        guard case .array(let values) = replies[0], values.count == 2,
              let granted = values[0].integerValue, let wait = values[1].integerValue
        else { throw RedisError("unexpected token bucket reply \(replies[0])") }
        let grantedCount = Int(clamping: max(0, min(granted, Int64(count))))
        return (grantedCount, grantedCount < count ? max(1, wait) : 0)
    }

    // MARK: - Provider backoff

    /// Records that the fleet must not call `provider` for `appID` before `untilMs` (Unix ms);
    /// keeps the later of the stored and the new deadline. The key expires 60 s after the deadline.
    public func setBackoff(appID: String, provider: String, untilMs: Int64) throws(RedisError) {
        try Self.checkNoErrors(execute([Self.backoffCommand(appID: appID, provider: provider, untilMs: untilMs)]))
    }

    /// Async ``setBackoff(appID:provider:untilMs:)``.
    public func setBackoff(appID: String, provider: String, untilMs: Int64) async throws(RedisError) {
        try Self.checkNoErrors(await execute([Self.backoffCommand(appID: appID, provider: provider, untilMs: untilMs)]))
    }

    /// The stored backoff deadline (Unix ms), or nil. A deadline in the past may still be returned
    /// for up to 60 s: compare with your clock.
    public func backoffUntil(appID: String, provider: String) throws(RedisError) -> Int64? {
        try backoffs([(appID: appID, provider: provider)]).first ?? nil
    }

    /// The backoff deadlines of several app+provider pairs, in order; one round trip.
    public func backoffs(_ keys: [(appID: String, provider: String)]) throws(RedisError) -> [Int64?] {
        if keys.isEmpty { return [] }
        return try Self.backoffResults(execute(Self.backoffQueries(keys)))
    }

    /// Async ``backoffs(_:)``.
    public func backoffs(_ keys: [(appID: String, provider: String)]) async throws(RedisError) -> [Int64?] {
        if keys.isEmpty { return [] }
        return try Self.backoffResults(await execute(Self.backoffQueries(keys)))
    }

    private static func backoffCommand(appID: String, provider: String, untilMs: Int64) -> [RedisArgument] {
        keepMax.invocation(keys: [RedisKeys.backoff(appID: appID, provider: provider)], arguments: [.int(untilMs), "at", .int(backoffGraceMs)])
    }

    private static func backoffQueries(_ keys: [(appID: String, provider: String)]) -> [[RedisArgument]] {
        keys.map { ["GET", .string(RedisKeys.backoff(appID: $0.appID, provider: $0.provider))] }
    }

    private static func backoffResults(_ replies: [RedisReply]) throws(RedisError) -> [Int64?] {
        var results: [Int64?] = []
        results.reserveCapacity(replies.count)
        for reply in replies {
            try throwIfError(reply)
            results.append(reply.integerValue)
        }
        return results
    }

    // MARK: - Execution

    /// Loads the Lua scripts into Redis's script cache (one round trip; on a cluster, into every
    /// master's, all at once). Optional: without it the
    /// first scripted call after a (re)start costs one extra round trip (`NOSCRIPT` ⇒ `EVAL`).
    public func preloadScripts() throws(RedisError) {
        try Self.checkNoErrors(client.pipeline(Self.scripts.map { ["SCRIPT", "LOAD", .string($0.source)] }))
    }

    /// Runs a pipeline; commands that met `NOSCRIPT` are re-sent with `EVAL` in a second round trip.
    private func execute(_ commands: [[RedisArgument]]) throws(RedisError) -> [RedisReply] {
        var replies = try client.pipeline(commands)
        let missing = Self.missingScripts(replies)
        if missing.isEmpty { return replies }
        let retried = try client.pipeline(missing.map { Self.evalFallback(commands[$0]) })
        for (index, reply) in zip(missing, retried) { replies[index] = reply }
        return replies
    }

    private func execute(_ commands: [[RedisArgument]]) async throws(RedisError) -> [RedisReply] {
        var replies = try await client.pipeline(commands)
        let missing = Self.missingScripts(replies)
        if missing.isEmpty { return replies }
        let retried = try await client.pipeline(missing.map { Self.evalFallback(commands[$0]) })
        for (index, reply) in zip(missing, retried) { replies[index] = reply }
        return replies
    }

    private static func missingScripts(_ replies: [RedisReply]) -> [Int] {
        replies.indices.filter { replies[$0].errorMessage?.hasPrefix("NOSCRIPT") ?? false }
    }

    private static func evalFallback(_ command: [RedisArgument]) -> [RedisArgument] {
        guard command.count >= 2 else { return command }
        for script in scripts where command[1] == .string(script.sha1) {
            return script.fallback(for: command)
        }
        return command
    }

    private static func expectCount(_ replies: [RedisReply], _ count: Int) throws(RedisError) {
        if replies.count != count { throw RedisError("expected \(count) replies, got \(replies.count)") }
    }

    private static func throwIfError(_ reply: RedisReply) throws(RedisError) {
        if let message = reply.errorMessage { throw RedisError(message) }
    }

    private static func checkNoErrors(_ replies: [RedisReply]) throws(RedisError) {
        for reply in replies { try throwIfError(reply) }
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds.multipliedReportingOverflow(by: 1000).overflow ? Int64.max : seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    // MARK: - Scripts

    /// Keeps the larger of the stored integer and ARGV[1], atomically, and sets the TTL:
    /// ARGV[2] = `px` (ARGV[3] = TTL ms) or `at` (expire at the kept value + ARGV[3] ms).
    /// Returns the kept value.
    /// Every script the store runs (preloaded, and known to the `NOSCRIPT` fallback).
    static let scripts = [setAll, keepMax, tokenBucket]

    /// `SET key ARGV[1] PX ARGV[2]` for every key. Returns the number of keys set.
    static let setAll = RedisScript("""
        for i = 1, #KEYS do redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2]) end
        return #KEYS
        """)

    static let keepMax = RedisScript("""
        local new = tonumber(ARGV[1])
        local raw = redis.call('GET', KEYS[1])
        local cur = raw and tonumber(raw)
        local kept = new
        if cur and cur >= new then kept = cur else redis.call('SET', KEYS[1], ARGV[1]) end
        if ARGV[2] == 'at' then
          redis.call('PEXPIREAT', KEYS[1], string.format('%d', kept + tonumber(ARGV[3])))
        else
          redis.call('PEXPIRE', KEYS[1], ARGV[3])
        end
        return string.format('%d', kept)
        """)

    /// Multi-bucket token bucket. KEYS: bucket hashes {t = tokens, ts = last refill, ms}.
    /// ARGV: count, now (ms), then per bucket: rate per second, burst, TTL (ms).
    /// Grants g = min(count, ⌊tokens⌋ of every bucket) and takes g from each; returns {g, wait ms}.
    static let tokenBucket = RedisScript("""
        local count = tonumber(ARGV[1])
        local now = tonumber(ARGV[2])
        local tokens, stamps = {}, {}
        local granted = count
        for i = 1, #KEYS do
          local rate, burst = tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
          local state = redis.call('HMGET', KEYS[i], 't', 'ts')
          local t, ts = tonumber(state[1]), tonumber(state[2])
          if t == nil or ts == nil then t = burst; ts = now end
          if now > ts then
            t = math.min(burst, t + (now - ts) * rate / 1000)
            ts = now
          end
          tokens[i] = t
          stamps[i] = ts
          local whole = math.floor(t)
          if whole < granted then granted = whole end
        end
        if granted < 0 then granted = 0 end
        local wait = 0
        for i = 1, #KEYS do
          local rate, burst = tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
          local left = tokens[i] - granted
          redis.call('HSET', KEYS[i], 't', string.format('%.6f', left), 'ts', string.format('%d', stamps[i]))
          redis.call('PEXPIRE', KEYS[i], ARGV[3 * i + 2])
          if granted < count then
            local want = math.min(count - granted, math.max(1, math.floor(burst)))
            if left < want then
              local w = (stamps[i] - now) + math.ceil((want - left) * 1000 / rate)
              if w > wait then wait = w end
            end
          end
        end
        return {granted, wait}
        """)
}
