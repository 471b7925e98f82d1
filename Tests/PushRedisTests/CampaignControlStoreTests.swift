import Foundation
import PushCore
import PushTestSupport
import Testing
@testable import PushRedis

private func item(_ n: Int, app: String = "app", campaign: String = "cmp", owner: String = "o1") -> DeliveryStateStore.ClaimItem {
    DeliveryStateStore.ClaimItem(appID: app, campaignID: campaign, key: DedupKey(msgID: "m\(n)"), owner: owner, platform: "ios", tokenHash: "h\(n)")
}

private func count(_ app: String, _ campaign: String, _ counts: [(DeliveryStatus, Int)]) -> DeliveryStateStore.CampaignCount {
    DeliveryStateStore.CampaignCount(appID: app, campaignID: campaign, counts: counts.map { (status: $0.0, count: $0.1) })
}

@Suite("Campaign control in a real redis-server (docs/campaigns.md)")
struct CampaignControlStoreTests {
    let server: RedisServer
    let client: RedisClient
    let store: DeliveryStateStore

    init() throws {
        server = try RedisServer()
        client = try RedisClient(url: server.url)
        store = DeliveryStateStore(client: client, guardSettings: CampaignGuard(invalidShare: 0.5, minSends: 10))
    }

    @Test("pause, throttle, deadline, resume and cancel are stored with Redis's time; a cancel is final")
    func actions() throws {
        #expect(try store.status(appID: "app", campaignID: "cmp").control == .none)
        let paused = try store.apply(.pause(reason: "wrong link"), appID: "app", campaignID: "cmp")
        #expect(paused.state == .paused && paused.reason == "wrong link")
        let updated = try #require(paused.updatedAtMs)
        #expect(abs(Double(updated) / 1000 - Date().timeIntervalSince1970) < 60)
        #expect(try store.apply(.throttle(perMinute: 600), appID: "app", campaignID: "cmp").throttlePerMinute == 600)
        #expect(try store.apply(.deadline(sendByMs: 4_102_444_800_000), appID: "app", campaignID: "cmp").sendByMs == 4_102_444_800_000)
        let resumed = try store.apply(.resume, appID: "app", campaignID: "cmp")
        #expect(resumed.state == .active && resumed.reason == nil && resumed.throttlePerMinute == 600)
        #expect(try store.apply(.throttle(perMinute: nil), appID: "app", campaignID: "cmp").throttlePerMinute == nil)
        #expect(try store.apply(.deadline(sendByMs: nil), appID: "app", campaignID: "cmp").sendByMs == nil)
        #expect(try store.apply(.cancel(reason: nil), appID: "app", campaignID: "cmp").state == .cancelled)
        #expect(throws: CampaignActionError.cancelled) { try store.apply(.resume, appID: "app", campaignID: "cmp") }
        #expect(throws: CampaignActionError.cancelled) { try store.apply(.throttle(perMinute: 5), appID: "app", campaignID: "cmp") }
        #expect(try store.apply(.cancel(reason: "again"), appID: "app", campaignID: "cmp").state == .cancelled)
        #expect(throws: CampaignActionError.self) { try store.apply(.throttle(perMinute: 0), appID: "app", campaignID: "cmp") }
        // Another campaign and another app are untouched.
        #expect(try store.controls([("app", "other"), ("other", "cmp")]) == [.none, .none])
        let ttl = try client.pipeline([["PTTL", .string(RedisKeys.campaignControl(appID: "app", campaignID: "cmp"))]])[0].integerValue ?? -1
        #expect(ttl > 6 * 86_400_000 && ttl <= DeliveryStateStore.defaultControlTTLMs)
    }

    @Test("the standalone claim script answers paused / cancelled for unsent items of a steered campaign and claims nothing")
    func claimHonoursControls() throws {
        try store.preloadScripts()
        let items = (0..<20).map { item($0) }
        let others = (0..<5).map { item($0, campaign: "free") }
        _ = try store.claim(Array(items.prefix(5)), nowMs: nil, leaseMs: 30_000)
        try store.record(items.prefix(5).map {
            DeliveryStateStore.RecordEntry(appID: $0.appID, campaignID: $0.campaignID, key: $0.key, owner: $0.owner, sentRetentionMs: 3_600_000)
        })
        _ = try store.apply(.pause(reason: nil), appID: "app", campaignID: "cmp")
        let trips = client.roundTripCount
        let answers = try store.claim(items + others, nowMs: nil, leaseMs: 30_000, controls: [("app", "cmp"), ("app", "free")])
        #expect(client.roundTripCount == trips + 1, "the control is read in the claim's own round trip")
        #expect(Array(answers.replies.prefix(5)) == Array(repeating: .alreadySent, count: 5))
        #expect(Array(answers.replies[5..<20]) == Array(repeating: .paused, count: 15))
        #expect(Array(answers.replies.suffix(5)) == Array(repeating: .claimed, count: 5))
        #expect(answers.controls.map(\.state) == [.paused, .active])
        // Nothing was claimed for the paused campaign: another owner claims at once after a resume.
        _ = try store.apply(.resume, appID: "app", campaignID: "cmp")
        let later = try store.claim(Array(items[5..<20]).map { item(Int($0.tokenHash.dropFirst())!, owner: "o2") }, nowMs: nil, leaseMs: 30_000,
                                    controls: [("app", "cmp")])
        #expect(later.replies == Array(repeating: .claimed, count: 15))
        _ = try store.apply(.cancel(reason: nil), appID: "app", campaignID: "cmp")
        let cancelled = try store.claim([item(30)], nowMs: nil, leaseMs: 30_000, controls: [("app", "cmp")])
        #expect(cancelled.replies == [.cancelled])
        // Without the control named (lease renewals), the script does not look.
        #expect(try store.claim([item(31)], nowMs: nil, leaseMs: 30_000).replies == [.claimed])
    }

    @Test("cluster mode: the control rides in the claim's round trip as a read; the caller applies it")
    func clusterReadsControls() throws {
        let clusterStore = DeliveryStateStore(client: client, keysMustShareSlot: true)
        _ = try store.apply(.pause(reason: nil), appID: "app", campaignID: "cmp")
        let answers = try clusterStore.claim([item(1)], nowMs: nil, leaseMs: 30_000, controls: [("app", "cmp")])
        #expect(answers.replies == [.claimed])
        #expect(answers.controls.map(\.state) == [.paused])
    }

    @Test("results are counted per campaign in the record's round trip; sendsPerMinute counts this minute's and the last's sent")
    func counts() throws {
        try store.preloadScripts()
        let trips = client.roundTripCount
        let steered = try store.record([], counts: [count("app", "cmp", [(.sent, 7), (.failed, 1), (.cancelled, 0)]), count("app", "b", [(.sent, 2)])])
        #expect(client.roundTripCount == trips + 1)
        #expect(steered.isEmpty)
        try store.record([], counts: [count("app", "cmp", [(.sent, 3), (.duplicate, 2)])])
        let status = try store.status(appID: "app", campaignID: "cmp")
        #expect(status.counts == ["sent": 10, "failed": 1, "duplicate": 2])
        #expect(status.sendsPerMinute >= 10 && status.sendsPerMinute <= 10)
        #expect(try store.status(appID: "app", campaignID: "b").counts == ["sent": 2])
    }

    @Test("the guardrail pauses a campaign once its invalid_token + rejected share passes the threshold after the minimum, and says why")
    func guardrail() throws {
        // 9 results: below the minimum of 10, however bad.
        #expect(try store.record([], counts: [count("app", "dead", [(.invalidToken, 9)])]).isEmpty)
        let steered = try store.record([], counts: [count("app", "dead", [(.invalidToken, 1), (.sent, 1)])])
        #expect(steered.map(\.state) == [.paused])
        let status = try store.status(appID: "app", campaignID: "dead")
        #expect(status.guardTripped)
        #expect(status.control.reason?.contains("10 of 11") == true)
        // A healthy campaign with the same volume is not paused.
        #expect(try store.record([], counts: [count("app", "fine", [(.sent, 15), (.invalidToken, 5)])]).isEmpty)
        // Resumed by an operator: the guardrail leaves it alone from then on.
        #expect(try store.apply(.resume, appID: "app", campaignID: "dead").guardReleased)
        #expect(try store.record([], counts: [count("app", "dead", [(.invalidToken, 100)])]).isEmpty)
        #expect(try store.status(appID: "app", campaignID: "dead").control.state == .active)
        // Switched off with a share of 1.
        let off = DeliveryStateStore(client: client, guardSettings: CampaignGuard(invalidShare: 1, minSends: 10))
        #expect(try off.record([], counts: [count("app", "off", [(.rejected, 50)])]).isEmpty)
    }

    @Test("on a Redis Cluster: actions, the control read with a claim, counts and the guardrail work across the slots")
    func cluster() throws {
        let cluster = try RedisClusterServer(masters: 3, replicasPerMaster: 0)
        let clusterStore = DeliveryStateStore(client: try RedisClusterClient(url: cluster.url),
                                              guardSettings: CampaignGuard(invalidShare: 0.5, minSends: 10))
        try clusterStore.preloadScripts()
        #expect(try clusterStore.apply(.pause(reason: nil), appID: "app", campaignID: "cmp").state == .paused)
        let items = (0..<200).map { item($0) }
        let answers = try clusterStore.claim(items, nowMs: nil, leaseMs: 30_000, controls: [("app", "cmp")])
        #expect(answers.controls.map(\.state) == [.paused])
        #expect(try clusterStore.record([], counts: [count("app", "dead", [(.invalidToken, 20)])]).map(\.state) == [.paused])
        #expect(try clusterStore.status(appID: "app", campaignID: "dead").guardTripped)
        #expect(try clusterStore.status(appID: "app", campaignID: "dead").counts == ["invalid_token": 20])
    }

    @Test("the pure guardrail rule agrees with the script")
    func pureRule() {
        let rule = CampaignGuard(invalidShare: 0.5, minSends: 10)
        #expect(!rule.trips(counts: [.invalidToken: 9]))
        #expect(rule.trips(counts: [.invalidToken: 10, .sent: 1]))
        #expect(!rule.trips(counts: [.invalidToken: 5, .sent: 5]))
        #expect(!rule.trips(counts: [.invalidToken: 5, .duplicate: 100, .sent: 5]))
        #expect(rule.trips(counts: [.rejected: 6, .sent: 5]))
    }
}
