import Foundation
import PushProcess

/// A CA and a server certificate for `localhost` and `127.0.0.1` made with the `openssl` CLI
/// in `folder` (EC P-256, valid for 100 years): what a TLS-only throwaway Redis presents
/// (``LocalRedis`` with `tls`) and what its clients trust (`PUSHWORKER_REDIS_CA_FILE`).
package struct LocalTLSFiles: Sendable {
    package let caFile: String
    package let certificate: String
    package let key: String

    package init(folder: URL) throws {
        func path(_ name: String) -> String { folder.appendingPathComponent(name).path }
        caFile = path("redis-ca.pem")
        certificate = path("redis-server.pem")
        key = path("redis-server.key")
        let caKey = path("redis-ca.key"), request = path("redis-server.csr"), extensions = path("redis-server.ext")
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: extensions, atomically: true, encoding: .utf8)
        for arguments in [
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", caKey, "-out", caFile,
             "-days", "36500", "-subj", "/CN=pushworker local Redis CA"],
            ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", request, "-subj", "/CN=redis"],
            ["x509", "-req", "-in", request, "-CA", caFile, "-CAkey", caKey, "-CAcreateserial", "-out", certificate, "-days", "36500",
             "-extfile", extensions],
        ] {
            let result = try Subprocess.capture("/usr/bin/openssl", arguments, timeout: 30)
            guard result.status == 0 else { throw DemoError("openssl \(arguments.prefix(2).joined(separator: " ")) failed (status \(result.status))") }
        }
    }

    /// `redis-server` options for a TLS server on `port` presenting the certificate (clients
    /// need none), plain TCP on `plainPort` as well when given.
    package func serverArguments(port: UInt16, plainPort: UInt16? = nil) -> [String] {
        ["--port", "\(plainPort ?? 0)", "--tls-port", "\(port)", "--tls-cert-file", certificate, "--tls-key-file", key, "--tls-ca-cert-file", caFile,
         "--tls-auth-clients", "no"]
    }
}
