import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// Owns one `X509`, made by the factories below (PEM, DER, PKCS#12, issuing): each builds the
/// certificate first and wraps it last; it is freed only in `deinit`.
///
/// Thread safety: never mutated after it is wrapped (issuing fills a fresh `X509` before it
/// is wrapped); OpenSSL allows concurrent reads of a const `X509`.
final class X509Certificate: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes ownership of `pointer`.
    init(handle pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        X509_free(pointer)
    }

    // MARK: Reading

    /// Every "CERTIFICATE" block of a PEM text, in order (other blocks are skipped).
    static func readAll(pem: String) -> [X509Certificate] {
        var certificates: [X509Certificate] = []
        withMemoryBIO(Array(pem.utf8)) { bio in
            while let cert = PEM_read_bio_X509(bio, nil, { _, _, _, _ in 0 }, nil) {
                certificates.append(X509Certificate(handle: cert))
            }
        }
        // The loop ends on "no start line": a benign queue entry.
        OpenSSLErrors.clear()
        return certificates
    }

    /// The first private key of a PEM text, decrypted with `password` when it is encrypted
    /// ("ENCRYPTED PRIVATE KEY", or a traditional key with `Proc-Type: 4,ENCRYPTED`).
    static func readPrivateKey(pem: String, password: String?) -> EVPKey? {
        var key: OpaquePointer?
        withMemoryBIO(Array(pem.utf8)) { bio in
            if let password {
                // A NULL callback with user data: OpenSSL reads the data as the NUL-terminated
                // passphrase (PEM_read_bio_PrivateKey(3)); the C string lives for the call.
                key = password.withCString { PEM_read_bio_PrivateKey(bio, nil, nil, UnsafeMutableRawPointer(mutating: $0)) }
            } else {
                // Never the terminal prompt OpenSSL falls back to without a callback.
                key = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
            }
        }
        guard let key else { OpenSSLErrors.clear(); return nil }
        return EVPKey(handle: key)
    }

    /// Parses a PKCS#12 (`.p12`) file: the leaf certificate, its key and the chain certificates.
    ///
    /// OpenSSL 3 keeps the old PKCS#12 ciphers (RC2-40, 3DES, used by files exported from older
    /// macOS Keychains) in its "legacy" provider: when the default provider cannot decrypt the
    /// file, the legacy provider is loaded once (beside the default one) and the parse retried.
    static func parsePKCS12(_ bytes: [UInt8], password: String?) throws(CryptoError) -> (X509Certificate, EVPKey, [X509Certificate]) {
        if let parsed = parsePKCS12Once(bytes, password: password) { return parsed }
        let firstError = OpenSSLErrors.error("cannot read the PKCS#12 file (wrong password, or not PKCS#12)")
        guard LegacyProvider.load() else { throw firstError }
        if let parsed = parsePKCS12Once(bytes, password: password) { return parsed }
        throw OpenSSLErrors.error("cannot read the PKCS#12 file (wrong password, or not PKCS#12)")
    }

    private static func parsePKCS12Once(_ bytes: [UInt8], password: String?) -> (X509Certificate, EVPKey, [X509Certificate])? {
        guard !bytes.isEmpty, bytes.count <= Int(Int32.max) else { return nil }
        let p12: OpaquePointer? = bytes.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PKCS12(nil, &cursor, buffer.count)
        }
        guard let p12 else { return nil }
        defer { PKCS12_free(p12) }
        var key: OpaquePointer?
        var cert: OpaquePointer?
        var chain: OpaquePointer?
        // PKCS12_parse tries both no password and "" when `pass` is NULL or empty.
        let parsed = (password ?? "").withCString { PKCS12_parse(p12, $0, &key, &cert, &chain) }
        var others: [X509Certificate] = []
        if let chain {
            for index in 0..<max(0, OPENSSL_sk_num(chain)) {
                // The stack owns its elements: take a reference of our own for each.
                if let element = OPENSSL_sk_value(chain, index) {
                    let member = OpaquePointer(element)
                    if X509_up_ref(member) == 1 { others.append(X509Certificate(handle: member)) }
                }
            }
            OPENSSL_sk_pop_free(chain, { element in if let element { X509_free(OpaquePointer(element)) } })
        }
        guard parsed == 1, let cert else {
            if let key { EVP_PKEY_free(key) }
            if let cert { X509_free(cert) }
            return nil
        }
        guard let key else { X509_free(cert); return nil }
        return (X509Certificate(handle: cert), EVPKey(handle: key), others)
    }

    // MARK: Fields

    func pem() throws(CryptoError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw OpenSSLErrors.error("certificate PEM: no memory BIO") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_X509(bio, pointer) == 1 else { throw OpenSSLErrors.error("certificate PEM encoding") }
        return Self.drain(bio)
    }

    func der() throws(CryptoError) -> [UInt8] {
        try OpenSSLErrors.encoded("certificate DER encoding") { i2d_X509(pointer, $0) }
    }

    /// Unix seconds of `notBefore` / `notAfter`.
    var validity: (notBefore: Double, notAfter: Double)? {
        guard let from = Self.unixSeconds(X509_get0_notBefore(pointer)),
              let until = Self.unixSeconds(X509_get0_notAfter(pointer)) else { return nil }
        return (from, until)
    }

    private static func unixSeconds(_ time: UnsafePointer<ASN1_TIME>?) -> Double? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { OpenSSLErrors.clear(); return nil }
        return Double(timegm(&parts))
    }

    /// The subject or issuer in RFC 2253 form (`UID=com.example.app,CN=…`).
    func name(subject: Bool) -> String {
        guard let name = subject ? X509_get_subject_name(pointer) : X509_get_issuer_name(pointer),
              let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        _ = X509_NAME_print_ex(bio, name, 0, pw_ssl_xn_flag_rfc2253())
        return Self.drain(bio)
    }

    /// The first subject entry with `nid` (e.g. `NID_userId`: Apple puts the bundle id there).
    func subjectEntry(_ nid: Int32) -> String? {
        guard let name = X509_get_subject_name(pointer) else { return nil }
        let index = X509_NAME_get_index_by_NID(name, nid, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry) else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>?
        let count = ASN1_STRING_to_UTF8(&utf8, data)
        guard count >= 0, let utf8 else { OpenSSLErrors.clear(); return nil }
        defer { CRYPTO_free(utf8, #fileID, #line) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(count)), as: UTF8.self)
    }

    /// Whether the certificate carries the extension with this dotted OID.
    func hasExtension(oid: String) -> Bool {
        guard let object = OBJ_txt2obj(oid, 1) else { OpenSSLErrors.clear(); return false }
        defer { ASN1_OBJECT_free(object) }
        return X509_get_ext_by_OBJ(pointer, object, -1) >= 0
    }

    func matches(_ key: EVPKey) -> Bool {
        let matches = X509_check_private_key(pointer, key.pointer) == 1
        OpenSSLErrors.clear()
        return matches
    }

    /// SHA-256 of the DER encoding, lower-case hex.
    func sha256Fingerprint() throws(CryptoError) -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(pointer, EVP_sha256(), &digest, &length) == 1 else { throw OpenSSLErrors.error("certificate fingerprint") }
        return digest.prefix(Int(length)).map { byte in
            let hex = Array("0123456789abcdef".utf8)
            return String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]], as: UTF8.self)
        }.joined()
    }

    // MARK: Issuing

    /// A certificate for `key`, signed by `issuerKey` (`issuer` nil: self-signed). `extensions`
    /// are openssl.cnf values by NID; `markerOIDs` are added as non-critical extensions holding
    /// an ASN.1 NULL (how Apple marks a push certificate's environments).
    static func issue(key: EVPKey, subject: [(field: String, value: String)], issuer: X509Certificate?, issuerKey: EVPKey,
                      notBefore: Double, notAfter: Double, extensions: [(Int32, String)],
                      markerOIDs: [String]) throws(CryptoError) -> X509Certificate {
        guard let cert = X509_new() else { throw OpenSSLErrors.error("X509_new") }
        // Owned from here: a throw below frees it with the wrapper.
        let owner = X509Certificate(handle: cert)
        guard X509_set_version(cert, 2) == 1 else { throw OpenSSLErrors.error("certificate version") }
        var serial = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&serial, Int32(serial.count)) == 1 else { throw OpenSSLErrors.error("certificate serial") }
        serial[0] &= 0x7F // a positive INTEGER
        guard let number = BN_bin2bn(serial, Int32(serial.count), nil) else { throw OpenSSLErrors.error("certificate serial") }
        defer { BN_free(number) }
        guard BN_to_ASN1_INTEGER(number, X509_get_serialNumber(cert)) != nil else { throw OpenSSLErrors.error("certificate serial") }
        guard ASN1_TIME_set(X509_getm_notBefore(cert), time_t(notBefore)) != nil,
              ASN1_TIME_set(X509_getm_notAfter(cert), time_t(notAfter)) != nil else { throw OpenSSLErrors.error("certificate validity") }
        guard X509_set_pubkey(cert, key.pointer) == 1 else { throw OpenSSLErrors.error("certificate public key") }
        guard let name = X509_get_subject_name(cert) else { throw OpenSSLErrors.error("certificate subject") }
        for entry in subject {
            let added = entry.value.withCString { value in
                X509_NAME_add_entry_by_txt(name, entry.field, MBSTRING_UTF8, UnsafeRawPointer(value).assumingMemoryBound(to: UInt8.self), -1, -1, 0)
            }
            guard added == 1 else { throw OpenSSLErrors.error("certificate subject \(entry.field)") }
        }
        guard X509_set_issuer_name(cert, issuer.map { X509_get_subject_name($0.pointer) } ?? name) == 1 else {
            throw OpenSSLErrors.error("certificate issuer")
        }
        for (nid, value) in extensions {
            var context = X509V3_CTX()
            X509V3_set_ctx(&context, issuer?.pointer ?? cert, cert, nil, nil, 0)
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else { throw OpenSSLErrors.error("certificate extension \(value)") }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(cert, ext, -1) == 1 else { throw OpenSSLErrors.error("certificate extension \(value)") }
        }
        for oid in markerOIDs {
            try addNullExtension(cert, oid: oid)
        }
        guard X509_sign(cert, issuerKey.pointer, EVP_sha256()) > 0 else { throw OpenSSLErrors.error("certificate signing") }
        return owner
    }

    private static func addNullExtension(_ cert: OpaquePointer, oid: String) throws(CryptoError) {
        guard let object = OBJ_txt2obj(oid, 1) else { throw OpenSSLErrors.error("OID \(oid)") }
        defer { ASN1_OBJECT_free(object) }
        guard let value = ASN1_OCTET_STRING_new() else { throw OpenSSLErrors.error("extension value") }
        defer { ASN1_OCTET_STRING_free(value) }
        let null: [UInt8] = [0x05, 0x00] // DER NULL
        guard ASN1_OCTET_STRING_set(value, null, Int32(null.count)) == 1,
              let ext = X509_EXTENSION_create_by_OBJ(nil, object, 0, value) else { throw OpenSSLErrors.error("extension \(oid)") }
        defer { X509_EXTENSION_free(ext) }
        guard X509_add_ext(cert, ext, -1) == 1 else { throw OpenSSLErrors.error("extension \(oid)") }
    }

    /// A PKCS#12 of `self` + `key` (+ `chain`), protected by `password` with OpenSSL 3's
    /// defaults (AES-256-CBC, PBKDF2, SHA-256 MAC).
    func pkcs12(key: EVPKey, chain: [X509Certificate], password: String, friendlyName: String) throws(CryptoError) -> [UInt8] {
        guard let stack = OPENSSL_sk_new_null() else { throw OpenSSLErrors.error("certificate stack") }
        defer { OPENSSL_sk_free(stack) } // the stack does not own the certificates pushed here
        for member in chain where OPENSSL_sk_push(stack, UnsafeRawPointer(member.pointer)) <= 0 {
            throw OpenSSLErrors.error("certificate stack")
        }
        let p12 = password.withCString { pass in
            friendlyName.withCString { name in
                PKCS12_create(pass, name, key.pointer, pointer, stack, 0, 0, 0, 0, 0)
            }
        }
        guard let p12 else { throw OpenSSLErrors.error("PKCS12_create") }
        defer { PKCS12_free(p12) }
        return try OpenSSLErrors.encoded("PKCS#12 encoding") { i2d_PKCS12(p12, $0) }
    }

    // MARK: Helpers

    /// `BIO_new_mem_buf` does not copy: `bytes` stay alive for the whole `body`.
    private static func withMemoryBIO(_ bytes: [UInt8], _ body: (OpaquePointer) -> Void) {
        guard !bytes.isEmpty, bytes.count <= Int(Int32.max) else { return }
        bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return }
            defer { BIO_free(bio) }
            body(bio)
        }
    }

    private static func drain(_ bio: OpaquePointer) -> String {
        var data: UnsafePointer<CChar>?
        let count = pw_ssl_bio_mem_data(bio, &data)
        guard let data, count > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
    }
}

/// OpenSSL 3's "legacy" provider (old PKCS#12 ciphers), loaded at most once, beside "default"
/// (loading any provider explicitly stops OpenSSL from loading the default one implicitly).
enum LegacyProvider {
    private static let loaded: Bool = {
        guard OSSL_PROVIDER_load(nil, "default") != nil else { OpenSSLErrors.clear(); return false }
        guard OSSL_PROVIDER_load(nil, "legacy") != nil else { OpenSSLErrors.clear(); return false }
        return true
    }()

    /// Whether the legacy provider is available (loads it on first use).
    static func load() -> Bool { loaded }
}

/// The OpenSSL NIDs the public types name (their macros import as constants of another type).
enum NIDs {
    static let userID = NID_userId
    static let basicConstraints = NID_basic_constraints
    static let keyUsage = NID_key_usage
    static let extendedKeyUsage = NID_ext_key_usage
    static let subjectKeyIdentifier = NID_subject_key_identifier
}
