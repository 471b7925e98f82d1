import Foundation
import PushRuntime
import PushCLI
import PushCore
import PushWorker
import PushEvents

/// `pushworker config check|print` (docs/reference/configuration.md).
enum ConfigCommand {
    static let usage = """
    usage: pushworker config check [--connect [--timeout SECONDS]]
                                      report every configuration problem at once (exit 78 if any)
           pushworker config print    print the effective configuration, secrets redacted

    Configuration: environment first, then the JSON file named by PUSHWORKER_CONFIG_FILE.
    `check` also reads every app folder under PUSHWORKER_CREDENTIALS_DIR and reports files that
    exist but cannot be used (never their content), asks librdkafka about every
    PUSHWORKER_RDKAFKA_* property (offline) and checks the tracking endpoint's EVENT_*
    variables. See docs/reference/configuration.md.

    --connect   then reaches what the configuration names, one line per check
                (ok / WARN / FAIL): Kafka (metadata; every configured topic exists), Redis
                (PING; the scripts load), and each app's credentials: APNs (a provider token
                signed and sent with a dry background request to a device token APNs never
                issues: 400 BadDeviceToken means token and topic were accepted), FCM (the
                OAuth grant, then a validate_only send), Web Push (the VAPID key pair signs
                and verifies). Nothing is delivered. Exit 0 when nothing failed, 1 otherwise.
    --timeout   per check (default 10 s)
    """

    static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage, values: ["timeout"], flags: ["connect"], exitCode: &code) else { return code }
        guard parsed.positionals.count == 1, ["check", "print"].contains(parsed.positionals[0]) else {
            guard let verb = parsed.positionals.first else { return CommandSupport.usageError("expected check or print", usage: usage) }
            if ["check", "print"].contains(verb) { return CommandSupport.usageError("\(verb) takes no argument", usage: usage) }
            return CommandSupport.unknownSubcommand(verb, among: ["check", "print"], usage: usage)
        }
        let connect = parsed.flag("connect")
        if (connect || parsed.value("timeout") != nil) && parsed.positionals[0] != "check" {
            return CommandSupport.usageError("--connect and --timeout go with check", usage: usage)
        }
        guard let timeout = CommandSupport.usageChecked(usage, { try parsed.integer("timeout", default: 10, in: 1...300) }) else {
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
            let warnings = credentialWarnings(configuration.credentialsDir)
            if !warnings.isEmpty { printError("configuration warnings:\n" + warnings.map { "- \($0)" }.joined(separator: "\n")) }
            guard problems.isEmpty else {
                printError("configuration problems:\n\(Configuration.Problems(messages: problems))")
                return ExitCode.config
            }
            CommandSupport.writeLine("configuration OK")
            guard connect else { return ExitCode.ok }
            CommandSupport.quietKafkaLogs(unless: false)
            var failed = false
            for check in [ConnectionCheck.kafka, { configuration, _ in ConnectionCheck.redis(configuration) }, ConnectionCheck.credentials]
                as [(Configuration, Duration) -> [ConnectionCheck.Line]] {
                for line in check(configuration, .seconds(timeout)) {
                    CommandSupport.writeLine(line.description)
                    if line.verdict == .failure { failed = true }
                }
            }
            return failed ? ExitCode.failure : ExitCode.ok
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

    /// Problems of every app folder under `directory` (none when it is nil or not a folder):
    /// unusable files, and APNs certificates that expired or are not valid yet (docs/providers.md).
    static func credentialProblems(_ directory: String?) -> [String] {
        apps(directory).flatMap { $0.problems.map { "PUSHWORKER_CREDENTIALS_DIR: \($0)" } }
    }

    /// What works but soon will not: APNs certificates expiring within 30 days.
    static func credentialWarnings(_ directory: String?) -> [String] {
        apps(directory).flatMap { $0.warnings.map { "PUSHWORKER_CREDENTIALS_DIR: \($0)" } }
    }

    private static func apps(_ directory: String?) -> [AppCredentials] {
        guard let directory, let apps = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var loaded: [AppCredentials] = []
        for app in apps.sorted() where !app.hasPrefix(".") {
            var isDirectory: ObjCBool = false
            let folder = URL(fileURLWithPath: directory).appendingPathComponent(app)
            guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue else { continue }
            loaded.append(AppCredentials.load(appID: app, folder: folder))
        }
        return loaded
    }
}
