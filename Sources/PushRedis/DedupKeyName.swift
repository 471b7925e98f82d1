import PushCore

/// One bucket's de-duplication key, `pw:{app:campaign:bbb}:s` (the sent set) or
/// `pw:{app:campaign:bbb}:c` (the claims hash), held as its campaign's shared prefix and the
/// bucket number.
///
/// A claim and a record each name two keys per bucket they touch, and a 500-recipient job touches
/// ≈ 470 buckets: one key pair per recipient, twice. As Strings, each key would be an object of
/// its own to retain, release and keep in a cache behind a lock, on the consumer and on the
/// finisher. As a name, ``HiredisContext/format(_:)`` writes
/// its bytes straight into the command and a Cluster hashes its tag from them; ``text`` is the
/// same string ``RedisKeys/dedupSent(appID:campaignID:bucket:)`` and `dedupClaims` build.
public struct DedupKeyName: Sendable, Equatable {
    /// The escaped `pw:{app:campaign:` of one campaign, shared by its 8,192 keys.
    final class Prefix: Sendable {
        let bytes: [UInt8]

        init(appID: String, campaignID: String) {
            bytes = Array(RedisKeys.DedupScope(appID: appID, campaignID: campaignID).prefix.utf8)
        }
    }

    let prefix: Prefix
    /// 0 ..< ``DedupKey/bucketCount`` (4,096: three hex digits).
    let bucket: Int
    /// The claims hash (`:c`); otherwise the sent set (`:s`).
    let claims: Bool

    init(prefix: Prefix, bucket: Int, claims: Bool) {
        self.prefix = prefix
        self.bucket = bucket & (DedupKey.bucketCount - 1)
        self.claims = claims
    }

    /// The key's length in bytes: the prefix, three hex digits and `}:s` or `}:c`.
    var count: Int { prefix.bytes.count + Self.tailCount }

    static let tailCount = 6

    /// The six bytes after the prefix: the bucket in lower-case hex, `}`, `:`, `s` or `c`.
    func tailByte(_ index: Int) -> UInt8 {
        switch index {
        case 0: Self.hexDigit(bucket >> 8)
        case 1: Self.hexDigit(bucket >> 4)
        case 2: Self.hexDigit(bucket)
        case 3: UInt8(ascii: "}")
        case 4: UInt8(ascii: ":")
        default: claims ? UInt8(ascii: "c") : UInt8(ascii: "s")
        }
    }

    private static func hexDigit(_ value: Int) -> UInt8 {
        let nibble = UInt8(truncatingIfNeeded: value & 0xF)
        return nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ (nibble &- 10)
    }

    /// The key's bytes.
    var bytes: [UInt8] {
        var bytes = prefix.bytes
        bytes.reserveCapacity(count)
        for index in 0..<Self.tailCount { bytes.append(tailByte(index)) }
        return bytes
    }

    /// The key as a string (logs, tests, commands built by hand).
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    public static func == (lhs: DedupKeyName, rhs: DedupKeyName) -> Bool {
        lhs.bucket == rhs.bucket && lhs.claims == rhs.claims && (lhs.prefix === rhs.prefix || lhs.prefix.bytes == rhs.prefix.bytes)
    }
}
