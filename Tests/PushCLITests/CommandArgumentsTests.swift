import Testing
import PushCLI
import PushCore

@Suite("Command arguments")
struct CommandArgumentsTests {
    @Test("values, flags and positionals are separated")
    func parsesMixedArguments() throws {
        let arguments = try CommandArguments(["--batch", "10", "--verbose", "job.json", "--topic=a"],
                                             valueOptions: ["batch", "topic"], flagOptions: ["verbose"])
        #expect(arguments.value("batch") == "10")
        #expect(arguments.value("topic") == "a")
        #expect(arguments.flag("verbose"))
        #expect(arguments.positionals == ["job.json"])
        #expect(try arguments.integer("batch", default: 1, in: 1...1000) == 10)
    }

    @Test("unknown options and missing values are usage errors")
    func rejectsBadArguments() {
        #expect(throws: UsageError.self) { try CommandArguments(["--nope"]) }
        #expect(throws: UsageError.self) { try CommandArguments(["--batch"], valueOptions: ["batch"]) }
        #expect(throws: UsageError.self) { try CommandArguments(["-x"]) }
    }

    @Test("an unknown option names the closest known one when it looks like a typo", arguments: [
        (["--strcit"], "unknown option --strcit (did you mean --strict?)"),
        (["--strict=1", "--timout", "3"], "--strict takes no value"),
        (["--timout", "3"], "unknown option --timout (did you mean --timeout?)"),
        (["-strict"], "unknown option -strict (did you mean --strict?)"),
        (["--hepl"], "unknown option --hepl (did you mean --help?)"),
        (["--frobnicate"], "unknown option --frobnicate"),
        (["--"], nil), (["-", "--", "--strcit"], nil),
    ] as [([String], String?)])
    func suggestsOptions(arguments: [String], message: String?) {
        do {
            _ = try CommandArguments(arguments, valueOptions: ["timeout"], flagOptions: ["strict"])
            #expect(message == nil)
        } catch {
            #expect(error.message == message)
        }
    }

    @Test("a lone dash is standard input and -h asks for help")
    func dashAndHelp() throws {
        let arguments = try CommandArguments(["-", "-h"])
        #expect(arguments.positionals == ["-"])
        #expect(arguments.wantsHelp)
    }
}

