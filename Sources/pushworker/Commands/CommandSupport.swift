import Foundation
import PushRuntime
import PushCore
import PushWorker
import PushEvents
import PushDevTools

/// Shared plumbing of the subcommands.
enum CommandSupport {
    /// Reads `path` (or standard input for `-`/nil) fully. Bounded: 64 MiB.
    static func readInput(_ path: String?) throws(UsageError) -> [UInt8] {
        let limit = 64 << 20
        if path == nil || path == "-" {
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                bytes.append(contentsOf: buffer[0..<count])
                if bytes.count > limit { throw UsageError("standard input is larger than 64 MiB") }
            }
            return bytes
        }
        guard let path, let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("cannot read \(path ?? "-")")
        }
        guard data.count <= limit else { throw UsageError("\(path) is larger than 64 MiB") }
        return [UInt8](data)
    }

    /// An exit status as an error, for `Result`.
    struct Exit: Error { let code: Int32 }

    /// Reads one job from `path` (or standard input): relative dates resolved, every problem
    /// and warning on stderr (`JobInputCheck`); on failure the error carries the exit status
    /// (66 unreadable, 65 invalid job, or a warning with `strict`).
    static func readJob(_ path: String?, strict: Bool = false, now: Date = Date()) -> Result<FanOutJob, Exit> {
        let bytes: [UInt8]
        do { bytes = try readInput(path) } catch {
            printError("error: \(error)")
            return .failure(Exit(code: ExitCode.noInput))
        }
        switch JobInputCheck.check(bytes, now: now, strict: strict) {
        case .success(let checked):
            for warning in checked.warnings { printError("warning: \(warning)") }
            return .success(checked.job)
        case .failure(let failure):
            printError(invalidJobHeader(failure))
            for line in failure.lines { printError("  \(line)") }
            return .failure(Exit(code: ExitCode.dataError))
        }
    }

    /// `invalid job: 3 problems` / `invalid job (--strict): 2 warnings`.
    static func invalidJobHeader(_ failure: JobInputCheck.Failure) -> String {
        func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
        var parts: [String] = []
        if failure.problemCount > 0 { parts.append(count(failure.problemCount, "problem")) }
        if failure.refusedWarnings > 0 { parts.append(count(failure.refusedWarnings, "warning") + " refused by --strict") }
        return "invalid job: " + parts.joined(separator: ", ")
    }

    /// Writes `text` to standard output as is.
    static func writeOut(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeMutableBytes { write(1, $0.baseAddress, $0.count) }
            if written <= 0 { break }
            offset += written
        }
    }

    static func writeLine(_ text: String) {
        var bytes = Array(text.utf8)
        bytes.append(0x0A)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
            if written <= 0 { break }
            offset += written
        }
    }

    /// Parses arguments or prints usage: returns nil after handling `--help` or a usage error.
    static func parse(_ arguments: [String], usage: String, values: Set<String> = [], flags: Set<String> = [],
                      exitCode: inout Int32) -> CommandArguments? {
        do {
            let parsed = try CommandArguments(arguments, valueOptions: values, flagOptions: flags)
            if parsed.wantsHelp {
                print(usage)
                exitCode = ExitCode.ok
                return nil
            }
            return parsed
        } catch {
            printError("error: \(error)\n\n\(usage)")
            exitCode = ExitCode.usage
            return nil
        }
    }

    /// The configuration for `purpose`; nil after printing every problem on stderr (the
    /// command then exits 78).
    static func configuration(_ purpose: Configuration.Purpose) -> Configuration? {
        do { return try Configuration.load(purpose: purpose) } catch {
            printError("configuration problems:\n\(error)")
            return nil
        }
    }

    /// What `read` makes of the parsed arguments; nil after printing its usage error and
    /// `usage` (the command then exits 64).
    static func usageChecked<T>(_ usage: String, _ read: () throws -> T) -> T? {
        do { return try read() } catch {
            printError("error: \(error)\n\n\(usage)")
            return nil
        }
    }

    /// The msgId keyring for dry runs: the configured one, or an ephemeral key (with a warning).
    static func keyring(_ configuration: Configuration?) -> MsgIDKeyring? {
        if let text = configuration?.msgIDKeys, !text.isEmpty, let keyring = try? MsgIDKeyring(parsing: text) {
            if keyring.signingKeyID == ephemeralKeyID {
                printError("warning: PUSHWORKER_MSGID_KEYS is not set: msgIds are signed with an ephemeral key")
            }
            return keyring
        }
        return try? MsgIDKeyring(parsing: ephemeralKeySpecification())
    }

    static let ephemeralKeyID = "ephemeral"

    /// `ephemeral:<32 random bytes, base64>`: a `PUSHWORKER_MSGID_KEYS` value for dry runs.
    static func ephemeralKeySpecification() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return "\(ephemeralKeyID):" + Data(bytes).base64EncodedString()
    }
}
