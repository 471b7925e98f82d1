import Dispatch
import PushRuntime
import PushCore
import PushDelivery
import PushKafka
import PushPipeline
import PushProviders
import PushRedis
import PushWorker
import Synchronization

/// A clock the test moves: wall and monotonic seconds advance together; ``skew`` shifts the wall
/// clock alone (a worker whose clock runs ahead or behind).
public final class ManualClock: PipelineClock {
    private let state: Mutex<(wall: Double, monotonic: Double)>

    public init(wall: Double = 1_800_000_000, monotonic: Double = 1_000) {
        state = Mutex((wall, monotonic))
    }

    public var wallSeconds: Double { state.withLock { $0.wall } }
    public var monotonicSeconds: Double { state.withLock { $0.monotonic } }

    public func advance(_ seconds: Double) {
        state.withLock { $0.wall += seconds; $0.monotonic += seconds }
    }

    public func skew(_ seconds: Double) { state.withLock { $0.wall += seconds } }
}

/// The fleet's delivery state in memory (``InMemoryClaims`` for claims), judged by its own clock
/// (Redis's), shared by as many fake workers as a test makes; it can be made unreachable.
public final class FakeDeliveryState: DeliveryStatePort {
    /// Redis's clock.
    public let clock: ManualClock
    private struct State {
        var claims = InMemoryClaims()
        var invalid: [String: Int64] = [:]
        /// Backoff ends on Redis's clock (Unix seconds), by `app|provider`.
        var backoffs: [String: Double] = [:]
        var records: [DeliveryStateStore.RecordEntry] = []
        var claimCalls = 0
        /// Tokens left per bucket key (absent: unlimited).
        var tokens: [String: Int] = [:]
        var unanswered: [UInt64: Int] = [:]
        /// Campaign controls and final-result counts, by `app|campaign`.
        var controls: [String: CampaignControl] = [:]
        var counts: [String: [DeliveryStatus: Int]] = [:]
        var caps = InMemoryCaps()
    }
    private let state = Mutex(State())
    /// The guardrail applied as results are counted.
    public let guardSettings: CampaignGuard
    private let reachable = Atomic<Bool>(true)

    public init(clock: ManualClock, guardSettings: CampaignGuard = CampaignGuard()) {
        self.clock = clock
        self.guardSettings = guardSettings
    }

    public var isAvailable: Bool {
        get { reachable.load(ordering: .relaxed) }
        set { reachable.store(newValue, ordering: .relaxed) }
    }

    private func key(_ app: String, _ campaign: String, _ dedup: DedupKey) -> InMemoryClaims.Key {
        InMemoryClaims.Key(app: app, campaign: campaign, member: dedup.fingerprint)
    }

    public func claim(_ items: [DeliveryStateStore.ClaimItem], leaseMs: Int64, unansweredLimit: Int,
                      backoffs: [(appID: String, provider: String)],
                      controls: [(appID: String, campaignID: String)]) throws(RedisError) -> DeliveryStateStore.ClaimAnswers {
        guard isAvailable else { throw RedisError("unreachable", isConnectionError: true) }
        let nowMs = Int64(clock.wallSeconds * 1000)
        let now = clock.wallSeconds
        let honoured = Set(controls.map { "\($0.appID)|\($0.campaignID)" })
        return state.withLock { state in
            state.claimCalls += 1
            // As a standalone Redis's claim script: a paused or cancelled campaign's unsent items are not claimed.
            let replies = items.map { item -> ClaimReply in
                let name = "\(item.appID)|\(item.campaignID)"
                if honoured.contains(name), let control = state.controls[name], control.state != .active,
                   !state.claims.isSent(key(item.appID, item.campaignID, item.key)) {
                    return control.state == .paused ? .paused : .cancelled
                }
                let claimKey = key(item.appID, item.campaignID, item.key)
                // As the claim script: a send the claim would take is decided against its cap first.
                if let cap = item.cap, [.claimed, .alreadyOurs, .claimedResend].contains(
                    state.claims.peek(claimKey, owner: item.owner, nowMs: nowMs, unansweredLimit: unansweredLimit)),
                   state.caps.take(key: cap.key, rules: cap.rules, member: RedisKeys.capMember(campaignID: item.campaignID, key: item.key),
                                   nowMs: nowMs) == 0 {
                    return .capped
                }
                return state.claims.claim(claimKey, owner: item.owner, nowMs: nowMs, leaseMs: leaseMs, unansweredLimit: unansweredLimit)
            }
            let controlAnswers = controls.map { state.controls["\($0.appID)|\($0.campaignID)"] ?? .none }
            let invalid = items.map { state.invalid["\($0.appID)|\($0.platform)|\($0.tokenHash)"] }
            let remaining = backoffs.map { pair -> Int64? in
                guard let until = state.backoffs["\(pair.appID)|\(pair.provider)"], until > now else { return nil }
                return Int64(((until - now) * 1000).rounded(.up))
            }
            return DeliveryStateStore.ClaimAnswers(replies: replies, invalidSinceMs: invalid, backoffRemainingMs: remaining,
                                                   controls: controlAnswers)
        }
    }

    public func controls(_ campaigns: [(appID: String, campaignID: String)]) throws(RedisError) -> [CampaignControl] {
        guard isAvailable else { throw RedisError("unreachable", isConnectionError: true) }
        return state.withLock { state in campaigns.map { state.controls["\($0.appID)|\($0.campaignID)"] ?? .none } }
    }

    public func record(_ entries: [DeliveryStateStore.RecordEntry],
                       invalid: [(appID: String, platform: String, tokenHash: String, invalidSinceMs: Int64)],
                       counts: [DeliveryStateStore.CampaignCount]) throws(RedisError) -> [(appID: String, campaignID: String, state: CampaignState)] {
        guard isAvailable else { throw RedisError("unreachable", isConnectionError: true) }
        let guardSettings = self.guardSettings
        return state.withLock { state in
            var steered: [(appID: String, campaignID: String, state: CampaignState)] = []
            for campaign in counts where campaign.counts.contains(where: { $0.count > 0 }) {
                let name = "\(campaign.appID)|\(campaign.campaignID)"
                for (status, count) in campaign.counts { state.counts[name, default: [:]][status, default: 0] += count }
                var control = state.controls[name] ?? .none
                if control.state == .active, !control.guardReleased, guardSettings.trips(counts: state.counts[name] ?? [:]) {
                    control.state = .paused
                    control.reason = CampaignStatus.guardReasonPrefix + " too many invalid_token or rejected results"
                    state.controls[name] = control
                }
                if control.state != .active { steered.append((campaign.appID, campaign.campaignID, control.state)) }
            }
            for entry in entries {
                let outcome: InMemoryClaims.Recorded = entry.sentRetentionMs != nil ? .sent
                    : entry.unansweredRetentionMs != nil ? .unanswered : .released
                state.claims.record(key(entry.appID, entry.campaignID, entry.key), owner: entry.owner, outcome)
                if outcome == .unanswered { state.unanswered[entry.key.fingerprint, default: 0] += 1 }
                if let change = entry.cap {
                    let member = RedisKeys.capMember(campaignID: entry.campaignID, key: entry.key)
                    if change.confirm { state.caps.confirm(key: change.target.key, member: member, nowMs: Int64(clock.wallSeconds * 1000)) }
                    else { state.caps.giveBack(key: change.target.key, member: member) }
                }
                state.records.append(entry)
            }
            for token in invalid {
                let name = "\(token.appID)|\(token.platform)|\(token.tokenHash)"
                state.invalid[name] = max(state.invalid[name] ?? 0, token.invalidSinceMs)
            }
            return steered
        }
    }

    /// Sets a campaign's control, as `pushworker campaign` would.
    public func setControl(app: String, campaign: String, _ control: CampaignControl) {
        state.withLock { $0.controls["\(app)|\(campaign)"] = control }
    }

    /// A campaign's control as stored.
    public func control(app: String, campaign: String) -> CampaignControl {
        state.withLock { $0.controls["\(app)|\(campaign)"] ?? .none }
    }

    /// Final results counted for a campaign.
    public func counts(app: String, campaign: String) -> [DeliveryStatus: Int] {
        state.withLock { $0.counts["\(app)|\(campaign)"] ?? [:] }
    }

    public func acquire(count: Int, from buckets: [DeliveryStateStore.Bucket]) throws(RedisError) -> (granted: Int, retryAfterMs: Int64) {
        guard isAvailable else { throw RedisError("unreachable", isConnectionError: true) }
        return state.withLock { state in
            var granted = count
            for bucket in buckets { if let left = state.tokens[bucket.key] { granted = min(granted, left) } }
            granted = max(0, granted)
            for bucket in buckets where state.tokens[bucket.key] != nil { state.tokens[bucket.key]? -= granted }
            return (granted, granted < count ? 1_000 : 0)
        }
    }

    public func setBackoff(appID: String, provider: String, milliseconds: Int64) throws(RedisError) -> Int64 {
        guard isAvailable else { throw RedisError("unreachable", isConnectionError: true) }
        let now = clock.wallSeconds
        return state.withLock { state in
            let name = "\(appID)|\(provider)"
            let until = max(state.backoffs[name] ?? 0, now + Double(milliseconds) / 1000)
            state.backoffs[name] = until
            return Int64((until - now) * 1000)
        }
    }

    public func isReachable() -> Bool { isAvailable }
    public func prepare() throws(RedisError) {}

    // MARK: what tests read and set

    /// Whether `msgID` of app `app`, campaign `campaign` is recorded as sent.
    public func isSent(app: String, campaign: String, msgID: String) -> Bool {
        state.withLock { $0.claims.isSent(key(app, campaign, DedupKey(msgID: msgID))) }
    }

    /// Unknown attempts counted for `msgID`.
    public func unansweredCount(msgID: String) -> Int {
        state.withLock { $0.unanswered[DedupKey(msgID: msgID).fingerprint] ?? 0 }
    }

    /// Who holds `msgID`'s claim, whatever its lease.
    public func holder(app: String, campaign: String, msgID: String) -> String? {
        state.withLock { $0.claims.holder(key(app, campaign, DedupKey(msgID: msgID))) }
    }

    /// Another processing (`owner`) claims `msgID` now, as a second worker would.
    @discardableResult
    public func claimAs(_ owner: String, app: String, campaign: String, msgID: String, leaseMs: Int64 = 30_000) -> ClaimReply {
        let nowMs = Int64(clock.wallSeconds * 1000)
        return state.withLock { $0.claims.claim(key(app, campaign, DedupKey(msgID: msgID)), owner: owner, nowMs: nowMs, leaseMs: leaseMs) }
    }

    /// Records `msgID` as sent by `owner`.
    public func recordSent(_ owner: String, app: String, campaign: String, msgID: String) {
        state.withLock { $0.claims.record(key(app, campaign, DedupKey(msgID: msgID)), owner: owner, .sent) }
    }

    /// Limits a bucket to `tokens` tokens in all.
    public func setTokens(_ tokens: Int, bucket: String) { state.withLock { $0.tokens[bucket] = tokens } }

    public var claimCalls: Int { state.withLock { $0.claimCalls } }

    /// The sends counted for `user`'s `category` of `app` (docs/caps.md), member → time ms.
    public func capSends(app: String, user: String, category: String) -> [String: Int64] {
        state.withLock { $0.caps.sends(key: RedisKeys.frequencyCap(appID: app, userID: user, category: category)) }
    }
}

/// A message sink that keeps what it was given, acknowledging each message on a queue of its
/// own (as a broker's delivery reports arrive on librdkafka's thread).
public final class FakeSink: MessageSink {
    final class Acknowledgement: MessageAcknowledgement, @unchecked Sendable {
        // Thread safety: immutable.
        let acked: @Sendable () -> Void
        init(_ acked: @escaping @Sendable () -> Void) { self.acked = acked }
    }

    public struct Message: Sendable {
        public var topic: String
        public var key: [UInt8]?
        public var value: [UInt8]
        public var headers: [KafkaHeader]
        public var text: String { String(decoding: value, as: UTF8.self) }
    }

    private let messages = Mutex<[Message]>([])
    private let acks = DispatchQueue(label: "fake-sink.acks")
    public let deadLetterMaxBytes: Int

    public init(deadLetterMaxBytes: Int = 1 << 20) { self.deadLetterMaxBytes = deadLetterMaxBytes }

    public func acknowledgement(_ acked: @escaping @Sendable () -> Void) -> MessageAcknowledgement { Acknowledgement(acked) }

    public func produce(topic: String, key: UnsafeRawBufferPointer?, value: UnsafeRawBufferPointer, acknowledgement: MessageAcknowledgement) {
        messages.withLock { $0.append(Message(topic: topic, key: key.map { Array($0) }, value: Array(value), headers: [])) }
        guard let handler = acknowledgement as? Acknowledgement else { return }
        acks.async { handler.acked() }
    }

    public func produce(topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader], acked: @escaping @Sendable () -> Void) {
        messages.withLock { $0.append(Message(topic: topic, key: key, value: value, headers: headers)) }
        acks.async { acked() }
    }

    public func flush(timeout: Duration) { acks.sync {} }

    /// Everything produced to `topic`, in order.
    public func produced(_ topic: String) -> [Message] { messages.withLock { $0.filter { $0.topic == topic } } }
}

/// A provider transport the test answers by hand. A request is either written at once (its
/// write check asked then) or, with ``queuesWrites``, waits as if for a connection slot until
/// ``writeQueued()``; written requests wait for ``answer(_:_:)`` unless ``responder`` answers them.
public final class FakeTransport: ProviderTransport {
    public struct Written: Sendable {
        public var request: ProviderRequest
        /// Huawei batches: the tokens of the batch.
        public var tokens: [String]?
    }

    private struct Waiting {
        var request: ProviderRequest
        var tokens: [String]?
        var shouldWrite: @Sendable () -> Bool
        var complete: @Sendable (Deliverer.Attempt) -> Void
    }

    private struct State {
        var queued: [Waiting] = []
        var pending: [(id: Int, waiting: Waiting)] = []
        var written: [Written] = []
        var withheld = 0
        var nextID = 0
        var isShutDown = false
    }
    private let state = Mutex(State())
    /// Answers written requests at once when set.
    public let responder: Mutex<(@Sendable (ProviderRequest) -> Deliverer.Attempt)?> = Mutex(nil)
    public let queuesWrites: Bool

    public init(queuesWrites: Bool = false) { self.queuesWrites = queuesWrites }

    public func deliver(_ item: SendItem, credentials: AppCredentials, shouldWrite: @escaping @Sendable () -> Bool,
                        completion: @escaping Deliverer.Completion) {
        submit(Waiting(request: item.request, tokens: nil, shouldWrite: shouldWrite, complete: completion))
    }

    public func deliverHMSBatch(_ request: ProviderRequest, tokens: [String], credentials: AppCredentials,
                                shouldWrite: @escaping @Sendable () -> Bool, completion: @escaping @Sendable ([Deliverer.Attempt]) -> Void) {
        let count = tokens.count
        submit(Waiting(request: request, tokens: tokens, shouldWrite: shouldWrite,
                       complete: { attempt in completion(Array(repeating: attempt, count: count)) }))
    }

    private func submit(_ waiting: Waiting) {
        if queuesWrites {
            state.withLock { $0.queued.append(waiting) }
        } else {
            write(waiting)
        }
    }

    private func write(_ waiting: Waiting) {
        guard waiting.shouldWrite() else {
            state.withLock { $0.withheld += 1 }
            return waiting.complete(Self.withheld)
        }
        let answer = responder.withLock { $0 }
        state.withLock { state in
            state.written.append(Written(request: waiting.request, tokens: waiting.tokens))
            if answer == nil {
                state.pending.append((state.nextID, waiting))
                state.nextID += 1
            }
        }
        if let answer { waiting.complete(answer(waiting.request)) }
    }

    public func holdWakeUps() {}
    public func releaseWakeUps() {}

    public func withdrawQueued() {
        let queued = state.withLock { state in defer { state.queued.removeAll() }; return state.queued }
        for waiting in queued { write(waiting) }
    }

    /// Lets the queued requests through (each asks its write check).
    public func writeQueued() { withdrawQueued() }

    public func shutdown(drainTimeout: Duration) {
        let (pending, queued) = state.withLock { state in
            defer { state.pending.removeAll(); state.queued.removeAll(); state.isShutDown = true }
            return (state.pending.map(\.waiting), state.queued)
        }
        for waiting in pending { waiting.complete(Self.abortedUnanswered) }
        for waiting in queued { waiting.complete(Self.notStarted) }
    }

    /// Answers the oldest unanswered written requests, `count` of them (all when nil).
    public func answer(_ attempt: Deliverer.Attempt, count: Int? = nil) {
        let taken: [Waiting] = state.withLock { state in
            let n = min(count ?? state.pending.count, state.pending.count)
            defer { state.pending.removeFirst(n) }
            return state.pending.prefix(n).map(\.waiting)
        }
        for waiting in taken { waiting.complete(attempt) }
    }

    /// Requests written so far, in order.
    public var written: [Written] { state.withLock { $0.written } }
    public var pendingCount: Int { state.withLock { $0.pending.count } }
    public var queuedCount: Int { state.withLock { $0.queued.count } }
    public var withheldCount: Int { state.withLock { $0.withheld } }

    // MARK: attempts

    public static let ok = Deliverer.Attempt(outcome: .sent(providerMessageID: "id"), httpStatus: 200, latencyMs: 1, attempts: 1,
                                             certainty: .answered)
    public static let timedOut = Deliverer.Attempt(outcome: .retry(reason: "unanswered", retryAfterSeconds: nil, scope: .recipient),
                                                   httpStatus: nil, latencyMs: 1000, attempts: 1, certainty: .unknown, transport: .unanswered)
    public static let abortedUnanswered = timedOut
    public static let notStarted = Deliverer.Attempt(outcome: .retry(reason: "shutdown", retryAfterSeconds: nil, scope: .recipient),
                                                     httpStatus: nil, latencyMs: 0, attempts: 1, certainty: .notDelivered, transport: .shutdown)
    public static let connectFailed = Deliverer.Attempt(outcome: .retry(reason: "connect_error", retryAfterSeconds: nil, scope: .provider),
                                                        httpStatus: nil, latencyMs: 1, attempts: 1, certainty: .notDelivered, transport: .connect)
    public static let withheld = Deliverer.Attempt(outcome: .retry(reason: "withheld", retryAfterSeconds: nil, scope: .recipient),
                                                   httpStatus: nil, latencyMs: 0, attempts: 0, certainty: .withheld)

    /// A 429 that names no device, with `Retry-After`.
    public static func quotaExceeded(retryAfter: Double) -> Deliverer.Attempt {
        Deliverer.Attempt(outcome: .retry(reason: "QUOTA_EXCEEDED", retryAfterSeconds: retryAfter, scope: .provider), httpStatus: 429,
                          latencyMs: 1, attempts: 1, certainty: .answered)
    }
}

/// A consumer group of one member, in memory: the messages and rebalances a test queues, and
/// what the worker did with them (commits, pauses).
public final class FakeJobSource: JobSource {
    private struct State: Sendable {
        var polled: [Result<KafkaMessage, KafkaError>] = []
        var events: [KafkaRebalanceEvent] = []
        var committed: [TopicPartition: Int64] = [:]
        var paused: Set<TopicPartition> = []
        var joined = false
        var closed = false
    }
    private let state = Mutex(State())

    public init() {}

    /// Queues a message for ``poll(timeout:)``.
    public func enqueue(_ message: KafkaMessage) { state.withLock { $0.polled.append(.success(message)) } }
    /// Queues a rebalance; an assignment also makes the member joined.
    public func rebalance(_ event: KafkaRebalanceEvent) {
        state.withLock {
            $0.events.append(event)
            if case .assigned = event { $0.joined = true }
        }
    }
    public var committed: [TopicPartition: Int64] { state.withLock { $0.committed } }
    public var paused: Set<TopicPartition> { state.withLock { $0.paused } }
    public var isClosed: Bool { state.withLock { $0.closed } }

    public func poll(timeout: Duration) -> Result<KafkaMessage, KafkaError>? {
        state.withLock { $0.polled.isEmpty ? nil : $0.polled.removeFirst() }
    }
    public func drainRebalanceEvents() -> [KafkaRebalanceEvent] {
        state.withLock { state in
            defer { state.events.removeAll() }
            return state.events
        }
    }
    public func pause(_ partitions: [TopicPartition]) { state.withLock { $0.paused.formUnion(partitions) } }
    public func resume(_ partitions: [TopicPartition]) { state.withLock { $0.paused.subtract(partitions) } }
    public func commit(_ offsets: [TopicPartition: Int64]) throws(KafkaError) {
        state.withLock { $0.committed.merge(offsets) { max($0, $1) } }
    }
    public func lag(timeout: Duration) -> [TopicPartition: Int64] { [:] }
    public var hasJoinedGroup: Bool { state.withLock { $0.joined } }
    public func close() { state.withLock { $0.closed = true } }
}
