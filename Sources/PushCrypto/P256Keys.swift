/// A P-256 (secp256r1) private key: APNs token signing (ES256), VAPID (RFC 8292) and the
/// ECDH half of Web Push encryption (RFC 8291).
///
/// Thread safety: immutable after `init`; the parsed OpenSSL key, the public key and the
/// raw scalar are cached, and every operation uses its own OpenSSL context, so one
/// instance may sign from many threads at once.
public final class P256PrivateKey: Sendable {
    let key: EVPKey
    private let signer: SigningTemplate
    /// The matching public key (cached).
    public let publicKey: P256PublicKey
    /// The 32-byte big-endian private scalar (the VAPID "private key" in base64url).
    public let rawScalar: [UInt8]

    /// DER ECDSA-Sig-Value for P-256: at most 72 bytes.
    private static let maximumDERSignatureLength = 80

    private init(key: EVPKey) throws(CryptoError) {
        guard key.isP256 else { throw CryptoError("not a P-256 EC key") }
        self.key = key
        self.rawScalar = try key.bigNumberParameter("priv", width: 32)
        self.publicKey = P256PublicKey(key: key, uncompressed: try key.p256UncompressedPoint())
        self.signer = try SigningTemplate.make(key: key, maximumSignatureLength: Self.maximumDERSignatureLength)
    }

    /// Parses a PKCS#8 "BEGIN PRIVATE KEY" (an APNs .p8 file) or a SEC 1
    /// "BEGIN EC PRIVATE KEY" PEM. Encrypted PEMs and other curves are refused.
    public convenience init(pem: String) throws(CryptoError) {
        try self.init(key: try EVPKey.readPrivateKey(pem: pem))
    }

    /// Builds the key from its 32-byte private scalar, which must lie in [1, n−1].
    public convenience init(rawScalar: [UInt8]) throws(CryptoError) {
        guard rawScalar.count == 32 else { throw CryptoError("P-256 private scalar must be 32 bytes, got \(rawScalar.count)") }
        let point = try EVPKey.p256PublicPoint(forScalar: rawScalar)
        try self.init(key: try EVPKey.p256(publicPoint: point, privateScalar: rawScalar))
    }

    /// A fresh random key.
    public static func generate() throws(CryptoError) -> P256PrivateKey {
        try P256PrivateKey(key: try EVPKey.generateP256())
    }

    /// PKCS#8 "BEGIN PRIVATE KEY" PEM.
    public func pkcs8PEM() throws(CryptoError) -> String {
        try key.pkcs8PEM()
    }

    /// ECDSA P-256 SHA-256 signature in JOSE form: 64 bytes R || S (RFC 7518 §3.4), not DER.
    public func signES256(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try ECDSASignatureFormat.rawFromDER(try signer.sign(message))
    }

    /// ECDH with `peer`: the 32-byte shared X coordinate.
    public func sharedSecret(with peer: P256PublicKey) throws(CryptoError) -> [UInt8] {
        try key.deriveSharedSecret(peer: peer.key)
    }
}

/// A P-256 public key: a Web Push subscription's `p256dh`, a VAPID `k`, an APNs key for
/// the sandbox's JWT checks.
///
/// Thread safety: immutable after `init`; see `P256PrivateKey`.
public final class P256PublicKey: Sendable {
    let key: EVPKey
    /// 65 bytes: 0x04 || X || Y (SEC 1 §2.3.3, uncompressed).
    public let uncompressed: [UInt8]

    init(key: EVPKey, uncompressed: [UInt8]) {
        self.key = key
        self.uncompressed = uncompressed
    }

    /// Parses 0x04 || X || Y (65 bytes); refuses a point that is not on the curve.
    public convenience init(uncompressed: [UInt8]) throws(CryptoError) {
        guard uncompressed.count == 65, uncompressed.first == 0x04 else {
            throw CryptoError("P-256 public key must be 65 bytes starting with 0x04, got \(uncompressed.count) bytes")
        }
        self.init(key: try EVPKey.p256(publicPoint: uncompressed, privateScalar: nil), uncompressed: uncompressed)
    }

    /// Parses a "BEGIN PUBLIC KEY" (SubjectPublicKeyInfo) PEM holding a P-256 key.
    public convenience init(pem: String) throws(CryptoError) {
        let key = try EVPKey.readPublicKey(pem: pem)
        guard key.isP256 else { throw CryptoError("not a P-256 EC public key") }
        self.init(key: key, uncompressed: try key.p256UncompressedPoint())
    }

    /// "BEGIN PUBLIC KEY" (SubjectPublicKeyInfo) PEM.
    public func pem() throws(CryptoError) -> String {
        try key.publicKeyPEM()
    }

    /// Verifies a 64-byte R || S ES256 signature; false for any other length.
    public func verifyES256(signature: [UInt8], message: [UInt8]) -> Bool {
        guard let der = ECDSASignatureFormat.derFromRaw(signature) else { return false }
        return key.verifySHA256(signature: der, message: message)
    }
}
