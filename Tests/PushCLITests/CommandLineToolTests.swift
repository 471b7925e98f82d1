import PushCLI
import PushCore
import Synchronization
import Testing

/// The dispatch both executables share (`pushworker`, `pushworker-dev`).
@Suite("Command line tool")
struct CommandLineToolTests {
    static let called = Mutex<[[String]]>([])

    static let tool = CommandLineTool(
        name: "prod", usage: "usage: prod <command>",
        commands: ["run": { arguments in called.withLock { $0.append(["run"] + arguments) }; return 3 }],
        version: { arguments in called.withLock { $0.append(["version"] + arguments) }; return 0 },
        sibling: .init(name: "prod-dev", role: "the development executable", commands: ["sandbox"]))

    @Test("a command gets the arguments after its name and its status is the program's")
    func dispatches() {
        Self.called.withLock { $0 = [] }
        #expect(Self.tool.main(["run", "--flag", "x"]) == 3)
        #expect(Self.tool.main(["--version", "--json"]) == 0)
        #expect(Self.called.withLock { $0 } == [["run", "--flag", "x"], ["version", "--json"]])
    }

    @Test("help is 0; no command, an unknown one or the sibling's is a usage error (64)", arguments: [
        ([], ExitCode.usage), (["--help"], ExitCode.ok), (["-h"], ExitCode.ok), (["help"], ExitCode.ok),
        (["nope"], ExitCode.usage), (["sandbox"], ExitCode.usage), (["sandbox", "--help"], ExitCode.usage),
    ])
    func statuses(arguments: [String], status: Int32) {
        #expect(Self.tool.main(arguments) == status)
    }

    @Test("a mistyped command names the closest: its own, or the sibling's as a whole command line", arguments: [
        ("rnu", "run"), ("rn", "run"), ("--verison", "--version"), ("hlep", "help"), ("sandbx", "prod-dev sandbox"),
        ("frobnicate", nil), ("", nil), (String(repeating: "x", count: 100_000), nil),
    ] as [(String, String?)])
    func suggestions(word: String, suggestion: String?) {
        #expect(Self.tool.suggestion(for: word) == suggestion)
    }

    @Test("a usage error names the command its usage text is for")
    func commandNames() {
        #expect(CommandSupport.commandName("usage: pushworker render [FILE|-] [--strict]\n\nDry run") == "pushworker render")
        #expect(CommandSupport.commandName("usage: pushworker inspect results [--job ID]") == "pushworker inspect")
        #expect(CommandSupport.commandName("usage: pushworker-dev bench e2e [options]") == "pushworker-dev bench")
        #expect(CommandSupport.commandName("usage: pushworker run\n") == "pushworker run")
        #expect(CommandSupport.commandName("usage: pushworker <command> [options]") == "pushworker")
        #expect(CommandSupport.unknownSubcommandMessage("chek", among: ["check", "print"]) == "unknown subcommand 'chek' (did you mean 'check'?)")
        #expect(CommandSupport.unknownSubcommandMessage("zzz", among: ["results", "dlq", "stats"])
                == "unknown subcommand 'zzz' (expected results, dlq or stats)")
    }
}
