import Foundation
import PushCore
import PushKafkaMock
import PushSandbox
import PushKafka
import PushWorker
import PushEvents
import PushEncoding
import PushDevTools

/// A generated campaign: jobs to enqueue and the (jobId, subscriptionId) pairs that must each
/// get at least one final result.
struct ChaosCampaign {
    var jobs: [(key: String, value: [UInt8])] = []
    var expected: Set<String> = []
    var recipientCount: Int { expected.count }

    /// `jobs` jobs of `perJob` recipients: iOS and Android alternating; every `webEvery`-th
    /// recipient is a Web Push one when `web` subscriptions are given.
    /// `app` and `collapseID` (nil: none, so each recipient's replace key is derived from its
    /// msgId) are the jobs' own.
    static func make(prefix: String, jobs: Int, perJob: Int, platforms: [String] = ["ios", "android"], web: [String] = [],
                     seed: UInt64 = 1, app: String = ChaosHarness.app, collapseID: String? = "chaos",
                     campaignID: String = "cmp_chaos") -> ChaosCampaign {
        var campaign = ChaosCampaign()
        var serial = Int(seed % 1000) * 1_000_000
        for jobIndex in 0..<jobs {
            let jobID = "\(prefix):\(String(format: "%05d", jobIndex))"
            var recipients: [String] = []
            for index in 0..<perJob {
                serial += 1
                let subscriptionID = "\(prefix)-\(jobIndex)-\(index)"
                campaign.expected.insert(jobID + "|" + subscriptionID)
                if !web.isEmpty && index % 10 == 9 {
                    recipients.append(#"{"userId":"u\#(serial)","subscriptionId":"\#(subscriptionID)","platform":"web","subscription":\#(web[serial % web.count])}"#)
                    continue
                }
                let platform = platforms[index % platforms.count]
                let token = platform == "ios" ? apnsToken(serial) : fcmToken(serial)
                recipients.append(#"{"userId":"u\#(serial)","subscriptionId":"\#(subscriptionID)","platform":"\#(platform)","token":"\#(token)","properties":{"name":"N\#(serial)"}}"#)
            }
            campaign.jobs.append((jobID, Array(job(id: jobID, recipients: recipients, app: app, collapseID: collapseID, campaign: campaignID).utf8)))
        }
        return campaign
    }

    static func apnsToken(_ seed: Int) -> String {
        var text = ""
        var value = UInt64(seed + 1) &* 0x9E37_79B9_7F4A_7C15
        while text.count < 64 {
            value = value &* 6364136223846793005 &+ 1442695040888963407
            text += String(value >> 4, radix: 16)
        }
        return String(text.prefix(64))
    }

    static func fcmToken(_ seed: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
        var text = "f"
        var value = UInt64(seed + 7)
        while text.count < 160 {
            value = value &* 6364136223846793005 &+ 1442695040888963407
            text.append(alphabet[Int(value >> 58)])
        }
        return text
    }

    /// A valid job of app `app_chaos` with the given recipient JSON objects.
    static func job(id: String, recipients: [String], data: String = #"{"screen":"chaos"}"#, app: String = ChaosHarness.app,
                    collapseID: String? = "chaos", campaign: String = "cmp_chaos") -> String {
        let expires = RFC3339Timestamp.format(Date().addingTimeInterval(3600))
        let collapse = collapseID.map { #""collapseId":"\#($0)","# } ?? ""
        return #"{"schemaVersion":1,"jobId":"\#(id)","appId":"\#(app)","campaignId":"\#(campaign)","variant":"A","expiresAt":"\#(expires)","priority":"high","ttlSeconds":3600,\#(collapse)"content":{"defaultLanguage":"en","languages":{"en":{"title":"Hi {{ name | default: \"there\" }}","body":"Chaos drill","url":"https://shop.example/chaos","actions":[{"id":"buy","title":"Buy","url":"https://shop.example/buy"}]}}},"data":\#(data),"recipients":[\#(recipients.joined(separator: ","))]}"#
    }
}

/// Follows `push.results.v1` and tallies results against a campaign, incrementally.
final class ResultWatcher {
    let reader: TopicReader
    let expected: Set<String>
    private var seen = 0
    private(set) var covered: Set<String> = []
    private(set) var results = 0
    private(set) var statuses: [String: Int] = [:]
    private(set) var reasons: [String: Int] = [:]
    /// `certainty` values of the results that carry one.
    private(set) var certainties: [String: Int] = [:]
    /// Results for pairs outside the campaign (should stay 0).
    private(set) var strangers = 0
    /// Every result of each (jobId|subscriptionId): status and `at` (Unix ms), in arrival order.
    private(set) var byPair: [String: [(status: String, atMs: Int64)]] = [:]

    init(_ harness: ChaosHarness, expected: Set<String>) throws {
        reader = try harness.reader("push.results.v1")
        self.expected = expected
    }

    var complete: Bool { covered.count >= expected.count }
    var missing: Int { expected.count - covered.count }
    /// Results beyond the first one of each recipient.
    var duplicateResults: Int { results - strangers - covered.count }

    func update(_ seconds: Double = 0.05) {
        reader.poll(seconds)
        let messages = reader.messages
        while seen < messages.count {
            let message = messages[seen]
            seen += 1
            guard let object = try? JSONSerialization.jsonObject(with: Data(message.value)) as? [String: Any] else { continue }
            let pair = "\(object["jobId"] as? String ?? "")|\(object["subscriptionId"] as? String ?? "")"
            results += 1
            guard expected.contains(pair) else { strangers += 1; continue }
            covered.insert(pair)
            let status = object["status"] as? String ?? "?"
            let at = (object["at"] as? String).flatMap { RFC3339Timestamp.parse($0) }.map { Int64($0.timeIntervalSince1970 * 1000) } ?? 0
            byPair[pair, default: []].append((status, at))
            statuses[status, default: 0] += 1
            if let reason = object["reason"] as? String { reasons[reason, default: 0] += 1 }
            if let certainty = object["certainty"] as? String { certainties[certainty, default: 0] += 1 }
        }
    }

    /// Polls until `fraction` of the recipients have a result or `timeout`; returns whether reached.
    @discardableResult
    func wait(fraction: Double = 1, timeout: Double) -> Bool {
        let target = Int((Double(expected.count) * fraction).rounded(.up))
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            update()
            if covered.count >= target { return true }
        } while Date() < deadline
        return covered.count >= target
    }

    var statusSummary: String {
        statuses.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }
}
