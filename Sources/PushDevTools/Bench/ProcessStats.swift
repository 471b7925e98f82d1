import Foundation
#if canImport(Glibc)
import Glibc
import PushWorker
import PushEvents
import PushCore
import PushKafkaMock
import PushSandbox
#endif

/// CPU time and memory of processes, read from the process's own kernel accounting
/// (`/proc/<pid>/stat`, `/proc/<pid>/status`), or from `wait4`'s rusage for a child we reap.
enum ProcessStats {
    /// Clock ticks per second of `/proc/<pid>/stat` times (usually 100, i.e. 10 ms resolution).
    static let ticksPerSecond: Double = {
        let value = sysconf(Int32(_SC_CLK_TCK))
        return value > 0 ? Double(value) : 100
    }()

    /// User + system CPU seconds used so far by `pid` (all its threads, live or finished), or nil.
    static func cpuSeconds(pid: Int32) -> Double? {
        // utime and stime are fields 14 and 15 (1-based).
        guard let fields = statFields(pid: pid), fields.count > 13,
              let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / ticksPerSecond
    }

    /// The fields of `/proc/<pid>/stat` after "(comm)": index 0 is field 3 (state), index N is
    /// field N + 3 (1-based, proc(5)). Nil if the process is gone.
    static func statFields(pid: Int32) -> [Substring]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }

    /// CPU seconds per thread of `pid` (`/proc/<pid>/task/<tid>/stat`, live threads only),
    /// labelled `comm` (`main` for the thread whose tid is the pid), largest first.
    static func threadCPU(pid: Int32) -> [(name: String, tid: Int32, cpuSeconds: Double)] {
        guard let tids = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return [] }
        var threads: [(name: String, tid: Int32, cpuSeconds: Double)] = []
        for entry in tids {
            guard let tid = Int32(entry),
                  let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/stat", encoding: .utf8),
                  let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")") else { continue }
            let comm = String(text[text.index(after: open)..<close])
            let fields = text[text.index(after: close)...].split(separator: " ")
            guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { continue }
            threads.append((tid == pid ? "main (\(comm))" : comm, tid, (user + system) / ticksPerSecond))
        }
        return threads.sorted { $0.cpuSeconds > $1.cpuSeconds }
    }

    /// A `/proc/<pid>/status` value in bytes (`VmHWM` = peak RSS, `VmRSS`), or nil.
    static func memoryBytes(pid: Int32, field: String = "VmHWM") -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count >= 2, let kilobytes = Int(parts[1]) else { return nil }
            return kilobytes * 1024
        }
        return nil
    }

    /// CPU seconds of this process so far (`getrusage(RUSAGE_SELF)`).
    static func selfCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    static func seconds(_ value: timeval) -> Double { Double(value.tv_sec) + Double(value.tv_usec) / 1e6 }

    /// `/proc/loadavg`'s first three numbers.
    static func loadAverage() -> [Double] {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).compactMap { Double($0) }
    }

    static func cpuModel() -> String {
        let text = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix("model name") {
            return line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "?"
        }
        return "?"
    }

    /// What `runMeasured` reports about a finished child.
    struct Finished {
        var status: Int32
        var cpuSeconds: Double
        var maxRSSBytes: Int
        var wallSeconds: Double
    }

    /// Runs `arguments[0]` with `arguments` (PATH is searched), stdout and stderr to `output`,
    /// waits for it and returns its own CPU time from `wait4`'s rusage.
    static func runMeasured(_ arguments: [String], output: String) throws -> Finished {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let started = Date()
        let spawned = posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ)
        guard spawned == 0 else { throw DemoError("cannot start \(arguments[0]): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Finished(status: exit, cpuSeconds: seconds(usage.ru_utime) + seconds(usage.ru_stime),
                        maxRSSBytes: usage.ru_maxrss * 1024, wallSeconds: Date().timeIntervalSince(started))
    }
}
