import PushCore

/// Every Redis key pushworker writes, built here and nowhere else.
///
/// Components are escaped (`%`, `:`, `{`, `}` percent-encoded) so no input can forge another
/// key's structure or move a key to another slot. Every key is written with a TTL (see
/// `docs/redis.md`, "Keys", for the layout and why).
///
/// - De-duplication state is spread over the slots of a Redis Cluster: one campaign's msgIds fall
///   into 4,096 buckets (``DedupKey``), each bucket one hash tag `{app:campaign:bucket}` holding
///   two keys that the claim and record scripts touch together.
/// - Invalid tokens carry no hash tag: each lands where its own name hashes.
/// - Rate buckets, backoffs and tracking counters are one key each, tagged `{appId}`.
///
/// | key | value | TTL |
/// |---|---|---|
/// | `pw:{app:campaign:bbb}:s` | set (intset) of the bucket's sent msgId fingerprints | the longest job retention it holds (`DedupRetention`, ≤ 7 d) |
/// | `pw:{app:campaign:bbb}:c` | hash fingerprint → `owner:leaseEndMs` of claims in flight | two leases after the last claim |
/// | `pw:inv:<app>:<platform>:<tokenHash>` | invalidSince ms | invalidTTL (90 d) |
/// | `pw:{app}:tb:<provider>` | hash `t`, `ts` | time to refill + 1 s |
/// | `pw:{app}:tb:cmp:<campaignId>` | hash `t`, `ts` | time to refill + 1 s |
/// | `pw:{app}:backoff:<provider>` | deadline ms | until deadline + 60 s |
/// | `pw:{app}:ctl:<campaignId>` | hash: campaign control `s` state, `r` reason, `t` throttle, `d` sendBy ms, `at`, `g` | control TTL (7 d), refreshed on change |
/// | `pw:{app}:cc:<campaignId>` | hash status → count of final results | control TTL, refreshed on count |
/// | `pw:{app}:cr:<campaignId>` | hash minute → `sent` count | 3 min after the last count |
/// | `pw:{app}:ev:cmp:<campaignId>` | hash event type → count | event counter TTL (90 d) |
/// | `pw:{app}:ev:cmp:<campaignId>:v:<variant>` | hash event type → count | event counter TTL |
/// | `pw:{app}:ev:uq:<campaignId>:<type>` | HyperLogLog of msgIds | event counter TTL |
/// | `pw:{app}:ev:uq:<campaignId>:v:<variant>:<type>` | HyperLogLog of msgIds | event counter TTL |
/// | `pw:{app:user}:cap:<category>` | sorted set `campaign|fingerprint` → send time ms of one user's capped sends (docs/caps.md) | the category's longest cap window, refreshed on each send |
/// | `pw:api:idem:<tokenId>:<key>` | the first answer to a `POST /v1/jobs` with that `Idempotency-Key` | `PUSHWORKER_API_IDEMPOTENCY_TTL_SECONDS` (24 h; 2 min while it is pending) |
public enum RedisKeys {
    /// The sent fingerprints of one bucket of a campaign (a set).
    public static func dedupSent(appID: String, campaignID: String, bucket: DedupKey) -> String {
        DedupScope(appID: appID, campaignID: campaignID).sentKey(bucket.bucket)
    }

    /// The claims in flight of one bucket of a campaign (a hash), same hash tag as its sent set.
    public static func dedupClaims(appID: String, campaignID: String, bucket: DedupKey) -> String {
        DedupScope(appID: appID, campaignID: campaignID).claimsKey(bucket.bucket)
    }

    /// One campaign's de-duplication keys: the escaped `pw:{app:campaign:` prefix is built once,
    /// each bucket's key then costs one allocation (claims and records build two keys per
    /// recipient: this is on the per-notification path, docs/performance.md).
    struct DedupScope {
        let appID: String
        let campaignID: String
        /// `pw:{app:campaign:`, escaped (``DedupKeyName`` shares it as bytes).
        let prefix: String

        init(appID: String, campaignID: String) {
            self.appID = appID
            self.campaignID = campaignID
            prefix = RedisKeys.concat("pw:{", escape(appID), ":", escape(campaignID), ":")
        }

        /// `pw:{app:campaign:bbb}:s`
        func sentKey(_ bucket: Int) -> String { key(bucket, "}:s") }

        /// `pw:{app:campaign:bbb}:c`
        func claimsKey(_ bucket: Int) -> String { key(bucket, "}:c") }

        private func key(_ bucket: Int, _ tail: String) -> String {
            var key = prefix
            key.reserveCapacity(prefix.utf8.count + 6)
            key += DedupScope.bucketHex[bucket & (DedupKey.bucketCount - 1)]
            key += tail
            return key
        }

        /// ``DedupKey/bucketHex`` of every bucket (small strings: no heap storage).
        static let bucketHex: [String] = (0..<DedupKey.bucketCount).map { DedupKey(fingerprint: UInt64($0) << 52).bucketHex }
    }

    /// A token the provider declared invalid; `tokenHash` is computed by the caller. No hash tag:
    /// an app's dead tokens spread over a Cluster's slots.
    public static func invalidToken(appID: String, platform: String, tokenHash: String) -> String {
        InvalidTokenScope(appID: appID, platform: platform).key(tokenHash)
    }

    /// The dead-token keys of one app and platform: the escaped `pw:inv:<app>:<platform>:` prefix
    /// is built once, each key is then one concatenation (a claim names one such key per
    /// recipient, so the escaping of its app and platform is not repeated per recipient).
    struct InvalidTokenScope {
        let appID: String
        let platform: String
        private let prefix: String

        init(appID: String, platform: String) {
            self.appID = appID
            self.platform = platform
            prefix = RedisKeys.concat("pw:inv:", escape(appID), ":", escape(platform), ":")
        }

        /// `pw:inv:<app>:<platform>:<tokenHash>`
        func key(_ tokenHash: String) -> String { prefix + escape(tokenHash) }
    }

    /// The parts joined with one allocation (string interpolation builds and grows a buffer);
    /// the key prefixes of ``DedupScope`` and ``InvalidTokenScope``.
    static func concat(_ p0: String, _ p1: String, _ p2: String, _ p3: String, _ p4: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(p0.utf8.count + p1.utf8.count + p2.utf8.count + p3.utf8.count + p4.utf8.count)
        bytes.append(contentsOf: p0.utf8); bytes.append(contentsOf: p1.utf8); bytes.append(contentsOf: p2.utf8)
        bytes.append(contentsOf: p3.utf8); bytes.append(contentsOf: p4.utf8)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The fleet-wide token bucket of an app at one provider.
    public static func providerBucket(appID: String, provider: String) -> String {
        "\(prefix(appID))tb:\(escape(provider))"
    }

    /// The fleet-wide token bucket of one campaign (`throttlePerMinute`).
    public static func campaignBucket(appID: String, campaignID: String) -> String {
        "\(prefix(appID))tb:cmp:\(escape(campaignID))"
    }

    /// A campaign's control (docs/campaigns.md): state, reason, throttle, deadline.
    public static func campaignControl(appID: String, campaignID: String) -> String {
        "\(prefix(appID))ctl:\(escape(campaignID))"
    }

    /// A campaign's final results counted by status (the status command, the guardrail).
    public static func campaignCounts(appID: String, campaignID: String) -> String {
        "\(prefix(appID))cc:\(escape(campaignID))"
    }

    /// A campaign's `sent` results per minute (Unix minute → count): its current rate.
    public static func campaignRate(appID: String, campaignID: String) -> String {
        "\(prefix(appID))cr:\(escape(campaignID))"
    }

    /// The fleet-wide backoff deadline of an app at one provider (after a 429 naming no device).
    public static func backoff(appID: String, provider: String) -> String {
        "\(prefix(appID))backoff:\(escape(provider))"
    }

    /// Tracking-event counters of a campaign (`pushworker events`): hash of event type → count.
    public static func eventCounters(appID: String, campaignID: String) -> String {
        "\(prefix(appID))ev:cmp:\(escape(campaignID))"
    }

    /// Tracking-event counters of one variant of a campaign: hash of event type → count.
    public static func eventVariantCounters(appID: String, campaignID: String, variant: String) -> String {
        "\(prefix(appID))ev:cmp:\(escape(campaignID)):v:\(escape(variant))"
    }

    /// Distinct msgIds that reported `type` for a campaign (HyperLogLog, `PFCOUNT` reads it).
    public static func eventUniques(appID: String, campaignID: String, type: String) -> String {
        "\(prefix(appID))ev:uq:\(escape(campaignID)):\(escape(type))"
    }

    /// Distinct msgIds that reported `type` for one variant of a campaign (HyperLogLog).
    public static func eventVariantUniques(appID: String, campaignID: String, variant: String, type: String) -> String {
        "\(prefix(appID))ev:uq:\(escape(campaignID)):v:\(escape(variant)):\(escape(type))"
    }

    /// The first answer to a `POST /v1/jobs` with an `Idempotency-Key` (`pushworker api`,
    /// docs/reference/api.md "Idempotency"): one key per caller (`tokenID`, a digest of its bearer
    /// token, never the token) and key, no hash tag.
    public static func apiIdempotency(tokenID: String, key: String) -> String {
        "pw:api:idem:\(escape(tokenID)):\(escape(key))"
    }

    /// One user's sends of one frequency-cap category (docs/caps.md): tagged `{app:user}`, so a
    /// Cluster spreads users over its slots and one script call holds every category of a user.
    public static func frequencyCap(appID: String, userID: String, category: String) -> String {
        concat("pw:{", escape(appID), ":", escape(userID), "}:cap:" + escape(category))
    }

    /// A send's member in a frequency-cap set: the campaign (escaped, as in its bucket keys) and
    /// the msgId's fingerprint, so the claim script builds the same member from a bucket key.
    public static func capMember(campaignID: String, key: DedupKey) -> String {
        "\(escape(campaignID))|\(key.memberValue)"
    }

    private static func prefix(_ appID: String) -> String { "pw:{\(escape(appID))}:" }

    /// Percent-encodes the characters that carry structure in a key.
    static func escape(_ component: String) -> String {
        guard needsEscape(component) else { return component }
        var out = ""
        for character in component.unicodeScalars {
            switch character {
            case "%": out += "%25"
            case ":": out += "%3A"
            case "{": out += "%7B"
            case "}": out += "%7D"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    /// Whether `component` holds `%`, `:`, `{` or `}` (one pass over a native string's bytes:
    /// three components per recipient are checked in every claim, docs/performance.md).
    static func needsEscape(_ component: String) -> Bool {
        let bytes = component.utf8.span
        for index in bytes.indices {
            let byte = bytes[index]
            if byte == 0x25 || byte == 0x3A || byte == 0x7B || byte == 0x7D { return true }
        }
        return false
    }
}
