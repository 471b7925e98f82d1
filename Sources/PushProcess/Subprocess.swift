import CPushSpawn
import Foundation
import Synchronization

/// A child process started with posix_spawn(3) (the CPushSpawn target), for the development
/// tools and the tests: demo, bench, chaos, redis-server, the sandbox, curl.
///
/// Why not Foundation's `Process`: its `run()` on Linux over-reads glibc's readdir buffer while
/// it scans /proc/self/fd and crashes the parent now and then (swift-corelibs-foundation PR
/// #5472; here about one full test run in five with Swift 6.3.1). See CPushSpawn/pushspawn.h.
///
/// The child gets the given standard streams (`/dev/null` by default), no other descriptor of
/// the parent, every signal unblocked at its default action, and a process group of its own
/// (it is stopped by pid, never by a ^C meant for the parent). It is reaped by whoever asks
/// first (`isRunning`, `wait`): the status is kept.
///
/// Thread safety: the reaped status is a Mutex; the rest is immutable.
public final class Subprocess: Sendable {
    /// Where a standard stream of the child goes.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// The parent's own stream (its stdin, stdout or stderr).
        case inherit
        /// A file, created if missing; output streams truncate it first unless `append`, and
        /// always write at its end (so stdout and stderr may name the same file).
        case file(String, append: Bool = false)
    }

    /// How a child ended.
    public enum Termination: Sendable, Equatable {
        case exited(Int32)
        case signaled(Int32)

        /// The exit status, or the signal number (as Foundation's `terminationStatus`).
        public var status: Int32 {
            switch self {
            case .exited(let code), .signaled(let code): code
            }
        }
    }

    public struct SpawnError: Error, CustomStringConvertible {
        public let description: String
    }

    public let processIdentifier: Int32
    private let reaped = Mutex<Termination?>(nil)

    /// Starts `executable` (a path) with `arguments`. `environment` nil: the parent's.
    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
                stdin: Stream = .null, stdout: Stream = .null, stderr: Stream = .null) throws(SpawnError) {
        var opened: [Int32] = []
        defer { for fd in opened { close(fd) } }
        func descriptor(_ stream: Stream, standard: Int32, input: Bool) throws(SpawnError) -> Int32 {
            switch stream {
            case .null: return -1
            case .inherit: return standard
            case .file(let path, let append):
                // Output is always written at the end, so stdout and stderr may share one file.
                let flags = input ? O_RDONLY : O_WRONLY | O_CREAT | O_APPEND | (append ? 0 : O_TRUNC)
                let fd = open(path, flags | O_CLOEXEC, 0o644)
                guard fd >= 0 else { throw SpawnError(description: "cannot open \(path): \(String(cString: strerror(errno)))") }
                opened.append(fd)
                return fd
            }
        }
        let inFD = try descriptor(stdin, standard: 0, input: true)
        let outFD = try descriptor(stdout, standard: 1, input: false)
        let errFD = try descriptor(stderr, standard: 2, input: false)
        let args = Self.pack([executable] + arguments)
        let env = environment.map { Self.pack($0.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }) }
        let pid: Int32
        if let env {
            pid = pw_spawn(executable, args, args.count, env, env.count, directory, inFD, outFD, errFD, 1)
        } else {
            pid = pw_spawn(executable, args, args.count, nil, 0, directory, inFD, outFD, errFD, 1)
        }
        guard pid > 0 else {
            throw SpawnError(description: "cannot start \(executable): \(String(cString: strerror(-pid)))")
        }
        processIdentifier = pid
    }

    /// Strings packed NUL-terminated one after the other (what pw_spawn takes).
    static func pack(_ strings: [String]) -> [CChar] {
        var bytes: [CChar] = []
        for string in strings {
            for byte in string.utf8 where byte != 0 { bytes.append(CChar(bitPattern: byte)) }
            bytes.append(0)
        }
        return bytes
    }

    /// How it ended, without waiting (nil while it runs).
    public var termination: Termination? { reap(block: false) }

    public var isRunning: Bool { reap(block: false) == nil }

    /// Waits for the end; returns how it ended.
    @discardableResult
    public func waitUntilExit() -> Termination {
        reap(block: true) ?? .signaled(0)
    }

    /// Waits up to `timeout` seconds; nil if it still runs.
    public func wait(timeout: Double) -> Termination? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let ended = reap(block: false) { return ended }
            usleep(5_000)
        }
        return reap(block: false)
    }

    /// Sends `signal` unless it was reaped already (its pid may belong to another process then).
    public func signal(_ signal: Int32) {
        reaped.withLock { ended in
            if ended == nil { _ = kill(processIdentifier, signal) }
        }
    }

    /// SIGTERM, up to `grace` seconds, then SIGKILL; returns how it ended.
    @discardableResult
    public func stop(grace: Double = 5) -> Termination {
        if let ended = reap(block: false) { return ended }
        signal(SIGTERM)
        if let ended = wait(timeout: grace) { return ended }
        signal(SIGKILL)
        return waitUntilExit()
    }

    private func reap(block: Bool) -> Termination? {
        // A blocking wait does not hold the lock (a signal must still be deliverable meanwhile):
        // it waits outside, then records what it got unless someone else recorded first.
        if let ended = reaped.withLock({ $0 }) { return ended }
        var code: Int32 = 0
        let result = pw_spawn_wait(processIdentifier, block ? 1 : 0, &code)
        let recorded: Termination? = reaped.withLock { ended in
            if let ended { return ended }
            switch result {
            case 1: ended = .exited(code)
            case 2: ended = .signaled(code)
            default: return nil
            }
            return ended
        }
        if recorded != nil || result >= 0 || !block { return recorded }
        // ECHILD: another thread of ours reaped it and is about to record the status.
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            if let ended = reaped.withLock({ $0 }) { return ended }
            usleep(1_000)
        }
        return reaped.withLock { ended in
            if ended == nil { ended = .signaled(0) } // reaped outside this type: nothing more to learn
            return ended
        }
    }

    /// Runs `executable` to completion and returns its exit status and standard output.
    public static func capture(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                               stderr: Stream = .null, timeout: Double = 120) throws(SpawnError) -> (status: Int32, stdout: String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushworker-capture-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let child = try Subprocess(executable, arguments, environment: environment, stdout: .file(path), stderr: stderr)
        let ended = child.wait(timeout: timeout) ?? child.stop(grace: 1)
        let output = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return (ended.status, output)
    }
}
