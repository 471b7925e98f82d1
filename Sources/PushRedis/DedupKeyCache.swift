import PushCore
import Synchronization

/// The de-duplication keys of the campaigns a worker is delivering, each built once.
///
/// Every claim and every record names two keys per bucket it touches (`pw:{app:campaign:bbb}:s`
/// and `:c`, ``RedisKeys``), and a 500-recipient job touches ~470 of a campaign's 4,096 buckets:
/// building them per call was ≈ 2.5k instructions per recipient in the claim and again in the
/// record (callgrind, docs/performance.md "Sixth session"). The cache keeps the keys of the
/// ``maxCampaigns`` campaigns used last (at most 2 × 4,096 keys each, ≈ 0.5 MB), shared by the
/// consumer thread's claims and the finisher's records. Keys are the same strings
/// ``RedisKeys/dedupSent(appID:campaignID:bucket:)`` and `dedupClaims` build.
final class DedupKeyCache: Sendable {
    /// Campaigns kept; the one used longest ago leaves first.
    static let maxCampaigns = 4

    private struct Scope: Hashable {
        var app: String
        var campaign: String
    }

    private struct Campaign {
        let builder: RedisKeys.DedupScope
        /// `[2 × bucket]` the sent set, `[2 × bucket + 1]` the claims hash; "" until built.
        var keys: [String]
    }

    private struct State {
        var campaigns: [Scope: Campaign] = [:]
        /// Least recently used first.
        var order: [Scope] = []
    }

    private let state = Mutex(State())

    /// The sent set's and the claims hash's key of `bucket` (0 ..< ``DedupKey/bucketCount``).
    func keys(app: String, campaign: String, bucket: Int) -> (sent: String, claims: String) {
        let bucket = bucket & (DedupKey.bucketCount - 1)
        let scope = Scope(app: app, campaign: campaign)
        return state.withLock { state in
            if state.order.last != scope {
                if state.campaigns[scope] == nil {
                    if state.order.count >= Self.maxCampaigns {
                        state.campaigns[state.order.removeFirst()] = nil
                    }
                    state.campaigns[scope] = Campaign(builder: RedisKeys.DedupScope(appID: app, campaignID: campaign),
                                                      keys: [String](repeating: "", count: 2 * DedupKey.bucketCount))
                } else if let index = state.order.firstIndex(of: scope) {
                    state.order.remove(at: index)
                }
                state.order.append(scope)
            }
            return Self.keys(bucket, in: &state.campaigns[scope])
        }
    }

    private static func keys(_ bucket: Int, in campaign: inout Campaign?) -> (sent: String, claims: String) {
        guard var entry = campaign else { return ("", "") }
        campaign = nil  // `entry` is now the keys array's only owner: filling it copies nothing
        defer { campaign = entry }
        if entry.keys[2 * bucket].isEmpty {
            entry.keys[2 * bucket] = entry.builder.sentKey(bucket)
            entry.keys[2 * bucket + 1] = entry.builder.claimsKey(bucket)
        }
        return (entry.keys[2 * bucket], entry.keys[2 * bucket + 1])
    }

    /// Campaigns held now (tests).
    var campaignCount: Int { state.withLock { $0.campaigns.count } }
}
