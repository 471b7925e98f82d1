import COpenSSL

/// Owns one `EVP_PKEY`, made by the factories below (PEM, generation, raw P-256): each one
/// builds the key first and wraps it last, so no error path frees a key an owner holds; the
/// key is freed only in `deinit`.
///
/// Thread safety: the key is never mutated after `init`; OpenSSL 3 allows a const
/// `EVP_PKEY` to be used concurrently by sign/verify/derive operations as long as each
/// operation has its own `EVP_MD_CTX` / `EVP_PKEY_CTX`, which every method here creates
/// per call.
final class EVPKey: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes ownership of `pointer`.
    init(handle pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    func isA(_ name: String) -> Bool {
        EVP_PKEY_is_a(pointer, name) == 1
    }

    var bits: Int { Int(EVP_PKEY_get_bits(pointer)) }

    /// `true` if this is an EC key on P-256 (OpenSSL names it "prime256v1").
    var isP256: Bool {
        guard isA("EC") else { return false }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(pointer, "group", &name, name.count, &length) == 1 else {
            OpenSSLErrors.clear()
            return false
        }
        let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return group == "prime256v1" || group == "P-256"
    }

    /// A big-number parameter ("priv", "qx", "qy") as exactly `width` big-endian bytes.
    func bigNumberParameter(_ name: String, width: Int) throws(CryptoError) -> [UInt8] {
        var bn: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pointer, name, &bn) == 1, let bn else {
            throw OpenSSLErrors.error("key has no '\(name)' component")
        }
        defer { BN_clear_free(bn) }
        var out = [UInt8](repeating: 0, count: width)
        guard BN_bn2binpad(bn, &out, Int32(width)) == Int32(width) else {
            throw OpenSSLErrors.error("key component '\(name)' is wider than \(width) bytes")
        }
        return out
    }

    // MARK: PEM

    /// Reads the first private key of a PEM text: PKCS#8 "PRIVATE KEY" or the traditional
    /// "EC PRIVATE KEY" / "RSA PRIVATE KEY". Encrypted keys are refused (no passphrase prompt).
    static func readPrivateKey(pem: String) throws(CryptoError) -> EVPKey {
        let key = withMemoryBIO(reading: pem) { bio in
            PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        guard let key else { throw OpenSSLErrors.error("not a readable unencrypted PEM private key") }
        return EVPKey(handle: key)
    }

    /// Reads a "PUBLIC KEY" (SubjectPublicKeyInfo) PEM.
    static func readPublicKey(pem: String) throws(CryptoError) -> EVPKey {
        let key = withMemoryBIO(reading: pem) { bio in
            PEM_read_bio_PUBKEY(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        guard let key else { throw OpenSSLErrors.error("not a readable PEM public key") }
        return EVPKey(handle: key)
    }

    func pkcs8PEM() throws(CryptoError) -> String {
        try Self.writeMemoryBIO("PKCS#8 PEM encoding") { bio in
            PEM_write_bio_PKCS8PrivateKey(bio, pointer, nil, nil, 0, nil, nil)
        }
    }

    func publicKeyPEM() throws(CryptoError) -> String {
        try Self.writeMemoryBIO("public key PEM encoding") { bio in
            PEM_write_bio_PUBKEY(bio, pointer)
        }
    }

    /// `BIO_new_mem_buf` does not copy: the text's bytes stay alive for the whole `body`.
    private static func withMemoryBIO(reading text: String, _ body: (OpaquePointer) -> OpaquePointer?) -> OpaquePointer? {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= Int(Int32.max) else { return nil }
        return bytes.withUnsafeBytes { raw -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return body(bio)
        }
    }

    private static func writeMemoryBIO(_ what: String, _ body: (OpaquePointer) -> Int32) throws(CryptoError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw OpenSSLErrors.error("\(what): no memory BIO") }
        defer { BIO_free(bio) }
        guard body(bio) == 1 else { throw OpenSSLErrors.error(what) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = BIO_read(bio, &chunk, Int32(chunk.count))
            if count <= 0 { break }
            output += chunk[0..<Int(count)]
        }
        OpenSSLErrors.clear()  // BIO_read at end of data may queue a benign entry.
        return String(decoding: output, as: UTF8.self)
    }

    // MARK: Generation

    static func generateP256() throws(CryptoError) -> EVPKey {
        guard let key = pw_ssl_ec_gen(cString("P-256")) else { throw OpenSSLErrors.error("P-256 key generation failed") }
        return EVPKey(handle: key)
    }

    static func generateRSA(bits: Int) throws(CryptoError) -> EVPKey {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, cString("RSA"), nil) else {
            throw OpenSSLErrors.error("RSA key generation context")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1,
              EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, Int32(bits)) == 1,
              EVP_PKEY_generate(ctx, &key) == 1, let key
        else { throw OpenSSLErrors.error("RSA-\(bits) key generation failed") }
        return EVPKey(handle: key)
    }

    // MARK: Raw P-256

    /// Builds a P-256 key from a public point (65 bytes, uncompressed) and optionally the
    /// private scalar. OpenSSL rejects a point that is not on the curve.
    static func p256(publicPoint: [UInt8], privateScalar: [UInt8]?) throws(CryptoError) -> EVPKey {
        guard let builder = OSSL_PARAM_BLD_new() else { throw OpenSSLErrors.error("OSSL_PARAM_BLD_new") }
        defer { OSSL_PARAM_BLD_free(builder) }
        var scalar: OpaquePointer?
        defer { if let scalar { BN_clear_free(scalar) } }
        if let privateScalar {
            scalar = privateScalar.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
            guard let scalar, OSSL_PARAM_BLD_push_BN(builder, cString("priv"), scalar) == 1 else {
                throw OpenSSLErrors.error("private scalar")
            }
        }
        // The builder keeps the key-name and string pointers until OSSL_PARAM_BLD_to_param, so
        // they must be static (a Swift String bridged to `const char *` dies after the call).
        // OSSL_PARAM_BLD_to_param copies the octet string, so the point need only live until then.
        let params = publicPoint.withUnsafeBytes { point -> UnsafeMutablePointer<OSSL_PARAM>? in
            guard OSSL_PARAM_BLD_push_utf8_string(builder, cString("group"), cString("prime256v1"), 0) == 1,
                  OSSL_PARAM_BLD_push_octet_string(builder, cString("pub"), point.baseAddress, point.count) == 1
            else { return nil }
            return OSSL_PARAM_BLD_to_param(builder)
        }
        guard let params else { throw OpenSSLErrors.error("P-256 key parameters") }
        defer { OSSL_PARAM_free(params) }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, cString("EC"), nil) else { throw OpenSSLErrors.error("EC context") }
        defer { EVP_PKEY_CTX_free(ctx) }
        let selection = privateScalar == nil ? pw_ssl_selection_public_key() : pw_ssl_selection_keypair()
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(ctx) == 1,
              EVP_PKEY_fromdata(ctx, &key, selection, params) == 1, let key
        else { throw OpenSSLErrors.error("invalid P-256 key") }
        return EVPKey(handle: key)
    }

    /// The uncompressed public point `d·G` for a private scalar, which must lie in [1, n−1].
    static func p256PublicPoint(forScalar scalarBytes: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else { throw OpenSSLErrors.error("P-256 group") }
        defer { EC_GROUP_free(group) }
        guard let scalar = scalarBytes.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), nil) }) else {
            throw OpenSSLErrors.error("private scalar")
        }
        defer { BN_clear_free(scalar) }
        guard let order = EC_GROUP_get0_order(group), BN_is_zero(scalar) == 0, BN_cmp(scalar, order) < 0 else {
            OpenSSLErrors.clear()
            throw CryptoError("P-256 private scalar out of range")
        }
        guard let point = EC_POINT_new(group) else { throw OpenSSLErrors.error("EC_POINT_new") }
        defer { EC_POINT_free(point) }
        var out = [UInt8](repeating: 0, count: 65)
        guard EC_POINT_mul(group, point, scalar, nil, nil, nil) == 1,
              EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, &out, 65, nil) == 65
        else { throw OpenSSLErrors.error("P-256 public point") }
        return out
    }

    /// 0x04 || X || Y of an EC P-256 key.
    func p256UncompressedPoint() throws(CryptoError) -> [UInt8] {
        let x = try bigNumberParameter("qx", width: 32)
        let y = try bigNumberParameter("qy", width: 32)
        return [0x04] + x + y
    }
}

