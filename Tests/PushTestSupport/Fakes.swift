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
