import PushCore
import PushKafka
import Synchronization

/// A settable Unix clock (seconds), injected where code takes `() -> Double`.
public final class TestClock: Sendable {
    private let value: Mutex<Double>
    public init(_ start: Double) { value = Mutex(start) }
    public func set(_ now: Double) { value.withLock { $0 = now } }
    public func advance(_ seconds: Double) { value.withLock { $0 += seconds } }
    public var now: Double { value.withLock { $0 } }
}

/// Kafka messages for tests of code that only reads them (no broker).
public enum FakeMessages {
    public static func message(topic: String = "push.jobs.v1", partition: Int32 = 0, offset: Int64, value: String = "{}") -> KafkaMessage {
        KafkaMessage(topic: topic, partition: partition, offset: offset, key: Array("k\(offset)".utf8), value: Array(value.utf8),
                     headers: [], timestampMs: nil)
    }
}

/// The fleet's claim protocol (docs/reference/redis.md) as a plain Swift model: what the Lua claim
/// and record scripts of `DeliveryStateStore` must do, item by item. Tests run the same
/// operations against the model and against a real Redis and compare every answer.
public struct InMemoryClaims: Sendable {
    public struct Key: Hashable, Sendable {
        public var app: String
        public var campaign: String
        public var member: UInt64
        public init(app: String, campaign: String, member: UInt64) { self.app = app; self.campaign = campaign; self.member = member }
    }
    private var sent: Set<Key> = []
    private var claims: [Key: (owner: String, untilMs: Int64)] = [:]
    private var unanswered: [Key: Int] = [:]

    public init() {}

    /// Answers as the claim script does, taking the claim unless another owner's lease is alive
    /// or the unknown attempts reached `unansweredLimit`.
    public mutating func claim(_ key: Key, owner: String, nowMs: Int64, leaseMs: Int64, unansweredLimit: Int = 2) -> ClaimReply {
        if sent.contains(key) { return .alreadySent }
        var reply = ClaimReply.claimed
        if let held = claims[key] {
            if held.owner == owner { reply = .alreadyOurs } else if held.untilMs > nowMs { return .claimedElsewhere }
        }
        if reply == .claimed, let count = unanswered[key], count > 0 {
            if count >= unansweredLimit { return .unansweredFinal }
            reply = .claimedResend
        }
        claims[key] = (owner, nowMs + leaseMs)
        return reply
    }

    /// The answer ``claim(_:owner:nowMs:leaseMs:unansweredLimit:)`` would give, changing nothing.
    public func peek(_ key: Key, owner: String, nowMs: Int64, unansweredLimit: Int = 2) -> ClaimReply {
        var copy = self
        return copy.claim(key, owner: owner, nowMs: nowMs, leaseMs: 1, unansweredLimit: unansweredLimit)
    }

    /// How a recorded outcome ends a claim.
    public enum Recorded: Sendable { case sent, released, unanswered }

    /// Records as the record script does: sent joins the set; unanswered counts one more unknown
    /// attempt; the claim goes only if `owner` holds it.
    public mutating func record(_ key: Key, owner: String, _ outcome: Recorded) {
        switch outcome {
        case .sent: sent.insert(key)
        case .unanswered: unanswered[key, default: 0] += 1
        case .released: break
        }
        if claims[key]?.owner == owner { claims[key] = nil }
    }

    /// Records as the record script does (sent or released).
    public mutating func record(_ key: Key, owner: String, sent isSent: Bool) {
        record(key, owner: owner, isSent ? .sent : .released)
    }

    /// Whether `key` is recorded as sent.
    public func isSent(_ key: Key) -> Bool { sent.contains(key) }

    /// The claim's holder, whatever its lease.
    public func holder(_ key: Key) -> String? { claims[key]?.owner }
}

/// Frequency caps (docs/caps.md) as a plain Swift model of the cap scripts' `cap_take`: per cap
/// set, member (`campaign|fingerprint`) → send time ms.
public struct InMemoryCaps: Sendable {
    private var sets: [String: [String: Int64]] = [:]

    public init() {}

    /// As `cap_take` after `cap_open`: sends older than the longest window are dropped; 2 when
    /// `member` is there, 0 when some cap's window holds its count of distinct campaigns (and
    /// the member's campaign is not among the kept sends), else 1 and the member is added.
    public mutating func take(key: String, rules: String, member: String, nowMs: Int64) -> Int {
        let caps: [(count: Int, windowMs: Int64)] = rules.split(separator: ",").compactMap { rule in
            let parts = rule.split(separator: ":")
            guard parts.count == 2, let count = Int(parts[0]), let window = Int64(parts[1]) else { return nil }
            return (count, window)
        }
        let longest = caps.map(\.windowMs).max() ?? 0
        var entries = (sets[key] ?? [:]).filter { $0.value > nowMs - longest }
        defer { sets[key] = entries }
        if entries[member] != nil { return 2 }
        let campaign = Self.campaign(member)
        if !entries.keys.contains(where: { Self.campaign($0) == campaign }) {
            for cap in caps {
                let campaigns = Set(entries.filter { $0.value > nowMs - cap.windowMs }.keys.map(Self.campaign))
                if campaigns.count >= cap.count { return 0 }
            }
        }
        entries[member] = nowMs
        return 1
    }

    /// A sent send: added unless there.
    public mutating func confirm(key: String, member: String, nowMs: Int64) {
        if sets[key]?[member] == nil { sets[key, default: [:]][member] = nowMs }
    }

    /// A reservation given back.
    public mutating func giveBack(key: String, member: String) { sets[key]?[member] = nil }

    /// The sends kept in a cap set.
    public func sends(key: String) -> [String: Int64] { sets[key] ?? [:] }

    private static func campaign(_ member: String) -> Substring {
        guard let bar = member.lastIndex(of: "|") else { return Substring(member) }
        return member[..<bar]
    }
}
