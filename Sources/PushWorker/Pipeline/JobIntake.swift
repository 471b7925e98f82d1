import Foundation
import PushRuntime
import PushCore
import PushKafka
import PushPipeline

/// The first stage (docs/pipeline.md "Decode" and "Plan"): a polled message becomes a processing.
/// Bad bytes or an invalid job go to the dead-letter topic; otherwise every recipient is planned
/// (language, templates, msgId, payload), the ones that need no send (expired, rejected, no
/// credentials) get their result at once, and the rest are queued for their claim.
final class JobIntake: Sendable {
    struct Settings: Sendable {
        /// `PUSHWORKER_DEDUP_MAX_SECONDS`.
        var dedupMaxSeconds: Int
        /// `PUSHWORKER_CAPS` (docs/caps.md).
        var caps = FrequencyCaps()
        /// `PUSHWORKER_QUIET_HOURS`: per-app default quiet hours of bulk jobs (docs/local-time.md).
        var quietHours: [String: QuietHours] = [:]
        /// The longest wait a deferral puts on the retry topic (under
        /// `PUSHWORKER_RETRY_MAX_DELAY_SECONDS`): a longer one is cut into hops.
        var maxDeferSeconds: Double = 3540
    }

    let settings: Settings
    let planner: JobPlanner
    let credentials: @Sendable (String) -> AppCredentials?
    let clock: any PipelineClock
    let registry: JobRegistry
    let queue: ClaimQueue
    let endpoints: EndpointTable
    let outcomes: any OutcomeSink
    let deadLetter: @Sendable (KafkaMessage, String) -> Void
    let controls: CampaignControls
    let metrics: Metrics
    let logger: Logger

    init(settings: Settings, planner: JobPlanner, credentials: @escaping @Sendable (String) -> AppCredentials?, clock: any PipelineClock,
         registry: JobRegistry, queue: ClaimQueue, endpoints: EndpointTable, outcomes: any OutcomeSink,
         deadLetter: @escaping @Sendable (KafkaMessage, String) -> Void, controls: CampaignControls, metrics: Metrics, logger: Logger) {
        self.settings = settings; self.planner = planner; self.credentials = credentials; self.clock = clock
        self.registry = registry; self.queue = queue; self.endpoints = endpoints; self.outcomes = outcomes
        self.deadLetter = deadLetter; self.controls = controls; self.metrics = metrics; self.logger = logger
    }

    /// Starts work on one message. Returns the job's recipient count (0 for a dead letter).
    @discardableResult
    func process(_ message: KafkaMessage) -> Int {
        let job: FanOutJob
        do throws(JobValidationError) {
            job = try JobDecoder.decode(message.value)
        } catch {
            deadLetter(message, error.description)
            return 0
        }
        let now = clock.wallSeconds
        let appCredentials = credentials(job.appID)
        var parts = JobRun.Parts(capacity: job.plannedCount)
        // Requests are built when claimed for sending (``JobPlan``); an audience's one at once.
        var plan: JobPlan?
        if job.audience != nil {
            planner.plan(job, profile: appCredentials?.profile, now: Date(timeIntervalSince1970: now)) { parts.add($0) }
        } else {
            let prepared = planner.prepare(job, profile: appCredentials?.profile, now: Date(timeIntervalSince1970: now))
            for recipient in job.recipients { parts.add(prepared.start(recipient), recipient) }
            plan = prepared
        }
        let starts = parts.starts
        let nowMs = Int64(now * 1000)
        let retention = DedupRetention.milliseconds(
            expiresAtMs: job.expiresAt.map { Int64($0.timeIntervalSince1970 * 1000) }, ttlSeconds: job.ttlSeconds, nowMs: nowMs,
            maximumSeconds: settings.dedupMaxSeconds, minimumSeconds: min(DedupRetention.defaultMinimumSeconds, settings.dedupMaxSeconds))
        let recipientCount = parts.count
        // The run keeps the job without its recipient list: each plan holds its recipient.
        let run = JobRun(job: job.withoutRecipients, credentials: appCredentials, partition: message.topicPartition, offset: message.offset,
                         generation: registry.offsets.generation(of: message.topicPartition) ?? -1, parts: consume parts, plan: plan,
                         owner: registry.nextOwner(), retentionMs: retention, startedAt: now, endpoints: endpoints.ids(appID: job.appID),
                         campaign: controls.cell(appID: job.appID, campaignID: job.campaignID), caps: settings.caps)
        registry.add(run)
        metrics.increment("pushworker_jobs_total", [("outcome", "accepted")])
        logger.info("job started", ["job.id": job.jobID, "campaign.id": job.campaignID, "job.recipients": "\(recipientCount)",
                                    "kafka.partition": "\(message.partition)", "kafka.offset": "\(message.offset)"])
        var requests: [ClaimRequest] = []
        let due = clock.monotonicSeconds
        // A subscription listed twice in one job has one msgId, so one claim: this processing
        // would hold it for both listings and send twice. The later listing ends `duplicate`.
        var firstListing: [UInt64: Int] = [:]
        // Only a job with local-time rules looks at any recipient's time (docs/local-time.md).
        var local = LocalTimeRules.of(job, defaults: settings.quietHours).map { LocalTimeCheck(rules: $0, job: job, now: now) }
        for (index, start) in starts.enumerated() {
            switch start {
            case .expired:
                outcomes.add(run, index, .final(run.result(index, .expired, reason: ExpiryReason.expiresAtPassed.rawValue, atMs: nowMs)), holdsSlot: false)
            case .rejected(let reason):
                outcomes.add(run, index, .final(run.result(index, .rejected, reason: reason, atMs: nowMs)), holdsSlot: false)
            case .ready:
                if appCredentials == nil || run.keys[index] == nil {
                    outcomes.add(run, index, .final(run.result(index, .rejected, reason: "no_credentials", atMs: nowMs)), holdsSlot: false)
                } else if let key = run.keys[index], let first = firstListing[key.fingerprint], run.plans[first].msgID == run.plans[index].msgID {
                    run.dropRequest(index)
                    outcomes.add(run, index, .final(run.result(index, .duplicate, reason: nil, atMs: nowMs)), holdsSlot: false)
                } else if local != nil, deferred(run, index, &local!, nowMs: nowMs) {
                    continue
                } else {
                    if let key = run.keys[index], firstListing[key.fingerprint] == nil { firstListing[key.fingerprint] = index }
                    requests.append(ClaimRequest(run: run, index: index, due: due, endpoint: run.endpoint(index)))
                }
            }
        }
        if recipientCount == 0 { outcomes.finishIfEmpty(run) }
        queue.append(requests)
        return recipientCount
    }

    /// docs/local-time.md: a recipient whose zone is not a time zone is `rejected`
    /// (`bad_timezone`); one whose local time says "later" goes to the retry topic, due then
    /// (at most ``Settings/maxDeferSeconds`` ahead: a longer wait hops), or is `expired` when
    /// then is past the job's `expiresAt` or `sendBy`. True when the recipient has its outcome.
    private func deferred(_ run: JobRun, _ index: Int, _ local: inout LocalTimeCheck, nowMs: Int64) -> Bool {
        let recipient = run.plans[index].recipient
        switch local.decision(timezone: recipient.timezone) {
        case .now:
            return false
        case .badTimezone:
            run.dropRequest(index)
            outcomes.add(run, index, .final(run.result(index, .rejected, reason: "bad_timezone", atMs: nowMs)), holdsSlot: false)
        case .expired(let expiry):
            run.dropRequest(index)
            outcomes.add(run, index, .final(run.result(index, .expired, reason: expiry.rawValue, atMs: nowMs)), holdsSlot: false)
        case .deferred(let until, let reason):
            run.dropRequest(index)
            metrics.increment("pushworker_deferred_total", [("reason", reason.rawValue)])
            let wait = until.timeIntervalSince1970 - local.now.timeIntervalSince1970
            let hop = wait > settings.maxDeferSeconds
            outcomes.add(run, index, .retry(recipient, attempts: run.job.attempt, delaySeconds: min(wait, settings.maxDeferSeconds),
                                            keepsLocalTime: hop && reason == .sendAtLocal), holdsSlot: false)
        }
        return true
    }
}
