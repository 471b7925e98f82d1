import Foundation

/// A real `redis-server` on a free loopback port in a temporary folder, stopped when dropped.
public final class RedisServer: Sendable {
    public let port: UInt16
    public let process: TestProcess
    public var url: String { "redis://127.0.0.1:\(port)" }

    /// - Parameter password: when set, the server requires it (`--requirepass`).
    public init(password: String? = nil) throws {
        let folder = try TemporaryFolder.make(prefix: "redis")
        let port = freeLoopbackPort()
        self.port = port
        process = try TestProcess("/usr/bin/redis-server", [
            "--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", folder.path, "--daemonize", "no", "--protected-mode", "yes",
        ] + (password.map { ["--requirepass", $0] } ?? []))
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
