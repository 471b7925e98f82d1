import Foundation
import PushCore

/// `pushworker config check|print` (DESIGN §9).
enum ConfigCommand {
    static let usage = """
    usage: pushworker config check    report every configuration problem at once (exit 78 if any)
           pushworker config print    print the effective configuration, secrets redacted

    Configuration: environment first, then the JSON file named by PUSHWORKER_CONFIG_FILE.
    """

    static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage, exitCode: &code) else { return code }
        guard parsed.positionals.count == 1, ["check", "print"].contains(parsed.positionals[0]) else {
            printError("error: expected check|print\n\n\(usage)")
            return ExitCode.usage
        }
        do {
            let configuration = try Configuration.load(purpose: .worker)
            if parsed.positionals[0] == "print" {
                for line in configuration.redactedLines() { print(line) }
            } else {
                print("configuration OK")
            }
            return ExitCode.ok
        } catch {
            printError("configuration problems:\n\(error)")
            return ExitCode.config
        }
    }
}
