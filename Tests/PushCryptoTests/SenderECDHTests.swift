import Testing
@testable import PushCrypto

/// P-256 domain constants (SEC 2 §2.4.2 / FIPS 186-4 D.1.2.3).
enum P256Constants {
    static let order = hex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")
    static let orderMinusOne = hex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632550")
    static let orderPlusOne = hex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632552")
    static let generator = hex("04"
        + "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
        + "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")
}

@Suite("Sender-side ECDH (pw_crypto_p256_ecdh)")
struct SenderECDHTests {
    @Test("the RFC 8291 §5 keys give the RFC's ECDH secret and the application server's public key")
    func rfcVector() throws {
        let agreement = try SenderECDH.agree(
            userAgentPublicKey: b64(RFC8291Example.userAgentPublic), scalar: b64(RFC8291Example.applicationServerPrivate))
        #expect(agreement.applicationServerPublicKey == b64(RFC8291Example.applicationServerPublic))
        #expect(agreement.secret == b64("kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs"))
    }

    @Test("matches the EVP path (P256PrivateKey.sharedSecret) for the same scalar and peer")
    func matchesEVP() throws {
        for _ in 0..<16 {
            let server = try P256PrivateKey.generate()
            let peer = try P256PrivateKey.generate().publicKey
            let agreement = try SenderECDH.agree(userAgentPublicKey: peer.uncompressed, scalar: server.rawScalar)
            #expect(agreement.applicationServerPublicKey == server.publicKey.uncompressed)
            #expect(agreement.secret == (try server.sharedSecret(with: peer)))
        }
    }

    @Test("the smallest and largest scalars agree with the EVP path; 1·G is G and 1·U is U")
    func edgeScalars() throws {
        let peerKey = try P256PrivateKey.generate()
        let peer = peerKey.publicKey.uncompressed
        var one = [UInt8](repeating: 0, count: 32)
        one[31] = 1
        let unit = try SenderECDH.agree(userAgentPublicKey: peer, scalar: one)
        #expect(unit.applicationServerPublicKey == P256Constants.generator)
        #expect(unit.secret == Array(peer[1...32]))
        let last = try SenderECDH.agree(userAgentPublicKey: peer, scalar: P256Constants.orderMinusOne)
        let evp = try P256PrivateKey(rawScalar: P256Constants.orderMinusOne)
        #expect(last.applicationServerPublicKey == evp.publicKey.uncompressed)
        #expect(last.secret == (try evp.sharedSecret(with: peerKey.publicKey)))
        #expect(last.secret == unit.secret)  // (n−1)·U = −U has U's X coordinate
    }

    @Test("a fresh ephemeral key each call, and the subscriber derives the same secret")
    func ephemeral() throws {
        let subscriber = try P256PrivateKey.generate()
        let first = try SenderECDH.agree(userAgentPublicKey: subscriber.publicKey.uncompressed)
        let second = try SenderECDH.agree(userAgentPublicKey: subscriber.publicKey.uncompressed)
        #expect(first.applicationServerPublicKey != second.applicationServerPublicKey)
        #expect(first.secret != second.secret)
        for agreement in [first, second] {
            let sender = try P256PublicKey(uncompressed: agreement.applicationServerPublicKey)
            #expect(try subscriber.sharedSecret(with: sender) == agreement.secret)
        }
    }

    @Test("refuses peers of the wrong length or tag before any OpenSSL call", arguments: [0, 1, 33, 64, 66, 130])
    func refusesLength(length: Int) throws {
        let good = try P256PrivateKey.generate().publicKey.uncompressed
        let bad = Array((good + good).prefix(length))
        let error = #expect(throws: CryptoError.self) { try SenderECDH.agree(userAgentPublicKey: bad) }
        #expect(error?.message.contains("65 bytes starting with 0x04, got \(length) bytes") == true)
    }

    @Test("refuses compressed, hybrid and all-zero encodings", arguments: [0x00, 0x02, 0x03, 0x06, 0x07])
    func refusesTag(tag: UInt8) throws {
        var bad = try P256PrivateKey.generate().publicKey.uncompressed
        bad[0] = tag
        #expect(throws: CryptoError.self) { try SenderECDH.agree(userAgentPublicKey: bad) }
        #expect(throws: CryptoError.self) { try SenderECDH.agree(userAgentPublicKey: [tag] + [UInt8](repeating: 0, count: 64)) }
    }

    @Test("refuses points that are not on the curve, (0, 0) included")
    func refusesOffCurve() throws {
        var offCurve = try P256PrivateKey.generate().publicKey.uncompressed
        offCurve[64] ^= 0x01
        var xTooLarge = P256Constants.generator
        xTooLarge.replaceSubrange(1...32, with: [UInt8](repeating: 0xFF, count: 32))  // X ≥ p
        for bad in [offCurve, [0x04] + [UInt8](repeating: 0, count: 64), xTooLarge] {
            for scalar in [nil, try P256PrivateKey.generate().rawScalar] {
                let error = #expect(throws: CryptoError.self) { try SenderECDH.agree(userAgentPublicKey: bad, scalar: scalar) }
                #expect(error?.message.hasPrefix("P-256 public key is not a point on the curve") == true)
            }
        }
    }

    @Test("refuses the scalars 0, n, n+1 and 2²⁵⁶−1, and scalars of the wrong length", arguments: [
        [UInt8](repeating: 0, count: 32), P256Constants.order, P256Constants.orderPlusOne, [UInt8](repeating: 0xFF, count: 32),
        [], [UInt8](repeating: 1, count: 31), [UInt8](repeating: 1, count: 33),
    ])
    func refusesScalar(scalar: [UInt8]) throws {
        let peer = try P256PrivateKey.generate().publicKey.uncompressed
        let error = #expect(throws: CryptoError.self) { try SenderECDH.agree(userAgentPublicKey: peer, scalar: scalar) }
        let expected = scalar.count == 32 ? "P-256 private scalar out of range" : "P-256 private scalar must be 32 bytes, got \(scalar.count)"
        #expect(error?.message == expected)
    }

    @Test("agrees from many tasks at once on the one shared group")
    func concurrent() async throws {
        let subscriber = try P256PrivateKey.generate()
        let peer = subscriber.publicKey.uncompressed
        let results = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<32 {
                group.addTask {
                    guard let agreement = try? SenderECDH.agree(userAgentPublicKey: peer),
                          let sender = try? P256PublicKey(uncompressed: agreement.applicationServerPublicKey)
                    else { return false }
                    return (try? subscriber.sharedSecret(with: sender)) == agreement.secret
                }
            }
            var all: [Bool] = []
            for await result in group { all.append(result) }
            return all
        }
        #expect(results.count == 32 && results.allSatisfy { $0 })
    }
}
