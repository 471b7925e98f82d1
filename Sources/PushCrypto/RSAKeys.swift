/// An RSA private key (≥ 2048 bits, RFC 7518 §3.3): the Google service account key that
/// signs the FCM OAuth JWT grant (RS256).
///
/// Thread safety: immutable after `init`; every signature uses its own OpenSSL context.
public final class RSAPrivateKey: Sendable {
    let key: EVPKey
    private let signer: SigningTemplate
    /// The matching public key (cached).
    public let publicKey: RSAPublicKey

    private init(key: EVPKey) throws(CryptoError) {
        guard key.isA("RSA") else { throw CryptoError("not an RSA key") }
        guard key.bits >= 2048 else { throw CryptoError("RSA key of \(key.bits) bits: RS256 needs at least 2048") }
        self.key = key
        self.signer = try SigningTemplate.make(key: key, maximumSignatureLength: Int(key.bits + 7) / 8)
        self.publicKey = RSAPublicKey(key: key)
    }

    /// Parses a PKCS#8 "BEGIN PRIVATE KEY" (Google service-account `private_key`) or a
    /// PKCS#1 "BEGIN RSA PRIVATE KEY" PEM.
    public convenience init(pem: String) throws(CryptoError) {
        try self.init(key: try EVPKey.readPrivateKey(pem: pem))
    }

    /// A fresh key. Default: 2048 bits.
    public static func generate(bits: Int = 2048) throws(CryptoError) -> RSAPrivateKey {
        guard (2048...16384).contains(bits) else { throw CryptoError("RSA key size \(bits) outside 2048…16384") }
        return try RSAPrivateKey(key: try EVPKey.generateRSA(bits: bits))
    }

    /// PKCS#8 "BEGIN PRIVATE KEY" PEM.
    public func pkcs8PEM() throws(CryptoError) -> String {
        try key.pkcs8PEM()
    }

    /// RSASSA-PKCS1-v1_5 with SHA-256 (RS256, RFC 7518 §3.3); deterministic.
    public func signRS256(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try signer.sign(message)
    }
}

/// An RSA public key, for verifying RS256 signatures (the sandbox's OAuth endpoint).
///
/// Thread safety: immutable after `init`.
public final class RSAPublicKey: Sendable {
    let key: EVPKey

    init(key: EVPKey) {
        self.key = key
    }

    /// Parses a "BEGIN PUBLIC KEY" (SubjectPublicKeyInfo) PEM holding an RSA key.
    public convenience init(pem: String) throws(CryptoError) {
        let key = try EVPKey.readPublicKey(pem: pem)
        guard key.isA("RSA") else { throw CryptoError("not an RSA public key") }
        self.init(key: key)
    }

    /// "BEGIN PUBLIC KEY" PEM.
    public func pem() throws(CryptoError) -> String {
        try key.publicKeyPEM()
    }

    /// Verifies an RSASSA-PKCS1-v1_5 SHA-256 signature.
    public func verifyRS256(signature: [UInt8], message: [UInt8]) -> Bool {
        key.verifySHA256(signature: signature, message: message)
    }
}
