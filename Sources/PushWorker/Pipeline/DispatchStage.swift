import Dispatch
import PushRuntime
import PushCore
import PushDelivery
import PushPipeline
import PushProviders
import PushRedis
import Synchronization

/// The dispatch stage (docs/pipeline.md "Send"): hands claimed recipients to the provider
/// transport — Huawei recipients whose payloads are byte-identical as one batch request — with a
/// write check that withholds a request whose claim was lost or can no longer cover it, or
/// when the worker drains. Each attempt's outcome is decided by ``PushPipeline/AttemptRule`` on
/// the transport's thread, counted against its endpoint's breaker, turned into a provider
/// backoff when the provider asks the whole app to wait, and handed to the result publisher.
final class DispatchStage: Sendable {
    struct Settings: Sendable {
        var leaseSeconds: Double
        var requestTimeoutSeconds: Double
        var rule: AttemptRule
    }

    let settings: Settings
    let transport: any ProviderTransport
    let clock: any PipelineClock
    let endpoints: EndpointTable
    let outcomes: any OutcomeSink
    let state: any DeliveryStatePort
    let health: RedisHealth
    let metrics: Metrics
    let logger: Logger
    /// Where fleet backoffs are written (off the transport's thread).
    let background: DispatchQueue
    private let draining = Atomic<Bool>(false)

    init(settings: Settings, transport: any ProviderTransport, clock: any PipelineClock, endpoints: EndpointTable, outcomes: any OutcomeSink,
         state: any DeliveryStatePort, health: RedisHealth, metrics: Metrics, logger: Logger, background: DispatchQueue) {
        self.settings = settings; self.transport = transport; self.clock = clock; self.endpoints = endpoints; self.outcomes = outcomes
        self.state = state; self.health = health; self.metrics = metrics; self.logger = logger; self.background = background
    }

    var isDraining: Bool { draining.load(ordering: .relaxed) }

    /// SIGTERM: nothing more is written; requests waiting for a connection slot are withheld now
    /// (their claims given back); those written keep their answers.
    func beginDrain() {
        draining.store(true, ordering: .relaxed)
        transport.withdrawQueued()
    }

    /// Sends one claim round's batches; their requests leave in one transport turn.
    func dispatch(_ batches: [SendBatch]) {
        guard !batches.isEmpty else { return }
        transport.holdWakeUps()
        defer { transport.releaseWakeUps() }
        for batch in batches {
            // A run without credentials never gets here: its recipients were rejected when planned.
            guard let credentials = batch.run.credentials else { continue }
            let run = batch.run
            let claimedAt = batch.claimedAt
            var hms: [SendItem] = []
            for item in batch.items {
                if item.request.platform == .huawei { hms.append(item); continue }
                let index = item.index
                transport.deliver(item, credentials: credentials, shouldWrite: { [self] in mayWrite(run, index, claimedAt) }) { [self] attempt in
                    completed(run, item, attempt)
                }
            }
            if !hms.isEmpty { dispatchHMS(run, hms, credentials, claimedAt: claimedAt) }
        }
    }

    /// Huawei recipients claimed together go as batches (up to 1000 tokens sharing a
    /// byte-identical body); each recipient's outcome is still recorded on its own.
    private func dispatchHMS(_ run: JobRun, _ items: [SendItem], _ credentials: AppCredentials, claimedAt: Double) {
        for group in HMSBatching.group(items.map(\.request.body)) {
            let members = group.map { items[$0] }
            let tokens = members.map { $0.request.hmsToken ?? "" }
            metrics.increment("pushworker_hms_batches_total")
            let indices = members.map(\.index)
            transport.deliverHMSBatch(members[0].request, tokens: tokens, credentials: credentials,
                                      shouldWrite: { [self] in indices.allSatisfy { mayWrite(run, $0, claimedAt) } }) { [self] attempts in
                // One attempt per token, in order (the transport's promise).
                for (member, attempt) in zip(members, attempts) { completed(run, member, attempt) }
            }
        }
    }

    /// The write check: not draining, the campaign neither paused nor cancelled, the claim held,
    /// not lost, and its lease outlasting the request.
    private func mayWrite(_ run: JobRun, _ index: Int, _ claimedAt: Double) -> Bool {
        !isDraining && run.campaign.allowsSending && run.mayWrite(index, claimedAt: claimedAt, now: clock.monotonicSeconds, leaseSeconds: settings.leaseSeconds,
                                    requestTimeoutSeconds: settings.requestTimeoutSeconds)
    }

    /// One attempt's outcome (transport thread): decided, counted, handed on.
    private func completed(_ run: JobRun, _ item: SendItem, _ attempt: Deliverer.Attempt) {
        let index = item.index
        // An audience (FCM topic or condition) has no token for a provider to declare dead.
        let outcome = run.job.audience == nil ? attempt.outcome : FCMAudience.outcome(attempt.outcome)
        let context = run.attemptContext(index)
        let facts = AttemptFacts(outcome: outcome, certainty: attempt.certainty, transport: attempt.transport,
                                 httpStatus: attempt.httpStatus, attemptsMade: context.attemptsBefore + attempt.attempts,
                                 isResend: context.isResend, isAudience: run.job.audience != nil)
        let endpoint = run.endpoint(index)
        let now = clock.monotonicSeconds
        let breaker = endpoints.breaker(endpoint, failure: AttemptRule.isBreakerFailure(facts), success: AttemptRule.isBreakerSuccess(facts),
                                        now: now)
        if breaker.changed { breakerChanged(endpoint, isOpen: breaker.isOpen) }
        if facts.certainty == .answered, case .retry(_, let retryAfter?, .provider) = outcome {
            noteProviderBackoff(endpoint, seconds: retryAfter, now: now)
        }
        let decision = settings.rule.decide(facts, breakerOpen: breaker.isOpen, draining: isDraining, jitter: Double.random(in: 0..<1))
        switch decision {
        case .resend, .requeue: run.returnRequest(index, item.request)
        default: break
        }
        outcomes.add(run, index, run.outcome(decision, attempt: attempt, index: index, nowMs: Int64(clock.wallSeconds * 1000)),
                     holdsSlot: true)
    }

    private func breakerChanged(_ endpoint: Int, isOpen: Bool) {
        let (appID, provider) = endpoints.appAndProvider(endpoint)
        metrics.set("pushworker_breaker_open", [("app", appID), ("provider", provider)], isOpen ? 1 : 0)
        if isOpen {
            logger.warning("circuit breaker open: the endpoint's recipients wait without spending attempts",
                           ["app.id": appID, "provider": provider])
        } else {
            logger.info("circuit breaker closed", ["app.id": appID, "provider": provider])
        }
    }

    /// A provider asked the whole app to wait (a 429 naming no device, a 503 with Retry-After):
    /// this worker holds the endpoint at once; the fleet learns it through Redis.
    private func noteProviderBackoff(_ endpoint: Int, seconds: Double, now: Double) {
        let wait = min(max(0, seconds), 3600)
        guard endpoints.noteBackoff(endpoint, until: now + wait) else { return }
        let (appID, provider) = endpoints.appAndProvider(endpoint)
        background.async { [self] in
            do { try state.setBackoff(appID: appID, provider: provider, milliseconds: Int64(wait * 1000)) } catch {
                health.failed(error, during: "backoff write")
            }
        }
    }
}
