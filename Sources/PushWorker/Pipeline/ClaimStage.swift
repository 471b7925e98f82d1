import Foundation
import PushRuntime
import PushCore
import PushDelivery
import PushPipeline
import PushProviders
import PushRedis
import Synchronization

/// Where a stage hands a recipient's outcome (the result publisher).
protocol OutcomeSink: Sendable {
    func add(_ run: JobRun, _ index: Int, _ outcome: consuming RecipientOutcome, holdsSlot: Bool)
    /// A processing without recipients is done at once.
    func finishIfEmpty(_ run: JobRun)
}

extension ResultPublisher: OutcomeSink {
    func finishIfEmpty(_ run: JobRun) { perform(run, run.finishIfEmpty()) }
}

/// A claim round's sends: one processing's claimed recipients.
struct SendBatch: Sendable {
    let run: JobRun
    var items: [SendItem]
    /// When the claim round trip that took them was sent (monotonic seconds).
    var claimedAt: Double
}

/// The claim stage (docs/pipeline.md "Claim"): takes queued recipients the worker has room for
/// and whose endpoint admits them (``PushPipeline/Admission``), takes their tokens from the
/// fleet's buckets, and claims them in one round trip that also reads their dead-token records
/// and their endpoints' fleet backoffs. It answers each claim's verdict: send (or resend), a
/// final result (duplicate, known-invalid token, unanswered), or wait and ask again. It also
/// renews the leases of claims held long (``renewLeases()``).
///
/// Runs on the consumer thread only.
final class ClaimStage: Sendable {
    struct Settings: Sendable {
        var leaseMs: Int64
        var unansweredLimit: Int
        var admission: Admission
        /// How long a paused campaign's recipients stay parked before they are looked at again
        /// (`PUSHWORKER_PAUSE_RECHECK_SECONDS`).
        var pauseRecheckSeconds: Double = 10
    }

    let settings: Settings
    let state: any DeliveryStatePort
    let clock: any PipelineClock
    let queue: ClaimQueue
    let endpoints: EndpointTable
    let slots: InFlightSlots
    let registry: JobRegistry
    let outcomes: any OutcomeSink
    let health: RedisHealth
    let controls: CampaignControls
    let metrics: Metrics
    let logger: Logger

    init(settings: Settings, state: any DeliveryStatePort, clock: any PipelineClock, queue: ClaimQueue, endpoints: EndpointTable,
         slots: InFlightSlots, registry: JobRegistry, outcomes: any OutcomeSink, health: RedisHealth, controls: CampaignControls,
         metrics: Metrics, logger: Logger) {
        self.settings = settings; self.state = state; self.clock = clock; self.queue = queue; self.endpoints = endpoints
        self.slots = slots; self.registry = registry; self.outcomes = outcomes; self.health = health; self.controls = controls
        self.metrics = metrics; self.logger = logger
    }

    var leaseSeconds: Double { Double(settings.leaseMs) / 1000 }

    /// What the last round left waiting for: it needs another look only once the queue, a slot, a
    /// hold or a breaker changed, or the earliest due time came (consumer thread).
    private struct LastRound {
        var queueVersion: UInt64 = .max
        var endpointVersion: UInt64 = .max
        var room = -1
        var bulkRoom = -1
        var parkHeld = false
        var nextDue = Double.infinity
    }
    private let last = Mutex(LastRound())
    private let tokenWaiters = Mutex(TokenWaiters())

    /// One claim round for up to `room` recipients; `parkHeld`: send every held recipient to the
    /// retry topic now (the worker is saturated by load and must take other tenants' jobs).
    func round(room: Int, parkHeld: Bool) -> [SendBatch] {
        // No room and nothing to park: the queue is not even looked at.
        guard room > 0 || parkHeld else { return [] }
        let now = clock.monotonicSeconds
        let bulkRoom = min(room, slots.bulkRoom)
        let queueVersion = queue.version, endpointVersion = endpoints.version
        let unchanged = last.withLock { last -> Bool in
            let sameState = last.queueVersion == queueVersion && last.endpointVersion == endpointVersion
            let sameAsks = room <= last.room && parkHeld == last.parkHeld && bulkRoom <= last.bulkRoom
            return sameState && sameAsks && now < last.nextDue
        }
        if unchanged { return [] }
        let view = endpoints.admissionView(now: now)
        var nextDue = Double.infinity
        let selected = queue.select { requests in
            let candidates = requests.map { Admission.Candidate(due: $0.due, endpoint: $0.endpoint, transactional: $0.run.transactional) }
            let choices = settings.admission.choose(candidates, room: room, bulkRoom: bulkRoom, now: now, inFlight: view.inFlight,
                                                    gates: view.gates, parkHeld: parkHeld)
            for (candidate, choice) in zip(candidates, choices) where choice == .keep {
                var due = candidate.due > now ? candidate.due : Double.infinity
                if candidate.endpoint < view.gates.count, case .held(let until) = view.gates[candidate.endpoint] { due = min(due, until) }
                nextDue = min(nextDue, due)
            }
            return choices
        }
        // A round that took anything changed the queue: whatever it kept back (a cap, the room)
        // is looked at again next turn, even when what it took needed no slot (duplicates,
        // finals, parked, capped).
        let tookAny = !selected.taken.isEmpty || !selected.parked.isEmpty
        last.withLock { $0 = LastRound(queueVersion: tookAny ? .max : queueVersion, endpointVersion: endpointVersion, room: room,
                                       bulkRoom: bulkRoom, parkHeld: parkHeld, nextDue: nextDue) }
        // Recipients that waited in memory for tokens are out of the queue again: no longer counted.
        var takenNow = selected.taken
        if takenNow.contains(where: { $0.waitsForBucket != nil }) || selected.parked.contains(where: { $0.request.waitsForBucket != nil }) {
            tokenWaiters.withLock { waiters in
                for index in takenNow.indices where takenNow[index].waitsForBucket != nil {
                    waiters.left(takenNow[index])
                    takenNow[index].waitsForBucket = nil
                }
                for (request, _) in selected.parked where request.waitsForBucket != nil { waiters.left(request) }
            }
        }
        for (request, until) in selected.parked { park(request, until: until, now: now) }
        var probes: Set<Int> = []
        for request in takenNow where request.endpoint < view.gates.count && view.gates[request.endpoint] == .probe {
            probes.insert(request.endpoint)
        }
        for endpoint in probes { endpoints.probeSent(endpoint, now: now) }
        var kept: [ClaimRequest] = []
        var waiting: [ClaimRequest] = []
        let steered = steer(takenNow, now: now, kept: &kept)
        let taken = takeTokens(steered, now: now, kept: &kept, waiting: &waiting)
        queue.restore(kept)
        // Behind everything else: recipients waiting for tokens never keep other campaigns of
        // their app × provider from its in-flight cap.
        queue.append(waiting)
        guard !taken.isEmpty else { return [] }
        return claim(taken, now: now)
    }

    /// Applies the campaign controls (docs/campaigns.md) to the taken recipients before they
    /// take tokens or claims: a campaign whose control was not read within the refresh period
    /// (or never) is read first (one round trip for all such campaigns); a paused campaign's
    /// recipients are parked, a cancelled one's end `cancelled`, and those past the deadline
    /// (`sendBy`) end `expired`. Answers the rest.
    private func steer(_ taken: [ClaimRequest], now: Double, kept: inout [ClaimRequest]) -> [ClaimRequest] {
        var unknown: [CampaignCell] = []
        var last: ObjectIdentifier?
        for request in taken where ObjectIdentifier(request.run.campaign) != last {
            let cell = request.run.campaign
            last = ObjectIdentifier(cell)
            if !cell.isFresh(now: now, within: controls.refreshSeconds) && !unknown.contains(where: { $0 === cell }) { unknown.append(cell) }
        }
        if !unknown.isEmpty && !controls.read(unknown, now: now) {
            // Not known: nothing of those campaigns is claimed until it is (Redis answers the claim
            // too, so this waits with it).
            for request in taken {
                var again = request
                again.due = now + 1
                kept.append(again)
            }
            return []
        }
        let wallNow = clock.wallSeconds
        var admitted: [ClaimRequest] = []
        admitted.reserveCapacity(taken.count)
        for request in taken {
            let run = request.run
            switch run.campaign.state {
            case .active:
                if let sendBy = run.sendBy, wallNow >= sendBy { expireForDeadline(request, wallNow: wallNow) } else { admitted.append(request) }
            case .paused: parkPaused(request, now: now)
            case .cancelled: cancel(request, wallNow: wallNow)
            }
        }
        return admitted
    }

    /// A paused campaign's recipient goes to the retry topic, looked at again after the recheck
    /// period (it holds no slot and no memory meanwhile).
    private func parkPaused(_ request: ClaimRequest, now: Double) {
        metrics.increment("pushworker_campaign_steered_total", [("action", "parked")])
        park(request, until: now + settings.pauseRecheckSeconds, now: now)
    }

    /// A cancelled campaign's recipient: final result `cancelled`, nothing sent.
    private func cancel(_ request: ClaimRequest, wallNow: Double) {
        let run = request.run, index = request.index
        run.dropRequest(index)
        metrics.increment("pushworker_campaign_steered_total", [("action", "cancelled")])
        outcomes.add(run, index, .final(run.result(index, .cancelled, reason: nil, atMs: Int64(wallNow * 1000), attempts: run.attemptsBefore(index))),
                     holdsSlot: false)
    }

    /// A recipient past its campaign's deadline: final result `expired`, reason `send_by_passed`.
    private func expireForDeadline(_ request: ClaimRequest, wallNow: Double) {
        let run = request.run, index = request.index
        run.dropRequest(index)
        metrics.increment("pushworker_campaign_steered_total", [("action", "expired")])
        outcomes.add(run, index, .final(run.result(index, .expired, reason: ExpiryReason.sendByPassed.rawValue, atMs: Int64(wallNow * 1000),
                                                   attempts: run.attemptsBefore(index))), holdsSlot: false)
    }

    /// A held recipient goes to the retry topic, due when its hold ends; if that is past its
    /// job's horizon (or the campaign's deadline), it is `expired` instead.
    private func park(_ request: ClaimRequest, until: Double, now: Double) {
        let run = request.run, index = request.index
        let wait = max(0, until - now)
        let wallNow = clock.wallSeconds
        metrics.increment("pushworker_parked_total")
        if let sendBy = run.sendBy, wallNow + wait > sendBy, sendBy < run.horizon {
            expireForDeadline(request, wallNow: wallNow)
        } else if wallNow + wait > run.horizon {
            let result = run.result(index, .expired, reason: ExpiryReason.whileHeld.rawValue, atMs: Int64(wallNow * 1000),
                                    attempts: run.attemptsBefore(index))
            outcomes.add(run, index, .final(result), holdsSlot: false)
        } else {
            outcomes.add(run, index, .retry(run.plans[index].recipient, attempts: run.attemptsBefore(index), delaySeconds: wait),
                         holdsSlot: false)
        }
    }

    /// Takes tokens from the fleet's buckets (`app.json` `ratePerSecond` per app × provider, the
    /// job's `throttlePerMinute` per campaign) for the taken recipients that have any, before they
    /// are claimed: a recipient waiting for tokens holds no claim and no slot.
    private func takeTokens(_ taken: [ClaimRequest], now: Double, kept: inout [ClaimRequest], waiting: inout [ClaimRequest]) -> [ClaimRequest] {
        // The recipients of one run and endpoint share their buckets: one acquire per group,
        // whatever the order the queue holds them in (a job's platforms interleave).
        var groups: [(run: JobRun, endpoint: Int, buckets: [DeliveryStateStore.Bucket], members: [Int])] = []
        var groupOf: [GroupKey: Int] = [:]
        var granted = [Bool](repeating: true, count: taken.count)

        var previous: (key: GroupKey, group: Int)?
        for (position, request) in taken.enumerated() {
            let key = GroupKey(run: ObjectIdentifier(request.run), endpoint: request.endpoint)
            // Recipients of one job come together: the group of the one before is checked first.
            if let previous, previous.key == key {
                if previous.group >= 0 { groups[previous.group].members.append(position) }
                continue
            }
            if let group = groupOf[key] {
                previous = (key, group)
                if group >= 0 { groups[group].members.append(position) } // -1: no buckets
                continue
            }
            let buckets = self.buckets(for: request.run, request.index)
            guard !buckets.isEmpty else {
                groupOf[key] = -1
                previous = (key, -1)
                continue
            }
            groupOf[key] = groups.count
            previous = (key, groups.count)
            groups.append((request.run, request.endpoint, buckets, [position]))
        }
        for group in groups where !group.members.isEmpty {
            do {
                let answer = try state.acquire(count: group.members.count, from: group.buckets)
                health.answered()
                let count = min(max(answer.granted, 0), group.members.count)
                guard count < group.members.count else { continue }
                metrics.increment("pushworker_throttle_waits_total", by: Double(group.members.count - count))
                let due = now + max(0.02, Double(answer.retryAfterMs) / 1000)
                // Recipients still waiting queue behind the slowest bucket, one every 1 / rate
                // seconds after those of this worker already waiting for it in memory: those whose
                // turn is within ``tokenWaitInMemorySeconds`` wait in memory and ask again soon; the
                // others go to the retry topic, due at their turn behind those parked before them
                // (at most ``throttleParkMaxSeconds`` ahead). A
                // throttled campaign holds neither slots nor the memory (its jobs' unfinished
                // processings) other campaigns' jobs need.
                let slowest = group.buckets.min { $0.ratePerSecond < $1.ratePerSecond } ?? group.buckets[0]
                let interval = 1 / max(slowest.ratePerSecond, 1e-6)
                var place = tokenWaiters.withLock { $0.count[slowest.key, default: 0] }
                var stayed = 0
                for position in group.members.dropFirst(count) {
                    granted[position] = false
                    var request = taken[position]
                    request.due = due
                    place += 1
                    let turn = Double(place) * interval
                    if turn > min(settings.admission.holdMaxSeconds, Self.tokenWaitInMemorySeconds) {
                        request.waitsForBucket = nil
                        let at = tokenWaiters.withLock { $0.parkTurn(slowest.key, interval: interval, now: now) }
                        park(request, until: min(at, now + Self.throttleParkMaxSeconds), now: now)
                    } else {
                        request.waitsForBucket = slowest.key
                        waiting.append(request)
                        stayed += 1
                    }
                }
                if stayed > 0 { tokenWaiters.withLock { $0.count[slowest.key, default: 0] += stayed } }
            } catch {
                health.failed(error, during: "token bucket")
                for position in group.members {
                    granted[position] = false
                    var request = taken[position]
                    request.due = now + 1
                    kept.append(request)
                }
            }
        }
        return taken.indices.filter { granted[$0] }.map { taken[$0] }
    }

    /// How far ahead a recipient waiting for tokens is parked at most: at its turn, or sooner,
    /// so a cancel or pause reaches it soon.
    static let throttleParkMaxSeconds = 60.0
    /// A recipient waits for tokens in memory only when its turn is this close: a few seconds
    /// of the bucket's rate smooth the sends, and few processings stay open for it.
    static let tokenWaitInMemorySeconds = 2.0

    /// This worker's recipients waiting in memory for each token bucket.
    struct TokenWaiters {
        var count: [String: Int] = [:]
        /// The last turn given to a recipient parked for each bucket (monotonic seconds).
        var parkedUntil: [String: Double] = [:]

        /// The next turn for a recipient parked for `bucket`: after the memory window and after
        /// those parked before it, one per `interval` (so parked recipients come back at the
        /// bucket's pace instead of all at once).
        mutating func parkTurn(_ bucket: String, interval: Double, now: Double) -> Double {
            if parkedUntil.count > 10_000 { parkedUntil = parkedUntil.filter { $0.value > now } }
            let turn = max(parkedUntil[bucket] ?? 0, now + ClaimStage.tokenWaitInMemorySeconds) + interval
            parkedUntil[bucket] = turn
            return turn
        }
        /// A waiting recipient was taken from the queue again.
        mutating func left(_ request: ClaimRequest) {
            guard let key = request.waitsForBucket, let current = count[key] else { return }
            if current <= 1 { count[key] = nil } else { count[key] = current - 1 }
        }
    }

    private struct GroupKey: Hashable {
        var run: ObjectIdentifier
        var endpoint: Int
    }

    func buckets(for run: JobRun, _ index: Int) -> [DeliveryStateStore.Bucket] {
        var buckets: [DeliveryStateStore.Bucket] = []
        if let rate = run.credentials?.ratePerSecond, rate > 0, let platform = run.plans[index].recipient.platform {
            buckets.append(DeliveryStateStore.Bucket(key: RedisKeys.providerBucket(appID: run.job.appID, provider: Deliverer.providerLabel(platform)),
                                                     ratePerSecond: rate, burst: max(1, rate)))
        }
        if let perMinute = run.campaign.control.effectiveThrottle(job: run.job.throttlePerMinute), perMinute > 0 {
            let rate = Double(perMinute) / 60
            buckets.append(DeliveryStateStore.Bucket(key: RedisKeys.campaignBucket(appID: run.job.appID, campaignID: run.job.campaignID),
                                                     ratePerSecond: rate, burst: max(1, rate)))
        }
        return buckets
    }

    /// The claim round trip and its verdicts.
    private func claim(_ taken: [ClaimRequest], now: Double) -> [SendBatch] {
        guard let trip = roundTrip(taken, now: now) else { return [] }
        let (answers, startedAt, heldNow) = trip
        var batches: [SendBatch] = []
        var batchOf: [ObjectIdentifier: Int] = [:]
        var again: [ClaimRequest] = []
        var releases: [DeliveryStateStore.RecordEntry] = []
        var taking: [Int: Int] = [:]
        var bulkSending = 0
        var counts = (send: 0, resend: 0, duplicate: 0, wait: 0, invalid: 0, unanswered: 0, capped: 0)
        let nowMs = Int64(clock.wallSeconds * 1000)
        for (position, request) in taken.enumerated() {
            let run = request.run, index = request.index
            let verdict = ClaimDecision.verdict(answers.replies[position], invalidSinceMs: answers.invalidSinceMs[position],
                                                tokenUpdatedAtMs: run.plans[index].recipient.tokenUpdatedAt.map { Int64($0.timeIntervalSince1970 * 1000) })
            switch verdict {
            case .send, .resend:
                if !run.campaign.allowsSending {
                    // A Cluster's claim cannot read the control itself: the control read with it says stop.
                    // A cancelled recipient's cap reservation is given back; a parked one keeps it.
                    if let entry = run.recordEntry(index, .released, cap: run.campaign.state == .paused ? nil : .giveBack) { releases.append(entry) }
                    if run.campaign.state == .paused { parkPaused(request, now: now) } else { cancel(request, wallNow: Double(nowMs) / 1000) }
                    continue
                }
                if heldNow.contains(request.endpoint) {
                    // Claimed before the fleet's backoff was known: given back, queued again.
                    if let entry = run.recordEntry(index, .released) { releases.append(entry) }
                    again.append(request)
                    continue
                }
                let providerRequest: ProviderRequest
                switch run.takeRequest(index) {
                case nil:
                    if let entry = run.recordEntry(index, .released) { releases.append(entry) }
                    continue
                case .failure(let rejection)?:
                    // Built only now (``JobPlan``): a payload that cannot be built is rejected; the
                    // claim is given back when the result is recorded.
                    run.noteClaimed(index, at: startedAt)
                    outcomes.add(run, index, .final(run.result(index, .rejected, reason: rejection.reason, atMs: nowMs,
                                                               attempts: run.attemptsBefore(index))), holdsSlot: false)
                    continue
                case .success(let request)?:
                    providerRequest = request
                }
                run.noteClaimed(index, at: startedAt, resend: verdict == .resend)
                let item = SendItem(index: index, request: providerRequest)
                if let batch = batchOf[ObjectIdentifier(run)] {
                    batches[batch].items.append(item)
                } else {
                    batchOf[ObjectIdentifier(run)] = batches.count
                    batches.append(SendBatch(run: run, items: [item], claimedAt: startedAt))
                }
                taking[request.endpoint, default: 0] += 1
                if !run.transactional { bulkSending += 1 }
                if verdict == .resend { counts.resend += 1 } else { counts.send += 1 }
            case .duplicate:
                run.dropRequest(index) // never sent: its payload need not wait for the run's end
                outcomes.add(run, index, .final(run.result(index, .duplicate, reason: nil, atMs: nowMs)), holdsSlot: false)
                counts.duplicate += 1
            case .wait:
                var retry = request
                retry.waits += 1
                retry.due = now + min(1.0, 0.05 * Double(1 << min(retry.waits, 5)))
                again.append(retry)
                counts.wait += 1
            case .knownInvalid:
                run.dropRequest(index)
                run.noteClaimed(index, at: startedAt) // released when its outcome is recorded
                outcomes.add(run, index, .final(run.result(index, .invalidToken, reason: "known_invalid", atMs: nowMs)), holdsSlot: false)
                counts.invalid += 1
            case .unanswered:
                run.dropRequest(index)
                let result = run.result(index, .failed, reason: "unanswered", atMs: nowMs, attempts: run.attemptsBefore(index))
                outcomes.add(run, index, .final(result), holdsSlot: false)
                counts.unanswered += 1
            case .paused:
                run.campaign.update(state: .paused)
                parkPaused(request, now: now)
            case .cancelled:
                run.campaign.update(state: .cancelled)
                cancel(request, wallNow: Double(nowMs) / 1000)
            case .capped:
                run.dropRequest(index)
                outcomes.add(run, index, .final(run.result(index, .capped, reason: nil, atMs: nowMs, attempts: run.attemptsBefore(index))),
                             holdsSlot: false)
                metrics.increment("pushworker_capped_total", [("category", run.capPolicy?.category ?? "")])
                counts.capped += 1
            }
        }
        if !releases.isEmpty {
            do { try state.record(releases, invalid: []) } catch { health.failed(error, during: "release") }
        }
        queue.append(again)
        for (verdict, count) in [("send", counts.send), ("resend", counts.resend), ("duplicate", counts.duplicate), ("wait", counts.wait),
                                 ("known_invalid", counts.invalid), ("unanswered", counts.unanswered), ("capped", counts.capped)] where count > 0 {
            metrics.increment("pushworker_claims_total", [("verdict", verdict)], by: Double(count))
        }
        let sending = counts.send + counts.resend
        if sending > 0 {
            slots.take(sending, bulk: bulkSending)
            endpoints.addInFlight(taking)
        }
        return batches
    }

    /// The claim round trip for `taken`, with the fleet's backoffs of their endpoints: the
    /// endpoints of this worker hold those from now on (`heldNow`). Nil when Redis did not
    /// answer: the requests are queued again, due in a second.
    private func roundTrip(_ taken: [ClaimRequest], now: Double)
        -> (answers: DeliveryStateStore.ClaimAnswers, startedAt: Double, heldNow: Set<Int>)? {
        var items: [DeliveryStateStore.ClaimItem] = []
        items.reserveCapacity(taken.count)
        var pairEndpoints: [Int] = []
        var pairs: [(appID: String, provider: String)] = []
        var campaigns: [CampaignCell] = []
        for request in taken {
            items.append(request.run.claimItem(request.index, counting: true))
            if campaigns.last !== request.run.campaign && !campaigns.contains(where: { $0 === request.run.campaign }) {
                campaigns.append(request.run.campaign)
            }
            // Recipients of one job come together: the endpoint before is checked first.
            if pairEndpoints.last != request.endpoint && !pairEndpoints.contains(request.endpoint) {
                pairEndpoints.append(request.endpoint)
                pairs.append(endpoints.appAndProvider(request.endpoint))
            }
        }
        let startedAt = clock.monotonicSeconds
        let answers: DeliveryStateStore.ClaimAnswers
        do {
            answers = try state.claim(items, leaseMs: settings.leaseMs, unansweredLimit: settings.unansweredLimit, backoffs: pairs,
                                      controls: campaigns.map { ($0.appID, $0.campaignID) })
            health.answered()
        } catch {
            health.failed(error, during: "claim")
            queue.restore(taken.map { var request = $0; request.due = now + 1; return request })
            return nil
        }
        for (cell, control) in zip(campaigns, answers.controls) { controls.apply(control, to: cell, readAt: startedAt) }
        // Backoffs another worker set: this worker's endpoint holds them too, from now on.
        var heldNow: Set<Int> = []
        for (position, endpoint) in pairEndpoints.enumerated() {
            guard position < answers.backoffRemainingMs.count, let remaining = answers.backoffRemainingMs[position], remaining > 0 else { continue }
            endpoints.noteBackoff(endpoint, until: startedAt + Double(remaining) / 1000)
            heldNow.insert(endpoint)
        }
        return (answers, startedAt, heldNow)
    }

    /// Renews the leases of claims held for a third of the lease (a slow provider, a long wait
    /// for a connection): one round trip for all of them. A claim another processing took
    /// meanwhile is lost: its request is not written (``JobRun/mayWrite(_:now:leaseSeconds:requestTimeoutSeconds:)``).
    func renewLeases() {
        guard health.isHealthy else { return }
        let now = clock.monotonicSeconds
        var items: [DeliveryStateStore.ClaimItem] = []
        var owners: [(run: JobRun, index: Int)] = []
        for run in registry.runs {
            for index in run.claimsToRenew(now: now, leaseSeconds: leaseSeconds) {
                items.append(run.claimItem(index))
                owners.append((run, index))
            }
        }
        guard !items.isEmpty else { return }
        do {
            let answers = try state.claim(items, leaseMs: settings.leaseMs, unansweredLimit: settings.unansweredLimit, backoffs: [])
            health.answered()
            var lost = 0
            var stale: [DeliveryStateStore.RecordEntry] = []
            for (position, reply) in answers.replies.enumerated() {
                let (run, index) = owners[position]
                switch reply {
                case .claimed, .alreadyOurs, .claimedResend:
                    // Recorded meanwhile: the renewal wrote a claim nobody holds; give it back.
                    if !run.renewed(index, at: now), let entry = run.recordEntry(index, .released) { stale.append(entry) }
                case .alreadySent, .claimedElsewhere, .unansweredFinal, .paused, .cancelled, .capped:
                    run.noteLost(index)
                    lost += 1
                }
            }
            if !stale.isEmpty { try state.record(stale, invalid: []) }
            if lost > 0 {
                metrics.increment("pushworker_claims_lost_total", by: Double(lost))
                logger.warning("claims lost before their outcome (a lease ran out): their requests are not written", ["claims": "\(lost)"])
            }
        } catch {
            health.failed(error, during: "lease renewal")
        }
    }
}
