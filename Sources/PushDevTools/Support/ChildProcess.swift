import Foundation
import PushWorker
import PushEvents
import PushCore
import PushKafkaMock
import PushSandbox
import PushProcess

/// A child process the CLI started (demo, bench, chaos): stopped by PID when dropped. Started
/// with posix_spawn (PushProcess), never Foundation's `Process` (see CPushSpawn/pushspawn.h).
package final class ChildProcess: Sendable {
    package let process: Subprocess
    let logURL: URL

    /// stdout and stderr go to `log` (truncated first).
    package init(_ executable: String, _ arguments: [String], log: URL, environment: [String: String]? = nil) throws {
        logURL = log
        process = try Subprocess(executable, arguments, environment: environment, stdin: .null,
                                 stdout: .file(log.path), stderr: .file(log.path, append: true))
    }

    package var isRunning: Bool { process.isRunning }

    package func log() -> String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    /// SIGTERM, then SIGKILL after `grace` seconds; nothing if it already ended.
    package func stop(grace: Double = 5) { process.stop(grace: grace) }

    deinit { stop(grace: 2) }

    /// The path of this executable, `pushworker-dev` (to start `pushworker-dev sandbox` and friends).
    package static var selfPath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// The production `pushworker` in the folder of this executable (to start `pushworker run`
    /// and `pushworker events`): both are products of this package, built side by side.
    package static var workerPath: String { sibling("pushworker", of: selfPath) }

    /// `name` in the folder of `executable`.
    package static func sibling(_ name: String, of executable: String) -> String {
        URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent(name).path
    }

    /// A free TCP port on 127.0.0.1.
    package static func freePort() -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Waits until `condition` holds or `timeout` passes.
    package static func waitFor(timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }
}

/// A throwaway `redis-server` on a free loopback port (demo and bench); with `tls`, it speaks
/// TLS there, presenting a certificate of a CA made for it (``tls``'s `caFile`), and with
/// `plainPortToo` also plain TCP on a second port (``plainURL``: TLS against plain on one server).
package final class LocalRedis: Sendable {
    let port: UInt16
    package let child: ChildProcess
    /// The CA and certificate of a TLS server, nil for a plain one.
    package let tls: LocalTLSFiles?
    /// The plain port of a TLS server started with `plainPortToo`.
    let plainPort: UInt16?
    /// `redis://127.0.0.1:port`, or `rediss://…` for a TLS server.
    package var url: String { "\(tls == nil ? "redis" : "rediss")://127.0.0.1:\(port)" }
    /// `redis://127.0.0.1:<plain port>` of a TLS server started with `plainPortToo`.
    package var plainURL: String? { plainPort.map { "redis://127.0.0.1:\($0)" } }

    package init(folder: URL, tls: Bool = false, plainPortToo: Bool = false) throws {
        let port = ChildProcess.freePort()
        self.port = port
        let files = tls ? try LocalTLSFiles(folder: folder) : nil
        self.tls = files
        var plainPort: UInt16?
        if tls && plainPortToo {
            repeat { plainPort = ChildProcess.freePort() } while plainPort == port
        }
        self.plainPort = plainPort
        let executable = ["/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"]
            .first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/bin/redis-server"
        child = try ChildProcess(executable, (files?.serverArguments(port: port, plainPort: plainPort) ?? ["--port", "\(port)"]) + [
            "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", folder.path, "--daemonize", "no",
        ], log: folder.appendingPathComponent("redis.log"))
        guard ChildProcess.waitFor(timeout: 10, { LocalRedis.answers(port: port) }) else {
            throw DemoError("redis-server did not start: \(child.log().suffix(500))")
        }
    }

    package static func answers(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}

struct DemoError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
