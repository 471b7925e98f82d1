import Foundation
import PushProcess
import Testing

@Suite("Subprocess: child processes over posix_spawn")
struct SubprocessTests {
    static func temporaryPath(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("pushprocess-\(UUID().uuidString.prefix(8))-\(name)").path
    }

    @Test("exit statuses and signals are reported as such")
    func statuses() throws {
        #expect(try Subprocess("/bin/sh", ["-c", "exit 0"]).waitUntilExit() == .exited(0))
        #expect(try Subprocess("/bin/sh", ["-c", "exit 7"]).waitUntilExit() == .exited(7))
        let sleeper = try Subprocess("/bin/sleep", ["30"])
        #expect(sleeper.isRunning)
        #expect(sleeper.wait(timeout: 0.1) == nil)
        #expect(sleeper.stop(grace: 5) == .signaled(SIGTERM))
        #expect(!sleeper.isRunning)
        #expect(sleeper.termination == .signaled(SIGTERM))
    }

    @Test("arguments, environment and directory reach the child; stdout and stderr can share one file")
    func argumentsEnvironmentDirectory() throws {
        let log = Self.temporaryPath("log")
        defer { try? FileManager.default.removeItem(atPath: log) }
        let child = try Subprocess("/bin/sh", ["-c", "echo \"$1|$PW_TEST|$(pwd)\"; echo to-stderr >&2; echo last", "sh", "an argument with spaces"],
                                   environment: ["PW_TEST": "é=1", "PATH": "/usr/bin:/bin"], directory: "/tmp",
                                   stdout: .file(log), stderr: .file(log, append: true))
        #expect(child.waitUntilExit() == .exited(0))
        let text = try String(contentsOfFile: log, encoding: .utf8)
        #expect(text == "an argument with spaces|é=1|/tmp\nto-stderr\nlast\n")
    }

    @Test("stdin from a file; capture returns the status and stdout")
    func stdinAndCapture() throws {
        let input = Self.temporaryPath("in")
        defer { try? FileManager.default.removeItem(atPath: input) }
        try Data("line one\nline two\n".utf8).write(to: URL(fileURLWithPath: input))
        let out = Self.temporaryPath("out")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let child = try Subprocess("/usr/bin/wc", ["-l"], stdin: .file(input), stdout: .file(out))
        #expect(child.waitUntilExit() == .exited(0))
        #expect(try String(contentsOfFile: out, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) == "2")
        let captured = try Subprocess.capture("/bin/sh", ["-c", "printf abc; exit 3"])
        #expect(captured.status == 3 && captured.stdout == "abc")
    }

    @Test("the child gets no other descriptor of the parent and every signal unblocked, even when the parent blocks them")
    func descriptorsAndSignals() throws {
        let extra = open("/dev/null", O_RDONLY) // not close-on-exec: Foundation's Process had to close such ones itself
        defer { close(extra) }
        var blocked = sigset_t(), previous = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        let captured = try Subprocess.capture("/bin/sh", ["-c", "ls /proc/self/fd | wc -l; grep SigBlk /proc/self/status"])
        let lines = captured.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        // 0, 1, 2 and the descriptor `ls` opens to read the directory.
        #expect(lines.first == "4", "\(captured.stdout)")
        #expect(lines.last?.hasSuffix("0000000000000000") == true, "\(captured.stdout)")
        let sleeper = try Subprocess("/bin/sleep", ["30"])
        sleeper.signal(SIGTERM)
        #expect(sleeper.wait(timeout: 10) == .signaled(SIGTERM))
    }

    @Test("a missing executable or an unopenable file is a SpawnError, not a crash")
    func failures() {
        #expect(throws: Subprocess.SpawnError.self) { try Subprocess("/nonexistent/program", []) }
        #expect(throws: Subprocess.SpawnError.self) { try Subprocess("/bin/true", [], stdout: .file("/nonexistent/dir/out")) }
        #expect(throws: Subprocess.SpawnError.self) { try Subprocess("/bin/true", [], stdin: .file("/nonexistent/in")) }
    }

    @Test("many concurrent spawns and waits from several threads all get their own status")
    func concurrent() async throws {
        let statuses = try await withThrowingTaskGroup(of: Int32.self) { group in
            for index in 0..<40 {
                group.addTask { try Subprocess("/bin/sh", ["-c", "exit \(index % 5)"]).waitUntilExit().status }
            }
            return try await group.reduce(into: [Int32]()) { $0.append($1) }
        }
        #expect(statuses.sorted() == (0..<40).map { Int32($0 % 5) }.sorted())
    }
}
