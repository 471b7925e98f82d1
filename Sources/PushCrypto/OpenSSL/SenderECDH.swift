import COpenSSL
import CPushCrypto

/// The sender side of RFC 8291 §3.1 ECDH in one C call (`pw_crypto_p256_ecdh`, the CPushCrypto target): the
/// application server's key pair and the shared secret, with no `EVP_PKEY` built for either
/// key. Thread safety: stateless; the C side shares one read-only P-256 group.
enum SenderECDH {
    struct Agreement {
        /// 65 bytes, uncompressed: the application server's public key (the keyid).
        var applicationServerPublicKey: [UInt8]
        /// 32 bytes: X of the shared point.
        var secret: [UInt8]
    }

    /// ECDH with the subscription key `userAgentPublicKey` (65 bytes, 0x04 || X || Y, on the
    /// curve). `scalar`: nil for a fresh ephemeral key, or a 32-byte private scalar in [1, n−1].
    static func agree(userAgentPublicKey: [UInt8], scalar: [UInt8]? = nil) throws(CryptoError) -> Agreement {
        guard userAgentPublicKey.count == 65, userAgentPublicKey.first == 0x04 else {
            throw CryptoError("P-256 public key must be 65 bytes starting with 0x04, got \(userAgentPublicKey.count) bytes")
        }
        if let scalar, scalar.count != 32 {
            throw CryptoError("P-256 private scalar must be 32 bytes, got \(scalar.count)")
        }
        var serverPublic = [UInt8](repeating: 0, count: 65)
        var secret = [UInt8](repeating: 0, count: 32)
        let result = userAgentPublicKey.withUnsafeBufferPointer { peer in
            if let scalar {
                return scalar.withUnsafeBufferPointer { pw_crypto_p256_ecdh(peer.baseAddress, $0.baseAddress, &serverPublic, &secret) }
            }
            return pw_crypto_p256_ecdh(peer.baseAddress, nil, &serverPublic, &secret)
        }
        switch result {
        case PW_CRYPTO_ECDH_OK:
            return Agreement(applicationServerPublicKey: serverPublic, secret: secret)
        case PW_CRYPTO_ECDH_BAD_PEER:
            throw OpenSSLErrors.error("P-256 public key is not a point on the curve")
        case PW_CRYPTO_ECDH_BAD_SCALAR:
            OpenSSLErrors.clear()
            throw CryptoError("P-256 private scalar out of range")
        default:
            throw OpenSSLErrors.error("ECDH failed")
        }
    }
}
