import PushCore

/// What the campaign commands and the HTTP API need from the fleet's state: the controls and the
/// status of one campaign (docs/campaigns.md). ``DeliveryStateStore`` is the production one.
public protocol CampaignControlling: Sendable {
    /// Applies an operator's action; answers the control as it now stands.
    /// Throws ``CampaignActionError`` (a cancelled campaign) or ``RedisError``.
    func apply(_ action: CampaignAction, appID: String, campaignID: String) throws -> CampaignControl
    /// The campaign's control, counts, current rate and guardrail settings.
    func status(appID: String, campaignID: String) throws -> CampaignStatus
}

/// Campaign control (docs/campaigns.md): controls, counts and rates in Redis, all of one campaign
/// under its app's hash tag (one slot on a Cluster, so one script touches them together).
extension DeliveryStateStore: CampaignControlling {
    /// How long a control (and a campaign's counts) lives after its last change: 7 days.
    public static let defaultControlTTLMs: Int64 = 7 * 86_400_000

    public func apply(_ action: CampaignAction, appID: String, campaignID: String) throws -> CampaignControl {
        var value = ""
        switch action {
        case .pause(let reason), .cancel(let reason): value = reason ?? ""
        case .resume: break
        case .throttle(let perMinute):
            if let perMinute {
                guard perMinute > 0, perMinute <= Int(Int32.max) else { throw CampaignActionError.invalid("perMinute must be 1…\(Int32.max)") }
                value = "\(perMinute)"
            }
        case .deadline(let sendByMs):
            if let sendByMs {
                guard sendByMs > 0 else { throw CampaignActionError.invalid("sendBy must be after 1970") }
                value = "\(sendByMs)"
            }
        }
        let key = RedisKeys.campaignControl(appID: appID, campaignID: campaignID)
        let replies = try execute([Self.controlScript.invocation(keys: [key], arguments: [.string(action.name), .string(value),
                                                                                        .int(controlTTLMs)])])
        guard replies.count == 1 else { throw RedisError("expected 1 reply, got \(replies.count)") }
        if let message = replies[0].errorMessage {
            if message.hasPrefix("CANCELLED") { throw CampaignActionError.cancelled }
            throw RedisError(message)
        }
        return try Self.control(from: replies[0])
    }

    public func status(appID: String, campaignID: String) throws -> CampaignStatus {
        let rateKey = RedisKeys.campaignRate(appID: appID, campaignID: campaignID)
        let replies = try execute([
            Self.controlRead(appID: appID, campaignID: campaignID),
            ["HGETALL", .string(RedisKeys.campaignCounts(appID: appID, campaignID: campaignID))],
            ["HGETALL", .string(rateKey)],
            ["TIME"],
        ])
        guard replies.count == 4 else { throw RedisError("expected 4 replies, got \(replies.count)") }
        for reply in replies { if let message = reply.errorMessage { throw RedisError(message) } }
        let control = try Self.control(from: replies[0])
        var counts: [String: Int64] = [:]
        for (name, value) in Self.pairs(replies[1]) { counts[name] = value }
        guard case .array(let time) = replies[3], time.count == 2, let seconds = time[0].integerValue else {
            throw RedisError("TIME answered \(replies[3])")
        }
        let minute = seconds / 60
        var rate: [Int64: Int64] = [:]
        for (name, value) in Self.pairs(replies[2]) { if let at = Int64(name) { rate[at] = value } }
        // The last 60 s: this minute so far and the part of the previous minute still in the window.
        let elapsed = Double(seconds % 60) / 60
        let perMinute = Double(rate[minute] ?? 0) + Double(rate[minute - 1] ?? 0) * (1 - elapsed)
        return CampaignStatus(appID: appID, campaignID: campaignID, control: control, counts: counts,
                              sendsPerMinute: Int64(perMinute.rounded()), guardSettings: guardSettings)
    }

    /// The controls of several campaigns, in order, in one round trip (a campaign never steered
    /// reads as ``CampaignControl/none``).
    public func controls(_ campaigns: [(appID: String, campaignID: String)]) throws(RedisError) -> [CampaignControl] {
        if campaigns.isEmpty { return [] }
        let replies = try execute(campaigns.map { Self.controlRead(appID: $0.appID, campaignID: $0.campaignID) })
        guard replies.count == campaigns.count else { throw RedisError("expected \(campaigns.count) replies, got \(replies.count)") }
        var controls: [CampaignControl] = []
        controls.reserveCapacity(replies.count)
        for reply in replies { controls.append(try Self.control(from: reply)) }
        return controls
    }

    /// One campaign's final results to count (status → how many), for ``countResults(_:)``.
    public struct CampaignCount: Sendable, Equatable {
        public var appID: String
        public var campaignID: String
        public var counts: [(status: DeliveryStatus, count: Int)]

        public init(appID: String, campaignID: String, counts: [(status: DeliveryStatus, count: Int)]) {
            self.appID = appID; self.campaignID = campaignID; self.counts = counts
        }

        public static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.appID == rhs.appID && lhs.campaignID == rhs.campaignID
                && lhs.counts.map(\.status) == rhs.counts.map(\.status) && lhs.counts.map(\.count) == rhs.counts.map(\.count)
        }
    }

    /// The script calls that count final results per campaign and apply the guardrail: one per
    /// campaign, to be sent in the record's round trip (``record(_:invalid:counts:)``).
    static func countCommands(_ counts: [CampaignCount], guardSettings: CampaignGuard, ttlMs: Int64) -> [[RedisArgument]] {
        counts.compactMap { campaign in
            let nonzero = campaign.counts.filter { $0.count > 0 }
            if nonzero.isEmpty { return nil }
            let keys = [RedisKeys.campaignControl(appID: campaign.appID, campaignID: campaign.campaignID),
                        RedisKeys.campaignCounts(appID: campaign.appID, campaignID: campaign.campaignID),
                        RedisKeys.campaignRate(appID: campaign.appID, campaignID: campaign.campaignID)]
            var arguments: [RedisArgument] = [.string("\(guardSettings.invalidShare)"), .int(Int64(max(0, guardSettings.minSends))), .int(ttlMs)]
            for (status, count) in nonzero {
                arguments.append(.string(status.rawValue))
                arguments.append(.int(Int64(count)))
            }
            return countScript.invocation(keys: keys, arguments: arguments)
        }
    }

    /// `HMGET` of a control's fields, in the order ``control(from:)`` reads them.
    static func controlRead(appID: String, campaignID: String) -> [RedisArgument] {
        ["HMGET", .string(RedisKeys.campaignControl(appID: appID, campaignID: campaignID)), "s", "r", "t", "d", "at", "g"]
    }

    /// A control from an `HMGET s r t d at g` reply (or the control script's answer).
    static func control(from reply: RedisReply) throws(RedisError) -> CampaignControl {
        guard case .array(let fields) = reply, fields.count == 6 else { throw RedisError("a campaign control read answered \(reply)") }
        let state: CampaignState
        switch fields[0].text {
        case nil: state = .active
        case let text?:
            guard let known = CampaignState(rawValue: text) else { throw RedisError("unknown campaign state \(text)") }
            state = known
        }
        let throttle = fields[2].integerValue.flatMap { $0 > 0 ? Int(clamping: $0) : nil }
        let sendBy = fields[3].integerValue.flatMap { $0 > 0 ? $0 : nil }
        return CampaignControl(state: state, reason: fields[1].text.flatMap { $0.isEmpty ? nil : $0 }, throttlePerMinute: throttle,
                               sendByMs: sendBy, updatedAtMs: fields[4].integerValue, guardReleased: fields[5].integerValue == 1)
    }

    private static func pairs(_ reply: RedisReply) -> [(String, Int64)] {
        guard case .array(let items) = reply else { return [] }
        var out: [(String, Int64)] = []
        var index = 0
        while index + 1 < items.count {
            if let name = items[index].text, let value = items[index + 1].integerValue { out.append((name, value)) }
            index += 2
        }
        return out
    }

    /// An operator's action. KEYS[1]: the control hash. ARGV: action, value ('' = none), TTL ms.
    /// A cancelled campaign refuses every action but cancel (`CANCELLED` error). Resuming a
    /// campaign the guardrail paused sets `g` (the guardrail leaves it alone from then on).
    /// Answers the control's fields as `HMGET s r t d at g`.
    static let controlScript = RedisScript("""
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        local key, action, value = KEYS[1], ARGV[1], ARGV[2]
        local state = redis.call('HGET', key, 's')
        if state == 'cancelled' and action ~= 'cancel' then return redis.error_reply('CANCELLED the campaign is cancelled') end
        if action == 'pause' or action == 'cancel' then
          redis.call('HSET', key, 's', action == 'pause' and 'paused' or 'cancelled')
          if value ~= '' then redis.call('HSET', key, 'r', value) else redis.call('HDEL', key, 'r') end
        elseif action == 'resume' then
          local reason = redis.call('HGET', key, 'r')
          if state == 'paused' and reason and string.sub(reason, 1, 10) == 'guardrail:' then redis.call('HSET', key, 'g', 1) end
          redis.call('HDEL', key, 's', 'r')
        elseif action == 'throttle' or action == 'deadline' then
          local field = action == 'throttle' and 't' or 'd'
          if value ~= '' then redis.call('HSET', key, field, value) else redis.call('HDEL', key, field) end
        else
          return redis.error_reply('ERR unknown campaign action ' .. action)
        end
        redis.call('HSET', key, 'at', string.format('%d', now))
        redis.call('PEXPIRE', key, ARGV[3])
        return redis.call('HMGET', key, 's', 'r', 't', 'd', 'at', 'g')
        """)

    /// Counts final results and applies the guardrail. KEYS: control, counts, rate. ARGV: the
    /// guardrail's share and minimum, the counts' TTL ms, then pairs of status and count. A
    /// campaign still active (and not released from the guardrail) whose `invalid_token` +
    /// `rejected` results exceed the share of its `sent` + `failed` + `invalid_token` + `rejected`
    /// results, once those reach the minimum, is paused with the reason. Answers its state.
    static let countScript = RedisScript("""
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        local minute = math.floor(now / 60000)
        local ctl, counts, rate = KEYS[1], KEYS[2], KEYS[3]
        local share, minimum, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
        for i = 4, #ARGV, 2 do
          redis.call('HINCRBY', counts, ARGV[i], ARGV[i + 1])
          if ARGV[i] == 'sent' then
            redis.call('HINCRBY', rate, minute, ARGV[i + 1])
            redis.call('HDEL', rate, minute - 3)
            redis.call('PEXPIRE', rate, 180000)
          end
        end
        redis.call('PEXPIRE', counts, ttl)
        local st = redis.call('HMGET', ctl, 's', 'g')
        if st[1] or st[2] or minimum <= 0 then return st[1] or 'active' end
        local c = redis.call('HMGET', counts, 'sent', 'failed', 'invalid_token', 'rejected')
        local bad = (tonumber(c[3]) or 0) + (tonumber(c[4]) or 0)
        local total = (tonumber(c[1]) or 0) + (tonumber(c[2]) or 0) + bad
        if total >= minimum and bad > share * total then
          local why = string.format('guardrail: %d of %d results invalid_token or rejected (over %d%%)', bad, total, math.floor(share * 100 + 0.5))
          redis.call('HSET', ctl, 's', 'paused', 'r', why, 'at', string.format('%d', now))
          redis.call('PEXPIRE', ctl, ttl)
          return 'paused'
        end
        return 'active'
        """)
}
