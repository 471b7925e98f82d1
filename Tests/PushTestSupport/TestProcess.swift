import Foundation

/// A child process a test started; it is stopped (SIGTERM, then SIGKILL) when the test drops it.
///
/// Thread safety: `process` is only mutated under `lock`; `Process` itself is thread-safe for the
/// calls used here (terminate, isRunning, processIdentifier).
public final class TestProcess: @unchecked Sendable {
    public let process: Process
    public let stdoutURL: URL
    public let stderrURL: URL
    private let lock = NSLock()

    /// Starts `executable` with `arguments`; stdout and stderr go to files in a temporary folder.
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], directory: URL? = nil) throws {
        let folder = try TemporaryFolder.make(prefix: "proc")
        stdoutURL = folder.appendingPathComponent("stdout")
        stderrURL = folder.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        if let directory { process.currentDirectoryURL = directory }
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        process.standardInput = FileHandle.nullDevice
        try withUnblockedSignals { try process.run() }
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    /// What the process wrote to stdout so far.
    public func stdout() -> String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    /// What the process wrote to stderr so far.
    public func stderr() -> String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// Sends `signal` to the process.
    public func signal(_ signal: Int32) {
        lock.lock(); defer { lock.unlock() }
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Waits up to `timeout` seconds for the process to exit; returns its status, or nil if still running.
    @discardableResult
    public func wait(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        return process.isRunning ? nil : process.terminationStatus
    }

    /// SIGTERM, then SIGKILL after `grace` seconds.
    public func stop(grace: Double = 5) {
        signal(SIGTERM)
        if wait(timeout: grace) == nil {
            signal(SIGKILL)
            wait(timeout: 5)
        }
    }

    deinit { stop(grace: 2) }
}

/// Runs a command to completion and returns (status, stdout, stderr).
public func runCommand(_ executable: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:], timeout: Double = 60) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    var env = ProcessInfo.processInfo.environment
    for (key, value) in environment { env[key] = value }
    process.environment = env
    let folder = try TemporaryFolder.make(prefix: "cmd")
    let outURL = folder.appendingPathComponent("out"), errURL = folder.appendingPathComponent("err")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    process.standardOutput = try FileHandle(forWritingTo: outURL)
    process.standardError = try FileHandle(forWritingTo: errURL)
    let inPipe = Pipe()
    process.standardInput = stdin == nil ? FileHandle.nullDevice : inPipe
    try withUnblockedSignals { try process.run() }
    if let stdin {
        inPipe.fileHandleForWriting.write(stdin)
        try? inPipe.fileHandleForWriting.close()
    }
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(5_000) }
    if process.isRunning { process.terminate(); process.waitUntilExit() }
    let out = (try? String(contentsOf: outURL, encoding: .utf8)) ?? ""
    let err = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
    try? FileManager.default.removeItem(at: folder)
    return (process.terminationStatus, out, err)
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

    /// Path of the `pushworker` executable built beside the tests.
    public static var pushworker: String { directory.appendingPathComponent("pushworker").path }

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

/// Runs `body` (a spawn) with every signal unblocked on the calling thread, so the child does
/// not inherit the test runner's blocked mask (with SIGTERM blocked, a graceful stop could never
/// be tested and every stop would wait for the SIGKILL fallback).
public func withUnblockedSignals<T>(_ body: () throws -> T) rethrows -> T {
    var all = sigset_t()
    var previous = sigset_t()
    sigfillset(&all)
    pthread_sigmask(SIG_UNBLOCK, &all, &previous)
    defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
    return try body()
}
