import PushCore

/// The delivery fleet's shared state in Redis (docs/reference/redis.md): sent msgIDs (de-duplication), invalid
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
    /// How long an invalid token is remembered (refreshed when reported again). Default: 90 days.
    public let invalidTTL: Duration
    private let invalidTTLMs: Int64
    /// True on a Redis Cluster: every key of one script call must then be in one slot, so claims
    /// and records are split into one script call per bucket (still one round trip per node).
    public let keysMustShareSlot: Bool
    /// The bucket keys of the campaigns in use, built once for claims and records.
    let keyCache = DedupKeyCache()
    /// The campaign guardrail (docs/campaigns.md), applied as results are counted.
    public let guardSettings: CampaignGuard
    /// How long a campaign control and a campaign's counts live after their last change.
    public let controlTTLMs: Int64

    /// A backoff key expires this long after the backoff ends; readers subtract it from the key's
    /// time to live to learn what is left.
    public static let backoffGraceMs: Int64 = 60_000

    /// `keysMustShareSlot` defaults to whether `client` is a ``RedisClusterClient``.
    public init(client: any RedisPipelining, invalidTTL: Duration = .seconds(90 * 86400), keysMustShareSlot: Bool? = nil,
                guardSettings: CampaignGuard = CampaignGuard(), controlTTLMs: Int64 = DeliveryStateStore.defaultControlTTLMs) {
        self.client = client
        self.guardSettings = guardSettings
        self.controlTTLMs = max(1000, controlTTLMs)
        self.invalidTTL = invalidTTL
        self.invalidTTLMs = max(1, Self.milliseconds(invalidTTL))
        self.keysMustShareSlot = keysMustShareSlot ?? (client is RedisClusterClient)
    }

    // MARK: - Claims, de-duplication and invalid tokens (docs/reference/redis.md)

    /// One recipient to claim before sending.
    public struct ClaimItem: Sendable, Equatable {
        public var appID: String
        public var campaignID: String
        public var key: DedupKey
        /// The processing asking (a job's processing in one worker): a claim held by another owner
        /// with an unexpired lease is not taken.
        public var owner: String
        public var platform: String
        /// The caller's hash of the token (never the token itself).
        public var tokenHash: String
        /// The frequency cap the send counts against (docs/caps.md); nil: not counted.
        public var cap: CapTarget?

        public init(appID: String, campaignID: String, key: DedupKey, owner: String, platform: String, tokenHash: String,
                    cap: CapTarget? = nil) {
            self.appID = appID; self.campaignID = campaignID; self.key = key; self.owner = owner
            self.platform = platform; self.tokenHash = tokenHash; self.cap = cap
        }
    }

    /// The answers of one ``claim(_:nowMs:leaseMs:backoffs:)`` round trip, in item order.
    public struct ClaimAnswers: Sendable, Equatable {
        public var replies: [ClaimReply]
        /// When each item's token was recorded dead (Unix ms), if it was.
        public var invalidSinceMs: [Int64?]
        /// The backoffs asked for with the claim, in order: how long each still runs (ms, judged
        /// by Redis's clock), nil when there is none.
        public var backoffRemainingMs: [Int64?]
        /// The campaign controls asked for with the claim, in order.
        public var controls: [CampaignControl]

        public init(replies: [ClaimReply], invalidSinceMs: [Int64?], backoffRemainingMs: [Int64?], controls: [CampaignControl] = []) {
            self.replies = replies; self.invalidSinceMs = invalidSinceMs; self.backoffRemainingMs = backoffRemainingMs
            self.controls = controls
        }
    }

    /// Claims every item atomically per bucket (one Lua script call per group of keys; a group is
    /// the whole batch on a standalone Redis, one bucket on a Cluster), reads the items'
    /// invalid-token records and the given provider backoffs: all in ONE pipelined round trip.
    ///
    /// Leases are judged by Redis's own clock (`TIME` inside the script), never the caller's, so
    /// workers whose clocks disagree agree on whose lease is alive. `nowMs` replaces that clock
    /// (tests only; nil in production).
    ///
    /// Per item the script answers: recorded as sent ⇒ ``ClaimReply/alreadySent``; claimed by
    /// another owner whose lease has not ended ⇒ ``ClaimReply/claimedElsewhere`` (nothing changed);
    /// earlier attempts whose outcome is unknown number `unansweredLimit` or more ⇒
    /// ``ClaimReply/unansweredFinal`` (nothing changed: it is never sent again); otherwise the
    /// claim is (re)written for `owner` until now + `leaseMs` ⇒ ``ClaimReply/claimed``, or
    /// ``ClaimReply/claimedResend`` when an earlier attempt's outcome is unknown (this send is the
    /// resend), or ``ClaimReply/alreadyOurs`` when `owner` held it (a renewal).
    ///
    /// `controls` names campaigns whose controls (docs/campaigns.md) are read in the same round
    /// trip (``ClaimAnswers/controls``). On a standalone Redis the claim script also reads them
    /// itself: an item not sent yet whose campaign is paused or cancelled answers
    /// ``ClaimReply/paused`` or ``ClaimReply/cancelled`` and is not claimed. A Cluster keeps a
    /// campaign's control in another slot than its buckets, so there the caller applies the
    /// controls it read (and releases what the round claimed for a paused campaign).
    public func claim(_ items: [ClaimItem], nowMs: Int64? = nil, leaseMs: Int64, unansweredLimit: Int = 2,
                      backoffs: [(appID: String, provider: String)] = [],
                      controls: [(appID: String, campaignID: String)] = []) throws(RedisError) -> ClaimAnswers {
        if items.isEmpty && backoffs.isEmpty && controls.isEmpty {
            return ClaimAnswers(replies: [], invalidSinceMs: [], backoffRemainingMs: [])
        }
        var commands: [[RedisArgument]] = []
        let groups = self.groups(items.count) { (items[$0].appID, items[$0].campaignID, items[$0].key.bucket) }
        let controlKeys: [RedisArgument] = keysMustShareSlot ? []
            : controls.map { .string(RedisKeys.campaignControl(appID: $0.appID, campaignID: $0.campaignID)) }
        for group in groups {
            commands.append(Self.claimCommand(items, group, nowMs: nowMs, leaseMs: leaseMs, unansweredLimit: unansweredLimit,
                                              controlKeys: controlKeys, capsInScript: !keysMustShareSlot, keyCache: keyCache))
        }
        // On a Cluster each user's cap set is reserved by its own script call in this round trip.
        let reservationStart = commands.count
        let reservations = keysMustShareSlot ? Self.capReservations(items, nowMs: nowMs) : []
        commands += reservations.map(\.command)
        let invalidStart = commands.count
        let invalidCommands = Self.mgetCommands(Self.invalidTokenKeys(items.lazy.map { ($0.appID, $0.platform, $0.tokenHash) }))
        commands += invalidCommands
        let backoffStart = commands.count
        commands += Self.backoffQueries(backoffs)
        let controlStart = commands.count
        for control in controls { commands.append(Self.controlRead(appID: control.appID, campaignID: control.campaignID)) }
        let replies = try execute(commands)
        try Self.expectCount(replies, commands.count)

        var answers = [ClaimReply](repeating: .claimedElsewhere, count: items.count)
        for (position, group) in groups.enumerated() {
            let reply = replies[position]
            try Self.throwIfError(reply)
            guard case .array(let codes) = reply, codes.count == group.count else {
                throw RedisError("the claim script answered \(reply) for \(group.count) items")
            }
            for (offset, index) in group.enumerated() {
                guard let raw = codes[offset].integerValue, let code = ClaimReply(rawValue: Int(raw)) else {
                    throw RedisError("the claim script answered \(codes[offset])")
                }
                answers[index] = code
            }
        }
        if !reservations.isEmpty {
            try settleReservations(items, &answers, reservations, Array(replies[reservationStart..<invalidStart]))
        }
        var invalid: [Int64?] = []
        invalid.reserveCapacity(items.count)
        for reply in replies[invalidStart..<backoffStart] {
            try Self.throwIfError(reply)
            guard case .array(let values) = reply else { throw RedisError("MGET answered \(reply) instead of an array") }
            for value in values {
                try Self.throwIfError(value)
                invalid.append(value.integerValue)
            }
        }
        try Self.expectCount(invalid, items.count)
        let backoffRemaining = try Self.backoffResults(Array(replies[backoffStart..<controlStart]))
        var controlAnswers: [CampaignControl] = []
        controlAnswers.reserveCapacity(controls.count)
        for reply in replies[controlStart...] {
            try Self.throwIfError(reply)
            controlAnswers.append(try Self.control(from: reply))
        }
        return ClaimAnswers(replies: answers, invalidSinceMs: invalid, backoffRemainingMs: backoffRemaining, controls: controlAnswers)
    }

    /// One outcome to record.
    public struct RecordEntry: Sendable, Equatable {
        public var appID: String
        public var campaignID: String
        public var key: DedupKey
        /// The processing that claimed it: its claim (and only its claim) is removed.
        public var owner: String
        /// Sent: remember it for this long (``DedupRetention``). Nil: nothing was sent (a final
        /// result other than `sent`, or a hand-off to the retry topic): the claim is released.
        public var sentRetentionMs: Int64?
        /// Not sent as far as anyone knows, but the request was written and no answer came (the
        /// provider may have shown it): the msgId's count of such attempts goes up by one and is
        /// kept this long, and the claim is released. Ignored when `sentRetentionMs` is set.
        public var unansweredRetentionMs: Int64?
        /// What becomes of the send's frequency-cap reservation (docs/caps.md); nil: nothing.
        public var cap: CapChange?

        public init(appID: String, campaignID: String, key: DedupKey, owner: String, sentRetentionMs: Int64?,
                    unansweredRetentionMs: Int64? = nil, cap: CapChange? = nil) {
            self.appID = appID; self.campaignID = campaignID; self.key = key; self.owner = owner
            self.sentRetentionMs = sentRetentionMs
            self.unansweredRetentionMs = unansweredRetentionMs
            self.cap = cap
        }
    }

    /// Records outcomes and dead tokens in one pipelined round trip: a sent msgId joins its
    /// bucket's set (whose TTL becomes at least the entry's retention) and loses its claim; an
    /// unanswered one counts one more unknown attempt and loses its claim; a release only removes
    /// the owner's claim. Invalid tokens keep the larger `invalidSince` (TTL `invalidTTL`,
    /// refreshed).
    ///
    /// `counts` adds final results to their campaigns' counts (docs/campaigns.md) in the same
    /// round trip and applies the guardrail; the answer lists the campaigns the guardrail paused
    /// now or that were paused or cancelled already, as (app, campaign, state).
    @discardableResult
    public func record(
        _ entries: [RecordEntry],
        invalid: [(appID: String, platform: String, tokenHash: String, invalidSinceMs: Int64)] = [],
        counts: [CampaignCount] = []
    ) throws(RedisError) -> [(appID: String, campaignID: String, state: CampaignState)] {
        var commands: [[RedisArgument]] = []
        let counted = counts.filter { $0.counts.contains { $0.count > 0 } }
        commands += Self.countCommands(counted, guardSettings: guardSettings, ttlMs: controlTTLMs)
        for group in self.groups(entries.count, { (entries[$0].appID, entries[$0].campaignID, entries[$0].key.bucket) }) {
            commands.append(Self.recordCommand(entries, group, keyCache: keyCache))
        }
        commands += Self.capRecordCommands(entries)
        let invalidKeys = Self.invalidTokenKeys(invalid.lazy.map { ($0.appID, $0.platform, $0.tokenHash) })
        for (entry, key) in zip(invalid, invalidKeys) {
            commands.append(Self.keepMax.invocation(keys: [key], arguments: [.int(entry.invalidSinceMs), "px", .int(invalidTTLMs)]))
        }
        if commands.isEmpty { return [] }
        let replies = try execute(commands)
        try Self.checkNoErrors(replies)
        var steered: [(appID: String, campaignID: String, state: CampaignState)] = []
        for (campaign, reply) in zip(counted, replies) {
            if let text = reply.text, let state = CampaignState(rawValue: text), state != .active {
                steered.append((campaign.appID, campaign.campaignID, state))
            }
        }
        return steered
    }

    /// Items per script call on a standalone Redis: bounds the time Redis spends in one script.
    static let itemsPerScriptCall = 1000

    /// Splits item indices into script calls. On a standalone Redis one call takes up to
    /// ``itemsPerScriptCall`` items whatever their buckets; a Cluster needs every key of a script
    /// in one slot, so there a call takes one bucket's items (its two keys share a hash tag).
    private func groups(_ count: Int, _ bucket: (Int) -> (String, String, Int)) -> [[Int]] {
        Self.groups(count, keysMustShareSlot: keysMustShareSlot, bucket)
    }

    static func groups(_ count: Int, keysMustShareSlot: Bool = false, _ bucket: (Int) -> (String, String, Int)) -> [[Int]] {
        if count == 0 { return [] }
        if !keysMustShareSlot {
            return stride(from: 0, to: count, by: itemsPerScriptCall).map { Array($0..<min(count, $0 + itemsPerScriptCall)) }
        }
        var order: [BucketID] = []
        var members: [BucketID: [Int]] = [:]
        for index in 0..<count {
            let (app, campaign, number) = bucket(index)
            let id = BucketID(app: app, campaign: campaign, bucket: number)
            if members[id] == nil { order.append(id) }
            members[id, default: []].append(index)
        }
        return order.map { members[$0] ?? [] }
    }

    private struct BucketID: Hashable {
        var app: String
        var campaign: String
        var bucket: Int
    }

    /// `claim` KEYS: (sent set, claims hash) per distinct bucket of the group, then the control
    /// keys, then the cap sets; ARGV: now (-1: Redis's clock), lease, unanswered limit, number of
    /// control keys, number of cap sets, each cap set's caps, then per item: bucket position
    /// (1-based), member, owner, and (only when the call holds cap sets) the item's cap set
    /// position (0: not counted). A group without caps passes no per-item cap argument.
    private static func claimCommand(_ items: [ClaimItem], _ group: [Int], nowMs: Int64?, leaseMs: Int64, unansweredLimit: Int,
                                     controlKeys: [RedisArgument], capsInScript: Bool, keyCache: DedupKeyCache) -> [RedisArgument] {
        var keys = ScriptKeys(cache: keyCache)
        let caps = capsInScript ? CapKeys(items, group) : CapKeys()
        var arguments: [RedisArgument] = [.int(nowMs.map { max(0, $0) } ?? -1), .int(leaseMs), .int(Int64(max(1, unansweredLimit))),
                                          .int(Int64(controlKeys.count)), .int(Int64(caps.keys.count))]
        arguments.reserveCapacity(5 + caps.keys.count + (caps.keys.isEmpty ? 3 : 4) * group.count)
        arguments += caps.rules
        for (offset, index) in group.enumerated() {
            let item = items[index]
            arguments.append(.int(Int64(keys.position(app: item.appID, campaign: item.campaignID, key: item.key))))
            arguments.append(.int(item.key.memberValue))
            arguments.append(.string(item.owner))
            if !caps.keys.isEmpty { arguments.append(.int(Int64(caps.positions[offset]))) }
        }
        return claimScript.invocation(keyArguments: keys.keys + controlKeys + caps.keys, arguments: arguments)
    }

    /// `record` KEYS as for claim; ARGV per entry: bucket position, member, owner, retention ms
    /// (> 0: sent, kept that long; 0: release only; < 0: unanswered, its count kept −retention ms).
    private static func recordCommand(_ entries: [RecordEntry], _ group: [Int], keyCache: DedupKeyCache) -> [RedisArgument] {
        var keys = ScriptKeys(cache: keyCache)
        var arguments: [RedisArgument] = []
        arguments.reserveCapacity(4 * group.count)
        for index in group {
            let entry = entries[index]
            arguments.append(.int(Int64(keys.position(app: entry.appID, campaign: entry.campaignID, key: entry.key))))
            arguments.append(.int(entry.key.memberValue))
            arguments.append(.string(entry.owner))
            arguments.append(.int(Self.recordRetentionArgument(entry)))
        }
        return recordScript.invocation(keyArguments: keys.keys, arguments: arguments)
    }

    static func recordRetentionArgument(_ entry: RecordEntry) -> Int64 {
        if let sent = entry.sentRetentionMs { return max(1, sent) }
        if let unanswered = entry.unansweredRetentionMs { return -max(1, unanswered) }
        return 0
    }

    /// The KEYS of one claim or record script call: each distinct bucket's sent set and claims
    /// hash, in first-seen order, and the bucket's 1-based position for ARGV. The entries of one
    /// job come together, so the (app, campaign) of the previous entry is checked first and its
    /// buckets are looked up by number alone; the keys are ``DedupKeyName``s on the prefixes of
    /// the store's ``DedupKeyCache``.
    private struct ScriptKeys {
        let cache: DedupKeyCache
        private(set) var keys: [RedisArgument] = []
        /// Other campaigns' positions by bucket (a batch rarely holds more than one campaign).
        private var scopes: [BucketScope: [Int32]] = [:]
        private var current: (scope: BucketScope, keys: DedupKeyCache.CampaignKeys)?
        /// The current campaign's position of each bucket, 0 = not in this call yet; empty while
        /// the call has met one bucket only (``onlyBucket``).
        private var currentPositions: [Int32] = []
        private var onlyBucket: (bucket: Int, position: Int)?

        /// The current campaign's positions as a full table.
        private func table() -> [Int32] {
            if !currentPositions.isEmpty { return currentPositions }
            var table = [Int32](repeating: 0, count: DedupKey.bucketCount)
            if let onlyBucket { table[onlyBucket.bucket] = Int32(onlyBucket.position) }
            return table
        }

        init(cache: DedupKeyCache) { self.cache = cache }

        mutating func position(app: String, campaign: String, key: DedupKey) -> Int {
            let campaignKeys: DedupKeyCache.CampaignKeys
            if let current, current.scope.app == app, current.scope.campaign == campaign {
                campaignKeys = current.keys
            } else {
                if let current { scopes[current.scope] = table() }
                let scope = BucketScope(app: app, campaign: campaign)
                currentPositions = scopes[scope] ?? []
                onlyBucket = nil
                campaignKeys = cache.campaign(app: app, campaign: campaign)
                current = (scope, campaignKeys)
            }
            let bucket = key.bucket & (DedupKey.bucketCount - 1)
            if currentPositions.isEmpty {
                // On a Cluster a call holds one bucket: no table for it.
                if let only = onlyBucket {
                    if only.bucket == bucket { return only.position }
                    currentPositions = [Int32](repeating: 0, count: DedupKey.bucketCount)
                    currentPositions[only.bucket] = Int32(only.position)
                }
            } else {
                let known = currentPositions[bucket]
                if known > 0 { return Int(known) }
            }
            let pair = campaignKeys.keys(bucket: bucket)
            keys.append(.dedupKey(pair.sent))
            keys.append(.dedupKey(pair.claims))
            let position = keys.count / 2
            if currentPositions.isEmpty { onlyBucket = (bucket, position) } else { currentPositions[bucket] = Int32(position) }
            return position
        }
    }

    private struct BucketScope: Hashable {
        var app: String
        var campaign: String
    }

    /// ``RedisKeys/invalidToken(appID:platform:tokenHash:)`` of each (app, platform, token hash),
    /// the prefix of the (app, platform) before reused (a batch's recipients come by job).
    static func invalidTokenKeys<S: Sequence>(_ parts: S) -> [String] where S.Element == (String, String, String) {
        var keys: [String] = []
        keys.reserveCapacity(parts.underestimatedCount)
        var last: RedisKeys.InvalidTokenScope?
        for (app, platform, tokenHash) in parts {
            let scope = last.flatMap { $0.appID == app && $0.platform == platform ? $0 : nil }
                ?? RedisKeys.InvalidTokenScope(appID: app, platform: platform)
            keys.append(scope.key(tokenHash))
            last = scope
        }
        return keys
    }

    /// `MGET`s of at most ``checkKeysPerCommand`` keys each.
    static func mgetCommands(_ keys: [String]) -> [[RedisArgument]] {
        var commands: [[RedisArgument]] = []
        var current: [RedisArgument] = []
        for key in keys {
            if current.isEmpty {
                current.reserveCapacity(1 + min(checkKeysPerCommand, keys.count))
                current.append("MGET")
            }
            current.append(.string(key))
            if current.count > checkKeysPerCommand {
                commands.append(current)
                current = []
            }
        }
        if !current.isEmpty { commands.append(current) }
        return commands
    }

    /// Keys per `MGET`: bounds one command's size (and Redis's time inside it) for huge jobs.
    static let checkKeysPerCommand = 1000

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
    /// Time is Redis's clock (`TIME` inside the script), so workers whose clocks disagree share one
    /// refill schedule; `nowMs` replaces it (tests only). A bucket last touched at a time ahead of
    /// now does not refill until that time. No buckets ⇒ everything granted.
    public func acquire(count: Int, from buckets: [Bucket], nowMs: Int64? = nil) throws(RedisError) -> (granted: Int, retryAfterMs: Int64) {
        guard let command = try Self.acquireCommand(count: count, buckets: buckets, nowMs: nowMs) else {
            return (buckets.isEmpty ? max(0, count) : 0, 0)
        }
        return try Self.acquireResult(execute([command]), count: count)
    }

    /// Async ``acquire(count:from:nowMs:)``.
    public func acquire(count: Int, from buckets: [Bucket], nowMs: Int64? = nil) async throws(RedisError) -> (granted: Int, retryAfterMs: Int64) {
        guard let command = try Self.acquireCommand(count: count, buckets: buckets, nowMs: nowMs) else {
            return (buckets.isEmpty ? max(0, count) : 0, 0)
        }
        return try Self.acquireResult(await execute([command]), count: count)
    }

    private static func acquireCommand(count: Int, buckets: [Bucket], nowMs: Int64?) throws(RedisError) -> [RedisArgument]? {
        if count <= 0 || buckets.isEmpty { return nil }
        var arguments: [RedisArgument] = [.int(Int64(count)), .int(nowMs.map { max(0, $0) } ?? -1)]
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

    /// Records that the fleet must not call `provider` for `appID` for the next `milliseconds`,
    /// judged by Redis's clock (`TIME` inside the script, so workers whose clocks disagree agree
    /// on when it ends); keeps the later of the stored and the new end. The key expires
    /// ``backoffGraceMs`` after the end. Returns how long the kept backoff still runs (ms).
    @discardableResult
    public func setBackoff(appID: String, provider: String, milliseconds: Int64) throws(RedisError) -> Int64 {
        try Self.backoffSetResult(execute([Self.backoffCommand(appID: appID, provider: provider, milliseconds: milliseconds)]))
    }

    /// Async ``setBackoff(appID:provider:milliseconds:)``.
    @discardableResult
    public func setBackoff(appID: String, provider: String, milliseconds: Int64) async throws(RedisError) -> Int64 {
        try Self.backoffSetResult(await execute([Self.backoffCommand(appID: appID, provider: provider, milliseconds: milliseconds)]))
    }

    /// How long the backoff of `appID` at `provider` still runs (ms), or nil when there is none.
    public func backoffRemaining(appID: String, provider: String) throws(RedisError) -> Int64? {
        try backoffsRemaining([(appID: appID, provider: provider)]).first ?? nil
    }

    /// ``backoffRemaining(appID:provider:)`` of several app+provider pairs, in order; one round trip.
    public func backoffsRemaining(_ keys: [(appID: String, provider: String)]) throws(RedisError) -> [Int64?] {
        if keys.isEmpty { return [] }
        return try Self.backoffResults(execute(Self.backoffQueries(keys)))
    }

    /// Async ``backoffsRemaining(_:)``.
    public func backoffsRemaining(_ keys: [(appID: String, provider: String)]) async throws(RedisError) -> [Int64?] {
        if keys.isEmpty { return [] }
        return try Self.backoffResults(await execute(Self.backoffQueries(keys)))
    }

    private static func backoffCommand(appID: String, provider: String, milliseconds: Int64) -> [RedisArgument] {
        backoffScript.invocation(keys: [RedisKeys.backoff(appID: appID, provider: provider)],
                                 arguments: [.int(max(0, milliseconds)), .int(backoffGraceMs)])
    }

    private static func backoffSetResult(_ replies: [RedisReply]) throws(RedisError) -> Int64 {
        try expectCount(replies, 1)
        try throwIfError(replies[0])
        guard let remaining = replies[0].integerValue else { throw RedisError("unexpected backoff reply \(replies[0])") }
        return remaining
    }

    /// The key's time to live less the grace: what is left of the backoff on the clock of the
    /// node that holds it (the one that set it).
    private static func backoffQueries(_ keys: [(appID: String, provider: String)]) -> [[RedisArgument]] {
        keys.map { ["PTTL", .string(RedisKeys.backoff(appID: $0.appID, provider: $0.provider))] }
    }

    private static func backoffResults(_ replies: [RedisReply]) throws(RedisError) -> [Int64?] {
        var results: [Int64?] = []
        results.reserveCapacity(replies.count)
        for reply in replies {
            try throwIfError(reply)
            // PTTL: -2 no key, -1 no TTL (never written so by the store).
            if let ttl = reply.integerValue, ttl - backoffGraceMs > 0 { results.append(ttl - backoffGraceMs) } else { results.append(nil) }
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
    func execute(_ commands: [[RedisArgument]]) throws(RedisError) -> [RedisReply] {
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

    private static func expectCount<T>(_ replies: [T], _ count: Int) throws(RedisError) {
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

    /// Every script the store runs (preloaded, and known to the `NOSCRIPT` fallback).
    static let scripts = [claimScript, recordScript, keepMax, backoffScript, tokenBucket, controlScript, countScript,
                          capReserveScript, capConfirmScript]

    /// The claim (docs/redis.md "Claims"). KEYS: per bucket its sent set (an intset of members)
    /// and its claims hash (member → `owner:leaseEndMs`; `u<member>` → count of attempts whose
    /// outcome is unknown, and the flag field `u` once the hash holds any), then the campaign
    /// control hashes to honour, then the frequency-cap sets (docs/caps.md). ARGV: now ms (-1:
    /// Redis's `TIME`), lease ms, unanswered limit, the number of control keys, the number of cap
    /// sets, each cap set's caps (`count:windowMs,…`), then per item: bucket position, member,
    /// owner, and when the call holds cap sets the item's cap set (0: none). Replies one code per
    /// item (``ClaimReply``): an item not sent whose campaign's control (named by its bucket
    /// key's app and campaign) is paused or cancelled answers 6 or 7, nothing changed; an item
    /// that would be claimed but whose user reached a cap answers 8, nothing changed; otherwise
    /// a counted item's send is reserved in its cap set (``capFunctions``) with its claim. The
    /// claims hash lives at least two leases past its last claim, so a dead worker's claims
    /// vanish.
    static let claimScript = RedisScript(capFunctions + """
        local now, lease, limit, nctl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
        local ncap = tonumber(ARGV[5])
        if now < 0 then
          local t = redis.call('TIME')
          now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        end
        local out, touched, marked = {}, {}, {}
        local ctl, ctlOf, caps = {}, {}, {}
        for j = #KEYS - ncap - nctl + 1, #KEYS - ncap do ctl[KEYS[j]] = false end
        local stride = ncap > 0 and 4 or 3
        for i = 6 + ncap, #ARGV, stride do
          local b, m, owner = tonumber(ARGV[i]), ARGV[i + 1], ARGV[i + 2]
          local sent, claims = KEYS[2 * b - 1], KEYS[2 * b]
          local halt = 0
          if nctl > 0 then
            halt = ctlOf[b]
            if halt == nil then
              halt = 0
              local app, campaign = string.match(sent, '^pw:{([^:]*):([^:]*):')
              local name = app and ('pw:{' .. app .. '}:ctl:' .. campaign)
              if name and ctl[name] ~= nil then
                if ctl[name] == false then ctl[name] = redis.call('HGET', name, 's') or '' end
                if ctl[name] == 'paused' then halt = 6 elseif ctl[name] == 'cancelled' then halt = 7 end
              end
              ctlOf[b] = halt
            end
          end
          if redis.call('SISMEMBER', sent, m) == 1 then
            out[#out + 1] = 1
          elseif halt > 0 then
            out[#out + 1] = halt
          else
            local code = 0
            local held = redis.call('HGET', claims, m)
            if held then
              local sep = string.find(held, ':', 1, true)
              local holder = string.sub(held, 1, sep - 1)
              if holder == owner then code = 3
              elseif tonumber(string.sub(held, sep + 1)) > now then code = 2 end
            end
            if code == 0 then
              if marked[claims] == nil then marked[claims] = redis.call('HEXISTS', claims, 'u') == 1 end
              if marked[claims] then
                local unanswered = tonumber(redis.call('HGET', claims, 'u' .. m) or '0')
                if unanswered >= limit then code = 4 elseif unanswered > 0 then code = 5 end
              end
            end
            local cj = stride == 4 and tonumber(ARGV[i + 3]) or 0
            if cj > 0 and code ~= 2 and code ~= 4 then
              local st = caps[cj]
              if st == nil then
                st = cap_open(KEYS[#KEYS - ncap + cj], ARGV[5 + cj], now)
                caps[cj] = st
              end
              if cap_take(st, string.match(sent, '^pw:{[^:]*:([^:]*):') .. '|' .. m, now) == 0 then code = 8 end
            end
            if code ~= 2 and code ~= 4 and code ~= 8 then
              redis.call('HSET', claims, m, owner .. ':' .. string.format('%d', now + lease))
              touched[claims] = true
            end
            out[#out + 1] = code
          end
        end
        for claims in pairs(touched) do
          if redis.call('PTTL', claims) < 2 * lease then redis.call('PEXPIRE', claims, 2 * lease) end
        end
        for _, st in pairs(caps) do cap_close(st) end
        return out
        """)

    /// The record. KEYS as for claim. ARGV per entry: bucket position, member, owner, retention
    /// ms (> 0: sent, kept that long at least; 0: release; < 0: unanswered, its count kept
    /// −retention ms at least). A claim is removed only when `owner` holds it (a processing
    /// whose lease ran out never removes its successor's claim).
    static let recordScript = RedisScript("""
        local keep, keepClaims = {}, {}
        for i = 1, #ARGV, 4 do
          local b, m, owner, retention = tonumber(ARGV[i]), ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3])
          local sent, claims = KEYS[2 * b - 1], KEYS[2 * b]
          if retention > 0 then
            redis.call('SADD', sent, m)
            if (keep[sent] or 0) < retention then keep[sent] = retention end
          elseif retention < 0 then
            redis.call('HINCRBY', claims, 'u' .. m, 1)
            redis.call('HSET', claims, 'u', 1)
            if (keepClaims[claims] or 0) < -retention then keepClaims[claims] = -retention end
          end
          local held = redis.call('HGET', claims, m)
          if held and string.sub(held, 1, #owner + 1) == owner .. ':' then redis.call('HDEL', claims, m) end
        end
        for sent, retention in pairs(keep) do
          if redis.call('PTTL', sent) < retention then redis.call('PEXPIRE', sent, retention) end
        end
        for claims, retention in pairs(keepClaims) do
          if redis.call('PTTL', claims) < retention then redis.call('PEXPIRE', claims, retention) end
        end
        return #ARGV / 4
        """)

    /// A provider backoff: keeps the later of the stored end (Unix ms on Redis's clock) and now +
    /// ARGV[1] ms, expires the key ARGV[2] ms after it, returns how long it still runs (ms).
    static let backoffScript = RedisScript("""
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        local wanted = now + tonumber(ARGV[1])
        local kept = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
        if kept < wanted then
          kept = wanted
          redis.call('SET', KEYS[1], string.format('%d', kept))
        end
        redis.call('PEXPIREAT', KEYS[1], string.format('%d', kept + tonumber(ARGV[2])))
        return kept - now
        """)

    /// Keeps the larger of the stored integer and ARGV[1], atomically, and sets the TTL:
    /// ARGV[2] = `px` (ARGV[3] = TTL ms) or `at` (expire at the kept value + ARGV[3] ms).
    /// Returns the kept value.
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
    /// ARGV: count, now (ms; -1: Redis's `TIME`), then per bucket: rate per second, burst, TTL (ms).
    /// Grants g = min(count, ⌊tokens⌋ of every bucket) and takes g from each; returns {g, wait ms}.
    static let tokenBucket = RedisScript("""
        local count = tonumber(ARGV[1])
        local now = tonumber(ARGV[2])
        if now < 0 then
          local t = redis.call('TIME')
          now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        end
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
