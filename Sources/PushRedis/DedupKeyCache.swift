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

    /// One campaign's keys: `[2 × bucket]` the sent set, `[2 × bucket + 1]` the claims hash, ""
    /// until first asked for. A claim or record call takes it once per campaign, then asks per
    /// bucket (a lock and an array index: no hashing of the campaign's names per bucket).
    final class CampaignKeys: Sendable {
        private let builder: RedisKeys.DedupScope
        private let keys = Mutex([String](repeating: "", count: 2 * DedupKey.bucketCount))

        fileprivate init(app: String, campaign: String) {
            builder = RedisKeys.DedupScope(appID: app, campaignID: campaign)
        }

        /// The sent set's and the claims hash's key of `bucket` (0 ..< ``DedupKey/bucketCount``).
        func keys(bucket: Int) -> (sent: String, claims: String) {
            let bucket = bucket & (DedupKey.bucketCount - 1)
            return keys.withLock { keys in
                if keys[2 * bucket].isEmpty {
                    keys[2 * bucket] = builder.sentKey(bucket)
                    keys[2 * bucket + 1] = builder.claimsKey(bucket)
                }
                return (keys[2 * bucket], keys[2 * bucket + 1])
            }
        }
    }

    private struct State {
        var campaigns: [Scope: CampaignKeys] = [:]
        /// Least recently used first.
        var order: [Scope] = []
    }

    private let state = Mutex(State())

    /// The keys of one campaign, kept (or made) as the most recently used.
    func campaign(app: String, campaign: String) -> CampaignKeys {
        let scope = Scope(app: app, campaign: campaign)
        return state.withLock { state in
            if let known = state.campaigns[scope] {
                if state.order.last != scope, let index = state.order.firstIndex(of: scope) {
                    state.order.remove(at: index)
                    state.order.append(scope)
                }
                return known
            }
            if state.order.count >= Self.maxCampaigns {
                state.campaigns[state.order.removeFirst()] = nil
            }
            let made = CampaignKeys(app: app, campaign: campaign)
            state.campaigns[scope] = made
            state.order.append(scope)
            return made
        }
    }

    /// The sent set's and the claims hash's key of `bucket` of one campaign.
    func keys(app: String, campaign: String, bucket: Int) -> (sent: String, claims: String) {
        self.campaign(app: app, campaign: campaign).keys(bucket: bucket)
    }

    /// Campaigns held now (tests).
    var campaignCount: Int { state.withLock { $0.campaigns.count } }
}
