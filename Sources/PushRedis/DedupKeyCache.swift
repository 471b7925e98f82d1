import PushCore
import Synchronization

/// The de-duplication key prefixes of the campaigns a worker is delivering, each built once.
///
/// Every claim and every record names two keys per bucket it touches (`pw:{app:campaign:bbb}:s`
/// and `:c`, ``RedisKeys``), and a 500-recipient job touches ~470 of a campaign's 4,096 buckets.
/// The cache keeps the escaped `pw:{app:campaign:` prefix of the ``maxCampaigns`` campaigns used
/// last, shared by the consumer thread's claims and the finisher's records; a bucket's key is then
/// a ``DedupKeyName`` (the prefix and the bucket number), written into the command's bytes when it
/// is formatted, so no bucket's key is a String of its own: no objects per recipient to retain
/// and release on both threads, and the cache's lock is taken once per campaign, not per key.
final class DedupKeyCache: Sendable {
    /// Campaigns kept; the one used longest ago leaves first.
    static let maxCampaigns = 4

    private struct Scope: Hashable {
        var app: String
        var campaign: String
    }

    /// One campaign's keys: immutable, so a claim or record takes it once per campaign and then
    /// names each bucket without a lock or a hash of the campaign's names.
    final class CampaignKeys: Sendable {
        private let prefix: DedupKeyName.Prefix

        fileprivate init(app: String, campaign: String) {
            prefix = DedupKeyName.Prefix(appID: app, campaignID: campaign)
        }

        /// The sent set's and the claims hash's key of `bucket` (taken modulo ``DedupKey/bucketCount``).
        func keys(bucket: Int) -> (sent: DedupKeyName, claims: DedupKeyName) {
            (DedupKeyName(prefix: prefix, bucket: bucket, claims: false), DedupKeyName(prefix: prefix, bucket: bucket, claims: true))
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
    func keys(app: String, campaign: String, bucket: Int) -> (sent: DedupKeyName, claims: DedupKeyName) {
        self.campaign(app: app, campaign: campaign).keys(bucket: bucket)
    }

    /// Campaigns held now (tests).
    var campaignCount: Int { state.withLock { $0.campaigns.count } }
}
