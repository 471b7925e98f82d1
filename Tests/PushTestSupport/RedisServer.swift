import Foundation

/// A real `redis-server` on a free loopback port in a temporary folder, stopped when dropped.
public final class RedisServer: Sendable {
    /// How a TLS-only test server presents itself (``RedisTLSFiles``).
    public struct TLS: Sendable {
        public var files: RedisTLSFiles
        /// The certificate and key it presents; nil: the files' server certificate (`localhost`, `127.0.0.1`).
        public var certificate: (String, String)?
        /// `tls-auth-clients yes`: a client without a certificate the test CA signed is refused.
        public var requireClientCertificate: Bool

        public init(files: RedisTLSFiles, certificate: (String, String)? = nil, requireClientCertificate: Bool = false) {
            self.files = files
            self.certificate = certificate
            self.requireClientCertificate = requireClientCertificate
        }
    }

    public let port: UInt16
    public let process: TestProcess
    /// Whether it speaks only TLS (`--port 0 --tls-port`).
    public let isTLS: Bool
    /// `redis://127.0.0.1:port`, or `rediss://…` for a TLS server.
    public var url: String { "\(isTLS ? "rediss" : "redis")://127.0.0.1:\(port)" }

    /// - Parameter password: when set, the server requires it (`--requirepass`).
    /// - Parameter tls: when set, the server speaks only TLS on its port.
    /// - Parameter extra: more `redis-server` options (e.g. `--user …` ACL rules).
    public init(password: String? = nil, tls: TLS? = nil, extra: [String] = []) throws {
        let folder = try TemporaryFolder.make(prefix: "redis")
        let port = freeLoopbackPort()
        self.port = port
        isTLS = tls != nil
        var arguments = ["--port", "\(port)"]
        if let tls {
            arguments = tls.files.serverArguments(port: port, certificate: tls.certificate?.0, key: tls.certificate?.1,
                                                  requireClientCertificate: tls.requireClientCertificate)
        }
        process = try TestProcess("/usr/bin/redis-server", arguments + [
            "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", folder.path, "--daemonize", "no", "--protected-mode", "yes",
        ] + (password.map { ["--requirepass", $0] } ?? []) + extra)
        guard eventually(timeout: 10, { isListening(port: port) }) else {
            throw TestSupportError("redis-server did not start: \(process.stderr())\(process.stdout())")
        }
    }

    /// Stops the server now (SIGTERM, then SIGKILL): to test what happens when Redis goes away.
    public func stop() { process.stop(grace: 2) }
}

/// A failure in test set-up.
public struct TestSupportError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
