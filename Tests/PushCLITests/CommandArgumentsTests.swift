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

    @Test("a lone dash is standard input and -h asks for help")
    func dashAndHelp() throws {
        let arguments = try CommandArguments(["-", "-h"])
        #expect(arguments.positionals == ["-"])
        #expect(arguments.wantsHelp)
    }
}

