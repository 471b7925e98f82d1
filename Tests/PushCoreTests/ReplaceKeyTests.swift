import Foundation
import Testing
import PushCore
import PushEncoding

@Suite("Replace keys")
struct ReplaceKeyTests {
    /// Computed independently of this code:
    /// ```
    /// python3 -c 'import hashlib,base64,sys; m=sys.argv[1]; print(base64.urlsafe_b64encode(
    ///   hashlib.sha256(b"pushworker-replace-key:"+m.encode()).digest()[:16]).rstrip(b"=").decode())' '<msgId>'
    /// ```
    @Test("derived keys match vectors computed with python3 hashlib", arguments: [
        ("", "CiSOkQqPZZrbRf4ISvixPw"),
        ("m.sig", "7mVmqR5oD4HbReCtXytlvw"),
        ("AQJrMQdhcHBfY2xp", "q0LxDU3q4icsAwQZ0cw8tg"),
        ("Ayşe", "VEeniRK3Co67mPEtnfu5Lw"),
        ("sale!", "CHCeYstAumWEItUjozwb1A"),
        (String(repeating: "x", count: 200), "wIONPg-QQ_p5MuY41IAR5Q"),
    ])
    func vectors(msgID: String, expected: String) {
        #expect(ReplaceKey.derive(msgID: msgID) == expected)
    }

    @Test("a derived key is 22 base64url characters, the same every time, and differs between msgIds")
    func properties() throws {
        let keyring = try MsgIDKeyring(parsing: "k1:" + Base64URL.encode(Array(repeating: UInt8(3), count: 32)))
        var keys: Set<String> = []
        for index in 0..<5000 {
            let msgID = MsgID.sign(MsgIDFields(appID: "app", campaignID: "cmp", userID: "u\(index)", subscriptionID: "s\(index)",
                                               platform: "ios", variant: nil), keyring: keyring)
            let key = ReplaceKey.derive(msgID: msgID)
            #expect(key.utf8.count == ReplaceKey.derivedLength)
            #expect(key.utf8.allSatisfy(Base64URL.isAlphabetByte))
            #expect(ReplaceKey.derive(msgID: msgID) == key)
            // Unpadded base64url of 16 bytes: the last character carries 2 bits and 4 zero bits.
            #expect(Base64URL.decode(key, .strict)?.count == 16)
            #expect(ReplaceKey.isWebPushTopic(key))
            keys.insert(key)
        }
        #expect(keys.count == 5000, "different msgIds, different keys")
    }

    @Test("the key is the job's collapseId when it has one, else derived from the msgId")
    func key() {
        #expect(ReplaceKey.key(collapseID: "sale", msgID: "m.sig") == "sale")
        #expect(ReplaceKey.key(collapseID: nil, msgID: "m.sig") == "7mVmqR5oD4HbReCtXytlvw")
        #expect(ReplaceKey.key(collapseID: "", msgID: "m.sig") == "7mVmqR5oD4HbReCtXytlvw")
    }

    @Test("a Web Push Topic is 1 to 32 base64url characters (RFC 8030 §5.4)", arguments: [
        ("sale", true), ("a-b_C9", true), (String(repeating: "t", count: 32), true), ("", false),
        (String(repeating: "t", count: 33), false), ("sale!", false), ("a b", false), ("Ayşe", false), ("a+b", false), ("a=", false),
    ])
    func webPushTopic(value: String, valid: Bool) {
        #expect(ReplaceKey.isWebPushTopic(value) == valid)
        // A valid key is the Topic itself; another is replaced by its derived key.
        #expect(ReplaceKey.webPushTopic(for: value) == (valid ? value : ReplaceKey.derive(msgID: value)))
    }

    @Test("the prepared job fills each content's replace key: collapseId, the recipient's msgId, the Huawei batch's")
    func preparedJob() throws {
        let recipients = """
        [{"userId":"u1","subscriptionId":"s1","platform":"ios","token":"\(JobFixtures.apnsToken)"},
         {"userId":"u2","subscriptionId":"s2","platform":"huawei","token":"IQAAAACy0kYzAACcTw9fkQ3sXo3T_tok2"},
         {"userId":"u3","subscriptionId":"s3","platform":"huawei","token":"IQAAAACy0kYzAACcTw9fkQ3sXo3T_tok3"}]
        """
        let withoutCollapse = PreparedJob(job: try JobDecoder.decode(JobFixtures.edit(["recipients"], recipients)),
                                          context: RenderContext(now: Date(), keyring: JobFixtures.keyring))
        var huaweiKeys: Set<String> = []
        for recipient in withoutCollapse.job.recipients {
            guard case .ready(let content, let target) = withoutCollapse.resolve(recipient) else { Issue.record("not ready"); continue }
            #expect(content.replaceKey == withoutCollapse.replaceKey(msgID: content.msgID, target: target))
            if case .huawei = target {
                #expect(content.replaceKey == ReplaceKey.derive(msgID: try #require(content.batchMsgID)))
                huaweiKeys.insert(try #require(content.replaceKey))
            } else {
                #expect(content.replaceKey == ReplaceKey.derive(msgID: content.msgID))
            }
            #expect(content.resolvedReplaceKey == content.replaceKey)
        }
        #expect(huaweiKeys.count == 1, "a batch shares one key")

        let withCollapse = PreparedJob(job: try JobDecoder.decode(JobFixtures.edit(["collapseId"], #""sale""#,
                                                                                   in: String(decoding: JobFixtures.edit(["recipients"], recipients), as: UTF8.self))),
                                       context: RenderContext(now: Date(), keyring: JobFixtures.keyring))
        for recipient in withCollapse.job.recipients {
            guard case .ready(let content, _) = withCollapse.resolve(recipient) else { Issue.record("not ready"); continue }
            #expect(content.replaceKey == "sale")
        }
    }
}

/// A plain FIPS 180-4 §6.2.2 block function, written apart from PushCore's, counting its calls.
final class CountingSHA256Blocks: SHA256BlockEngine, @unchecked Sendable {
    // Thread safety: one test uses an instance, on one thread.
    private(set) var calls = 0
    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
        0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
        0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
        0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
        0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
        0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    func compress(_ state: inout SHA256.ChainingState, blocks: Span<UInt8>) {
        calls += 1
        func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }
        var h = [state.words.0, state.words.1, state.words.2, state.words.3, state.words.4, state.words.5, state.words.6, state.words.7]
        for start in stride(from: 0, to: blocks.count, by: 64) {
            var w = [UInt32](repeating: 0, count: 64)
            for t in 0..<16 {
                w[t] = (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(blocks[start + t * 4 + $1]) }
            }
            for t in 16..<64 {
                let s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3)
                let s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10)
                w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
            }
            var v = h
            for t in 0..<64 {
                let t1 = v[7] &+ (rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25)) &+ ((v[4] & v[5]) ^ (~v[4] & v[6])) &+ Self.k[t] &+ w[t]
                let t2 = (rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22)) &+ ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]))
                v = [t1 &+ t2, v[0], v[1], v[2], v[3] &+ t1, v[4], v[5], v[6]]
            }
            for i in 0..<8 { h[i] = h[i] &+ v[i] }
        }
        state.words = (h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7])
    }
}

@Suite("SHA-256 of two parts in one pass")
struct SHA256TwoPartTests {
    @Test("inlineHash(first, second) is the digest of both, at every length and split, on either block function")
    func matchesIncremental() {
        var random = SplitMix64(seed: 7)
        for length in 0...300 {
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let expected = SHA256.hash(bytes)
            for split in Set([0, length / 3, length / 2, length]) {
                let first = Array(bytes[..<split]), second = Array(bytes[split...])
                let own = SHA256.inlineHash(first.span, second.span)
                #expect((0..<32).map { own[$0] } == expected, "length \(length) split \(split)")
                let engine = CountingSHA256Blocks()
                let viaEngine = SHA256.inlineHash(first.span, second.span, engine: engine)
                #expect((0..<32).map { viaEngine[$0] } == expected, "length \(length) split \(split), engine")
                // Short inputs are padded on the stack and compressed in one call.
                if length <= 247 { #expect(engine.calls == 1) }
            }
        }
    }

    @Test("the replace key is the same on any block function")
    func replaceKeyEngine() {
        #expect(ReplaceKey.derive(msgID: "m.sig", engine: CountingSHA256Blocks()) == "7mVmqR5oD4HbReCtXytlvw")
    }
}
