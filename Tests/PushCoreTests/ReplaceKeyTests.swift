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
