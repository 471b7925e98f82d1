import Foundation
import PushCore
import PushRuntime

/// The plumbing every subcommand of `pushworker` and `pushworker-dev` shares: reading input,
/// writing output, parsing arguments (`--help`, usage errors with exit 64), the configuration.
package enum CommandSupport {
    /// Reads `path` (or standard input for `-`/nil) fully. Bounded: 64 MiB.
    package static func readInput(_ path: String?) throws(UsageError) -> [UInt8] {
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
            printError("error: \(error)\n\n\(usage)")
            exitCode = ExitCode.usage
            return nil
        }
    }

    /// The configuration for `purpose`; nil after printing every problem on stderr (the
    /// command then exits 78).
    package static func configuration(_ purpose: Configuration.Purpose) -> Configuration? {
        do { return try Configuration.load(purpose: purpose) } catch {
            printError("configuration problems:\n\(error)")
            return nil
        }
    }

    /// What `read` makes of the parsed arguments; nil after printing its usage error and
    /// `usage` (the command then exits 64).
    package static func usageChecked<T>(_ usage: String, _ read: () throws -> T) -> T? {
        do { return try read() } catch {
            printError("error: \(error)\n\n\(usage)")
            return nil
        }
    }
}
