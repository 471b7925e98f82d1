import Foundation
import PushCore
import PushRuntime

/// The plumbing every subcommand of `pushworker` and `pushworker-dev` shares: reading input,
/// writing output, parsing arguments (`--help`, usage errors with exit 64), the configuration.
package enum CommandSupport {
    /// Reads `path` (or standard input for `-`/nil) fully. Bounded: 64 MiB.
    ///
    /// With no path at all and a terminal on standard input, `notice` goes to stderr first
    /// (``stdinNotice(command:what:)``): a user who typed `pushworker render` and nothing else
    /// learns why nothing happens. An explicit `-` (or a pipe, or a file) reads silently.
    package static func readInput(_ path: String?, notice: String? = nil) throws(UsageError) -> [UInt8] {
        let limit = 64 << 20
        if path == nil, let notice, isatty(0) != 0 { printError(notice) }
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

    /// `pushworker render: reading the job from standard input (Ctrl-D to end; pass a FILE or - to silence this)`.
    package static func stdinNotice(command: String, what: String) -> String {
        "\(command): reading \(what) from standard input (Ctrl-D to end; pass a FILE or - to silence this)"
    }

    /// Writes `text` to standard output as is.
    package static func writeOut(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeMutableBytes { write(1, $0.baseAddress, $0.count) }
            if written <= 0 { break }
            offset += written
        }
    }

    /// Writes `text` and a newline to standard output.
    package static func writeLine(_ text: String) { writeOut(text + "\n") }

    /// Parses arguments or prints usage: returns nil after handling `--help` or a usage error.
    package static func parse(_ arguments: [String], usage: String, values: Set<String> = [], flags: Set<String> = [],
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
            exitCode = usageError("\(error)", usage: usage)
            return nil
        }
    }

    /// The command a usage text is for: the first two words of its first line
    /// (`usage: pushworker render [FILE|-]` ⇒ `pushworker render`).
    package static func commandName(_ usage: String) -> String {
        let first = usage.split(separator: "\n").first.map(String.init) ?? ""
        let words = first.split(separator: " ").drop { $0 == "usage:" }
            .prefix { !$0.hasPrefix("[") && !$0.hasPrefix("-") && !$0.hasPrefix("<") && $0.lowercased() == $0 }
        return words.prefix(2).joined(separator: " ")
    }

    /// Prints a usage error as two lines on stderr — `pushworker render: <message>` and
    /// `run 'pushworker render --help' for usage` — and returns the usage status (64).
    package static func usageError(_ message: String, usage: String) -> Int32 {
        let name = commandName(usage)
        printError("\(name): \(message)\nrun '\(name) --help' for usage")
        return ExitCode.usage
    }

    /// `pushworker config: unknown subcommand 'chek' (did you mean 'check'?)` and the hint; 64.
    package static func unknownSubcommand(_ word: String, among known: [String], usage: String) -> Int32 {
        usageError(unknownSubcommandMessage(word, among: known), usage: usage)
    }

    /// `unknown subcommand 'chek' (did you mean 'check'?)`, or `… (expected check or print)`
    /// when nothing known is close.
    package static func unknownSubcommandMessage(_ word: String, among known: [String]) -> String {
        if let suggestion = Suggestion.closest(to: word, in: known) {
            return "unknown subcommand '\(word)' (did you mean '\(suggestion)'?)"
        }
        let list = known.count > 1 ? known.dropLast().joined(separator: ", ") + " or " + known[known.count - 1] : known.joined()
        return "unknown subcommand '\(word)' (expected \(list))"
    }

    /// The configuration for `purpose`; nil after printing every problem on stderr (the
    /// command then exits 78).
    package static func configuration(_ purpose: Configuration.Purpose) -> Configuration? {
        do { return try Configuration.load(purpose: purpose) } catch {
            printError("configuration problems:\n\(error)")
            return nil
        }
    }

    /// What `read` makes of the parsed arguments; nil after printing its usage error and the
    /// `--help` hint (the command then exits 64).
    package static func usageChecked<T>(_ usage: String, _ read: () throws -> T) -> T? {
        do { return try read() } catch {
            _ = usageError("\(error)", usage: usage)
            return nil
        }
    }
}
