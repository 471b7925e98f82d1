import Foundation
import PushCore
import PushRedis

// MARK: - Pacing: provider backoff and fleet-wide token buckets (DESIGN §8, §15 429 scope)

extension Worker {
    /// Sends `items` (claimed) now, or schedules them: after a provider's backoff deadline, or
    /// when the app+provider (`app.json` `ratePerSecond`) and campaign (`throttlePerMinute`)
    /// buckets, shared by the fleet in Redis, have tokens. `fleetBackoff` (`appId|provider` →
    /// Unix seconds) comes with the claim round trip; without it (a scheduled send coming due)
    /// the deadlines are read again, one round trip for the group.
    func dispatch(_ run: JobRun, _ items: [SendItem], now: Double, fleetBackoff: [String: Double]? = nil) {
        // The platforms in order of appearance; items are read in place (a copy of a SendItem
        // retains every field of its request: 35 samples in 1,174 of the consumer thread went
        // to copying them into a dictionary of groups). A job's claim batch is usually one platform.
        var platforms: [Platform] = []
        for position in items.indices where !platforms.contains(items[position].request.platform) {
            platforms.append(items[position].request.platform)
        }
        let appID = run.job.appID
        var deadlines: [Double] = platforms.map { localBackoffUntil(appID: appID, platform: $0) }
        if let fleetBackoff {
            for (position, platform) in platforms.enumerated() {
                deadlines[position] = max(deadlines[position], fleetBackoff[appID + "|" + Deliverer.providerLabel(platform)] ?? 0)
            }
        } else {
            do {
                let fleet = try state.backoffs(platforms.map { (appID: appID, provider: Deliverer.providerLabel($0)) })
                for (position, until) in fleet.enumerated() where position < deadlines.count {
                    if let until { deadlines[position] = max(deadlines[position], Double(until) / 1000) }
                }
            } catch {
                redisFailed(error, during: "backoff read")
                schedule(run, items, due: now + 1)
                return
            }
        }
        for (position, platform) in platforms.enumerated() {
            let group = platforms.count == 1 ? items : items.filter { $0.request.platform == platform }
            if deadlines[position] > now {
                schedule(run, group, due: deadlines[position])
                continue
            }
            let buckets = self.buckets(for: run, platform: platform)
            var granted = group.count
            if !buckets.isEmpty {
                do {
                    let answer = try state.acquire(count: group.count, from: buckets, nowMs: Int64(now * 1000))
                    granted = min(max(answer.granted, 0), group.count)
                    if granted < group.count {
                        schedule(run, Array(group[granted...]), due: now + max(0.02, Double(answer.retryAfterMs) / 1000))
                    }
                } catch {
                    redisFailed(error, during: "token bucket")
                    schedule(run, group, due: now + 1)
                    continue
                }
            }
            if platform == .huawei {
                submitHMSBatches(run, Array(group.prefix(granted)))
            } else {
                // The credentials are copied out of the run once per group (a copy per recipient
                // was a retain per field), and each completion captures the index alone. A run
                // without credentials never gets here: its recipients were rejected in process().
                guard let credentials = run.credentials else { continue }
                for position in 0..<granted { submit(run, group[position], credentials) }
            }
        }
    }

    func buckets(for run: JobRun, platform: Platform) -> [DeliveryStateStore.Bucket] {
        var buckets: [DeliveryStateStore.Bucket] = []
        if let rate = run.credentials?.ratePerSecond, rate > 0 {
            buckets.append(DeliveryStateStore.Bucket(key: RedisKeys.providerBucket(appID: run.job.appID, provider: Deliverer.providerLabel(platform)),
                                                     ratePerSecond: rate, burst: max(1, rate)))
        }
        if let perMinute = run.job.throttlePerMinute, perMinute > 0 {
            let rate = Double(perMinute) / 60
            buckets.append(DeliveryStateStore.Bucket(key: RedisKeys.campaignBucket(appID: run.job.appID, campaignID: run.job.campaignID),
                                                     ratePerSecond: rate, burst: max(1, rate)))
        }
        return buckets
    }

    private func submit(_ run: JobRun, _ item: SendItem, _ credentials: AppCredentials) {
        let index = item.index
        deliverer.deliver(item, credentials: credentials) { attempt in
            run.complete(index, run.outcome(of: attempt, index: index), holdsSlot: true)
        }
    }

    private func schedule(_ run: JobRun, _ items: [SendItem], due: Double) {
        guard !items.isEmpty else { return }
        pending.withLock { $0.append(PendingSend(due: due, run: run, items: items)) }
    }

    /// Dispatches the scheduled sends whose time has come (consumer thread).
    func dispatchDuePending(now: Double) {
        let due: [PendingSend] = pending.withLock { list in
            guard list.contains(where: { $0.due <= now }) else { return [] }
            let ready = list.filter { $0.due <= now }
            list.removeAll { $0.due <= now }
            return ready
        }
        for send in due { dispatch(send.run, send.items, now: now) }
    }

    private func localBackoffUntil(appID: String, platform: Platform) -> Double {
        localBackoff.withLock { $0[appID + "|" + Deliverer.providerLabel(platform)] ?? 0 }
    }

    /// A provider asked the whole app to wait (429 naming no device, 503 with Retry-After):
    /// this process waits at once; the fleet learns it through Redis (finisher queue).
    func noteProviderBackoff(appID: String, platform: Platform, seconds: Double) {
        let until = Date().timeIntervalSince1970 + min(seconds, 3600)
        let provider = Deliverer.providerLabel(platform)
        let isLater = localBackoff.withLock { map -> Bool in
            let key = appID + "|" + provider
            guard until > (map[key] ?? 0) else { return false }
            map[key] = until
            return true
        }
        guard isLater else { return }
        finisher.async { [self] in
            do { try state.setBackoff(appID: appID, provider: provider, untilMs: Int64(until * 1000)) } catch { redisFailed(error, during: "backoff write") }
        }
    }
}
