import Dispatch
import PushRuntime
import Foundation
import PushCLI
import PushCore
import PushHTTP
import PushHTTPServer
import PushKafka
import Synchronization
import PushWorker

/// `pushworker run`: the worker (docs/reference/cli.md, configuration.md).
enum RunCommand {
    static let usage = """
    usage: pushworker run

    Consumes fan-out jobs from PUSHWORKER_TOPIC_JOBS (and due retries from PUSHWORKER_TOPIC_RETRY)
    in the consumer group PUSHWORKER_KAFKA_GROUP, delivers every recipient, publishes results.
    Configured by the environment (see `pushworker config check` and docs/reference/configuration.md).
    Serves /metrics, /healthz and /readyz on PUSHWORKER_HTTP_ADDR. SIGTERM drains and exits 0.
    """

    static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage, exitCode: &code) else { return code }
        guard parsed.positionals.isEmpty else { return CommandSupport.usageError("unexpected argument '\(parsed.positionals[0])'", usage: usage) }
        guard let configuration = CommandSupport.configuration(.worker) else { return ExitCode.config }
        return WorkerProcess.run(configuration, installSignalHandlers: true)
    }
}
