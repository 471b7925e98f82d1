import Testing
@testable import PushCrypto

@Suite("Digest, HKDF and SecureRandom")
struct DigestTests {
    @Test("SHA-256 of \"abc\" (FIPS 180-2 B.1)")
    func sha256abc() {
        #expect(Digest.sha256(Array("abc".utf8)) == hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
    }

    @Test("SHA-256 of the empty message")
    func sha256Empty() {
        #expect(Digest.sha256([]) == hex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"))
    }

    @Test("HMAC-SHA256 RFC 4231 test case 2")
    func hmacCase2() {
        let mac = Digest.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(mac == hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
    }

    @Test("HMAC-SHA256 accepts an empty key and message")
    func hmacEmpty() {
        // Python: hmac.new(b"", b"", hashlib.sha256).hexdigest()
        #expect(Digest.hmacSHA256(key: [], message: []) == hex("b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"))
    }

    @Test("HKDF-SHA256 RFC 5869 test case 1")
    func hkdfCase1() {
        let prk = HKDF.extract(salt: hex("000102030405060708090a0b0c"), inputKeyMaterial: [UInt8](repeating: 0x0b, count: 22))
        #expect(prk == hex("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5"))
        let okm = HKDF.expand(pseudoRandomKey: prk, info: hex("f0f1f2f3f4f5f6f7f8f9"), length: 42)
        #expect(okm == hex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"))
    }

    @Test("one HMAC context re-keyed for each MAC gives the one-shot results (RFC 4231 cases 1 and 2)")
    func hmacContextReuse() {
        let hmac = HMACSHA256()
        for _ in 0..<2 {
            hmac.start(key: [UInt8](repeating: 0x0b, count: 20))
            hmac.update(Array("Hi ".utf8))
            hmac.update([])
            hmac.update(Array("There".utf8))
            #expect(hmac.finish() == hex("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"))
            hmac.start(key: Array("Jefe".utf8))
            hmac.update(Array("what do ya want for nothing".utf8))
            hmac.update(byte: UInt8(ascii: "?"))
            #expect(hmac.finish(length: 16) == hex("5bdcc146bf60754e6a042426089575c7"))
        }
    }

    @Test("HKDF-SHA256 RFC 5869 test case 3 (empty salt and info), steps sharing one context")
    func hkdfCase3() {
        let hmac = HMACSHA256()
        let prk = HKDF.extract(salt: [], inputKeyMaterial: [UInt8](repeating: 0x0b, count: 22), using: hmac)
        #expect(prk == hex("19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04"))
        let okm = HKDF.expand(pseudoRandomKey: prk, info: [], length: 42, using: hmac)
        #expect(okm == hex("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"))
        #expect(HKDF.expand(pseudoRandomKey: prk, info: [], length: 12, using: hmac) == Array(okm.prefix(12)))
    }

    @Test("SecureRandom returns the requested count and differs between calls")
    func random() {
        #expect(SecureRandom.bytes(0).isEmpty)
        #expect(SecureRandom.bytes(-3).isEmpty)
        let a = SecureRandom.bytes(32)
        let b = SecureRandom.bytes(32)
        #expect(a.count == 32 && b.count == 32)
        #expect(a != b)
    }
}
