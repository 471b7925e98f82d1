import Foundation
import PushCore
import PushKafkaMock
import PushSandbox
import PushKafka
import PushWorker
import PushEvents
import PushEncoding
import PushDevTools

/// Drill h: malformed, truncated, oversized and hostile jobs. The worker must stay alive with a
/// flat RSS, and every bad job must end in the DLQ, or every bad recipient be `rejected`.
enum HostileJobs {
    struct Bad {
        var key: String
        var kind: String
        var value: [UInt8]
        /// (jobId|subscriptionId) pairs, for jobs that are valid as a whole.
        var pairs: [String] = []
    }

    static let kinds = ["garbage", "not-json", "truncated", "deep-nesting", "invalid-utf8", "non-string-data", "reserved-data-key",
                        "too-many-actions", "missing-fields", "wrong-types", "disallowed-endpoints", "bad-tokens"]

    /// `count` bad jobs round-robin over ``kinds``, plus `oversized` 10 MB jobs and `huge` jobs of
    /// 20,000 bad recipients each.
    static func make(round: Int, count: Int, oversized: Int, huge: Int, seed: UInt64) -> [Bad] {
        var generator = SplitMix64(seed: seed &+ UInt64(round))
        var jobs: [Bad] = []
        let valid = Array(ChaosCampaign.job(id: "template", recipients: [#"{"userId":"u","subscriptionId":"s","platform":"ios","token":"\#(ChaosCampaign.apnsToken(1))"}"#]).utf8)
        for index in 0..<count {
            let kind = kinds[index % kinds.count]
            let key = "bad-\(round)-\(index)"
            var bad = Bad(key: key, kind: kind, value: [])
            switch kind {
            case "garbage":
                bad.value = (0..<Int(generator.next() % 2000)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            case "not-json":
                bad.value = Array(["", "{", "null", "[]", "42", "\"job\"", "{\"schemaVersion\":1,", "{{}}", "\u{FEFF}{}"][index % 9].utf8)
            case "truncated":
                bad.value = Array(valid.prefix(Int(generator.next() % UInt64(valid.count - 1))))
            case "deep-nesting":
                let depth = 10_000 + Int(generator.next() % 90_000)
                bad.value = Array(#"{"schemaVersion":1,"jobId":"x","data":"#.utf8) + [UInt8](repeating: 0x5B, count: depth)
                    + [UInt8](repeating: 0x5D, count: depth) + [0x7D]
            case "invalid-utf8":
                var bytes = Array(ChaosCampaign.job(id: key, recipients: [#"{"userId":"u","subscriptionId":"\#(key)-0","platform":"ios","token":"\#(ChaosCampaign.apnsToken(index))"}"#]).utf8)
                if let at = bytes.firstIndex(of: UInt8(ascii: "C")) {  // "Chaos drill" body
                    let poison: [[UInt8]] = [[0xC3, 0x28], [0xFF], [0xED, 0xA0, 0x80], [0xF8, 0x88, 0x80, 0x80, 0x80], [0xC0, 0xAF]]
                    bytes.replaceSubrange(at...at, with: poison[index % poison.count])
                }
                bad.value = bytes
            case "non-string-data":
                let values = ["1", "true", "null", #"{"a":"b"}"#, #"["x"]"#, "1.5e308"]
                bad.value = Array(ChaosCampaign.job(id: key, recipients: [recipient(key, 0, index)], data: #"{"n":\#(values[index % values.count])}"#).utf8)
            case "reserved-data-key":
                let keys = ["from", "aps", "google.x", "gcm.y", "on.msgId", "collapse_key", "message_type", "a:b", "url"]
                bad.value = Array(ChaosCampaign.job(id: key, recipients: [recipient(key, 0, index)], data: #"{"\#(keys[index % keys.count])":"v"}"#).utf8)
            case "too-many-actions":
                let actions = (0..<4).map { #"{"id":"a\#($0)","title":"A"}"# }.joined(separator: ",")
                let text = ChaosCampaign.job(id: key, recipients: [recipient(key, 0, index)])
                    .replacingOccurrences(of: #""actions":[{"id":"buy","title":"Buy","url":"https://shop.example/buy"}]"#, with: #""actions":[\#(actions)]"#)
                bad.value = Array(text.utf8)
            case "missing-fields":
                let fields = ["\"jobId\"", "\"appId\"", "\"content\"", "\"recipients\"", "\"schemaVersion\""]
                let text = ChaosCampaign.job(id: key, recipients: [recipient(key, 0, index)])
                    .replacingOccurrences(of: fields[index % fields.count], with: "\"ignored\(index)\"")
                bad.value = Array(text.utf8)
            case "wrong-types":
                let text = ChaosCampaign.job(id: key, recipients: [recipient(key, 0, index)])
                let swaps = [(#""schemaVersion":1"#, #""schemaVersion":"1""#), (#""ttlSeconds":3600"#, #""ttlSeconds":-5"#),
                             (#""priority":"high""#, #""priority":7"#), (#""appId":"app_chaos""#, #""appId":"../etc""#),
                             (#""recipients":["#, #""recipients":{"a":["#)]
                let swap = swaps[index % swaps.count]
                var replaced = text.replacingOccurrences(of: swap.0, with: swap.1)
                if index % swaps.count == 4 { replaced = String(replaced.dropLast(2)) + "]}}" }
                bad.value = Array(replaced.utf8)
            case "disallowed-endpoints":
                let hosts = ["https://10.0.0.1/wp/x", "https://169.254.169.254/latest/meta-data", "http://fcm.googleapis.com/fcm/send/x",
                             "https://evil.example.com/wp/x", "https://localhost:9/wp/x", "https://[::1]/wp/x", "file:///etc/passwd", "javascript:alert(1)"]
                var recipients: [String] = []
                for (slot, host) in hosts.enumerated() {
                    let subscription = "\(key)-\(slot)"
                    bad.pairs.append(key + "|" + subscription)
                    recipients.append(#"{"userId":"u","subscriptionId":"\#(subscription)","platform":"web","subscription":{"endpoint":"\#(host)","keys":{"p256dh":"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4","auth":"BTBZMqHH6r4Tts7J_aSIgg"}}}"#)
                }
                bad.value = Array(ChaosCampaign.job(id: key, recipients: recipients).utf8)
            default:  // bad-tokens
                let tokens = ["bad token!", "", "zz", String(repeating: "a", count: 5000), "0123", "<script>", "dead\u{0}beef"]
                var recipients: [String] = []
                for (slot, token) in tokens.enumerated() {
                    let subscription = "\(key)-\(slot)"
                    bad.pairs.append(key + "|" + subscription)
                    let platform = slot % 2 == 0 ? "ios" : "android"
                    let escaped = token.replacingOccurrences(of: "\u{0}", with: "\\u0000")
                    recipients.append(#"{"userId":"u","subscriptionId":"\#(subscription)","platform":"\#(platform)","token":"\#(escaped)"}"#)
                }
                let pagerSubscription = "\(key)-pager"
                bad.pairs.append(key + "|" + pagerSubscription)
                recipients.append(#"{"userId":"u","subscriptionId":"\#(pagerSubscription)","platform":"pager","token":"x"}"#)
                bad.value = Array(ChaosCampaign.job(id: key, recipients: recipients).utf8)
            }
            jobs.append(bad)
        }
        for index in 0..<oversized {
            let key = "bad-\(round)-oversized-\(index)"
            let padding = String(repeating: "x", count: 10 << 20)
            let text = ChaosCampaign.job(id: key, recipients: [recipient(key, 0, index)]).replacingOccurrences(of: "Chaos drill", with: padding)
            jobs.append(Bad(key: key, kind: "oversized-10MB", value: Array(text.utf8)))
        }
        for index in 0..<huge {
            let key = "bad-\(round)-huge-\(index)"
            var bad = Bad(key: key, kind: "huge-recipient-list", value: [])
            var recipients: [String] = []
            for slot in 0..<20_000 {
                let subscription = "\(key)-\(slot)"
                bad.pairs.append(key + "|" + subscription)
                recipients.append(#"{"userId":"u\#(slot)","subscriptionId":"\#(subscription)","platform":"ios","token":"not-hex-\#(slot)"}"#)
            }
            bad.value = Array(ChaosCampaign.job(id: key, recipients: recipients).utf8)
            jobs.append(bad)
        }
        return jobs
    }

    static func recipient(_ key: String, _ slot: Int, _ seed: Int) -> String {
        #"{"userId":"u","subscriptionId":"\#(key)-\#(slot)","platform":"ios","token":"\#(ChaosCampaign.apnsToken(seed))"}"#
    }

    static func run(_ options: ChaosOptions, _ report: inout DrillReport) throws {
        let harness = try ChaosHarness(options, name: report.name)
        // Five equal rounds; the first warms up (allocator, librdkafka buffers). A leak shows as
        // growth between the peak after rounds 2–3 and the peak after rounds 4–5. (Two single
        // rounds are not compared: one round can leave a step in RSS that is no leak, such as an
        // allocator arena filled and kept, so only growth across rounds counts.)
        let perRound = options.scaled(334, minimum: kinds.count)
        let oversized = 1
        let huge = options.scale >= 0.5 ? 1 : 0
        let rounds = (1...5).map { make(round: $0, count: perRound, oversized: oversized, huge: huge, seed: options.seed) }
        let all = rounds.flatMap { $0 }
        var pairs = Set<String>()
        for bad in all { pairs.formUnion(bad.pairs) }
        let watcher = try ResultWatcher(harness, expected: pairs)
        let dlq = try harness.reader("push.dlq.v1")
        let worker = try harness.startWorker()
        _ = ChildProcess.waitFor(timeout: 30) { worker.readyz() == 200 }
        let large = ["message.max.bytes": "\(32 << 20)"]
        var rss: [Int] = []
        let rssStart = worker.rssKiB() ?? 0
        var dlqKeys = Set<String>()
        var processing = 0.0
        for round in rounds {
            let roundStarted = Date()
            try harness.produce(round.map { ($0.key, $0.value) }, properties: large)
            // Done when every job of the round is accounted for (DLQ copy or all its results).
            let deadline = Date().addingTimeInterval(120)
            while Date() < deadline {
                dlq.poll(0.2)
                watcher.update()
                for message in dlq.messages { dlqKeys.insert(String(decoding: message.key ?? [], as: UTF8.self)) }
                if round.allSatisfy({ accounted($0, dlqKeys, watcher) }) { break }
            }
            processing += Date().timeIntervalSince(roundStarted)
            // What the worker keeps, not what is still on its way out (a DLQ copy waiting for
            // its acknowledgement, a fetch buffer, free arena memory before the worker's periodic
            // trim, every 2 s): the lowest VmRSS over 3 s after the round.
            var settled = Int.max
            for _ in 0..<15 {
                usleep(200_000)
                settled = min(settled, worker.rssKiB() ?? 0)
            }
            rss.append(settled)
        }
        report.figure("time for \(all.count) bad jobs (settling excluded)", DrillReport.format(processing))
        report.check("worker alive", worker.child.isRunning ? "running" : "exited", worker.child.isRunning)

        var byKind: [String: (dlq: Int, rejected: Int, missing: Int)] = [:]
        var unaccounted: [String] = []
        for bad in all {
            var entry = byKind[bad.kind] ?? (0, 0, 0)
            if dlqKeys.contains(bad.key) { entry.dlq += 1 } else if accounted(bad, dlqKeys, watcher) { entry.rejected += 1 } else {
                entry.missing += 1
                unaccounted.append(bad.key)
            }
            byKind[bad.kind] = entry
        }
        for (kind, entry) in byKind.sorted(by: { $0.key < $1.key }) {
            report.check("\(kind): DLQ or all recipients rejected", "dlq \(entry.dlq), rejected \(entry.rejected), missing \(entry.missing)", entry.missing == 0)
        }
        let accepted = (watcher.statuses["sent"] ?? 0) + (watcher.statuses["failed"] ?? 0)
        report.check("no bad recipient was sent", "\(watcher.statusSummary)", accepted == 0)
        let growthKiB = rss.count == 5 ? max(rss[3], rss[4]) - max(rss[1], rss[2]) : 0
        report.figure("worker VmRSS before / settled after rounds 1–5", ([rssStart] + rss).map { "\($0 / 1024) MiB" }.joined(separator: " / "))
        report.check("RSS flat: peak after rounds 4–5 vs rounds 2–3 (< 16 MiB growth)", "\(growthKiB / 1024) MiB",
                     rss.count == 5 && growthKiB < 16 * 1024)

        let good = ChaosCampaign.make(prefix: "after-hostile", jobs: 1, perJob: 10, seed: options.seed + 7)
        let goodWatcher = try ResultWatcher(harness, expected: good.expected)
        try harness.produce(good.jobs)
        goodWatcher.wait(timeout: 30)
        report.check("then a normal job is sent", "\(goodWatcher.statuses["sent"] ?? 0)/\(good.recipientCount)", (goodWatcher.statuses["sent"] ?? 0) == good.recipientCount)
        worker.signal(SIGTERM)
        _ = worker.wait(timeout: 30)
    }

    static func accounted(_ bad: Bad, _ dlqKeys: Set<String>, _ watcher: ResultWatcher) -> Bool {
        if dlqKeys.contains(bad.key) { return true }
        return !bad.pairs.isEmpty && bad.pairs.allSatisfy { watcher.covered.contains($0) }
    }
}

extension DrillReport {
    static func format(_ seconds: Double) -> String { String(format: "%.1f s", seconds) }
}
