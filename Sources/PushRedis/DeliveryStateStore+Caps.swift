import PushCore

/// Frequency caps (docs/caps.md): one sorted set per app + user + category
/// (``RedisKeys/frequencyCap(appID:userID:category:)``) of the user's sends, member
/// ``RedisKeys/capMember(campaignID:key:)`` (campaign and msgId fingerprint), score the send's
/// time on Redis's clock. A send is reserved with its claim and decided there: on a standalone
/// Redis inside the claim script (one atomic step), on a Cluster by ``capReserveScript`` per user
/// in the claim's own round trip.
extension DeliveryStateStore {
    /// The cap a recipient's send counts against.
    public struct CapTarget: Sendable, Equatable {
        /// ``RedisKeys/frequencyCap(appID:userID:category:)``.
        public var key: String
        /// The category's caps as the scripts read them (``FrequencyCaps/scriptArgument(_:)``).
        public var rules: String
        /// The category's longest window (ms): the set's time to live.
        public var longestMs: Int64

        public init(key: String, rules: String, longestMs: Int64) {
            self.key = key; self.rules = rules; self.longestMs = longestMs
        }

        public init(appID: String, userID: String, category: String, rules: [CapRule]) {
            self.init(key: RedisKeys.frequencyCap(appID: appID, userID: userID, category: category),
                      rules: FrequencyCaps.scriptArgument(rules), longestMs: rules.map(\.windowMs).max() ?? 1000)
        }
    }

    /// What a record does to a send's reservation: a sent one is confirmed (added again if it
    /// was lost, so a sent notification always counts); a send that failed is given back.
    public struct CapChange: Sendable, Equatable {
        public var target: CapTarget
        /// True: confirm (sent); false: give the reservation back (not sent).
        public var confirm: Bool

        public init(target: CapTarget, confirm: Bool) {
            self.target = target; self.confirm = confirm
        }
    }

    /// The cap sets of one standalone claim call: distinct sets in first-seen order, their caps,
    /// and each item's set position (1-based; 0: not counted). Empty when no item is counted.
    struct CapKeys {
        private(set) var keys: [RedisArgument] = []
        private(set) var rules: [RedisArgument] = []
        private(set) var positions: [Int] = []

        init() {}

        init(_ items: [ClaimItem], _ group: [Int]) {
            guard group.contains(where: { items[$0].cap != nil }) else { return }
            var seen: [String: Int] = [:]
            positions.reserveCapacity(group.count)
            for index in group {
                guard let cap = items[index].cap else {
                    positions.append(0)
                    continue
                }
                if let known = seen[cap.key] {
                    positions.append(known)
                    continue
                }
                keys.append(.string(cap.key))
                rules.append(.string(cap.rules))
                seen[cap.key] = keys.count
                positions.append(keys.count)
            }
        }
    }

    /// One Cluster reservation call: one user's cap set and the items it reserves for.
    struct CapReservation {
        var target: CapTarget
        var indices: [Int]
        var command: [RedisArgument]
    }

    /// The reservation calls of a Cluster claim: one ``capReserveScript`` call per cap set.
    static func capReservations(_ items: [ClaimItem], nowMs: Int64?) -> [CapReservation] {
        var order: [String] = []
        var byKey: [String: (target: CapTarget, indices: [Int])] = [:]
        for (index, item) in items.enumerated() {
            guard let cap = item.cap else { continue }
            if byKey[cap.key] == nil {
                order.append(cap.key)
                byKey[cap.key] = (cap, [])
            }
            byKey[cap.key]?.indices.append(index)
        }
        return order.compactMap { key in
            guard let (target, indices) = byKey[key] else { return nil }
            var arguments: [RedisArgument] = [.int(nowMs.map { max(0, $0) } ?? -1), .string(target.rules)]
            for index in indices { arguments.append(.string(RedisKeys.capMember(campaignID: items[index].campaignID, key: items[index].key))) }
            return CapReservation(target: target, indices: indices, command: capReserveScript.invocation(keys: [key], arguments: arguments))
        }
    }

    /// Applies a Cluster claim's reservations to its answers: an item claimed whose user is at a
    /// cap answers ``ClaimReply/capped`` and its claim is given back; a reservation made for an
    /// item the claim did not take is given back. Both cost one more round trip, only when needed.
    func settleReservations(_ items: [ClaimItem], _ answers: inout [ClaimReply], _ reservations: [CapReservation],
                            _ replies: [RedisReply]) throws(RedisError) {
        var fixes: [RecordEntry] = []
        for (reservation, reply) in zip(reservations, replies) {
            if let message = reply.errorMessage { throw RedisError(message) }
            guard case .array(let codes) = reply, codes.count == reservation.indices.count else {
                throw RedisError("the cap reservation answered \(reply) for \(reservation.indices.count) items")
            }
            for (code, index) in zip(codes, reservation.indices) {
                guard let reserved = code.integerValue, (0...2).contains(reserved) else { throw RedisError("the cap reservation answered \(code)") }
                let item = items[index]
                switch answers[index] {
                case .claimed, .alreadyOurs, .claimedResend:
                    guard reserved == 0 else { continue }
                    answers[index] = .capped
                    fixes.append(RecordEntry(appID: item.appID, campaignID: item.campaignID, key: item.key, owner: item.owner, sentRetentionMs: nil))
                case .alreadySent, .claimedElsewhere, .unansweredFinal, .paused, .cancelled, .capped:
                    guard reserved == 1 else { continue }
                    fixes.append(RecordEntry(appID: item.appID, campaignID: item.campaignID, key: item.key, owner: item.owner, sentRetentionMs: nil,
                                             cap: CapChange(target: reservation.target, confirm: false)))
                }
            }
        }
        if !fixes.isEmpty { try record(fixes) }
    }

    /// The record's cap commands: per cap set, one ``capConfirmScript`` call for its sent
    /// entries and one `ZREM` for the reservations given back.
    static func capRecordCommands(_ entries: [RecordEntry]) -> [[RedisArgument]] {
        guard entries.contains(where: { $0.cap != nil }) else { return [] }
        var order: [String] = []
        var byKey: [String: (target: CapTarget, confirm: [RedisArgument], giveBack: [RedisArgument])] = [:]
        for entry in entries {
            guard let change = entry.cap else { continue }
            let key = change.target.key
            if byKey[key] == nil {
                order.append(key)
                byKey[key] = (change.target, [], [])
            }
            let member = RedisArgument.string(RedisKeys.capMember(campaignID: entry.campaignID, key: entry.key))
            if change.confirm { byKey[key]?.confirm.append(member) } else { byKey[key]?.giveBack.append(member) }
        }
        var commands: [[RedisArgument]] = []
        for key in order {
            guard let (target, confirm, giveBack) = byKey[key] else { continue }
            if !confirm.isEmpty { commands.append(capConfirmScript.invocation(keys: [key], arguments: [.int(target.longestMs)] + confirm)) }
            if !giveBack.isEmpty { commands.append(["ZREM", .string(key)] + giveBack) }
        }
        return commands
    }

    /// The sliding-window cap in Lua, shared by the claim and reservation scripts.
    /// `cap_open(key, rules, now)` drops the sends older than the longest window and reads the
    /// rest; `cap_take(st, member, now)` answers 2 when the member is there already (a resend, a
    /// renewal, another worker's claim of the same msgId), 1 when it is added now, 0 when the
    /// user is at a cap: for some cap, the distinct campaigns with a send within its window reach
    /// its count. A send of a campaign the user already has within the longest window (another
    /// device of the user) joins it without counting again. `cap_close(st)` keeps a set written
    /// to for its longest window.
    static let capFunctions = """
        local function cap_open(key, rules, now)
          local st = {key = key, rules = {}, longest = 0, entries = {}, touched = false}
          for c, w in string.gmatch(rules, '(%d+):(%d+)') do
            c, w = tonumber(c), tonumber(w)
            st.rules[#st.rules + 1] = {c, w}
            if w > st.longest then st.longest = w end
          end
          redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now - st.longest))
          local flat = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
          for i = 1, #flat, 2 do st.entries[flat[i]] = tonumber(flat[i + 1]) end
          return st
        end
        local function cap_take(st, member, now)
          if st.entries[member] then return 2 end
          local campaign = string.match(member, '^(.*)|')
          local same = false
          for m in pairs(st.entries) do
            if string.match(m, '^(.*)|') == campaign then same = true break end
          end
          if not same then
            for _, rule in ipairs(st.rules) do
              local from, n, seen = now - rule[2], 0, {}
              for m, at in pairs(st.entries) do
                if at > from then
                  local c = string.match(m, '^(.*)|')
                  if not seen[c] then seen[c] = true n = n + 1 end
                end
              end
              if n >= rule[1] then return 0 end
            end
          end
          redis.call('ZADD', st.key, string.format('%d', now), member)
          st.entries[member] = now
          st.touched = true
          return 1
        end
        local function cap_close(st)
          if st.touched then redis.call('PEXPIRE', st.key, st.longest) end
        end

        """

    /// A Cluster's reservation (one user's cap set). KEYS[1]: the set. ARGV: now ms (-1:
    /// Redis's `TIME`), the caps (`count:windowMs,…`), then one member per item. Replies per
    /// member: 0 at a cap (nothing added), 1 reserved now, 2 there already.
    static let capReserveScript = RedisScript(capFunctions + """
        local now = tonumber(ARGV[1])
        if now < 0 then
          local t = redis.call('TIME')
          now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        end
        local st = cap_open(KEYS[1], ARGV[2], now)
        local out = {}
        for i = 3, #ARGV do out[#out + 1] = cap_take(st, ARGV[i], now) end
        cap_close(st)
        return out
        """)

    /// A sent send's confirmation. KEYS[1]: the cap set. ARGV: its longest window ms, then the
    /// members: each is added at Redis's time unless it is there already (its reservation), and
    /// the set lives for the longest window.
    static let capConfirmScript = RedisScript("""
        local t = redis.call('TIME')
        local now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
        for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'NX', now, ARGV[i]) end
        redis.call('PEXPIRE', KEYS[1], ARGV[1])
        return #ARGV - 1
        """)
}
