import PushCore
import PushRuntime
#if canImport(Glibc)
import Glibc
#endif

/// A program made of subcommands (`pushworker`, `pushworker-dev`): one dispatch, one `--help`
/// style and one set of exit statuses for both (docs/reference/cli.md, docs/reference/exit-codes.md).
package struct CommandLineTool: Sendable {
    /// A subcommand: takes the arguments after its name, returns the exit status.
    package typealias Command = @Sendable ([String]) -> Int32

    /// The other program of the pair and the commands it has: a user who types one of them here
    /// is told where it is (exit 64) instead of "unknown command".
    package struct Sibling: Sendable {
        package var name: String
        /// What the other program is, as the message says it ("the development executable").
        package var role: String
        package var commands: Set<String>

        package init(name: String, role: String, commands: Set<String>) {
            self.name = name; self.role = role; self.commands = commands
        }
    }

    package var name: String
    package var usage: String
    package var commands: [String: Command]
    /// What `--version` runs (nil: `--version` is an unknown command).
    package var version: Command?
    package var sibling: Sibling?

    package init(name: String, usage: String, commands: [String: Command], version: Command? = nil, sibling: Sibling? = nil) {
        self.name = name; self.usage = usage; self.commands = commands; self.version = version; self.sibling = sibling
    }

    /// Runs the command line `arguments` (without the program name); returns the exit status.
    package func main(_ arguments: [String]) -> Int32 {
        guard let command = arguments.first else {
            printError(usage)
            return ExitCode.usage
        }
        if ["--help", "-h", "help"].contains(command) {
            print(usage)
            return ExitCode.ok
        }
        let rest = Array(arguments.dropFirst())
        if command == "--version", let version { return version(rest) }
        if let main = commands[command] { return main(rest) }
        if let sibling, sibling.commands.contains(command) {
            printError("\(name): '\(command)' is a command of \(sibling.name), \(sibling.role): run `\(sibling.name) \(command)`")
            return ExitCode.usage
        }
        var lines = ["\(name): unknown command '\(command)'"]
        if let suggestion = suggestion(for: command) { lines.append("did you mean '\(suggestion)'?") }
        lines.append("run '\(name) --help' for usage")
        printError(lines.joined(separator: "\n"))
        return ExitCode.usage
    }

    /// The closest command to a mistyped one: this program's (`render`), the sibling's as its
    /// whole command line (`pushworker-dev sandbox`), or nil when nothing is close.
    package func suggestion(for command: String) -> String? {
        let own = Set(commands.keys).union(version == nil ? ["help"] : ["help", "--version"])
        let theirs = sibling?.commands ?? []
        guard let closest = Suggestion.closest(to: command, in: own.union(theirs)) else { return nil }
        if !own.contains(closest), let sibling { return "\(sibling.name) \(closest)" }
        return closest
    }

    /// The process's entry: SIGTERM must reach the graceful shutdown even when the parent (a
    /// test runner, some init systems) handed a blocked signal mask, and a dead peer must be an
    /// error, not SIGPIPE. Then ``main(_:)`` with the command line; exits with its status.
    package func run() -> Never {
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        pthread_sigmask(SIG_UNBLOCK, &allSignals, nil)
        signal(SIGPIPE, SIG_IGN)
        exit(main(Array(CommandLine.arguments.dropFirst())))
    }
}
