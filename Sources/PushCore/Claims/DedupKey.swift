import PushEncoding
/// The de-duplication identity of one message in the fleet's shared state (docs/reference/redis.md
/// "Claims", "Memory"): a 64-bit fingerprint of the msgId, split into a bucket (which Redis
/// key holds it) and a member (what that key holds).
///
/// The msgId already ends in an HMAC tag, so two different msgIds have unrelated bytes; a
/// 64-bit FNV-1a hash finished with SplitMix64's mixer is then as good as a cryptographic hash
/// for telling them apart (a collision of two msgIds of one campaign in one bucket: about
/// n² / 2⁶⁵, n the bucket's size), at a small fraction of a SHA-256's work.
///
/// Layout: the top 12 bits pick one of ``bucketCount`` buckets per campaign, so one campaign's
/// state spreads over thousands of Redis Cluster slots (docs/reference/redis.md), and each bucket
/// of a 50,000-recipient campaign holds ~12 members: a Redis intset, 8 bytes a member.
public struct DedupKey: Sendable, Hashable {
    /// The fingerprint: FNV-1a-64 of the msgId's UTF-8 bytes, finished with ``SplitMix64/mix(_:)``.
    public let fingerprint: UInt64

    /// Buckets per campaign. Part of the Redis layout shared by the fleet: changing it makes a
    /// running campaign's earlier sends invisible to new processings.
    public static let bucketCount = 4096

    public init(msgID: String) {
        // Over the string's UTF-8 storage in place (this runs per recipient; iterating `utf8`
        // is many times dearer).
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        let bytes = msgID.utf8.span
        for index in bytes.indices { hash = (hash ^ UInt64(bytes[index])) &* 0x0000_0100_0000_01b3 }
        fingerprint = SplitMix64.mix(hash)
    }

    public init(fingerprint: UInt64) { self.fingerprint = fingerprint }

    /// 0 ..< ``bucketCount``: the top 12 bits.
    public var bucket: Int { Int(fingerprint >> 52) }

    /// The member stored in the bucket: the fingerprint as a signed decimal, so Redis keeps the
    /// bucket as an intset (8 bytes a member) rather than a hash table (~75 bytes a member).
    public var member: String { String(memberValue) }

    /// ``member`` as the integer Redis parses it back to.
    public var memberValue: Int64 { Int64(bitPattern: fingerprint) }

    /// The bucket as three lower-case hex digits (`000`…`fff`), for key names.
    public var bucketHex: String {
        let digits: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"]
        let b = bucket
        return String([digits[(b >> 8) & 0xF], digits[(b >> 4) & 0xF], digits[b & 0xF]])
    }
}
