import Foundation
import PushRuntime
import PushCore
import PushSandbox
import PushWorker

/// `pushworker-dev bench decode`: a fan-out job's decoding alone, in this process, on one thread —
/// the bench e2e campaign's jobs (same generator, same mix, realistic Web Push subscriptions).
///
/// Two figures: the CPU a job's decode costs per recipient (thread CPU time over `rounds` passes
/// over `jobs` messages, each decoded job dropped at once, so its freeing is counted), and the
/// bytes a decoded job keeps live while the worker holds it (jemalloc's per-thread counters
/// around decoding `jobs` fresh copies of the messages into jobs kept in an array, the copies
/// dropped: a job that references its message counts the message), beside the message's size.
package struct BenchDecode {
    package struct Options {
        package var recipients = 500
        package var jobs = 40
        package var rounds = 20
        package var mix = BenchWorkload.Mix()
        /// `--report` (default bench-decode-report.json), `--quiet`, the build.
        package var common = BenchCommonOptions(report: "bench-decode-report.json")

        package init() {}
    }

    let options: Options

    package init(options: Options) { self.options = options }

    package func run() throws -> [String: Any] {
        let options = self.options
        let webCount = BenchWorkload.webCount(notifications: options.recipients * options.jobs, mix: options.mix)
        var liveWeb: [String] = []
        for index in 0..<min(webCount, 64) {
            liveWeb.append(try SandboxSubscriptions.subscriptionJSON(origin: "https://127.0.0.1:8443", seed: SandboxSubscriptions.defaultSeed,
                                                                     id: "sub\(index)"))
        }
        let workload = BenchWorkload(appID: BenchE2E.appID, runID: "decode", notifications: options.recipients * options.jobs,
                                     jobSize: options.recipients, mix: options.mix, deadShare: 0.05, liveWeb: liveWeb, deadWeb: [])
        let messages = (0..<options.jobs).map { workload.job($0).json }
        let recipients = options.recipients * options.jobs
        let messageBytes = messages.reduce(0) { $0 + $1.count }
        if !options.common.quiet { printError("▸ \(options.jobs) jobs of \(options.recipients) recipients (\(options.mix.description)), \(messageBytes / options.jobs) bytes each") }

        // Warm-up (and a check that every message decodes).
        for message in messages { _ = try JobDecoder.decode(message) }

        // What a held job keeps live.
        var held: [FanOutJob] = []
        held.reserveCapacity(messages.count)
        let liveBefore = AllocatorCounters.threadLiveBytes()
        for message in messages {
            // A fresh copy per job, as the consumer hands one over and drops it: whatever of the
            // message the decoded job still references is counted as held, the rest is freed.
            let received = message.withUnsafeBufferPointer { Array($0) }
            held.append(try JobDecoder.decode(received))
        }
        let liveAfter = AllocatorCounters.threadLiveBytes()
        let heldRecipients = held.reduce(0) { $0 + $1.recipients.count }
        held.removeAll()
        let liveBytes = liveBefore.flatMap { before in liveAfter.map { Double($0 - before) } }

        // CPU per recipient.
        let cpuStart = ThreadCPUClock.seconds()
        for _ in 0..<options.rounds {
            for message in messages { _ = try JobDecoder.decode(message) }
        }
        let cpuSeconds = ThreadCPUClock.seconds() - cpuStart
        let decoded = Double(recipients * options.rounds)

        func round(_ value: Double, _ places: Double = 100) -> Double { (value * places).rounded() / places }
        let heldReport: [String: Any] = liveBytes.map { bytes in [
            "bytesPerRecipient": round(bytes / Double(heldRecipients), 10),
            "bytesPerJob": Int(bytes / Double(options.jobs)),
            "messageBytesPerRecipient": round(Double(messageBytes) / Double(recipients), 10),
            "heldToMessage": round(bytes / Double(messageBytes)),
        ] } ?? ["unavailable": "malloc is not jemalloc"]
        return [
            "build": options.common.isDebugBuild ? "debug" : "release",
            "config": ["recipientsPerJob": options.recipients, "jobs": options.jobs, "rounds": options.rounds, "mix": options.mix.description],
            "decode": ["cpuMicrosPerRecipient": round(cpuSeconds * 1e6 / decoded, 1000),
                       "cpuMicrosPerJob": round(cpuSeconds * 1e6 / Double(options.jobs * options.rounds), 10)],
            "held": heldReport,
        ]
    }
}
