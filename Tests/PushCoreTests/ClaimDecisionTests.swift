import PushCore
import Testing

@Suite("Claim decisions (docs/reference/redis.md)")
struct ClaimDecisionTests {
    @Test("verdict per script reply, dead-token record and re-registration", arguments: [
        // reply, invalidSince, tokenUpdatedAt, verdict
        (ClaimReply.claimed, Int64?.none, Int64?.none, ClaimVerdict.send),
        (.alreadyOurs, nil, nil, .send),
        (.alreadySent, nil, nil, .duplicate),
        (.alreadySent, 1_000, nil, .duplicate),            // sent wins over a dead token
        (.claimedElsewhere, nil, nil, .wait),
        (.claimedElsewhere, 1_000, nil, .wait),            // the other processing decides
        (.claimed, 1_000, nil, .knownInvalid(invalidSinceMs: 1_000)),
        (.claimed, 1_000, 999, .knownInvalid(invalidSinceMs: 1_000)),
        (.claimed, 1_000, 1_000, .knownInvalid(invalidSinceMs: 1_000)),
        (.claimed, 1_000, 1_001, .send),                   // re-registered after it died: valid again
        (.alreadyOurs, 5, 9_999, .send),
        (.claimedResend, nil, nil, .resend),               // an earlier attempt was never answered
        (.claimedResend, 1_000, nil, .knownInvalid(invalidSinceMs: 1_000)),
        (.unansweredFinal, nil, nil, .unanswered),         // no resend left: never sent again
        (.unansweredFinal, 1_000, nil, .unanswered),
        (.paused, nil, nil, .paused),                      // campaign paused: parked, nothing claimed
        (.paused, 1_000, nil, .paused),
        (.cancelled, nil, nil, .cancelled),                // campaign cancelled: final `cancelled`
        (.cancelled, 1_000, nil, .cancelled),
        (.capped, nil, nil, .capped),                      // the user reached a frequency cap: final `capped`
        (.capped, 1_000, nil, .capped),
    ])
    func verdicts(reply: ClaimReply, invalidSince: Int64?, tokenUpdatedAt: Int64?, expected: ClaimVerdict) {
        #expect(ClaimDecision.verdict(reply, invalidSinceMs: invalidSince, tokenUpdatedAtMs: tokenUpdatedAt) == expected)
    }

    @Test("script reply codes are the documented ones")
    func replyCodes() {
        #expect(ClaimReply.allCases.map(\.rawValue) == [0, 1, 2, 3, 4, 5, 6, 7, 8])
    }
}

@Suite("De-duplication keys and retention (docs/reference/redis.md)")
struct DedupKeyTests {
    @Test("deterministic per msgId, different for different msgIds")
    func deterministic() {
        #expect(DedupKey(msgID: "AbC-_1") == DedupKey(msgID: "AbC-_1"))
        #expect(DedupKey(msgID: "AbC-_1") != DedupKey(msgID: "AbC-_2"))
        let keys = Set((0..<10_000).map { DedupKey(msgID: "msg-\($0)").fingerprint })
        #expect(keys.count == 10_000)
    }

    /// Part of the Redis layout the fleet shares: a change would make earlier sends invisible.
    /// Vectors computed independently (FNV-1a-64 of the UTF-8 bytes, then SplitMix64's mixer).
    @Test("the fingerprint is FNV-1a-64 of the msgId's UTF-8 bytes finished with SplitMix64's mixer", arguments: [
        ("", UInt64(0xf52a_15e9_a9b5_e89b)), ("a", 0x02c0_bdbf_4814_20f8), ("AbC-_1", 0xa2db_81e1_716f_c101),
        ("AQJrMQhhcHBfZGVtbwtjbXBfZXhhbXBsZQN1MQdpb3MtMS0wA2lvcwJBHKLCdK4V0s-9zAe0LunsGA", 0x330b_7f21_9d44_f582),
        ("çé✓", 0x3662_e501_3c80_bd4a),
    ])
    func fingerprintVectors(msgID: String, expected: UInt64) {
        #expect(DedupKey(msgID: msgID).fingerprint == expected)
        // A substring's copy and a bridged-looking concatenation hash the same bytes.
        #expect(DedupKey(msgID: String((msgID + "x").dropLast())).fingerprint == expected)
    }

    @Test("buckets spread a campaign: 4,096 buckets, all used by 100,000 msgIds, none with more than 2.5 × its share")
    func spread() {
        var counts = [Int](repeating: 0, count: DedupKey.bucketCount)
        for index in 0..<100_000 { counts[DedupKey(msgID: "cmp_42-user-\(index)").bucket] += 1 }
        #expect(counts.allSatisfy { $0 > 0 })
        #expect((counts.max() ?? 0) < Int(2.5 * 100_000 / Double(DedupKey.bucketCount)))
    }

    @Test("bucket hex and member: 3 hex digits of the top 12 bits; the member is the signed decimal Redis stores as an integer")
    func encoding() {
        let key = DedupKey(fingerprint: 0xFFF0_0000_0000_0001)
        #expect(key.bucket == 4095)
        #expect(key.bucketHex == "fff")
        #expect(key.member == String(Int64(bitPattern: 0xFFF0_0000_0000_0001)))
        #expect(key.member.hasPrefix("-"))
        #expect(DedupKey(fingerprint: 0x0010_0000_0000_0000).bucketHex == "001")
        #expect(DedupKey(fingerprint: 1).member == "1")
    }

    @Test("retention: expiresAt, else ttlSeconds, else the maximum; never above the maximum, never below the floor", arguments: [
        // expiresAt − now (s), ttl, max, expected seconds
        (Int64?.some(7_200), Int?.none, 604_800, 7_200),
        (Int64?.some(7_200), Int?.some(60), 604_800, 7_200),   // expiresAt wins over ttlSeconds
        (nil, Int?.some(86_400), 604_800, 86_400),
        (nil, Int?.some(0), 604_800, 3_600),                   // TTL 0: the one-hour floor
        (Int64?.some(-10), nil, 604_800, 3_600),                // already expired: the floor
        (nil, nil, 604_800, 604_800),
        (Int64?.some(30 * 86_400), nil, 604_800, 604_800),      // capped
        (nil, nil, 600, 600),                                   // a maximum under the floor wins
    ])
    func retention(expiresIn: Int64?, ttl: Int?, maximum: Int, expected: Int64) {
        let now: Int64 = 1_700_000_000_000
        let ms = DedupRetention.milliseconds(expiresAtMs: expiresIn.map { now + $0 * 1000 }, ttlSeconds: ttl, nowMs: now, maximumSeconds: maximum)
        #expect(ms == expected * 1000)
    }
}
