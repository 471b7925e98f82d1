import Testing
import PushCore
import PushEncoding

private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

private extension String {
    init(format: String, _ byte: UInt8) {
        let digits = Array("0123456789abcdef")
        self = String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}

@Suite("SHA-256 and HMAC-SHA256")
struct MsgIDHashTests {
    @Test("FIPS 180-2 SHA-256 vectors", arguments: [
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func sha256(message: String, digest: String) {
        #expect(hex(SHA256.hash(Array(message.utf8))) == digest)
    }

    @Test("incremental updates match one-shot hashing at every split")
    func incremental() {
        let message = Array((0..<200).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let expected = SHA256.hash(message)
        for split in [0, 1, 55, 56, 63, 64, 65, 119, 128, 199, 200] {
            var hasher = SHA256()
            hasher.update(message[0..<split])
            hasher.update(message[split...])
            #expect(hasher.finalize() == expected, "split \(split)")
        }
    }

    @Test("hash(utf8:) hashes a string's UTF-8 bytes in place, whatever its length or storage")
    func hashUTF8() {
        #expect(hex(SHA256.hash(utf8: "abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        for text in ["", "é", String(repeating: "ab", count: 32), String(repeating: "çş", count: 70), "small"] {
            #expect(SHA256.hash(utf8: text) == SHA256.hash(Array(text.utf8)), "\(text.utf8.count) bytes")
        }
        let bridged = "prefix-" + String(repeating: "x", count: 100)
        #expect(SHA256.hash(utf8: bridged) == SHA256.hash(Array(bridged.utf8)))
    }

    @Test("RFC 4231 HMAC-SHA256 test cases 1, 2, 4, 6, 7", arguments: [
        (Array(repeating: 0x0b, count: 20), Array("Hi There".utf8),
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        (Array(1...25), Array(repeating: 0xcd, count: 50),
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        (Array(repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        (Array(repeating: 0xaa, count: 131),
         Array("This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.".utf8),
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ] as [([UInt8], [UInt8], String)])
    func hmac(key: [UInt8], message: [UInt8], tag: String) {
        #expect(hex(HMACSHA256.authenticationCode(key: key, message: message)) == tag)
        let reusable = HMACSHA256(key: key)
        #expect(hex(reusable.authenticationCode(for: message)) == tag)
        #expect(hex(reusable.authenticationCode(for: message)) == tag)
    }

    @Test("constant-time comparison")
    func compare() {
        #expect(HMACSHA256.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!HMACSHA256.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!HMACSHA256.constantTimeEquals([1, 2, 3], [1, 2]))
    }
}

@Suite("msgID")
struct MsgIDTests {
    static let keyA = Base64URL.encode(Array(repeating: 0x41, count: 32))
    static let keyB = Base64URL.encode(Array(repeating: 0x42, count: 48))
    static let fields = MsgIDFields(appID: "app_demo", campaignID: "cmp_42", userID: "u1",
                                    subscriptionID: "8f14e45f-ceea-467f-a0e6-1c3f0d5b9f4a", platform: "ios", variant: "A")

    @Test("signing is deterministic, compact, URL-safe and verifies")
    func signAndVerify() throws {
        let keyring = try MsgIDKeyring(parsing: "k1:\(Self.keyA)")
        let id = MsgID.sign(Self.fields, keyring: keyring)
        #expect(id == MsgID.sign(Self.fields, keyring: keyring))
        #expect(id.utf8.count < 140)
        #expect(id.utf8.allSatisfy(Base64URL.isAlphabetByte))
        #expect(MsgID.verify(id, keyring: keyring) == Self.fields)
        let decoded = try #require(MsgID.decode(id))
        #expect(decoded.keyID == "k1" && decoded.fields == Self.fields)
    }

    @Test("any field value round-trips", arguments: [
        MsgIDFields(appID: "a|b", campaignID: "c.d", userID: nil, subscriptionID: "s|.|", platform: "web", variant: nil),
        MsgIDFields(appID: "x", campaignID: "", userID: "", subscriptionID: "", platform: "", variant: ""),
        MsgIDFields(appID: "İı", campaignID: "캠페인", userID: "👩‍👩‍👧", subscriptionID: "e\u{301}", platform: "blackberry", variant: "B"),
        MsgIDFields(appID: String(repeating: "a", count: 300), campaignID: "c", userID: "u", subscriptionID: "s", platform: "ios", variant: "A"),
    ])
    func roundTrip(fields: MsgIDFields) throws {
        let keyring = try MsgIDKeyring(parsing: "k1:\(Self.keyA)")
        let id = MsgID.sign(fields, keyring: keyring)
        #expect(MsgID.verify(id, keyring: keyring) == fields)
        #expect(MsgID.decode(id)?.fields == fields)
    }

    @Test("different fields give different ids; nil and empty differ")
    func distinct() throws {
        let keyring = try MsgIDKeyring(parsing: "k1:\(Self.keyA)")
        var other = Self.fields
        other.userID = nil
        var empty = Self.fields
        empty.userID = ""
        let ids = Set([Self.fields, other, empty].map { MsgID.sign($0, keyring: keyring) })
        #expect(ids.count == 3)
    }

    @Test("rotation: the first key signs, every key verifies")
    func rotation() throws {
        let old = try MsgIDKeyring(parsing: "old:\(Self.keyA)")
        let rotated = try MsgIDKeyring(parsing: "new:\(Self.keyB), old:\(Self.keyA)")
        let oldID = MsgID.sign(Self.fields, keyring: old)
        let newID = MsgID.sign(Self.fields, keyring: rotated)
        #expect(rotated.signingKeyID == "new" && rotated.keyIDs == ["new", "old"])
        #expect(MsgID.decode(newID)?.keyID == "new")
        #expect(MsgID.verify(oldID, keyring: rotated) == Self.fields)
        #expect(MsgID.verify(newID, keyring: rotated) == Self.fields)
        #expect(MsgID.verify(newID, keyring: old) == nil)
    }

    @Test("tampered, truncated or foreign ids do not verify")
    func tampering() throws {
        let keyring = try MsgIDKeyring(parsing: "k1:\(Self.keyA)")
        let otherKey = try MsgIDKeyring(parsing: "k1:\(Self.keyB)")
        let id = MsgID.sign(Self.fields, keyring: keyring)
        #expect(MsgID.verify(id, keyring: otherKey) == nil)
        var bytes = try #require(Base64URL.decode(id, .strict))
        for index in [0, 3, bytes.count / 2, bytes.count - 1] {
            var changed = bytes
            changed[index] ^= 0x01
            #expect(MsgID.verify(Base64URL.encode(changed), keyring: keyring) == nil)
        }
        bytes.removeLast()
        #expect(MsgID.verify(Base64URL.encode(bytes), keyring: keyring) == nil)
        for junk in ["", "a", "!!!!", "AAAA", String(repeating: "A", count: 5000), id + "A", "k1.abc|def"] {
            #expect(MsgID.verify(junk, keyring: keyring) == nil)
            #expect(MsgID.decode(junk) == nil || junk == id)
        }
    }

    @Test("random ids never crash decode")
    func fuzzDecode() {
        var generator = SplitMix64(seed: 42)
        for _ in 0..<2000 {
            let count = Int(generator.next() % 64)
            let bytes = [UInt8(1)] + (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            _ = MsgID.decode(Base64URL.encode(bytes))
        }
        #expect(MsgID.decode(Base64URL.encode([1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])) == nil)
    }

    @Test("keyring specifications are validated without printing keys", arguments: [
        ("", "entry 1: expected kid:base64key"),
        ("k1", "entry 1: expected kid:base64key"),
        (":\(keyA)", "key id must be"),
        ("k 1:\(keyA)", "key id must be"),
        ("k1:\(keyA),k1:\(keyB)", "entry 2: duplicate key id \"k1\""),
        ("k1:not*base64", "entry 1 (kid \"k1\"): key is not valid base64"),
        ("k1:\(Base64URL.encode(Array(repeating: 7, count: 31)))", "key has 31 bytes, needs at least 32"),
        ("k1:\(keyA),", "entry 2: expected kid:base64key"),
    ])
    func keyringErrors(specification: String, message: String) {
        do {
            _ = try MsgIDKeyring(parsing: specification)
            Issue.record("accepted \(specification)")
        } catch {
            #expect(error.description.contains(message), "was: \(error.description)")
            #expect(!error.description.contains(Self.keyA) && !error.description.contains(Self.keyB))
            #expect(!error.description.contains("not*base64"))
        }
    }

    @Test("standard base64 with padding is accepted and the description hides keys")
    func keyringFormats() throws {
        let standard = "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="  // 32 × "A", padded standard base64
        let keyring = try MsgIDKeyring(parsing: " k1:\(standard) ")
        #expect(MsgID.sign(Self.fields, keyring: keyring) == MsgID.sign(Self.fields, keyring: try MsgIDKeyring(parsing: "k1:\(Self.keyA)")))
        #expect(keyring.description == "MsgIDKeyring(keyIDs: [\"k1\"])")
        #expect(!"\(keyring)".contains(standard))
    }

    @Test("base64url codec round-trips and refuses junk")
    func base64() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            #expect(Base64URL.decode(Base64URL.encode(bytes), .strict) == bytes)
        }
        #expect(Base64URL.encode(Array("hello?>".utf8)) == "aGVsbG8_Pg")
        #expect(Base64URL.decode("aGVsbG8_Pg", .strict) == Array("hello?>".utf8))
        #expect(Base64URL.decode("aGVsbG8/Pg==", .strict) == nil)
        #expect(Base64URL.decode("aGVsbG8/Pg==", .lenient) == Array("hello?>".utf8))
        #expect(Base64URL.decode("A", .strict) == nil)
        #expect(Base64URL.decode("AB", .strict) == nil) // non-zero trailing bits
        #expect(Base64URL.decode("a b", .strict) == nil)
    }
}
