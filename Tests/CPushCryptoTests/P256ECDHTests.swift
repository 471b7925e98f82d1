import COpenSSL
import CPushCrypto
import Testing

/// The C function itself (CPushCrypto), below PushCrypto's `SenderECDH` (whose own suite checks
/// the Swift API): result codes, outputs, and that failures leave no key bytes behind.
@Suite("CPushCrypto: pw_crypto_p256_ecdh")
struct P256ECDHTests {
    /// RFC 8291 §5 (the keys of the example message, hex).
    static let userAgentPublic = hex("042571b2becdfde360551aaf1ed0f4cd366c11cebe555f89bcb7b186a53339173168ece2ebe018597bd30479b86e3c8f8eced577ca59187e9246990db682008b0e")
    static let userAgentPrivate = hex("ab5757a70dd4a53e553a6bbf71ffefea2874ec07a6b379e3c48f895a02dc33de")
    static let applicationServerPublic = hex("04fe33f4ab0dea71914db55823f73b54948f41306d920732dbb9a59a53286482200e597a7b7bc260ba1c227998580992e93973002f3012a28ae8f06bbb78e5ec0f")
    static let applicationServerPrivate = hex("c9f58f89813e9f8e872e71f42aa64e1757c9254dcc62b72ddc010bb4043ea11c")
    /// The ECDH secret of RFC 8291 §5 ("kyrL1jII…" in base64url).
    static let sharedSecret = hex("932acbd63208387133837b0cd995911c3441eb66000998614a592727aef6912b")
    static let order = hex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")

    struct Outcome {
        var result: Int32
        var publicKey: [UInt8]
        var secret: [UInt8]
    }

    /// Calls the C function with outputs pre-filled with 0xAA, so zeroing is visible.
    static func ecdh(peer: [UInt8], scalar: [UInt8]?) -> Outcome {
        var publicKey = [UInt8](repeating: 0xAA, count: 65)
        var secret = [UInt8](repeating: 0xAA, count: 32)
        let result = peer.withUnsafeBufferPointer { peer in
            guard let scalar else { return pw_crypto_p256_ecdh(peer.baseAddress, nil, &publicKey, &secret) }
            return scalar.withUnsafeBufferPointer { pw_crypto_p256_ecdh(peer.baseAddress, $0.baseAddress, &publicKey, &secret) }
        }
        ERR_clear_error()
        return Outcome(result: result, publicKey: publicKey, secret: secret)
    }

    @Test("the RFC 8291 §5 vector: the sender's key and secret, and the subscriber's side gives the same secret")
    func rfcVector() {
        let sender = Self.ecdh(peer: Self.userAgentPublic, scalar: Self.applicationServerPrivate)
        #expect(sender.result == PW_CRYPTO_ECDH_OK)
        #expect(sender.publicKey == Self.applicationServerPublic)
        #expect(sender.secret == Self.sharedSecret)
        let subscriber = Self.ecdh(peer: Self.applicationServerPublic, scalar: Self.userAgentPrivate)
        #expect(subscriber.result == PW_CRYPTO_ECDH_OK)
        #expect(subscriber.publicKey == Self.userAgentPublic)
        #expect(subscriber.secret == Self.sharedSecret)
    }

    @Test("a NULL scalar draws a fresh key per call, which the peer's private key agrees with")
    func ephemeral() {
        let first = Self.ecdh(peer: Self.userAgentPublic, scalar: nil)
        let second = Self.ecdh(peer: Self.userAgentPublic, scalar: nil)
        #expect(first.result == PW_CRYPTO_ECDH_OK && second.result == PW_CRYPTO_ECDH_OK)
        #expect(first.publicKey != second.publicKey)
        #expect(first.publicKey.first == 0x04)
        // The subscriber, with its private key and the sender's public key, gets the same secret.
        let back = Self.ecdh(peer: first.publicKey, scalar: Self.userAgentPrivate)
        #expect(back.result == PW_CRYPTO_ECDH_OK)
        #expect(back.secret == first.secret)
    }

    @Test("a peer off the curve or in another encoding is BAD_PEER, and both outputs are zeroed")
    func badPeer() {
        var offCurve = Self.userAgentPublic
        offCurve[64] ^= 0x01
        var hybrid = Self.userAgentPublic
        hybrid[0] = 0x06
        let zeros = [0x04] + [UInt8](repeating: 0, count: 64)
        for peer in [offCurve, hybrid, zeros] {
            for scalar in [nil, Self.applicationServerPrivate] {
                let outcome = Self.ecdh(peer: peer, scalar: scalar)
                #expect(outcome.result == PW_CRYPTO_ECDH_BAD_PEER)
                #expect(outcome.publicKey == [UInt8](repeating: 0, count: 65))
                #expect(outcome.secret == [UInt8](repeating: 0, count: 32))
            }
        }
    }

    @Test("the scalars 0 and n are BAD_SCALAR, outputs zeroed; n−1 is accepted")
    func badScalar() {
        var orderMinusOne = Self.order
        orderMinusOne[31] -= 1
        for scalar in [[UInt8](repeating: 0, count: 32), Self.order, [UInt8](repeating: 0xFF, count: 32)] {
            let outcome = Self.ecdh(peer: Self.userAgentPublic, scalar: scalar)
            #expect(outcome.result == PW_CRYPTO_ECDH_BAD_SCALAR)
            #expect(outcome.publicKey == [UInt8](repeating: 0, count: 65))
            #expect(outcome.secret == [UInt8](repeating: 0, count: 32))
        }
        // (n−1)·U = −U: the secret is U's own X coordinate.
        let last = Self.ecdh(peer: Self.userAgentPublic, scalar: orderMinusOne)
        #expect(last.result == PW_CRYPTO_ECDH_OK)
        #expect(last.secret == Array(Self.userAgentPublic[1...32]))
    }
}

func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.utf8).map { c -> UInt8 in c <= UInt8(ascii: "9") ? c - UInt8(ascii: "0") : c - UInt8(ascii: "a") + 10 }
    return stride(from: 0, to: digits.count - 1, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
}
