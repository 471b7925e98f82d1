import Foundation
import PushCore
import PushTestSupport
import Testing

/// Usage errors of both executables: two lines (the problem, naming what was probably meant,
/// and where the usage is), exit 64 (docs/reference/cli.md, docs/reference/exit-codes.md).
@Suite("Usage errors: did you mean, one-line hint, exit 64")
struct UsageErrorTests {
    @Test("a mistyped command, option or subcommand names the closest one; not the whole usage", arguments: [
        ([BuiltProducts.pushworker, "rendr"], "pushworker: unknown command 'rendr'\ndid you mean 'render'?\nrun 'pushworker --help' for usage\n"),
        ([BuiltProducts.pushworker, "frobnicate"], "pushworker: unknown command 'frobnicate'\nrun 'pushworker --help' for usage\n"),
        ([BuiltProducts.pushworker, "sandbx"], "pushworker: unknown command 'sandbx'\ndid you mean 'pushworker-dev sandbox'?\nrun 'pushworker --help' for usage\n"),
        ([BuiltProducts.pushworker, "render", "--strcit", "job.json"],
         "pushworker render: unknown option --strcit (did you mean --strict?)\nrun 'pushworker render --help' for usage\n"),
        ([BuiltProducts.pushworker, "config", "chek"],
         "pushworker config: unknown subcommand 'chek' (did you mean 'check'?)\nrun 'pushworker config --help' for usage\n"),
        ([BuiltProducts.pushworker, "topics", "aply"],
         "pushworker topics: unknown subcommand 'aply' (did you mean 'apply'?)\nrun 'pushworker topics --help' for usage\n"),
        ([BuiltProducts.pushworker, "inspect", "reslts"],
         "pushworker inspect: unknown subcommand 'reslts' (did you mean 'results'?)\nrun 'pushworker inspect --help' for usage\n"),
        ([BuiltProducts.pushworker, "msgid", "verfy", "x"],
         "pushworker msgid: unknown subcommand 'verfy' (did you mean 'verify'?)\nrun 'pushworker msgid --help' for usage\n"),
        ([BuiltProducts.pushworkerDev, "benhc"], "pushworker-dev: unknown command 'benhc'\ndid you mean 'bench'?\nrun 'pushworker-dev --help' for usage\n"),
        ([BuiltProducts.pushworkerDev, "bench", "htp"],
         "pushworker-dev bench: unknown benchmark 'htp' (did you mean 'http'?)\nrun 'pushworker-dev bench --help' for usage\n"),
        ([BuiltProducts.pushworkerDev, "sandbox", "--lisen", "127.0.0.1:0"],
         "pushworker-dev sandbox: unknown option --lisen (did you mean --listen?)\nrun 'pushworker-dev sandbox --help' for usage\n"),
    ])
    func suggestions(command: [String], stderr: String) throws {
        let result = try runCommand(command[0], Array(command.dropFirst()), environment: CLITest.environment([:]), timeout: 30)
        #expect(result.status == ExitCode.usage)
        #expect(result.stderr == stderr)
        #expect(result.stdout.isEmpty)
    }

    @Test("a PUSHWORKER_* variable that is not a setting names the one probably meant (config check, exit 78)")
    func variable() throws {
        let result = try runCommand(BuiltProducts.pushworker, ["config", "check"], environment: CLITest.environment([
            "PUSHWORKER_REDIS_UR": "redis://127.0.0.1:6379", "PUSHWORKER_KAFKA_BROKERS": "127.0.0.1:9092", "PUSHWORKER_MSGID_KEYS": CLITest.keys,
            "PUSHWORKER_REDIS_URL": "redis://127.0.0.1:6379",
        ]))
        #expect(result.status == ExitCode.config)
        #expect(result.stderr == "configuration problems:\n- PUSHWORKER_REDIS_UR is not a pushworker setting (did you mean PUSHWORKER_REDIS_URL?)\n",
                "\(result.stderr)")
    }

    @Test("a bad PUSHWORKER_CAPS is named with its item (config check, exit 78)")
    func badCaps() throws {
        let result = try runCommand(BuiltProducts.pushworker, ["config", "check"], environment: CLITest.environment([
            "PUSHWORKER_KAFKA_BROKERS": "127.0.0.1:9092", "PUSHWORKER_MSGID_KEYS": CLITest.keys, "PUSHWORKER_REDIS_URL": "redis://127.0.0.1:6379",
            "PUSHWORKER_CAPS": "marketing=3/1d,marketing=many/1h",
        ]))
        #expect(result.status == ExitCode.config)
        #expect(result.stderr.contains("- PUSHWORKER_CAPS: 'marketing=many/1h': the count must be a whole number from 1 to 1000000"), "\(result.stderr)")
    }

    /// Runs `pushworker ARGUMENTS` with a terminal on its standard input (util-linux `script`),
    /// which gets end-of-file at once; what the terminal showed (stdout and stderr).
    static func onTerminal(_ arguments: String, environment: [String: String] = [:]) throws -> String {
        try runCommand("/usr/bin/script", ["-qec", "\(BuiltProducts.pushworker) \(arguments)", "/dev/null"],
                       environment: CLITest.environment(environment), timeout: 30).stdout
    }

    @Test("render/send/enqueue with no FILE and a terminal on stdin say what they wait for; a pipe or `-` does not",
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")))
    func stdinNotice() throws {
        let configured = ["PUSHWORKER_KAFKA_BROKERS": "127.0.0.1:1", "PUSHWORKER_MSGID_KEYS": CLITest.keys]
        for (command, what, then) in [("render", "the job", "invalid JSON"), ("send", "the job", "invalid JSON"), ("enqueue", "jobs", "no job in the input")] {
            let output = try Self.onTerminal(command, environment: configured)
            #expect(output.hasPrefix("pushworker \(command): reading \(what) from standard input (Ctrl-D to end; pass a FILE or - to silence this)"),
                    "\(command): \(output)")
            #expect(output.contains(then), "then it reads: end of input at once is an empty input: \(output)")
        }
        let dash = try Self.onTerminal("render -")
        #expect(!dash.contains("reading the job") && dash.contains("invalid JSON"), "\(dash)")
        let piped = try runCommand(BuiltProducts.pushworker, ["render"], stdin: Data("{}".utf8), environment: CLITest.environment([:]))
        #expect(piped.status == ExitCode.dataError)
        #expect(!piped.stderr.contains("reading the job"), "\(piped.stderr)")
    }
}
