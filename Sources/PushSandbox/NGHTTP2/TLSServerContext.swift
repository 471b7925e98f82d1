import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// A failure setting up TLS (certificate generation, loading, context creation).
public struct SandboxTLSError: Error, Sendable, CustomStringConvertible {
    public let message: String
    init(_ message: String) {
        var detail = ""
        let code = ERR_get_error()
        if code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            detail = ": " + String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        ERR_clear_error()
        self.message = message + detail
    }
    public var description: String { message }
}

/// A certificate and private key, both PEM.
public struct SandboxCertificate: Sendable {
    public let certificatePEM: String
    public let privateKeyPEM: String

    /// A fresh self-signed P-256 certificate for `127.0.0.1` and `localhost` (SAN IP and DNS), valid 30 days.
    public static func selfSigned() throws(SandboxTLSError) -> SandboxCertificate {
        guard let key = pw_ssl_ec_gen("P-256") else { throw SandboxTLSError("P-256 key generation failed") }
        defer { EVP_PKEY_free(key) }
        guard let cert = X509_new() else { throw SandboxTLSError("X509_new failed") }
        defer { X509_free(cert) }
        X509_set_version(cert, 2)
        var serial = [UInt8](repeating: 0, count: 8)
        _ = RAND_bytes(&serial, Int32(serial.count))
        var serialNumber: Int = 1
        for byte in serial.prefix(6) { serialNumber = serialNumber << 8 | Int(byte) }
        ASN1_INTEGER_set(X509_get_serialNumber(cert), serialNumber)
        X509_gmtime_adj(X509_getm_notBefore(cert), -3600)
        X509_gmtime_adj(X509_getm_notAfter(cert), 30 * 86400)
        X509_set_pubkey(cert, key)
        let name = X509_get_subject_name(cert)
        _ = "pushworker sandbox".withCString { value in
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, UnsafeRawPointer(value).assumingMemoryBound(to: UInt8.self), -1, -1, 0)
        }
        X509_set_issuer_name(cert, name)
        let extensions: [(Int32, String)] = [
            (NID_basic_constraints, "critical,CA:TRUE"),
            (NID_key_usage, "critical,digitalSignature,keyCertSign"),
            (NID_ext_key_usage, "serverAuth"),
            (NID_subject_key_identifier, "hash"),
            (NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost"),
        ]
        for (nid, value) in extensions where !addExtension(cert, nid, value) {
            throw SandboxTLSError("adding certificate extension \(value) failed")
        }
        guard X509_sign(cert, key, EVP_sha256()) > 0 else { throw SandboxTLSError("certificate signing failed") }
        let certPEM = try pem { PEM_write_bio_X509($0, cert) }
        let keyPEM = try pem { PEM_write_bio_PKCS8PrivateKey($0, key, nil, nil, 0, nil, nil) }
        return SandboxCertificate(certificatePEM: certPEM, privateKeyPEM: keyPEM)
    }

    /// Adds a v3 extension given in openssl.cnf syntax (e.g. "IP:127.0.0.1,DNS:localhost"),
    /// issuer = subject. A zeroed `X509V3_CTX` is what the `X509V3_set_ctx_nodb` macro leaves.
    private static func addExtension(_ cert: OpaquePointer, _ nid: Int32, _ value: String) -> Bool {
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, cert, cert, nil, nil, 0)
        guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else { return false }
        defer { X509_EXTENSION_free(ext) }
        return X509_add_ext(cert, ext, -1) == 1
    }

    private static func pem(_ write: (OpaquePointer?) -> Int32) throws(SandboxTLSError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw SandboxTLSError("BIO_new failed") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw SandboxTLSError("PEM encoding failed") }
        var data: UnsafePointer<CChar>?
        let count = pw_ssl_bio_mem_data(bio, &data)
        guard let data, count > 0 else { throw SandboxTLSError("PEM encoding empty") }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
    }
}

/// An OpenSSL server `SSL_CTX` offering ALPN `h2` only. Built by ``make(certificate:)``: the
/// context first, owned from then on, then the certificate; freed only in `deinit`.
///
/// Thread safety: the `SSL_CTX` is fully configured in `make` and never mutated afterwards;
/// OpenSSL allows creating `SSL` objects from one context on several threads.
final class TLSServerContext: @unchecked Sendable {
    let context: OpaquePointer
    /// ALPN protocol the server selects (RFC 7301); HTTP/2 over TLS is "h2" (RFC 9113 §3.2).
    let alpnProtocol: [UInt8] = Array("h2".utf8)

    /// A context serving `certificate`; throws if OpenSSL cannot build one or refuses the
    /// certificate or key (unreadable PEM, key not matching the certificate).
    ///
    /// With `clientCA` (PEM, `--require-client-cert`) the server asks every client for a
    /// certificate and verifies one that is presented against that CA alone: a certificate from
    /// another CA (or expired) fails the handshake, as at APNs. A client without one still
    /// connects (token auth); the router then refuses certificate apps' requests.
    static func make(certificate: SandboxCertificate, clientCA: String? = nil) throws(SandboxTLSError) -> TLSServerContext {
        guard let handle = SSL_CTX_new(TLS_server_method()) else { throw SandboxTLSError("SSL_CTX_new failed") }
        let server = TLSServerContext(handle: handle)
        try useCertificate(handle, certificate)
        if let clientCA { try requireClientCertificates(handle, caPEM: clientCA) }
        return server
    }

    private static func requireClientCertificates(_ context: OpaquePointer, caPEM: String) throws(SandboxTLSError) {
        let bytes = Array(caPEM.utf8)
        // BIO_new_mem_buf does not copy: `bytes` outlives the BIO (freed in this scope).
        let ca: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
        guard let ca else { throw SandboxTLSError("cannot read the client CA PEM") }
        defer { X509_free(ca) }
        // Both take their own reference to `ca`.
        guard let store = SSL_CTX_get_cert_store(context), X509_STORE_add_cert(store, ca) == 1 else {
            throw SandboxTLSError("X509_STORE_add_cert failed")
        }
        guard SSL_CTX_add_client_CA(context, ca) == 1 else { throw SandboxTLSError("SSL_CTX_add_client_CA failed") }
        // Resumed sessions keep the client's identity: OpenSSL refuses to resume without a
        // session id context once peers are verified (SSL_CTX_set_session_id_context(3)).
        let sessionContext = Array("pushworker-sandbox".utf8)
        guard SSL_CTX_set_session_id_context(context, sessionContext, UInt32(sessionContext.count)) == 1 else {
            throw SandboxTLSError("SSL_CTX_set_session_id_context failed")
        }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
    }

    /// Takes ownership of `handle` and sets the options every context gets (none can fail).
    private init(handle: OpaquePointer) {
        context = handle
        _ = pw_ssl_ctx_set_min_proto_tls12(handle)
        pw_ssl_ctx_set_server_options(handle)
        _ = pw_ssl_ctx_set_mode(handle, Int(SSL_MODE_ENABLE_PARTIAL_WRITE) | Int(SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER) | Int(SSL_MODE_RELEASE_BUFFERS))
        // Unretained: the context lives as long as this object (freed in deinit).
        SSL_CTX_set_alpn_select_cb(handle, tlsSelectALPN, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { SSL_CTX_free(context) }

    private static func useCertificate(_ context: OpaquePointer, _ certificate: SandboxCertificate) throws(SandboxTLSError) {
        let certBytes = Array(certificate.certificatePEM.utf8)
        let keyBytes = Array(certificate.privateKeyPEM.utf8)
        // BIO_new_mem_buf does not copy: the arrays outlive the BIOs (both freed in this scope).
        let cert: OpaquePointer? = certBytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
        guard let cert else { throw SandboxTLSError("cannot read certificate PEM") }
        defer { X509_free(cert) }
        let key: OpaquePointer? = keyBytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key else { throw SandboxTLSError("cannot read private key PEM") }
        defer { EVP_PKEY_free(key) }
        guard SSL_CTX_use_certificate(context, cert) == 1 else { throw SandboxTLSError("SSL_CTX_use_certificate failed") }
        guard SSL_CTX_use_PrivateKey(context, key) == 1 else { throw SandboxTLSError("SSL_CTX_use_PrivateKey failed") }
        guard SSL_CTX_check_private_key(context) == 1 else { throw SandboxTLSError("certificate and key do not match") }
    }
}

/// ALPN selection: picks "h2" from the client's list, otherwise no protocol (the connection is then closed).
private let tlsSelectALPN: @convention(c) (
    OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
    UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
) -> Int32 = { _, out, outLength, input, inputLength, context in
    guard let out, let outLength, let input, let context else { return SSL_TLSEXT_ERR_NOACK }
    let server = Unmanaged<TLSServerContext>.fromOpaque(context).takeUnretainedValue()
    let wanted = server.alpnProtocol
    var index = 0
    let total = Int(inputLength)
    while index < total {
        let length = Int(input[index])
        let start = index + 1
        guard start + length <= total else { break }
        if length == wanted.count {
            var same = true
            for offset in 0..<length where input[start + offset] != wanted[offset] { same = false; break }
            if same {
                // OpenSSL requires `out` to point into `input` or static storage.
                out.pointee = input + start
                outLength.pointee = UInt8(length)
                return SSL_TLSEXT_ERR_OK
            }
        }
        index = start + length
    }
    return SSL_TLSEXT_ERR_NOACK
}
