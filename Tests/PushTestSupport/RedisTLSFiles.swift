import Foundation

/// Test certificates for Redis over TLS, made once per test process with the `openssl` CLI in a
/// temporary folder (EC P-256 keys, valid for 100 years):
///
/// - ``caFile``: the test CA, which signs the rest;
/// - ``serverCertificate`` / ``serverKey``: for `localhost` and `127.0.0.1` (every test server
///   and every cluster node and Sentinel presents it; nodes also use it as their client certificate);
/// - ``localhostOnlyCertificate`` / ``localhostOnlyKey``: for `localhost` only (a client that
///   connects to 127.0.0.1 must refuse it);
/// - ``ipCommonNameCertificate`` / ``ipCommonNameKey``: subject CN `127.0.0.1` and no
///   subjectAltName (the form some managed services issue for an instance reached by IP);
/// - ``clientCertificate`` / ``clientKey``: a client certificate for `tls-auth-clients yes`;
/// - ``otherCAFile``: a CA that signed none of them (a client trusting only it must refuse the servers).
public final class RedisTLSFiles: Sendable {
    public let folder: URL
    public let caFile: String
    public let serverCertificate: String
    public let serverKey: String
    public let localhostOnlyCertificate: String
    public let localhostOnlyKey: String
    public let ipCommonNameCertificate: String
    public let ipCommonNameKey: String
    public let clientCertificate: String
    public let clientKey: String
    public let otherCAFile: String

    private static let made = Result { try RedisTLSFiles() }

    /// The process's certificates (made at the first call).
    public static func shared() throws -> RedisTLSFiles { try made.get() }

    private init() throws {
        let folder = try TemporaryFolder.make(prefix: "redis-tls")
        self.folder = folder
        func path(_ name: String) -> String { folder.appendingPathComponent(name).path }
        caFile = path("ca.pem")
        otherCAFile = path("other-ca.pem")
        (serverCertificate, serverKey) = (path("server.pem"), path("server.key"))
        (localhostOnlyCertificate, localhostOnlyKey) = (path("localhost.pem"), path("localhost.key"))
        (ipCommonNameCertificate, ipCommonNameKey) = (path("ip-cn.pem"), path("ip-cn.key"))
        (clientCertificate, clientKey) = (path("client.pem"), path("client.key"))
        try Self.makeCA(certificate: caFile, key: path("ca.key"), name: "pushworker test CA")
        try Self.makeCA(certificate: otherCAFile, key: path("other-ca.key"), name: "pushworker other CA")
        try Self.sign(certificate: serverCertificate, key: serverKey, name: "redis", alternativeNames: "DNS:localhost,IP:127.0.0.1",
                      ca: caFile, caKey: path("ca.key"), folder: folder)
        try Self.sign(certificate: localhostOnlyCertificate, key: localhostOnlyKey, name: "localhost", alternativeNames: "DNS:localhost",
                      ca: caFile, caKey: path("ca.key"), folder: folder)
        try Self.sign(certificate: ipCommonNameCertificate, key: ipCommonNameKey, name: "127.0.0.1", alternativeNames: nil,
                      ca: caFile, caKey: path("ca.key"), folder: folder)
        try Self.sign(certificate: clientCertificate, key: clientKey, name: "pushworker", alternativeNames: nil,
                      ca: caFile, caKey: path("ca.key"), folder: folder)
    }

    private static func openssl(_ arguments: [String]) throws {
        let result = try runCommand("/usr/bin/openssl", arguments, timeout: 30)
        guard result.status == 0 else { throw TestSupportError("openssl \(arguments.prefix(2).joined(separator: " ")) failed: \(result.stderr)") }
    }

    private static func makeCA(certificate: String, key: String, name: String) throws {
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", certificate,
                     "-days", "36500", "-subj", "/CN=\(name)"])
    }

    private static func sign(certificate: String, key: String, name: String, alternativeNames: String?, ca: String, caKey: String,
                             folder: URL) throws {
        let request = certificate + ".csr"
        try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", request, "-subj", "/CN=\(name)"])
        var arguments = ["x509", "-req", "-in", request, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-out", certificate, "-days", "36500"]
        if let alternativeNames {
            let extensions = certificate + ".ext"
            try "subjectAltName=\(alternativeNames)\n".write(toFile: extensions, atomically: true, encoding: .utf8)
            arguments += ["-extfile", extensions]
        }
        try openssl(arguments)
    }

    /// `redis-server` options for a TLS-only server (`--port 0`) on `port` presenting
    /// `certificate` (default: ``serverCertificate``); `requireClientCertificate` is `tls-auth-clients`.
    public func serverArguments(port: UInt16, certificate: String? = nil, key: String? = nil, requireClientCertificate: Bool = false) -> [String] {
        ["--port", "0", "--tls-port", "\(port)", "--tls-cert-file", certificate ?? serverCertificate, "--tls-key-file", key ?? serverKey,
         "--tls-ca-cert-file", caFile, "--tls-auth-clients", requireClientCertificate ? "yes" : "no"]
    }

    /// `redis-cli` options that reach a TLS server of these files.
    public var cliArguments: [String] { ["--tls", "--cacert", caFile, "--cert", clientCertificate, "--key", clientKey] }
}
