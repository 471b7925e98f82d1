import PushCore
import PushCrypto
import PushEncoding
import Testing

/// PushCore's SHA-256 with its blocks compressed by libcrypto (`LibcryptoSHA256Blocks`): the
/// same digests, HMACs and msgIds as PushCore's own compression, at every length and split.
@Suite("SHA-256 on libcrypto's block function")
struct SHA256EngineTests {
    let engine = LibcryptoSHA256Blocks()

    private func digestHex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    @Test("FIPS 180-2 vectors, including a million a's")
    func vectors() {
        let cases: [(String, String)] = [
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        ]
        for (message, digest) in cases {
            var hasher = SHA256(engine: engine)
            hasher.update(Array(message.utf8))
            #expect(digestHex(hasher.finalize()) == digest, "\(message)")
        }
        var million = SHA256(engine: engine)
        let chunk = [UInt8](repeating: 0x61, count: 1000)
        for _ in 0..<1000 { million.update(chunk) }
        #expect(digestHex(million.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("every length 0…300 and random splits give PushCore's own digest")
    func everyLengthAndSplit() {
        var random = SplitMix64(seed: 0x5348_4132_3536)
        for length in 0...300 {
            let message = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let expected = SHA256.hash(message)
            var whole = SHA256(engine: engine)
            whole.update(message)
            #expect(whole.finalize() == expected, "length \(length)")
            var pieces = SHA256(engine: engine)
            var start = 0
            while start < length {
                let end = min(length, start + Int(random.next() % 150))
                pieces.update(message[start..<end])
                start = end
            }
            #expect(pieces.finalize() == expected, "length \(length), split")
        }
    }

    @Test("inlineHash(utf8:) with the engine: the token hash's bytes")
    func tokenHash() {
        for text in ["", "5eb5d3674f053162cb6f2ceaee21bf46bc00aa80932bc69cf4276846d19a0b1c",
                     String(repeating: "f5Xq:APA91bhkQAYU3H9ap752LvvLHSZlzCIX", count: 5), "çş"] {
            let accelerated = SHA256.inlineHash(utf8: text, engine: engine)
            #expect((0..<32).map { accelerated[$0] } == SHA256.hash(utf8: text), "\(text.utf8.count) bytes")
        }
    }

    @Test("HMAC: RFC 4231 case 6 and random keys and messages match the software HMAC")
    func hmac() {
        let key = [UInt8](repeating: 0xaa, count: 131)
        let message = Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)
        #expect(digestHex(HMACSHA256(key: key, engine: engine).authenticationCode(for: message))
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        var random = SplitMix64(seed: 7)
        for round in 0..<200 {
            let key = (0..<Int(random.next() % 140)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let message = (0..<Int(random.next() % 200)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let software = HMACSHA256(key: key)
            let expected = software.authenticationCode(for: message)
            #expect(HMACSHA256(key: key, engine: engine).authenticationCode(for: message) == expected, "round \(round)")
            #expect(software.using(engine: engine).authenticationCode(for: message) == expected, "round \(round), switched")
        }
    }

    @Test("a keyring switched to the engine signs the same msgIds, and each verifies the other's")
    func keyring() throws {
        let software = try MsgIDKeyring(keys: [("k2", [UInt8](repeating: 9, count: 32)), ("k1", [UInt8](repeating: 3, count: 40))])
        let accelerated = software.using(sha256Engine: engine)
        #expect(accelerated.keyIDs == software.keyIDs)
        for index in 0..<50 {
            let fields = MsgIDFields(appID: "app_demo", campaignID: "cmp-\(index)", userID: "u\(index)",
                                     subscriptionID: "ios-\(index)", platform: "ios", variant: index % 2 == 0 ? nil : "B")
            let signed = MsgID.sign(fields, keyring: accelerated)
            #expect(signed == MsgID.sign(fields, keyring: software))
            #expect(MsgID.verify(signed, keyring: software) != nil)
            #expect(MsgID.verify(MsgID.sign(fields, keyring: software), keyring: accelerated) != nil)
        }
    }
}
