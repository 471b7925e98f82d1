import Foundation
import PushTestSupport
@testable import PushRedis

/// Starts a `redis-server` on a given loopback port (to restart one "on the same port").
func startRedis(port: UInt16) throws -> TestProcess {
    let folder = try TemporaryFolder.make(prefix: "redis-restart")
    let process = try TestProcess("/usr/bin/redis-server", [
        "--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
        "--dir", folder.path, "--daemonize", "no",
    ])
    guard eventually(timeout: 10, { isListening(port: port) }) else {
        throw TestSupportError("redis-server did not start on \(port): \(process.stderr())")
    }
    return process
}

/// Unix time now, in ms.
func nowMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

extension RedisClient {
    /// One command; throws if Redis answered with an error.
    @discardableResult
    func command(_ arguments: RedisArgument...) throws -> RedisReply {
        let reply = try pipeline([arguments])[0]
        if let message = reply.errorMessage { throw RedisError(message) }
        return reply
    }
}

/// Kills a test process at once. (Children of the test runner inherit a signal mask that blocks
/// SIGTERM, so `TestProcess.stop()` only works after its SIGKILL grace.)
func crash(_ process: TestProcess) {
    process.signal(SIGKILL)
    process.wait(timeout: 5)
}
