import PushCore
import Testing
@testable import PushCrypto
import PushEncoding

/// RFC 8291 §5 example ("Push Message Encryption Example").
enum RFC8291Example {
    static let plaintext = "When I grow up, I want to be a watermelon"
    static let authSecret = "BTBZMqHH6r4Tts7J_aSIgg"
    static let userAgentPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let userAgentPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
    static let applicationServerPublic = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
    static let applicationServerPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
    static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
    static let message = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27ml"
        + "mlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPT"
        + "pK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
}

@Suite("Web Push encryption (RFC 8291, aes128gcm)")
struct WebPushEncryptionTests {
    @Test("encrypting the RFC 8291 example yields the RFC's message byte for byte")
    func rfcEncrypt() throws {
        let serverKey = try P256PrivateKey(rawScalar: b64(RFC8291Example.applicationServerPrivate))
        #expect(serverKey.publicKey.uncompressed == b64(RFC8291Example.applicationServerPublic))
        let body = try WebPushEncryption.encrypt(
            plaintext: Array(RFC8291Example.plaintext.utf8),
            userAgentPublicKey: b64(RFC8291Example.userAgentPublic),
            authSecret: b64(RFC8291Example.authSecret),
            applicationServerKey: serverKey,
            salt: b64(RFC8291Example.salt))
        #expect(Base64URL.encode(body) == RFC8291Example.message)
        #expect(body.count == WebPushEncryption.encryptedLength(plaintextCount: RFC8291Example.plaintext.utf8.count))
    }

    @Test("decrypting the RFC 8291 example message yields the plaintext")
    func rfcDecrypt() throws {
        let userAgent = try P256PrivateKey(rawScalar: b64(RFC8291Example.userAgentPrivate))
        #expect(userAgent.publicKey.uncompressed == b64(RFC8291Example.userAgentPublic))
        let plaintext = try WebPushEncryption.decrypt(
            b64(RFC8291Example.message), userAgentPrivateKey: userAgent, authSecret: b64(RFC8291Example.authSecret))
        #expect(String(decoding: plaintext, as: UTF8.self) == RFC8291Example.plaintext)
    }

    @Test("encrypt then decrypt round-trips with fresh keys", arguments: [0, 1, 3993])
    func roundTrip(size: Int) throws {
        let userAgent = try P256PrivateKey.generate()
        let auth = SecureRandom.bytes(16)
        let plaintext = SecureRandom.bytes(size)
        let body = try WebPushEncryption.encrypt(plaintext: plaintext, userAgentPublicKey: userAgent.publicKey.uncompressed, authSecret: auth)
        #expect(body.count == WebPushEncryption.encryptedLength(plaintextCount: size))
        #expect(Array(body[16..<21]) == [0, 0, 0x10, 0, 65])
        #expect(try WebPushEncryption.decrypt(body, userAgentPrivateKey: userAgent, authSecret: auth) == plaintext)
        // A fresh ephemeral key and salt every time.
        let again = try WebPushEncryption.encrypt(plaintext: plaintext, userAgentPublicKey: userAgent.publicKey.uncompressed, authSecret: auth)
        #expect(Array(again.prefix(16)) != Array(body.prefix(16)))
        #expect(Array(again[21..<86]) != Array(body[21..<86]))
    }

    @Test("decrypt fails with a wrong auth secret or the wrong private key")
    func wrongSecrets() throws {
        let userAgent = try P256PrivateKey(rawScalar: b64(RFC8291Example.userAgentPrivate))
        let message = b64(RFC8291Example.message)
        var auth = b64(RFC8291Example.authSecret)
        auth[0] ^= 1
        #expect(throws: CryptoError.self) { try WebPushEncryption.decrypt(message, userAgentPrivateKey: userAgent, authSecret: auth) }
        #expect(throws: CryptoError.self) { try WebPushEncryption.decrypt(message, userAgentPrivateKey: userAgent, authSecret: []) }
        let stranger = try P256PrivateKey.generate()
        #expect(throws: CryptoError.self) {
            try WebPushEncryption.decrypt(message, userAgentPrivateKey: stranger, authSecret: b64(RFC8291Example.authSecret))
        }
    }

    @Test("decrypt refuses truncated or tampered bodies", arguments: [0, 1, 20, 21, 85, 86, 87, 102, 103, 143])
    func truncated(length: Int) throws {
        let userAgent = try P256PrivateKey(rawScalar: b64(RFC8291Example.userAgentPrivate))
        let message = b64(RFC8291Example.message)
        #expect(message.count == 144)
        #expect(throws: CryptoError.self) {
            try WebPushEncryption.decrypt(Array(message.prefix(length)), userAgentPrivateKey: userAgent, authSecret: b64(RFC8291Example.authSecret))
        }
    }

    @Test("decrypt refuses a flipped byte anywhere in salt, keyid, ciphertext or tag", arguments: [0, 15, 22, 60, 86, 100, 127, 143])
    func tampered(index: Int) throws {
        let userAgent = try P256PrivateKey(rawScalar: b64(RFC8291Example.userAgentPrivate))
        var message = b64(RFC8291Example.message)
        message[index] ^= 0x40
        #expect(throws: CryptoError.self) {
            try WebPushEncryption.decrypt(message, userAgentPrivateKey: userAgent, authSecret: b64(RFC8291Example.authSecret))
        }
    }

    @Test("decrypt refuses bad header fields: idlen, tiny record size")
    func badHeader() throws {
        let userAgent = try P256PrivateKey(rawScalar: b64(RFC8291Example.userAgentPrivate))
        let auth = b64(RFC8291Example.authSecret)
        var message = b64(RFC8291Example.message)
        message[20] = 64
        #expect(throws: CryptoError.self) { try WebPushEncryption.decrypt(message, userAgentPrivateKey: userAgent, authSecret: auth) }
        message = b64(RFC8291Example.message)
        message[16...19] = [0, 0, 0, 17]
        #expect(throws: CryptoError.self) { try WebPushEncryption.decrypt(message, userAgentPrivateKey: userAgent, authSecret: auth) }
        message = b64(RFC8291Example.message)
        message[16...19] = [0, 0, 0, 18]  // now splits into several records: the first fails authentication
        #expect(throws: CryptoError.self) { try WebPushEncryption.decrypt(message, userAgentPrivateKey: userAgent, authSecret: auth) }
    }

    @Test("encrypt refuses bad keys, salts, secrets and oversize plaintext")
    func encryptRefuses() throws {
        let userAgent = try P256PrivateKey.generate().publicKey.uncompressed
        let auth = SecureRandom.bytes(16)
        #expect(throws: CryptoError.self) { try WebPushEncryption.encrypt(plaintext: [1], userAgentPublicKey: Array(userAgent.prefix(64)), authSecret: auth) }
        #expect(throws: CryptoError.self) { try WebPushEncryption.encrypt(plaintext: [1], userAgentPublicKey: userAgent, authSecret: Array(auth.prefix(15))) }
        #expect(throws: CryptoError.self) { try WebPushEncryption.encrypt(plaintext: [UInt8](repeating: 0, count: 4080), userAgentPublicKey: userAgent, authSecret: auth) }
        #expect(throws: CryptoError.self) { try WebPushEncryption.encrypt(plaintext: [1, 2], userAgentPublicKey: userAgent, authSecret: auth, recordSize: 18) }
        #expect(throws: CryptoError.self) {
            try WebPushEncryption.encrypt(plaintext: [1], userAgentPublicKey: userAgent, authSecret: auth,
                                          applicationServerKey: try P256PrivateKey.generate(), salt: [1, 2, 3])
        }
        // 4079 bytes + delimiter + tag = 4096 exactly fits.
        let fits = try WebPushEncryption.encrypt(plaintext: [UInt8](repeating: 7, count: 4079), userAgentPublicKey: userAgent, authSecret: auth)
        #expect(fits.count == 86 + 4096)
    }

    @Test("a subscription key off the curve is refused with a clear error, by both encrypts")
    func encryptRefusesOffCurveKey() throws {
        let auth = SecureRandom.bytes(16)
        var offCurve = try P256PrivateKey.generate().publicKey.uncompressed
        offCurve[40] ^= 0x01
        let serverKey = try P256PrivateKey.generate()
        for bad in [offCurve, [0x04] + [UInt8](repeating: 0, count: 64)] {
            let random = #expect(throws: CryptoError.self) {
                try WebPushEncryption.encrypt(plaintext: [1], userAgentPublicKey: bad, authSecret: auth)
            }
            #expect(random?.message.hasPrefix("P-256 public key is not a point on the curve") == true)
            let fixed = #expect(throws: CryptoError.self) {
                try WebPushEncryption.encrypt(plaintext: [1], userAgentPublicKey: bad, authSecret: auth,
                                              applicationServerKey: serverKey, salt: SecureRandom.bytes(16))
            }
            #expect(fixed?.message.hasPrefix("P-256 public key is not a point on the curve") == true)
        }
        let short = #expect(throws: CryptoError.self) {
            try WebPushEncryption.encrypt(plaintext: [1], userAgentPublicKey: Array(offCurve.prefix(64)), authSecret: auth)
        }
        #expect(short?.message == "P-256 public key must be 65 bytes starting with 0x04, got 64 bytes")
    }

    @Test("the deterministic encrypt round-trips and carries the given key and salt")
    func deterministicRoundTrip() throws {
        let userAgent = try P256PrivateKey.generate()
        let serverKey = try P256PrivateKey.generate()
        let auth = SecureRandom.bytes(16)
        let salt = SecureRandom.bytes(16)
        let plaintext = Array("hello".utf8)
        let body = try WebPushEncryption.encrypt(
            plaintext: plaintext, userAgentPublicKey: userAgent.publicKey.uncompressed, authSecret: auth,
            applicationServerKey: serverKey, salt: salt)
        #expect(Array(body[0..<16]) == salt)
        #expect(Array(body[21..<86]) == serverKey.publicKey.uncompressed)
        #expect(try WebPushEncryption.decrypt(body, userAgentPrivateKey: userAgent, authSecret: auth) == plaintext)
    }

    @Test("encryptedLength is plaintext + 103")
    func lengths() {
        #expect(WebPushEncryption.encryptedLength(plaintextCount: 0) == 103)
        #expect(WebPushEncryption.encryptedLength(plaintextCount: 3993) == 4096)
    }
}
