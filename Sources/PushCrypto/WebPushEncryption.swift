/// RFC 8291 message encryption, content coding aes128gcm (RFC 8188), one record.
///
/// Body layout (RFC 8188 §2.1): salt (16) | rs (uint32 BE) | idlen (1) = 65 | keyid = the
/// application server's ephemeral public key (65) | record. The record is the plaintext,
/// the padding delimiter 0x02 (last record) and no further padding, sealed with
/// AES-128-GCM (16-byte tag). Key schedule (RFC 8291 §3.3–3.4, RFC 8188 §2.2–2.3):
/// `IKM = HKDF(auth, ECDH, "WebPush: info" 0x00 ua_public as_public, 32)`, then
/// `CEK = HKDF(salt, IKM, "Content-Encoding: aes128gcm" 0x00, 16)` and
/// `NONCE = HKDF(salt, IKM, "Content-Encoding: nonce" 0x00, 12)`.
public enum WebPushEncryption {
    static let headerLength = 86
    static let authSecretLength = 16
    static let saltLength = 16

    /// Fresh ephemeral key and salt per message.
    public static func encrypt(plaintext: [UInt8], userAgentPublicKey: [UInt8], authSecret: [UInt8], recordSize: UInt32 = 4096) throws(CryptoError) -> [UInt8] {
        try seal(plaintext: plaintext, userAgentPublicKey: userAgentPublicKey, authSecret: authSecret,
                 applicationServerScalar: nil, salt: SecureRandom.bytes(saltLength), recordSize: recordSize)
    }

    /// Deterministic variant for test vectors.
    public static func encrypt(plaintext: [UInt8], userAgentPublicKey: [UInt8], authSecret: [UInt8], applicationServerKey: P256PrivateKey, salt: [UInt8], recordSize: UInt32 = 4096) throws(CryptoError) -> [UInt8] {
        try seal(plaintext: plaintext, userAgentPublicKey: userAgentPublicKey, authSecret: authSecret,
                 applicationServerScalar: applicationServerKey.rawScalar, salt: salt, recordSize: recordSize)
    }

    /// Both `encrypt`s: `applicationServerScalar` nil draws a fresh ephemeral key inside the ECDH.
    private static func seal(plaintext: [UInt8], userAgentPublicKey: [UInt8], authSecret: [UInt8], applicationServerScalar: [UInt8]?, salt: [UInt8], recordSize: UInt32) throws(CryptoError) -> [UInt8] {
        guard salt.count == saltLength else { throw CryptoError("salt must be \(saltLength) bytes, got \(salt.count)") }
        guard authSecret.count == authSecretLength else { throw CryptoError("auth secret must be \(authSecretLength) bytes, got \(authSecret.count)") }
        // One record: plaintext + delimiter + tag must fit in rs (RFC 8188 §2).
        guard UInt64(plaintext.count) + 1 + UInt64(AES128GCM.tagLength) <= UInt64(recordSize) else {
            throw CryptoError("plaintext of \(plaintext.count) bytes does not fit one record of \(recordSize) bytes")
        }
        let agreement = try SenderECDH.agree(userAgentPublicKey: userAgentPublicKey, scalar: applicationServerScalar)
        let serverPublic = agreement.applicationServerPublicKey
        let (key, nonce) = contentKeys(
            ecdhSecret: agreement.secret, authSecret: authSecret, salt: salt,
            userAgentPublic: userAgentPublicKey, applicationServerPublic: serverPublic)

        var body: [UInt8] = []
        body.reserveCapacity(encryptedLength(plaintextCount: plaintext.count))
        body += salt
        body.append(UInt8(truncatingIfNeeded: recordSize >> 24))
        body.append(UInt8(truncatingIfNeeded: recordSize >> 16))
        body.append(UInt8(truncatingIfNeeded: recordSize >> 8))
        body.append(UInt8(truncatingIfNeeded: recordSize))
        body.append(UInt8(serverPublic.count))
        body += serverPublic
        try AES128GCM.seal(key: key, nonce: nonce, parts: [plaintext, lastRecordDelimiter], appendingTo: &body)
        return body
    }

    /// The receiving side (used by the sandbox): parses the RFC 8188 header, derives keys, decrypts, strips padding.
    /// Accepts several records (each nonce XORed with its sequence number, RFC 8188 §2.3).
    public static func decrypt(_ body: [UInt8], userAgentPrivateKey: P256PrivateKey, authSecret: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard authSecret.count == authSecretLength else { throw CryptoError("auth secret must be \(authSecretLength) bytes, got \(authSecret.count)") }
        guard body.count >= 21 else { throw CryptoError("aes128gcm body shorter than its header") }
        let salt = Array(body[0..<16])
        let recordSize = Int(body[16]) << 24 | Int(body[17]) << 16 | Int(body[18]) << 8 | Int(body[19])
        let idLength = Int(body[20])
        guard idLength == 65 else { throw CryptoError("keyid must be the 65-byte sender public key, got \(idLength) bytes") }
        guard recordSize >= 18 else { throw CryptoError("record size \(recordSize) below the minimum of 18") }
        let cipherStart = 21 + idLength
        guard body.count > cipherStart else { throw CryptoError("aes128gcm body has no record") }
        let sender = try P256PublicKey(uncompressed: Array(body[21..<cipherStart]))
        let ecdh = try userAgentPrivateKey.sharedSecret(with: sender)
        let (key, baseNonce) = contentKeys(
            ecdhSecret: ecdh, authSecret: authSecret, salt: salt,
            userAgentPublic: userAgentPrivateKey.publicKey.uncompressed, applicationServerPublic: sender.uncompressed)

        var plaintext: [UInt8] = []
        var start = cipherStart
        var sequence: UInt64 = 0
        while start < body.count {
            let end = min(start + recordSize, body.count)
            let isLast = end == body.count
            guard end - start >= AES128GCM.tagLength + 1 else { throw CryptoError("truncated record") }
            var nonce = baseNonce
            for i in 0..<8 { nonce[11 - i] ^= UInt8(truncatingIfNeeded: sequence >> (8 * UInt64(i))) }
            var record = try AES128GCM.open(key: key, nonce: nonce, sealed: body[start..<end])
            // Padding: the delimiter is the last non-zero byte (RFC 8188 §2).
            guard let delimiterIndex = record.lastIndex(where: { $0 != 0 }) else { throw CryptoError("record without padding delimiter") }
            guard record[delimiterIndex] == (isLast ? 0x02 : 0x01) else { throw CryptoError("wrong padding delimiter") }
            record.removeLast(record.count - delimiterIndex)
            plaintext += record
            start = end
            sequence += 1
        }
        return plaintext
    }

    /// Size of the encrypted body for a plaintext of `count` bytes: count + 86 (header with 65-byte keyid) + 1 (padding delimiter) + 16 (tag).
    public static func encryptedLength(plaintextCount: Int) -> Int {
        plaintextCount + headerLength + 1 + AES128GCM.tagLength
    }

    /// Padding delimiter of the last (here: only) record, RFC 8188 §2.
    private static let lastRecordDelimiter: [UInt8] = [0x02]
    private static let keyInfoPrefix = Array("WebPush: info\u{0}".utf8)
    private static let contentKeyInfo = Array("Content-Encoding: aes128gcm\u{0}".utf8)
    private static let nonceInfo = Array("Content-Encoding: nonce\u{0}".utf8)

    /// One HMAC context serves all five HKDF steps.
    private static func contentKeys(ecdhSecret: [UInt8], authSecret: [UInt8], salt: [UInt8], userAgentPublic: [UInt8], applicationServerPublic: [UInt8]) -> (key: [UInt8], nonce: [UInt8]) {
        var keyInfo: [UInt8] = []
        keyInfo.reserveCapacity(keyInfoPrefix.count + userAgentPublic.count + applicationServerPublic.count)
        keyInfo += keyInfoPrefix
        keyInfo += userAgentPublic
        keyInfo += applicationServerPublic
        let hmac = HMACSHA256()
        let authPRK = HKDF.extract(salt: authSecret, inputKeyMaterial: ecdhSecret, using: hmac)
        let ikm = HKDF.expand(pseudoRandomKey: authPRK, info: keyInfo, length: 32, using: hmac)
        let prk = HKDF.extract(salt: salt, inputKeyMaterial: ikm, using: hmac)
        let key = HKDF.expand(pseudoRandomKey: prk, info: contentKeyInfo, length: 16, using: hmac)
        let nonce = HKDF.expand(pseudoRandomKey: prk, info: nonceInfo, length: 12, using: hmac)
        return (key, nonce)
    }
}
