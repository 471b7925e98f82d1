import Dispatch
import PushRuntime
import Foundation
import PushCLI
import PushCore
import PushHTTP
import PushHTTPServer
import PushKafka
import PushRedis
import Synchronization
import PushWorker
import PushEvents

/// `pushworker events`: the tracking endpoint (docs/reference/tracking-api.md; docs/events.md).
enum EventsCommand {
    static let usage = """
    usage: pushworker events

    Serves the SDKs' tracking endpoint on PUSHWORKER_HTTP_ADDR:
      POST /v1/e/d/<msgId>  delivered      POST /v1/e/o/<msgId>  opened
      POST /v1/e/c/<msgId>  clicked        POST /v1/e/x/<msgId>  dismissed
    No header, body or key: the signed msgId (PUSHWORKER_MSGID_KEYS) is the credential.
    Each accepted ping goes to PUSHWORKER_TOPIC_EVENTS (keyed by msgId), to the campaign counters
    in PUSHWORKER_REDIS_URL and to the app's webhook (app.json "webhook" in
    PUSHWORKER_CREDENTIALS_DIR). Also /healthz, /readyz, /metrics. SIGTERM drains and exits 0.
    Bodies over 4 KiB get 413, headers over ≈ 8 KiB 431 (docs/events.md, docs/security.md).

    environment (besides the PUSHWORKER_* ones, see `pushworker config check`; default in brackets):

    """ + EventsProcess.Settings.variables.map { "  \($0.name.padding(toLength: 27, withPad: " ", startingAt: 0)) \($0.meaning) [\($0.defaultValue.isEmpty ? "none" : $0.defaultValue)]" }
        .joined(separator: "\n")

    static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage, exitCode: &code) else { return code }
        guard parsed.positionals.isEmpty else { return CommandSupport.usageError("unexpected argument '\(parsed.positionals[0])'", usage: usage) }
        let environment = ProcessInfo.processInfo.environment
        var problems: [String] = []
        var configuration: Configuration?
        do { configuration = try Configuration.load(environment: environment, purpose: .events) } catch { problems += error.messages }
        var settings: EventsProcess.Settings?
        switch EventsProcess.Settings.load(environment) {
        case .success(let value): settings = value
        case .failure(let error): problems += error.messages
        }
        guard let configuration, let settings, problems.isEmpty else {
            printError("configuration problems:\n" + problems.sorted().map { "- \($0)" }.joined(separator: "\n"))
            return ExitCode.config
        }
        return EventsProcess.run(configuration, settings: settings)
    }
}
