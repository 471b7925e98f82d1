import Foundation
import PushCLI
import PushCore
import PushRuntime

/// What the production commands that read jobs share (`render`, `send`, `topics`).
extension CommandSupport {
    /// An exit status as an error, for `Result`.
    struct Exit: Error { let code: Int32 }

    /// Reads one job from `path` (or standard input, with a notice on a terminal; `command`
    /// names the command in it): relative dates resolved, every problem
    /// and warning on stderr (`JobInputCheck`); on failure the error carries the exit status
    /// (66 unreadable, 65 invalid job, or a warning with `strict`).
    static func readJob(_ path: String?, command: String, strict: Bool = false, now: Date = Date()) -> Result<FanOutJob, Exit> {
        let bytes: [UInt8]
        do { bytes = try readInput(path, notice: stdinNotice(command: command, what: "the job")) } catch {
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
