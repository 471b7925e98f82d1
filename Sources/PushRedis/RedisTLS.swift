import CPushRedisTLS

/// The TLS of a `rediss://`, `rediss+cluster://` or `rediss+sentinel://` connection (docs/redis.md
/// "TLS"): TLS 1.2 or later, the server's certificate verified against ``caFile`` (or the system's
/// CA store) and its name checked against the host connected to, SNI set for host names, and an
/// optional client certificate. Verification cannot be turned off.
///
/// The URL only says "TLS"; the files come from the configuration (`PUSHWORKER_REDIS_CA_FILE`,
/// `PUSHWORKER_REDIS_CERT_FILE`, `PUSHWORKER_REDIS_KEY_FILE`).
public struct RedisTLS: Sendable, Equatable {
    /// PEM CA certificates that verify the servers; nil: the system's store.
    public var caFile: String?
    /// The client certificate (PEM, its chain after it), for servers that require one (`tls-auth-clients yes`).
    public var certificateFile: String?
    /// The client certificate's private key (PEM).
    public var keyFile: String?

    public init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil) {
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.keyFile = keyFile
    }

    /// The error of a handshake that failed, naming what to change.
    static func handshakeError(_ failure: pw_rtls_failure, server: String, host: String, tls: RedisTLS) -> RedisError {
        let detail = text(failure.detail)
        let message: String
        switch failure.kind {
        case Int32(PW_RTLS_UNTRUSTED):
            let store = tls.caFile.map { "a CA of \($0)" } ?? "a CA of the system store"
            message = "the certificate of \(server) is not signed by \(store) (\(detail)): set PUSHWORKER_REDIS_CA_FILE to the CA that signed the server certificate"
        case Int32(PW_RTLS_NAME_MISMATCH):
            let names = text(failure.names)
            message = "the certificate of \(server) is for \(names.isEmpty ? "other names" : names), not \(host): connect by a name it lists"
        case Int32(PW_RTLS_EXPIRED):
            message = "the certificate of \(server) is not valid now (\(detail)): renew it on the server, or check this machine's clock"
        case Int32(PW_RTLS_VERIFY_OTHER):
            message = "the certificate of \(server) was refused: \(detail)"
        case Int32(PW_RTLS_PROTOCOL):
            message = "the TLS handshake with \(server) failed: \(detail)\(hint(detail, tls: tls))"
        case Int32(PW_RTLS_IO):
            let notTLS = detail.contains("closed") || detail.contains("timeout")
            message = "the TLS handshake with \(server) failed: \(detail)\(notTLS ? " (is it the server's TLS port? a plain Redis port does not answer a TLS handshake)" : "")"
        default:
            message = "cannot start TLS with \(server)"
        }
        return RedisError("TLS: \(message)", isConnectionError: true)
    }

    /// What an OpenSSL reason (a failed handshake or a TLS alert after it) asks to change, or "".
    static func hint(_ reason: String, tls: RedisTLS) -> String {
        if reason.contains("wrong version number") || reason.contains("packet length too long") || reason.contains("record layer failure") {
            return " (the server does not speak TLS there: use redis:// or the server's tls-port)"
        }
        if reason.contains("certificate required") || (tls.certificateFile == nil && reason.contains("handshake failure")) {
            return ": the server requires a client certificate: set PUSHWORKER_REDIS_CERT_FILE and PUSHWORKER_REDIS_KEY_FILE"
        }
        if reason.contains("unknown ca") || reason.contains("bad certificate") || reason.contains("certificate unknown") {
            return ": the server refused the client certificate (PUSHWORKER_REDIS_CERT_FILE): it must be signed by a CA the server trusts (tls-ca-cert-file)"
        }
        return ""
    }

    /// A fixed-size C character array as text (up to its first NUL).
    static func text<T>(_ array: T) -> String {
        withUnsafeBytes(of: array) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}

/// The OpenSSL settings of one client, made once from a ``RedisTLS`` (the files read and checked
/// here, so a bad file fails when the client is made, not at the first command) and shared by
/// all of the client's connections. Immutable once made (OpenSSL makes sessions from it on any
/// thread), freed with the last connection that uses it.
final class RedisTLSContext: @unchecked Sendable {
    let tls: RedisTLS
    let config: OpaquePointer

    init(_ tls: RedisTLS) throws(RedisError) {
        var error = [CChar](repeating: 0, count: 512)
        let made = error.withUnsafeMutableBufferPointer { buffer in
            pw_rtls_config_new(tls.caFile, tls.certificateFile, tls.keyFile, buffer.baseAddress, buffer.count)
        }
        guard let made else {
            let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw RedisError("TLS: \(message)")
        }
        self.tls = tls
        config = made
    }

    deinit { pw_rtls_config_free(config) }
}
