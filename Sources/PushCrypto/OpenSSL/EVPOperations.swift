import COpenSSL

/// SHA-256 fetched once from the default provider. `EVP_sha256()` would make every
/// `EVP_DigestSignInit` repeat an implicit fetch (a few µs per ES256 signature).
///
/// Thread safety: a fetched `EVP_MD` is immutable and may be shared by any number of
/// contexts at once; it is held for the process lifetime and never freed.
final class FetchedSHA256: @unchecked Sendable {
    static let shared = FetchedSHA256()
    let pointer: OpaquePointer?

    private init() {
        pointer = EVP_MD_fetch(nil, "SHA256", nil) ?? EVP_sha256()
        OpenSSLErrors.clear()
    }
}

/// AES-128-GCM fetched once (see `FetchedSHA256`): `EVP_aes_128_gcm()` would make every
/// `EVP_EncryptInit_ex` repeat an implicit fetch.
///
/// Thread safety: as `FetchedSHA256`.
final class FetchedAES128GCM: @unchecked Sendable {
    static let shared = FetchedAES128GCM()
    let pointer: OpaquePointer?

    private init() {
        pointer = EVP_CIPHER_fetch(nil, "AES-128-GCM", nil) ?? EVP_aes_128_gcm()
        OpenSSLErrors.clear()
    }
}

/// An `EVP_MAC` HMAC context with SHA-256 selected, keyed once with a dummy key so that its
/// digest contexts are initialised: `HMACSHA256` copies it instead of fetching "HMAC" and
/// "SHA256" per MAC, as the one-shot `HMAC()` does (`EVP_Q_mac`).
///
/// Thread safety: the template is never used for a MAC itself, only read by
/// `EVP_MAC_CTX_dup`; it is held for the process lifetime and never freed.
final class HMACTemplate: @unchecked Sendable {
    static let shared = HMACTemplate()
    let context: OpaquePointer?

    private init() {
        context = Self.make()
        OpenSSLErrors.clear()
    }

    private static func make() -> OpaquePointer? {
        guard let mac = EVP_MAC_fetch(nil, "HMAC", nil) else { return nil }
        defer { EVP_MAC_free(mac) }  // the context holds its own reference
        guard let context = EVP_MAC_CTX_new(mac) else { return nil }
        // The parameters only need to live for the EVP_MAC_init call, which reads (not keeps) them.
        var params = [
            OSSL_PARAM_construct_utf8_string(cString("digest"), UnsafeMutablePointer(mutating: cString("SHA256")), 0),
            OSSL_PARAM_construct_end(),
        ]
        let dummyKey = [UInt8](repeating: 0, count: 32)
        guard EVP_MAC_init(context, dummyKey, dummyKey.count, &params) == 1 else {
            EVP_MAC_CTX_free(context)
            return nil
        }
        return context
    }
}

/// HMAC-SHA256 (RFC 2104) on one `EVP_MAC` context, re-keyed for each MAC: start(key:),
/// update(…), finish(). Failures mean libcrypto itself is broken and stop the process, as
/// `Digest.hmacSHA256` always did.
///
/// Not thread-safe: one instance per computation (e.g. one HKDF key schedule).
final class HMACSHA256 {
    private let context: OpaquePointer

    init() {
        guard let template = HMACTemplate.shared.context, let context = EVP_MAC_CTX_dup(template) else {
            OpenSSLErrors.clear()
            fatalError("HMAC-SHA256 context: libcrypto is broken")
        }
        self.context = context
    }

    deinit {
        EVP_MAC_CTX_free(context)
    }

    func start(key: [UInt8]) {
        let ok = key.withNonNullBytes { bytes, count in EVP_MAC_init(context, bytes, count, nil) }
        check(ok, "EVP_MAC_init")
    }

    func update(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        check(EVP_MAC_update(context, bytes, bytes.count), "EVP_MAC_update")
    }

    func update(byte: UInt8) {
        var byte = byte
        check(EVP_MAC_update(context, &byte, 1), "EVP_MAC_update")
    }

    /// The MAC, truncated to its first `length` (≤ 32) bytes.
    func finish(length: Int = 32) -> [UInt8] {
        precondition(length <= 32)
        var mac = [UInt8](repeating: 0, count: 32)
        var written = 0
        check(EVP_MAC_final(context, &mac, &written, mac.count), "EVP_MAC_final")
        guard written == 32 else { fatalError("HMAC-SHA256 gave \(written) bytes: libcrypto is broken") }
        if length < 32 { mac.removeLast(32 - length) }
        return mac
    }

    private func check(_ result: Int32, _ what: String) {
        guard result == 1 else {
            OpenSSLErrors.clear()
            fatalError("\(what) (HMAC-SHA256) failed: libcrypto is broken")
        }
    }
}

extension EVPKey {
    /// Verifies a DER ECDSA or PKCS#1 v1.5 signature over SHA-256(`message`).
    func verifySHA256(signature: [UInt8], message: [UInt8]) -> Bool {
        guard let md = EVP_MD_CTX_new() else {
            OpenSSLErrors.clear()
            return false
        }
        defer { EVP_MD_CTX_free(md) }
        guard EVP_DigestVerifyInit(md, nil, FetchedSHA256.shared.pointer, nil, pointer) == 1 else {
            OpenSSLErrors.clear()
            return false
        }
        let result = signature.withNonNullBytes { sig, sigCount in
            message.withNonNullBytes { data, count in
                EVP_DigestVerify(md, sig, sigCount, data, count)
            }
        }
        if result != 1 { OpenSSLErrors.clear() }
        return result == 1
    }

    /// ECDH (SEC 1 §3.3.1): the 32-byte X coordinate of d·Q. The peer is not re-validated:
    /// every `P256PublicKey` was checked to lie on the curve when it was built.
    func deriveSharedSecret(peer: EVPKey) throws(CryptoError) -> [UInt8] {
        guard let ctx = EVP_PKEY_CTX_new(pointer, nil) else { throw OpenSSLErrors.error("ECDH context") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var secret = [UInt8](repeating: 0, count: 32)
        var length = secret.count
        guard EVP_PKEY_derive_init(ctx) == 1,
              EVP_PKEY_derive_set_peer_ex(ctx, peer.pointer, 0) == 1,
              EVP_PKEY_derive(ctx, &secret, &length) == 1, length == 32
        else { throw OpenSSLErrors.error("ECDH failed") }
        return secret
    }
}

/// JOSE ECDSA signature form (RFC 7518 §3.4): DER `ECDSA-Sig-Value` ⇄ 64-byte R || S.
enum ECDSASignatureFormat {
    static func rawFromDER(_ der: [UInt8]) throws(CryptoError) -> [UInt8] {
        let parsed = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let parsed else { throw OpenSSLErrors.error("malformed DER ECDSA signature") }
        defer { ECDSA_SIG_free(parsed) }
        var raw = [UInt8](repeating: 0, count: 64)
        let ok = raw.withUnsafeMutableBufferPointer { out -> Bool in
            guard let base = out.baseAddress,
                  let r = ECDSA_SIG_get0_r(parsed), let s = ECDSA_SIG_get0_s(parsed) else { return false }
            return BN_bn2binpad(r, base, 32) == 32 && BN_bn2binpad(s, base + 32, 32) == 32
        }
        guard ok else { throw OpenSSLErrors.error("ECDSA signature component too wide") }
        return raw
    }

    /// nil unless `raw` is exactly 64 bytes.
    static func derFromRaw(_ raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64 else { return nil }
        guard let sig = ECDSA_SIG_new() else {
            OpenSSLErrors.clear()
            return nil
        }
        defer { ECDSA_SIG_free(sig) }
        let (r, s) = raw.withUnsafeBufferPointer { buffer -> (OpaquePointer?, OpaquePointer?) in
            guard let base = buffer.baseAddress else { return (nil, nil) }
            return (BN_bin2bn(base, 32, nil), BN_bin2bn(base + 32, 32, nil))
        }
        guard let r, let s, ECDSA_SIG_set0(sig, r, s) == 1 else {  // set0 takes ownership on success only
            if let r { BN_free(r) }
            if let s { BN_free(s) }
            OpenSSLErrors.clear()
            return nil
        }
        return try? OpenSSLErrors.encoded("ECDSA signature DER encoding") { i2d_ECDSA_SIG(sig, $0) }
    }
}

/// AES-128-GCM (NIST SP 800-38D) with a 96-bit nonce and a 128-bit tag, no AAD.
enum AES128GCM {
    static let tagLength = 16

    /// Encrypts the concatenation of `parts` (no intermediate copy) and appends
    /// ciphertext || tag to `output`.
    static func seal(key: [UInt8], nonce: [UInt8], parts: [[UInt8]], appendingTo output: inout [UInt8]) throws(CryptoError) {
        guard key.count == 16, nonce.count == 12 else { throw CryptoError("AES-128-GCM needs a 16-byte key and a 12-byte nonce") }
        guard let ctx = EVP_CIPHER_CTX_new() else { throw OpenSSLErrors.error("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        guard EVP_EncryptInit_ex(ctx, FetchedAES128GCM.shared.pointer, nil, key, nonce) == 1 else {
            throw OpenSSLErrors.error("AES-128-GCM initialisation")
        }
        let total = parts.reduce(0) { $0 + $1.count }
        guard total < Int(Int32.max) - 64 else { throw CryptoError("AES-128-GCM input of \(total) bytes is too large") }
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: total + 16 + tagLength))
        let ok = output.withUnsafeMutableBufferPointer { buffer -> Int? in
            guard let base = buffer.baseAddress else { return nil }
            var offset = start
            for part in parts where !part.isEmpty {
                var written: Int32 = 0
                let ok = part.withUnsafeBufferPointer { EVP_EncryptUpdate(ctx, base + offset, &written, $0.baseAddress, Int32($0.count)) }
                guard ok == 1 else { return nil }
                offset += Int(written)
            }
            var written: Int32 = 0
            guard EVP_EncryptFinal_ex(ctx, base + offset, &written) == 1 else { return nil }
            offset += Int(written)
            guard EVP_CIPHER_CTX_ctrl(ctx, pw_ssl_ctrl_gcm_get_tag(), Int32(tagLength), base + offset) == 1 else { return nil }
            return offset + tagLength
        }
        guard let end = ok else {
            output.removeLast(output.count - start)
            throw OpenSSLErrors.error("AES-128-GCM encryption failed")
        }
        output.removeLast(output.count - end)
    }

    /// Decrypts ciphertext || tag; throws if the tag does not authenticate.
    static func open(key: [UInt8], nonce: [UInt8], sealed: ArraySlice<UInt8>) throws(CryptoError) -> [UInt8] {
        guard key.count == 16, nonce.count == 12 else { throw CryptoError("AES-128-GCM needs a 16-byte key and a 12-byte nonce") }
        guard sealed.count >= tagLength else { throw CryptoError("ciphertext shorter than the GCM tag") }
        guard sealed.count < Int(Int32.max) - 64 else { throw CryptoError("AES-128-GCM input of \(sealed.count) bytes is too large") }
        guard let ctx = EVP_CIPHER_CTX_new() else { throw OpenSSLErrors.error("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        guard EVP_DecryptInit_ex(ctx, FetchedAES128GCM.shared.pointer, nil, key, nonce) == 1 else {
            throw OpenSSLErrors.error("AES-128-GCM initialisation")
        }
        let cipherCount = sealed.count - tagLength
        var plaintext = [UInt8](repeating: 0, count: cipherCount + 16)
        var tag = Array(sealed.suffix(tagLength))
        let produced = sealed.withUnsafeBufferPointer { input -> Int? in
            plaintext.withUnsafeMutableBufferPointer { out -> Int? in
                guard let inBase = input.baseAddress, let outBase = out.baseAddress else { return nil }
                var offset = 0
                if cipherCount > 0 {
                    var written: Int32 = 0
                    guard EVP_DecryptUpdate(ctx, outBase, &written, inBase, Int32(cipherCount)) == 1 else { return nil }
                    offset = Int(written)
                }
                guard EVP_CIPHER_CTX_ctrl(ctx, pw_ssl_ctrl_gcm_set_tag(), Int32(tagLength), &tag) == 1 else { return nil }
                var written: Int32 = 0
                guard EVP_DecryptFinal_ex(ctx, outBase + offset, &written) == 1 else { return nil }
                return offset + Int(written)
            }
        }
        guard let produced else { throw OpenSSLErrors.error("AES-128-GCM authentication failed") }
        plaintext.removeLast(plaintext.count - produced)
        return plaintext
    }
}


/// One-shot `EVP_DigestSign` on an initialised context.
private func digestSign(_ md: OpaquePointer, _ message: [UInt8], maximumSignatureLength: Int) throws(CryptoError) -> [UInt8] {
    var signature = [UInt8](repeating: 0, count: maximumSignatureLength)
    var length = signature.count
    let ok = message.withNonNullBytes { data, count in
        EVP_DigestSign(md, &signature, &length, data, count)
    }
    guard ok == 1, length <= signature.count else { throw OpenSSLErrors.error("signing failed") }
    signature.removeLast(signature.count - length)
    return signature
}

/// A SHA-256 signing context initialised once per key; each signature runs on a copy
/// (`EVP_MD_CTX_copy_ex`), which skips the per-call provider lookup and key export of
/// `EVP_DigestSignInit`, work that is the same for every signature with one key.
///
/// Thread safety: the template is never used for an operation itself, only read by
/// `EVP_MD_CTX_copy_ex`, which takes it as `const` and only bumps atomic reference counts
/// on the shared key, digest and signature algorithm; each copy belongs to one call.
final class SigningTemplate: @unchecked Sendable {
    private let template: OpaquePointer
    private let maximumSignatureLength: Int

    /// The context first, then this owner around it, then the initialisation: a key OpenSSL
    /// cannot sign with only throws, and `deinit` frees the context, once.
    static func make(key: EVPKey, maximumSignatureLength: Int) throws(CryptoError) -> SigningTemplate {
        guard let md = EVP_MD_CTX_new() else { throw OpenSSLErrors.error("EVP_MD_CTX_new") }
        let signer = SigningTemplate(handle: md, maximumSignatureLength: maximumSignatureLength)
        guard EVP_DigestSignInit(md, nil, FetchedSHA256.shared.pointer, nil, key.pointer) == 1 else {
            throw OpenSSLErrors.error("signature initialisation")
        }
        return signer
    }

    /// Takes ownership of `handle`.
    private init(handle: OpaquePointer, maximumSignatureLength: Int) {
        template = handle
        self.maximumSignatureLength = maximumSignatureLength
    }

    deinit {
        EVP_MD_CTX_free(template)
    }

    func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let md = EVP_MD_CTX_new() else { throw OpenSSLErrors.error("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(md) }
        guard EVP_MD_CTX_copy_ex(md, template) == 1 else { throw OpenSSLErrors.error("signing context copy") }
        return try digestSign(md, message, maximumSignatureLength: maximumSignatureLength)
    }
}
