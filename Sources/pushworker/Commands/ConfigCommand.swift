import Foundation
import PushCore
import PushWorker
import PushEvents
import PushDevTools

/// `pushworker config check|print` (DESIGN §9).
enum ConfigCommand {
    static let usage = """
    usage: pushworker config check    report every configuration problem at once (exit 78 if any)
           pushworker config print    print the effective configuration, secrets redacted

    Configuration: environment first, then the JSON file named by PUSHWORKER_CONFIG_FILE.
    `check` also reads every app folder under PUSHWORKER_CREDENTIALS_DIR and reports files that
    exist but cannot be used (never their content), asks librdkafka about every
    PUSHWORKER_RDKAFKA_* property (offline) and checks the tracking endpoint's EVENT_*
    variables. See docs/configuration.md.
    """

    static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage, exitCode: &code) else { return code }
        guard parsed.positionals.count == 1, ["check", "print"].contains(parsed.positionals[0]) else {
            printError("error: expected check|print\n\n\(usage)")
            return ExitCode.usage
        }
        var eventProblems: [String] = []
        if case .failure(let problems) = EventsProcess.Settings.load(ProcessInfo.processInfo.environment) { eventProblems = problems.messages }
        do {
            let configuration = try Configuration.load(purpose: .worker)
            if parsed.positionals[0] == "print" {
                for line in configuration.redactedLines() { print(line) }
                return ExitCode.ok
            }
            let problems = credentialProblems(configuration.credentialsDir) + eventProblems
            guard problems.isEmpty else {
                printError("configuration problems:\n\(Configuration.Problems(messages: problems))")
                return ExitCode.config
            }
            print("configuration OK")
            return ExitCode.ok
        } catch {
            // Credentials are checked too when the folder exists, so one run lists everything.
            var messages = error.messages + eventProblems
            if let dir = ProcessInfo.processInfo.environment["PUSHWORKER_CREDENTIALS_DIR"], !dir.isEmpty {
                messages += credentialProblems(dir)
            }
            printError("configuration problems:\n\(Configuration.Problems(messages: messages))")
            return ExitCode.config
        }
    }

    /// Problems of every app folder under `directory` (none when it is nil or not a folder).
    static func credentialProblems(_ directory: String?) -> [String] {
        guard let directory, let apps = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var problems: [String] = []
        for app in apps.sorted() where !app.hasPrefix(".") {
            var isDirectory: ObjCBool = false
            let folder = URL(fileURLWithPath: directory).appendingPathComponent(app)
            guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue else { continue }
            problems += AppCredentials.load(appID: app, folder: folder).problems.map { "PUSHWORKER_CREDENTIALS_DIR: \($0)" }
        }
        return problems
    }
}
