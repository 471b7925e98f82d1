import Foundation
import PushProcess

/// A child process a test started; it is stopped (SIGTERM, then SIGKILL) when the test drops it.
/// Started with posix_spawn (PushProcess), never Foundation's `Process` (its `run()` crashes the
/// test runner now and then on Linux: see CPushSpawn/pushspawn.h).
public final class TestProcess: Sendable {
    public let process: Subprocess
    public let stdoutURL: URL
    public let stderrURL: URL

    /// Starts `executable` with `arguments`; stdout and stderr go to files in a temporary folder.
    /// The child gets every signal unblocked (the test runner blocks some; with SIGTERM blocked
    /// a graceful stop could never be tested).
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], directory: URL? = nil) throws {
        let folder = try TemporaryFolder.make(prefix: "proc")
        stdoutURL = folder.appendingPathComponent("stdout")
        stderrURL = folder.appendingPathComponent("stderr")
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process = try Subprocess(executable, arguments, environment: env, directory: directory?.path,
                                 stdin: .null, stdout: .file(stdoutURL.path), stderr: .file(stderrURL.path))
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    /// What the process wrote to stdout so far.
    public func stdout() -> String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    /// What the process wrote to stderr so far.
    public func stderr() -> String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// Sends `signal` to the process.
    public func signal(_ signal: Int32) { process.signal(signal) }

    /// Waits up to `timeout` seconds for the process to exit; returns its status, or nil if still running.
    @discardableResult
    public func wait(timeout: Double) -> Int32? { process.wait(timeout: timeout)?.status }

    /// SIGTERM, then SIGKILL after `grace` seconds.
    public func stop(grace: Double = 5) { process.stop(grace: grace) }

    deinit { stop(grace: 2) }
}

/// Runs a command to completion and returns (status, stdout, stderr).
public func runCommand(_ executable: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:], timeout: Double = 60) throws -> (status: Int32, stdout: String, stderr: String) {
    var env = ProcessInfo.processInfo.environment
    for (key, value) in environment { env[key] = value }
    let folder = try TemporaryFolder.make(prefix: "cmd")
    defer { try? FileManager.default.removeItem(at: folder) }
    let outURL = folder.appendingPathComponent("out"), errURL = folder.appendingPathComponent("err")
    var input = Subprocess.Stream.null
    if let stdin {
        let inURL = folder.appendingPathComponent("in")
        try stdin.write(to: inURL)
        input = .file(inURL.path)
    }
    let process = try Subprocess(executable, arguments, environment: env, stdin: input, stdout: .file(outURL.path), stderr: .file(errURL.path))
    let ended = process.wait(timeout: timeout) ?? process.stop(grace: 1)
    let out = (try? String(contentsOf: outURL, encoding: .utf8)) ?? ""
    let err = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
    return (ended.status, out, err)
}

/// Temporary folders under the system temp dir.
public enum TemporaryFolder {
    public static func make(prefix: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("pushworker-\(prefix)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// Locations of built products.
public enum BuiltProducts {
    /// The folder holding the test bundle, which is also where SwiftPM puts executables.
    public static var directory: URL {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // The test runner may live inside `<name>.xctest/` on some layouts.
        if url.lastPathComponent.hasSuffix(".xctest") { url.deleteLastPathComponent() }
        return url
    }

    /// Path of the production `pushworker` executable built beside the tests.
    public static var pushworker: String { directory.appendingPathComponent("pushworker").path }

    /// Path of the development `pushworker-dev` executable (sandbox, dev-broker, demo, bench,
    /// chaos) built beside the tests.
    public static var pushworkerDev: String { directory.appendingPathComponent("pushworker-dev").path }

    /// Path of the libcurl reference program (Sources/CurlFloor) built beside the tests.
    public static var curlFloor: String { directory.appendingPathComponent("pushworker-curl-floor").path }
}

/// Polls `condition` every 20 ms until it holds or `timeout` seconds pass.
public func eventually(timeout: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    repeat {
        if try condition() { return true }
        usleep(20_000)
    } while Date() < deadline
    return try condition()
}

