import Foundation
import PushRuntime
import PushCore
import PushDelivery
import PushKafka
import PushPipeline
import PushProviders
import PushRedis
import Synchronization

/// What happened to one recipient in one attempt (or one claim), as the result publisher records
/// and publishes it.
enum RecipientOutcome: Sendable {
    /// A final result; `token` when the provider declared the token dead; `isSent` when the
    /// provider accepted it (its msgId is recorded as sent); `countsUnanswered` when the attempt
    /// was written and never answered (the fleet counts it).
    case final(ResultRecord, token: TokenRecord? = nil, isSent: Bool = false, countsUnanswered: Bool = false)
    /// To the retry topic after `attempts` attempts in all, due in `delaySeconds`;
    /// `keepsLocalTime`: the retry job keeps the job's `sendAtLocal` (a local-time wait cut to
    /// the retry topic's longest delay, docs/local-time.md); every other retry job drops it.
    case retry(Recipient, attempts: Int, delaySeconds: Double, keepsLocalTime: Bool = false)
    /// Written and never answered, first time: the fleet counts it, then it is claimed and sent
    /// once more (``PushPipeline/AttemptDecision/resend``). `attempts`: made so far.
    case resend(attempts: Int)
    /// Written and never answered while draining: counted, claim released, nothing published.
    case leaveUnanswered
    /// Not written (or nothing delivered while its breaker is open): claim released, queued again.
    case requeue
    /// Not written while draining: claim released, nothing else.
    case release
}

/// One processing of one job (a Kafka message): its recipients' plans and de-duplication keys,
/// the claims it holds, and the accounting that releases the message's offset once every
/// recipient's result (or its hand-off to the retry topic) was acknowledged by Kafka.
///
/// A state machine behind one lock: its methods change the state and return what the caller
/// must do next (``Next``); it calls nobody. Each recipient's result goes out as soon as its
/// outcome is final (``ResultPublisher``); the retry jobs go out once every recipient has an
/// outcome.
///
/// Thread safety: immutable but for `state` and `requests`, each a Mutex.
final class JobRun: Sendable {
    let job: FanOutJob
    let credentials: AppCredentials?
    let partition: TopicPartition
    let offset: Int64
    /// The partition's ownership generation when the message was polled (``OffsetTracker``).
    let generation: Int
    /// Every recipient's plan without its provider request (``RunPlan``).
    let plans: [RunPlan]
    /// The de-duplication key of each recipient that has a msgId.
    let keys: [DedupKey?]
    /// Who claims this processing's recipients: unique per processing, so two copies of one job
    /// (even in one process) never take each other's claims.
    let owner: String
    /// How long this job's sent markers (and unanswered counts) are kept (``DedupRetention``).
    let retentionMs: Int64
    /// When processing started (Unix seconds), for `pushworker_job_seconds`.
    let startedAt: Double
    /// After this (Unix seconds) a recipient still waiting (a held endpoint, an open breaker) is
    /// `expired`: the job's `expiresAt`, else its `createdAt` (or first sight) + `ttlSeconds`, else
    /// + the de-duplication retention (past it a send could no longer be de-duplicated).
    let horizon: Double
    /// The campaign's control as this worker knows it (shared by the campaign's processings).
    let campaign: CampaignCell
    /// The endpoint id (``EndpointTable``) of each platform, by ``ProviderMetrics/index(_:)``.
    let endpoints: [Int]
    /// The job's frequency cap (docs/caps.md): its `capCategory` when `PUSHWORKER_CAPS` has caps
    /// for it, else nil (nothing counted).
    let capPolicy: CapPolicy?

    /// A job's category and its caps as the scripts read them.
    struct CapPolicy: Sendable {
        let category: String
        let rules: [CapRule]
        let scriptRules: String
        let longestMs: Int64

        init?(category: String?, caps: FrequencyCaps) {
            guard let category, let rules = caps.rules(for: category) else { return nil }
            self.category = category
            self.rules = rules
            scriptRules = FrequencyCaps.scriptArgument(rules)
            longestMs = rules.map(\.windowMs).max() ?? 1000
        }
    }

    /// The job's lane is transactional (docs/lanes.md): claimed first, free of the bulk bound.
    let transactional: Bool

    private struct State {
        /// A final outcome or retry hand-off was decided (first one wins).
        var decided: [Bool]
        /// Claimed by this processing and not yet recorded: the monotonic time of the round trip
        /// that took or last renewed the claim, else 0.
        var claimedAt: [Double]
        /// The claim said an earlier attempt's outcome is unknown: the send in flight is the resend.
        var resend: Set<Int> = []
        /// Claims a renewal found taken by another processing: their requests are not written.
        var lost: Set<Int> = []
        /// Attempts made in this processing before the one in flight (a resend after an unknown
        /// outcome is claimed and sent again by the same processing).
        var priorAttempts: [Int: Int] = [:]
        /// Recipients the provider accepted: re-recorded if Redis lost its data meanwhile.
        var sent: [Int] = []
        /// Recipients without a final result or retry hand-off yet.
        var unpublished: Int
        /// Produced and not yet acknowledged (or failed for good).
        var unacknowledged = 0
        var retries: [RetryEntry] = []
        var retryJobsProduced = false
        var isFinished = false
        /// Final results by status (``DeliveryStatus/allCases`` order), for the "job finished" log.
        var statusCounts = [Int](repeating: 0, count: DeliveryStatus.allCases.count)
    }
    private let state: Mutex<State>
    /// Each ready recipient's request, or what it is built from, until it is sent
    /// (``takeRequest(_:)``): built only when claimed for sending, so a job's memory follows the
    /// in-flight window, not its size.
    private let requests: Mutex<[JobPlan.Ready?]>
    /// Builds the pending requests (nil for an audience job, whose one request is built at once).
    let plan: JobPlan?

    struct RetryEntry: Sendable {
        var recipient: Recipient
        var attempts: Int
        var delay: Double
        var keepsLocalTime = false
    }

    /// What each recipient's plan said before any claim.
    enum Start: Sendable {
        case ready
        case expired
        case rejected(reason: String)
    }

    /// A job's plans taken apart as the planner hands them over, each plan consumed (not copied).
    struct Parts {
        fileprivate(set) var plans: [RunPlan] = []
        fileprivate(set) var requests: [JobPlan.Ready?] = []
        fileprivate(set) var keys: [DedupKey?] = []
        private(set) var starts: [Start] = []

        init(capacity: Int) {
            plans.reserveCapacity(capacity)
            requests.reserveCapacity(capacity)
            keys.reserveCapacity(capacity)
            starts.reserveCapacity(capacity)
        }

        var count: Int { plans.count }

        mutating func add(_ plan: consuming PlannedRecipient) {
            let run = RunPlan(recipient: plan.recipient, platform: plan.platform, msgID: plan.msgID, tokenHash: plan.tokenHash)
            // Swapped out of the plan (a move), so its request is not copied field by field.
            var state = PlannedRecipient.State.expired
            swap(&state, &plan.state)
            switch consume state {
            case .ready(let request): append(run, .built(request), .ready)
            case .expired: append(run, nil, .expired)
            case .rejected(let reason): append(run, nil, .rejected(reason: reason))
            }
        }

        /// One recipient as ``JobPlan/start(_:)`` saw it: its request is built later.
        mutating func add(_ start: consuming JobPlan.Start, _ recipient: Recipient) {
            let run = RunPlan(recipient: recipient, platform: recipient.platformLabel, msgID: start.msgID, tokenHash: start.tokenHash)
            switch start.state {
            case .ready(let ready): append(run, ready, .ready)
            case .expired: append(run, nil, .expired)
            case .rejected(let reason): append(run, nil, .rejected(reason: reason))
            }
        }

        private mutating func append(_ plan: consuming RunPlan, _ request: consuming JobPlan.Ready?, _ start: Start) {
            keys.append(plan.msgID.map(DedupKey.init(msgID:)))
            requests.append(request)
            starts.append(start)
            plans.append(plan)
        }
    }

    init(job: FanOutJob, credentials: AppCredentials?, partition: TopicPartition, offset: Int64, generation: Int,
         parts: consuming Parts, plan: JobPlan?, owner: String, retentionMs: Int64, startedAt: Double, endpoints: [Int],
         campaign: CampaignCell? = nil, caps: FrequencyCaps = FrequencyCaps()) {
        self.job = job
        capPolicy = CapPolicy(category: job.capCategory, caps: caps)
        self.campaign = campaign ?? CampaignCell(appID: job.appID, campaignID: job.campaignID)
        self.credentials = credentials
        self.partition = partition
        self.offset = offset
        self.generation = generation
        let count = parts.count
        self.plans = parts.plans
        self.requests = Mutex(parts.requests)
        self.plan = plan
        self.keys = parts.keys
        self.owner = owner
        self.retentionMs = retentionMs
        self.startedAt = startedAt
        self.endpoints = endpoints
        transactional = job.lane == .transactional
        horizon = Self.horizon(job: job, seenAt: startedAt, retentionMs: retentionMs)
        state = Mutex(State(decided: Array(repeating: false, count: count), claimedAt: Array(repeating: 0, count: count),
                            unpublished: count))
    }

    static func horizon(job: FanOutJob, seenAt: Double, retentionMs: Int64) -> Double {
        let sendBy = job.sendBy?.timeIntervalSince1970 ?? .infinity
        if let expiresAt = job.expiresAt { return min(sendBy, expiresAt.timeIntervalSince1970) }
        let created = job.createdAt?.timeIntervalSince1970 ?? seenAt
        if let ttl = job.ttlSeconds { return min(sendBy, created + Double(ttl)) }
        return min(sendBy, created + Double(retentionMs) / 1000)
    }

    /// The deadline that applies now (Unix seconds): the campaign control's `sendBy`, else the job's.
    var sendBy: Double? {
        if let control = campaign.control.sendByMs { return Double(control) / 1000 }
        return job.sendBy?.timeIntervalSince1970
    }

    var recipientCount: Int { plans.count }

    /// The endpoint id of recipient `index` (its app × provider).
    func endpoint(_ index: Int) -> Int {
        guard let platform = plans[index].recipient.platform else { return 0 }
        return endpoints[ProviderMetrics.index(platform)]
    }

    /// Recipient `index`'s provider request, handed over once and built now if it was not yet
    /// (nil if it had none or it was taken; a failure when the payload cannot be built, e.g. too
    /// large: the recipient is then `rejected` with the reason).
    func takeRequest(_ index: Int) -> Result<ProviderRequest, JobPlan.Rejection>? {
        let ready = requests.withLock { requests -> JobPlan.Ready? in
            guard requests.indices.contains(index) else { return nil }
            return requests[index].take()
        }
        switch ready {
        case nil: return nil
        case .built(let request)?: return .success(request)
        case .pending(let target, let languageIndex)?:
            guard let plan else { return .failure(JobPlan.Rejection(reason: "no_credentials")) }
            return plan.build(plans[index].recipient, msgID: plans[index].msgID ?? "", target: target, languageIndex: languageIndex)
        }
    }

    /// Forgets recipient `index`'s request without building it (never sent: a duplicate, a known
    /// dead token, a final unanswered).
    func dropRequest(_ index: Int) {
        requests.withLock { requests in
            if requests.indices.contains(index) { requests[index] = nil }
        }
    }

    /// Puts back a request that was not written (it is claimed and sent again later).
    func returnRequest(_ index: Int, _ request: ProviderRequest) {
        requests.withLock { requests in
            if requests.indices.contains(index) { requests[index] = .built(request) }
        }
    }

    /// The claim item of recipient `index`. Only recipients with a msgId are claimed. `counting`:
    /// the claim also decides and reserves the send against the job's frequency cap (a claim
    /// for sending; never a lease renewal or a re-record).
    func claimItem(_ index: Int, counting: Bool = false) -> DeliveryStateStore.ClaimItem {
        let key = keys[index] ?? DedupKey(msgID: "")
        return DeliveryStateStore.ClaimItem(appID: job.appID, campaignID: job.campaignID, key: key, owner: owner,
                                            platform: plans[index].platform, tokenHash: plans[index].tokenHash,
                                            cap: counting ? capTarget(index) : nil)
    }

    /// Recipient `index`'s frequency cap: nil when the job is not counted or the recipient has
    /// no `userId` (docs/caps.md).
    func capTarget(_ index: Int) -> DeliveryStateStore.CapTarget? {
        guard let capPolicy, let userID = plans[index].recipient.userID, !userID.isEmpty else { return nil }
        return DeliveryStateStore.CapTarget(key: RedisKeys.frequencyCap(appID: job.appID, userID: userID, category: capPolicy.category),
                                            rules: capPolicy.scriptRules, longestMs: capPolicy.longestMs)
    }

    /// How recipient `index`'s claim ends in the fleet's state.
    enum RecordKind { case sent, released, unanswered }

    /// What a record does to recipient `index`'s cap reservation: confirm it (sent) or give it
    /// back (claimed, not sent).
    enum CapRecord { case confirm, giveBack }

    /// The record entry of recipient `index`.
    func recordEntry(_ index: Int, _ kind: RecordKind, cap: CapRecord? = nil) -> DeliveryStateStore.RecordEntry? {
        guard let key = keys[index] else { return nil }
        let change = cap.flatMap { cap in capTarget(index).map { DeliveryStateStore.CapChange(target: $0, confirm: cap == .confirm) } }
        return DeliveryStateStore.RecordEntry(appID: job.appID, campaignID: job.campaignID, key: key, owner: owner,
                                              sentRetentionMs: kind == .sent ? retentionMs : nil,
                                              unansweredRetentionMs: kind == .unanswered ? retentionMs : nil, cap: change)
    }

    // MARK: claims held

    /// Claimed (or renewed) by a round trip sent at `at` (monotonic seconds); `resend`: the claim
    /// said this send is the resend after an unknown outcome.
    func noteClaimed(_ index: Int, at: Double, resend: Bool? = nil) {
        state.withLock { state in
            state.claimedAt[index] = at
            state.lost.remove(index)
            if let resend { if resend { state.resend.insert(index) } else { state.resend.remove(index) } }
        }
    }

    /// A renewal sent at `at` kept the claim; false when the claim was recorded (released)
    /// meanwhile, so the renewal wrote a claim nobody holds.
    func renewed(_ index: Int, at: Double) -> Bool {
        state.withLock { state in
            guard state.claimedAt[index] != 0 else { return false }
            state.claimedAt[index] = at
            return true
        }
    }

    /// A renewal found the claim taken elsewhere: its request must not be written.
    func noteLost(_ index: Int) {
        state.withLock { state in
            state.lost.insert(index)
            state.claimedAt[index] = 0
        }
        hasLostClaims.store(true, ordering: .releasing)
    }

    /// Set once any claim of this processing was lost: until then a write check needs no lock.
    private let hasLostClaims = Atomic<Bool>(false)

    /// Forgets the claim of `index` (recorded, or released); true if it was held.
    @discardableResult
    func noteClaimReleased(_ index: Int) -> Bool {
        state.withLock { state in
            defer { state.claimedAt[index] = 0 }
            return state.claimedAt[index] != 0
        }
    }

    /// Whether recipient `index`'s request may be written now (monotonic `now`): its claim is
    /// held, not lost, and its lease outlasts the request. `claimedAt`: when the claim was taken
    /// for this send; while no claim of the run was ever lost and that lease still covers the
    /// request, no lock is taken (a renewal only moves the lease later).
    func mayWrite(_ index: Int, claimedAt: Double, now: Double, leaseSeconds: Double, requestTimeoutSeconds: Double) -> Bool {
        if !hasLostClaims.load(ordering: .acquiring),
           LeaseRule.mayWrite(confirmedAt: claimedAt, now: now, leaseSeconds: leaseSeconds, requestTimeoutSeconds: requestTimeoutSeconds) {
            return true
        }
        return state.withLock { state in
            let at = state.claimedAt[index]
            return at != 0 && !state.lost.contains(index)
                && LeaseRule.mayWrite(confirmedAt: at, now: now, leaseSeconds: leaseSeconds, requestTimeoutSeconds: requestTimeoutSeconds)
        }
    }

    /// Whether the send of `index` is the resend after an unknown outcome.
    func isResend(_ index: Int) -> Bool { state.withLock { $0.resend.contains(index) } }

    /// What an attempt's decision needs of recipient `index`, in one lock: the attempts made
    /// before the one in flight, and whether that one is the resend.
    func attemptContext(_ index: Int) -> (attemptsBefore: Int, isResend: Bool) {
        state.withLock { state in
            (job.attempt + (state.priorAttempts[index] ?? 0), state.resend.contains(index))
        }
    }

    /// Attempts made for recipient `index` before the one in flight, earlier processings included.
    func attemptsBefore(_ index: Int) -> Int { job.attempt + state.withLock { $0.priorAttempts[index] ?? 0 } }

    /// Recipient `index` is queued again after `attempts` attempts in all.
    func noteAttempts(_ index: Int, total attempts: Int) {
        state.withLock { $0.priorAttempts[index] = max(0, attempts - job.attempt) }
    }

    /// Claims held and due for renewal at `now` (monotonic seconds).
    func claimsToRenew(now: Double, leaseSeconds: Double) -> [Int] {
        state.withLock { state in
            state.claimedAt.indices.filter {
                state.claimedAt[$0] != 0 && LeaseRule.needsRenewal(confirmedAt: state.claimedAt[$0], now: now, leaseSeconds: leaseSeconds)
            }
        }
    }

    /// Claims still held.
    func heldClaims() -> [Int] {
        state.withLock { state in state.claimedAt.indices.filter { state.claimedAt[$0] != 0 } }
    }

    func noteSent(_ index: Int) {
        state.withLock { $0.sent.append(index) }
    }

    /// Recipients the provider accepted so far.
    var sentIndices: [Int] { state.withLock { $0.sent } }

    // MARK: outcomes

    /// Whether `outcome` for recipient `index` is its first decided one: final results and retry
    /// hand-offs are decided once; the other outcomes leave the recipient open.
    func decide(_ index: Int, _ outcome: borrowing RecipientOutcome) -> Bool {
        switch outcome {
        case .final, .retry:
            return state.withLock { state in
                guard !state.decided[index] else { return false }
                state.decided[index] = true
                return true
            }
        case .resend, .leaveUnanswered, .requeue, .release:
            return state.withLock { !$0.decided[index] }
        }
    }

    /// What the run's owner must do after a change.
    enum Next: Sendable {
        case nothing
        /// Produce these retry jobs, then call ``acknowledged()`` once per job.
        case produceRetryJobs([[RetryEntry]])
        /// Every result was acknowledged: the offset may be released.
        case finish
    }

    /// A final outcome (`status`) was handed to the sink: `produced` messages went out for it.
    func published(producedMessages produced: Int, status: DeliveryStatus) -> Next {
        state.withLock { state in
            if let slot = DeliveryStatus.allCases.firstIndex(of: status) { state.statusCounts[slot] += 1 }
            state.unpublished -= 1
            state.unacknowledged += produced
            return Self.next(&state, holdMaxSeconds: Self.retryGroupSeconds)
        }
    }

    /// A recipient goes to the retry topic (with one of this processing's retry jobs).
    func deferToRetry(_ recipient: Recipient, attempts: Int, delay: Double, keepsLocalTime: Bool = false) -> Next {
        state.withLock { state in
            state.unpublished -= 1
            state.retries.append(RetryEntry(recipient: recipient, attempts: attempts, delay: delay, keepsLocalTime: keepsLocalTime))
            return Self.next(&state, holdMaxSeconds: Self.retryGroupSeconds)
        }
    }

    /// `sent=3 invalid_token=1 … retry=2`: the final results by status, and the retry hand-offs.
    var outcomeSummary: String {
        state.withLock { state in
            var parts = zip(DeliveryStatus.allCases, state.statusCounts).filter { $0.1 > 0 }.map { "\($0.0.rawValue)=\($0.1)" }
            if !state.retries.isEmpty { parts.append("retry=\(state.retries.count)") }
            return parts.joined(separator: " ")
        }
    }

    /// A job without recipients is done at once.
    func finishIfEmpty() -> Next {
        state.withLock { Self.next(&$0, holdMaxSeconds: Self.retryGroupSeconds) }
    }

    /// One produced message was acknowledged (or failed for good and was dealt with).
    func acknowledged() -> Next {
        state.withLock { state in
            state.unacknowledged -= 1
            return Self.next(&state, holdMaxSeconds: Self.retryGroupSeconds)
        }
    }

    /// Retries share a retry job (due at the group's longest wait) when their waits fall in the
    /// same window: 2 s wide up to a minute, a minute wide beyond. A short backoff is never
    /// stretched to a long hold's end, recipients parked for a token bucket at successive turns
    /// come back spread, and recipients deferred to different local times are each due at
    /// theirs. Retries that keep the job's `sendAtLocal` never share a job with the others.
    static let retryGroupSeconds = 60.0

    /// The window a retry's wait falls in (``retryGroupSeconds``).
    static func retryGroup(_ delay: Double, holdMaxSeconds: Double) -> Int {
        let wait = max(0, delay)
        if wait <= holdMaxSeconds { return Int(wait / 2) }
        return 1_000_000 + Int(min(wait, 1e9) / 60)
    }

    private static func next(_ state: inout State, holdMaxSeconds: Double) -> Next {
        guard state.unpublished == 0, !state.isFinished else { return .nothing }
        if !state.retries.isEmpty && !state.retryJobsProduced {
            state.retryJobsProduced = true
            let groups = retryGroups(state.retries, groupSeconds: holdMaxSeconds)
            state.unacknowledged += groups.count
            return .produceRetryJobs(groups)
        }
        guard state.unacknowledged == 0 else { return .nothing }
        state.isFinished = true
        return .finish
    }

    /// The retry jobs of `retries`: those due within `groupSeconds` together, the later ones by
    /// `groupSeconds`-wide slice of due time; separately for those that keep `sendAtLocal`.
    /// In order of first appearance.
    static func retryGroups(_ retries: [RetryEntry], groupSeconds: Double) -> [[RetryEntry]] {
        var groups: [[RetryEntry]] = []
        var groupOf: [RetryGroupKey: Int] = [:]
        for entry in retries {
            let slice = retryGroup(entry.delay, holdMaxSeconds: groupSeconds)
            let key = RetryGroupKey(slice: slice, keepsLocalTime: entry.keepsLocalTime)
            if let index = groupOf[key] { groups[index].append(entry) } else {
                groupOf[key] = groups.count
                groups.append([entry])
            }
        }
        return groups
    }

    private struct RetryGroupKey: Hashable {
        var slice: Int
        var keepsLocalTime: Bool
    }

    // MARK: results

    func result(_ index: Int, _ status: DeliveryStatus, reason: String?, atMs: Int64, httpStatus: Int? = nil,
                providerMessageID: String? = nil, attempts: Int? = nil, latencyMs: Double? = nil,
                certainty: ResultCertainty? = nil) -> ResultRecord {
        ResultRecord(jobID: job.jobID, msgID: plans[index].msgID, appID: job.appID, campaignID: job.campaignID, variant: job.variant,
                     userID: plans[index].recipient.userID, subscriptionID: plans[index].recipient.subscriptionID,
                     platform: plans[index].platform,
                     status: status, reason: reason, httpStatus: httpStatus, providerMessageID: providerMessageID,
                     attempts: attempts ?? job.attempt, latencyMs: latencyMs, atUnixMs: atMs, certainty: certainty?.rawValue)
    }

    /// The token invalidation of recipient `index`.
    func tokenRecord(_ index: Int, reason: String?, invalidSinceMs: Int64, atMs: Int64) -> TokenRecord {
        TokenRecord(appID: job.appID, platform: plans[index].platform, subscriptionID: plans[index].recipient.subscriptionID,
                    userID: plans[index].recipient.userID, tokenHash: plans[index].tokenHash, reason: reason,
                    invalidSinceMs: invalidSinceMs, atUnixMs: atMs)
    }

    /// Maps the rule's decision for one attempt onto what the publisher records and publishes.
    func outcome(_ decision: AttemptDecision, attempt: Deliverer.Attempt, index: Int, nowMs: Int64) -> RecipientOutcome {
        let attempts = attemptsBefore(index) + attempt.attempts
        func final(_ status: DeliveryStatus, _ reason: String?, id: String? = nil, certainty: ResultCertainty? = nil) -> ResultRecord {
            result(index, status, reason: reason, atMs: nowMs, httpStatus: attempt.httpStatus, providerMessageID: id,
                   attempts: attempts, latencyMs: attempt.latencyMs, certainty: certainty)
        }
        switch decision {
        case .sent(let id, let certainty):
            return .final(final(.sent, nil, id: id, certainty: certainty), isSent: true)
        case .invalidToken(let reason, let since):
            let token = tokenRecord(index, reason: reason, invalidSinceMs: since ?? nowMs, atMs: nowMs)
            return .final(final(.invalidToken, reason), token: token)
        case .rejected(let reason):
            return .final(final(.rejected, reason))
        case .failed(let reason):
            return .final(final(.failed, reason), countsUnanswered: attempt.certainty == .unknown)
        case .retry(_, let delay):
            return .retry(plans[index].recipient, attempts: attempts, delaySeconds: delay)
        case .resend:
            return .resend(attempts: attempts)
        case .leaveUnanswered:
            return .leaveUnanswered
        case .unanswered:
            return .final(final(.failed, "unanswered"), countsUnanswered: true)
        case .requeue:
            return .requeue
        case .release:
            return .release
        }
    }
}

/// What a processing keeps of a recipient's plan (``PlannedRecipient`` without its state and
/// provider request): enough for its claim, result, token record and retry.
struct RunPlan: Sendable {
    var recipient: Recipient
    var platform: String
    var msgID: String?
    var tokenHash: String
}
