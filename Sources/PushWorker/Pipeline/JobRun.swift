import Foundation
import PushCore
import PushKafka
import PushRedis
import Synchronization
import PushProviders

/// One recipient ready to send (its plan stays in its ``JobRun``).
/// A class, immutable: send items are grouped, scheduled and submitted by copy, and a struct's
/// copy retained every field of its request (docs/performance.md "Ninth session").
final class SendItem: Sendable {
    let index: Int
    let request: ProviderRequest

    init(index: Int, request: ProviderRequest) {
        self.index = index
        self.request = request
    }
}

/// What happened to one recipient in this processing.
enum RecipientOutcome: Sendable {
    /// A final result; `token` when the provider declared the token dead; `isSent` when the
    /// provider accepted it (its msgId is then recorded as sent).
    case final(ResultRecord, token: TokenRecord? = nil, isSent: Bool = false)
    /// Handed to the retry topic after `attempts` attempts in all.
    case retry(Recipient, attempts: Int, delaySeconds: Double)
}

/// One processing of one job (a Kafka message): its recipients' plans and de-duplication keys,
/// the claims it holds, and the accounting that releases the message's offset once every
/// recipient's result (or its hand-off to the retry topic) was acknowledged by Kafka.
///
/// Results stream: each recipient's result is published as soon as its outcome is final
/// (``OutcomeRecorder``), not when the whole job is done (DESIGN §4). The retry job, one per
/// processing, goes out once every recipient has an outcome.
///
/// Thread safety: immutable but for `state`, a Mutex.
final class JobRun: Sendable {
    let job: FanOutJob
    let credentials: AppCredentials?
    let partition: TopicPartition
    let offset: Int64
    /// The partition's ownership generation when the message was polled (OffsetTracker).
    let generation: Int
    /// Every recipient's plan without its provider request (``RunPlan``): that waits in
    /// `requests` until the recipient is claimed for sending and leaves with the send.
    let plans: [RunPlan]
    /// The de-duplication key of each recipient that has a msgId.
    let keys: [DedupKey?]
    /// Who claims this processing's recipients: unique per processing, so two copies of one job
    /// (even in one process) never take each other's claims.
    let owner: String
    /// How long this job's sent markers are kept (``DedupRetention``).
    let retentionMs: Int64
    /// When processing started (Unix seconds), for `pushworker_job_seconds`.
    let startedAt: Double
    unowned let worker: Worker

    private struct State {
        /// An outcome was decided (first one wins).
        var decided: [Bool]
        /// Claimed by this processing and not yet recorded: the claim time (Unix ms), else 0.
        var claimedAtMs: [Int64]
        /// Recipients the provider accepted: re-recorded if Redis lost its data meanwhile.
        var sent: [Int] = []
        /// Recipients not yet handed to the producer (or the retry list).
        var unpublished: Int
        /// Produced and not yet acknowledged (or failed for good).
        var unacknowledged = 0
        var retries: [(recipient: Recipient, attempts: Int, delay: Double)] = []
        var retryJobProduced = false
        var isFinished = false
        /// Final results by status (DeliveryStatus.allCases order), for the "job finished" log.
        var statusCounts = [Int](repeating: 0, count: DeliveryStatus.allCases.count)
    }
    private let state: Mutex<State>
    /// The provider request of each ready recipient until it is sent (``takeRequest(_:)``). A
    /// processing lives until Kafka acknowledged its last result, long after most of its requests
    /// went out; holding every payload (≈ 1–3 KB each) that long was most of the worker's peak
    /// RSS at 15–19k notifications/s (docs/performance.md, fifth session).
    private let requests: Mutex<[ProviderRequest?]>

    /// What each recipient's plan said before any claim: the worker completes the expired and
    /// rejected ones at once and queues the ready ones for claiming.
    enum Start: Sendable {
        case ready
        case expired
        case rejected(reason: String)
    }

    /// A job's plans taken apart as the planner hands them over (``JobPlanner/plan(_:profile:now:_:)``):
    /// each plan is consumed, so none is copied (iterating an array of plans copied every plan
    /// whole, its ~20 references retained and released: ≈ 4k instructions per recipient with
    /// the array's teardown, callgrind).
    struct Parts {
        fileprivate(set) var plans: [RunPlan] = []
        fileprivate(set) var requests: [ProviderRequest?] = []
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
            keys.append(plan.msgID.map(DedupKey.init(msgID:)))
            // The state is swapped out of the plan (a move), so its request is not copied
            // field by field and then released with the plan.
            var state = PlannedRecipient.State.expired
            swap(&state, &plan.state)
            switch consume state {
            case .ready(let request):
                requests.append(request)
                starts.append(.ready)
            case .expired:
                requests.append(nil)
                starts.append(.expired)
            case .rejected(let reason):
                requests.append(nil)
                starts.append(.rejected(reason: reason))
            }
            plans.append(RunPlan(recipient: plan.recipient, platform: plan.platform, msgID: plan.msgID, tokenHash: plan.tokenHash))
        }
    }

    init(job: FanOutJob, credentials: AppCredentials?, partition: TopicPartition, offset: Int64, generation: Int,
         parts: consuming Parts, owner: String, retentionMs: Int64, worker: Worker) {
        self.job = job
        self.credentials = credentials
        self.partition = partition
        self.offset = offset
        self.generation = generation
        let count = parts.count
        self.plans = parts.plans
        self.requests = Mutex(parts.requests)
        self.keys = parts.keys
        self.owner = owner
        self.retentionMs = retentionMs
        self.startedAt = Date().timeIntervalSince1970
        self.worker = worker
        state = Mutex(State(decided: Array(repeating: false, count: count),
                            claimedAtMs: Array(repeating: 0, count: count), unpublished: count))
    }

    var recipientCount: Int { plans.count }

    /// Recipient `index`'s provider request, handed over once (nil if it had none or it was
    /// taken): the caller sends it.
    func takeRequest(_ index: Int) -> ProviderRequest? {
        requests.withLock { requests in
            guard requests.indices.contains(index) else { return nil }
            // Moved out, not copied and then released (a retain and a release per field).
            return requests[index].take()
        }
    }

    /// The claim item of recipient `index`. Only recipients with a msgId are claimed (a planned
    /// recipient without one was rejected); the empty key stands for none.
    func claimItem(_ index: Int) -> DeliveryStateStore.ClaimItem {
        let key = keys[index] ?? DedupKey(msgID: "")
        // Fields read in place: copying the whole plan (recipient, payload) costs a retain per field.
        return DeliveryStateStore.ClaimItem(appID: job.appID, campaignID: job.campaignID, key: key, owner: owner,
                                            platform: plans[index].platform, tokenHash: plans[index].tokenHash)
    }

    /// The record entry of recipient `index`: sent (kept `retentionMs`) or released.
    func recordEntry(_ index: Int, sent: Bool) -> DeliveryStateStore.RecordEntry? {
        guard let key = keys[index] else { return nil }
        return DeliveryStateStore.RecordEntry(appID: job.appID, campaignID: job.campaignID, key: key, owner: owner,
                                              sentRetentionMs: sent ? retentionMs : nil)
    }

    // MARK: claims held

    func noteClaimed(_ index: Int, atMs: Int64) {
        state.withLock { $0.claimedAtMs[index] = atMs }
    }

    /// Forgets the claim of `index` (recorded, or released); true if it was held.
    @discardableResult
    func noteClaimReleased(_ index: Int) -> Bool {
        state.withLock { state in
            defer { state.claimedAtMs[index] = 0 }
            return state.claimedAtMs[index] != 0
        }
    }

    /// Claims held since before `cutoffMs`: to renew.
    func claimsOlder(than cutoffMs: Int64) -> [Int] {
        state.withLock { state in state.claimedAtMs.indices.filter { state.claimedAtMs[$0] != 0 && state.claimedAtMs[$0] < cutoffMs } }
    }

    /// Claims still held: given back when the worker stops before sending them.
    func heldClaims() -> [Int] {
        state.withLock { state in state.claimedAtMs.indices.filter { state.claimedAtMs[$0] != 0 } }
    }

    func noteSent(_ index: Int) {
        state.withLock { $0.sent.append(index) }
    }

    /// Recipients the provider accepted so far.
    var sentIndices: [Int] { state.withLock { $0.sent } }

    // MARK: outcomes

    /// Records recipient `index`'s outcome (the first one wins) and hands it to the recorder.
    /// `holdsSlot`: the recipient counts in the worker's in-flight bound until recorded.
    func complete(_ index: Int, _ outcome: consuming RecipientOutcome, holdsSlot: Bool = false) {
        let isFirst = state.withLock { state -> Bool in
            guard !state.decided[index] else { return false }
            state.decided[index] = true
            return true
        }
        guard isFirst else { return }
        worker.recorder.add(OutcomeRecorder.Entry(run: self, index: index, outcome: consume outcome, holdsSlot: holdsSlot))
    }

    /// A final outcome (`status`) was recorded: `produced` messages went to the producer for it.
    func published(producedMessages produced: Int, status: DeliveryStatus) {
        let next = state.withLock { state -> Next in
            if let slot = DeliveryStatus.allCases.firstIndex(of: status) { state.statusCounts[slot] += 1 }
            state.unpublished -= 1
            state.unacknowledged += produced
            return Self.next(&state)
        }
        perform(next)
    }

    /// A recipient goes to the retry topic (with this processing's retry job).
    func deferToRetry(_ recipient: Recipient, attempts: Int, delay: Double) {
        let next = state.withLock { state -> Next in
            state.unpublished -= 1
            state.retries.append((recipient, attempts, delay))
            return Self.next(&state)
        }
        perform(next)
    }

    /// `sent=3 invalid_token=1 … retry=2`: the final results by status (those seen), and the
    /// recipients handed to the retry topic.
    var outcomeSummary: String {
        state.withLock { state in
            var parts = zip(DeliveryStatus.allCases, state.statusCounts).filter { $0.1 > 0 }.map { "\($0.0.rawValue)=\($0.1)" }
            if !state.retries.isEmpty { parts.append("retry=\(state.retries.count)") }
            return parts.joined(separator: " ")
        }
    }

    /// A job without recipients is done at once.
    func finishIfEmpty() {
        perform(state.withLock { Self.next(&$0) })
    }

    /// One produced message was acknowledged (or failed for good and was dealt with).
    func acknowledged() {
        let next = state.withLock { state -> Next in
            state.unacknowledged -= 1
            return Self.next(&state)
        }
        perform(next)
    }

    private enum Next {
        case nothing
        case produceRetryJob([(recipient: Recipient, attempts: Int, delay: Double)])
        case finish
    }

    private static func next(_ state: inout State) -> Next {
        guard state.unpublished == 0, !state.isFinished else { return .nothing }
        if !state.retries.isEmpty && !state.retryJobProduced {
            state.retryJobProduced = true
            state.unacknowledged += 1
            return .produceRetryJob(state.retries)
        }
        guard state.unacknowledged == 0 else { return .nothing }
        state.isFinished = true
        return .finish
    }

    private func perform(_ next: Next) {
        switch next {
        case .nothing: return
        case .produceRetryJob(let retries): worker.produceRetryJob(self, retries)
        case .finish: worker.finished(self)
        }
    }

    // MARK: results

    func result(_ index: Int, _ status: DeliveryStatus, reason: String?, atMs: Int64, httpStatus: Int? = nil,
                providerMessageID: String? = nil, attempts: Int? = nil, latencyMs: Double? = nil) -> ResultRecord {
        ResultRecord(jobID: job.jobID, msgID: plans[index].msgID, appID: job.appID, campaignID: job.campaignID, variant: job.variant,
                     userID: plans[index].recipient.userID, subscriptionID: plans[index].recipient.subscriptionID,
                     platform: plans[index].platform,
                     status: status, reason: reason, httpStatus: httpStatus, providerMessageID: providerMessageID,
                     attempts: attempts ?? job.attempt, latencyMs: latencyMs, atUnixMs: atMs)
    }

    /// Maps a provider attempt onto a final result or a retry hand-off (runs on the I/O thread).
    func outcome(of attempt: Deliverer.Attempt, index: Int) -> RecipientOutcome {
        let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
        let attempts = job.attempt + attempt.attempts
        func final(_ status: DeliveryStatus, _ reason: String?, id: String? = nil) -> ResultRecord {
            result(index, status, reason: reason, atMs: nowMs, httpStatus: attempt.httpStatus, providerMessageID: id,
                   attempts: attempts, latencyMs: attempt.latencyMs)
        }
        // An audience (DESIGN §19) has no token for a provider to declare dead.
        let outcome = job.audience == nil ? attempt.outcome : FCMAudience.outcome(attempt.outcome)
        switch outcome {
        case .sent(let id):
            return .final(final(.sent, nil, id: id), isSent: true)
        case .invalidToken(let reason, let since):
            let token = TokenRecord(appID: job.appID, platform: plans[index].platform, subscriptionID: plans[index].recipient.subscriptionID,
                                    userID: plans[index].recipient.userID, tokenHash: plans[index].tokenHash, reason: reason,
                                    invalidSinceMs: since ?? nowMs, atUnixMs: nowMs)
            return .final(final(.invalidToken, reason), token: token)
        case .rejected(let reason):
            return .final(final(.rejected, reason))
        case .retry(let reason, _, _) where job.audience != nil && FCMAudience.mayHaveBeenAccepted(outcome):
            return .final(final(.failed, reason)) // FCM may have fanned it out: never twice (FCMAudience)
        case .retry(let reason, let retryAfter, let scope):
            if scope == .provider, let retryAfter, let platform = plans[index].recipient.platform {
                worker.noteProviderBackoff(appID: job.appID, platform: platform, seconds: retryAfter)
            }
            return retryOrFail(reason, retryAfter)
        case .authExpired(let reason):
            return retryOrFail(reason, nil)
        }

        func retryOrFail(_ reason: String?, _ retryAfter: Double?) -> RecipientOutcome {
            let policy = worker.retryPolicy
            guard policy.allowsRetry(afterAttempts: attempts) else { return .final(final(.failed, reason)) }
            let delay = policy.delay(afterAttempts: attempts, retryAfterSeconds: retryAfter, jitter: Double.random(in: 0..<1))
            return .retry(plans[index].recipient, attempts: attempts, delaySeconds: delay)
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
