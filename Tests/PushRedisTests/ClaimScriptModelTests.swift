import PushCore
import PushTestSupport
import Testing
@testable import PushRedis
import PushEncoding

/// The Lua claim and record scripts against the plain Swift model of the protocol
/// (`InMemoryClaims`, PushTestSupport): the same random operations, every answer compared.
@Suite("Claim scripts match the protocol model")
struct ClaimScriptModelTests {
    @Test("2,000 random claims, records, releases and unanswered attempts by 4 owners over 40 msgIds, with leases running out", arguments: [UInt64(1), 2, 3])
    func equivalence(seed: UInt64) throws {
        let server = try RedisServer()
        let store = DeliveryStateStore(client: try RedisClient(url: server.url))
        try store.preloadScripts()
        var model = InMemoryClaims()
        var random = SplitMix64(seed: seed)
        let owners = ["w1-1", "w1-2", "w2-1", "w3-9"]
        let msgIDs = (0..<40).map { "msg-\(seed)-\($0)" }
        var nowMs: Int64 = 1_000_000
        let leaseMs: Int64 = 500
        for step in 0..<2_000 {
            nowMs += Int64(random.next() % 60)          // leases of 500 ms run out now and then
            let msgID = msgIDs[Int(random.next() % UInt64(msgIDs.count))]
            let owner = owners[Int(random.next() % UInt64(owners.count))]
            let key = DedupKey(msgID: msgID)
            let modelKey = InMemoryClaims.Key(app: "app", campaign: "cmp", member: key.fingerprint)
            let item = DeliveryStateStore.ClaimItem(appID: "app", campaignID: "cmp", key: key, owner: owner, platform: "ios", tokenHash: "t")
            switch random.next() % 10 {
            case 0..<6:
                let limit = 1 + Int(random.next() % 3)
                let expected = model.claim(modelKey, owner: owner, nowMs: nowMs, leaseMs: leaseMs, unansweredLimit: limit)
                let got = try store.claim([item], nowMs: nowMs, leaseMs: leaseMs, unansweredLimit: limit).replies.first
                #expect(got == expected, "step \(step): claim \(msgID) by \(owner) at \(nowMs), limit \(limit)")
                if got != expected { return }
            default:
                let kind = random.next() % 5
                let outcome: InMemoryClaims.Recorded = kind < 2 ? .sent : kind < 4 ? .released : .unanswered
                model.record(modelKey, owner: owner, outcome)
                try store.record([DeliveryStateStore.RecordEntry(appID: "app", campaignID: "cmp", key: key, owner: owner,
                                                                 sentRetentionMs: outcome == .sent ? 60_000 : nil,
                                                                 unansweredRetentionMs: outcome == .unanswered ? 60_000 : nil)])
            }
        }
    }
}
