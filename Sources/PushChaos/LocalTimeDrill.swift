import Foundation
import PushCore
import PushDevTools
import PushProcess

/// The local-time drill (docs/local-time.md): recipients in three IANA zones, each zone's quiet
/// hours ending at a different minute boundary (the first at least ``quietLeadSeconds`` after
/// the jobs are enqueued, the others one and two minutes later), and a `sendAtLocal` job per
/// zone due at the first boundary. One worker against a provider answering in 50 ms.
extension ChaosDrills {
    public static let localTimeDrillNames = ["quiet-hours"]

    /// The zones of the drill, in the order their quiet hours end.
    static let quietZones = ["Europe/Paris", "America/New_York", "Asia/Tokyo"]

    /// The shortest time between enqueueing and the first quiet end: the worker takes the jobs
    /// in while their recipients are still inside their quiet hours.
    static let quietLeadSeconds = 12.0

    /// One group of the drill's recipients: their jobs and the instant none may reach the provider before.
    struct DeferredGroup {
        var label: String
        var campaign: ChaosCampaign
        var notBefore: Date
    }

    /// `HH:MM` of `instant` on `zone`'s wall clock.
    static func wallClock(_ instant: Date, _ zone: TimeZone) -> String {
        let local = Int((instant.timeIntervalSince1970 + Double(zone.secondsFromGMT(for: instant))).rounded(.down))
        let minuteOfDay = ((local % 86_400) + 86_400) % 86_400 / 60
        return String(format: "%02d:%02d", minuteOfDay / 60, minuteOfDay % 60)
    }

    /// The first whole minute at least `lead` seconds after `now`.
    static func minuteBoundary(after now: Date, lead: Double) -> Date {
        Date(timeIntervalSince1970: ((now.timeIntervalSince1970 + lead) / 60).rounded(.up) * 60)
    }

    /// The drill's groups: per zone, a job whose quiet hours (5 minutes long, in the recipients'
    /// own `timezone`) end at `first` + 60 s × the zone's index, and a job whose `sendAtLocal`
    /// (read in the job's `timezone`) is `first`.
    static func deferredGroups(_ options: ChaosOptions, first: Date) -> [DeferredGroup] {
        var groups: [DeferredGroup] = []
        for (index, name) in quietZones.enumerated() {
            guard let zone = TimeZone(identifier: name) else { continue }
            let end = first.addingTimeInterval(Double(index) * 60)
            var quiet = ChaosCampaign.make(prefix: "quiet\(index)", jobs: 1, perJob: options.scaled(100, minimum: 10),
                                           seed: options.seed + UInt64(index), collapseID: nil, campaignID: "cmp_quiet")
            let hours = #"{"quietHours":{"start":"\#(wallClock(end.addingTimeInterval(-300), zone))","end":"\#(wallClock(end, zone))"},"#
            quiet.jobs = quiet.jobs.map { job in
                let text = String(decoding: job.value.dropFirst(), as: UTF8.self)
                    .replacingOccurrences(of: #""platform":"#, with: #""timezone":"\#(name)","platform":"#)
                return (job.key, Array((hours + text).utf8))
            }
            groups.append(DeferredGroup(label: "\(name) quiet hours", campaign: quiet, notBefore: end))
            var local = ChaosCampaign.make(prefix: "local\(index)", jobs: 1, perJob: options.scaled(30, minimum: 5),
                                           seed: options.seed + 10 + UInt64(index), collapseID: nil, campaignID: "cmp_local")
            let sendAt = #"{"timezone":"\#(name)","sendAtLocal":"\#(wallClock(first, zone))","#
            local.jobs = local.jobs.map { ($0.key, Array(sendAt.utf8) + $0.value.dropFirst()) }
            groups.append(DeferredGroup(label: "\(name) sendAtLocal", campaign: local, notBefore: first))
        }
        return groups
    }

    /// Every recipient ends `sent`, exactly once, and the provider received none before its
    /// group's quiet end or local send time.
    static func quietHours(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        let harness = try ChaosHarness(options, name: report.name, sandboxArguments: ["--latency-ms", "50"])
        let worker = try harness.startWorker(extra: ["PUSHWORKER_RETRY_MAX_DELAY_SECONDS": "600", "PUSHWORKER_RDKAFKA_FETCH_WAIT_MAX_MS": "50"])
        _ = ChildProcess.waitFor(timeout: 60) { worker.readyz() == 200 }
        let enqueuedAt = Date()
        let first = minuteBoundary(after: enqueuedAt, lead: quietLeadSeconds)
        let groups = deferredGroups(options, first: first)
        let expected = groups.reduce(Set<String>()) { $0.union($1.campaign.expected) }
        let watcher = try ResultWatcher(harness, expected: expected)
        try harness.produce(groups.flatMap(\.campaign.jobs))
        let lastEnd = groups.map(\.notBefore).max() ?? first
        watcher.wait(timeout: lastEnd.timeIntervalSinceNow + 60)
        let accepted = acceptedTimes(harness)
        let msgIDs = resultMsgIDs(watcher)
        report.figure("enqueued", "\(expected.count) recipients; first end \(format(first.timeIntervalSince(enqueuedAt))) after enqueueing")
        var early = 0, unreceived = 0
        for group in groups {
            let dueMs = Int64(group.notBefore.timeIntervalSince1970 * 1000)
            let times = group.campaign.expected.compactMap { msgIDs[$0] }.flatMap { accepted[$0] ?? [] }
            let groupEarly = times.filter { $0 < dueMs }.count
            early += groupEarly
            unreceived += group.campaign.recipientCount - Set(group.campaign.expected.compactMap { msgIDs[$0] }).filter { accepted[$0] != nil }.count
            let after = { (value: Int64?) in value.map { String(format: "%+.2f s", Double($0 - dueMs) / 1000) } ?? "none" }
            report.figure(group.label, "\(times.count) received of \(group.campaign.recipientCount), \(groupEarly) early; "
                          + "first \(after(times.min())), last \(after(times.max())) after its end")
        }
        report.figure("results", watcher.statusSummary)
        nothingLost(watcher, &report)
        report.check("every recipient sent", "\(watcher.statuses["sent"] ?? 0)/\(expected.count)", (watcher.statuses["sent"] ?? 0) == expected.count)
        report.check("exactly one final result per recipient (duplicate results)", "\(watcher.duplicateResults)", watcher.duplicateResults == 0)
        report.check("requests the provider received before the recipient's quiet end or send time", "\(early)", early == 0)
        report.check("recipients the provider never received", "\(unreceived)", unreceived == 0)
        report.check("msgIds the provider received twice", "\(accepted.values.filter { $0.count > 1 }.count)",
                     accepted.values.allSatisfy { $0.count == 1 })
        stop(worker, &report)
    }

    /// The msgId of each recipient (`jobId|subscriptionId`) from its results.
    static func resultMsgIDs(_ watcher: ResultWatcher) -> [String: String] {
        var msgIDs: [String: String] = [:]
        for message in watcher.reader.messages {
            guard let object = try? JSONSerialization.jsonObject(with: Data(message.value)) as? [String: Any],
                  let msgID = object["msgId"] as? String else { continue }
            msgIDs["\(object["jobId"] as? String ?? "")|\(object["subscriptionId"] as? String ?? "")"] = msgID
        }
        return msgIDs
    }
}
