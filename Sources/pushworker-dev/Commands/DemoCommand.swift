import Foundation
import PushRuntime
import PushCLI
import PushCore
import PushKafka
import Synchronization
import PushWorker
import PushEvents
import PushDevTools

/// `pushworker-dev demo`: a sample campaign end to end on embedded services (README, `make demo`).
///
/// Starts librdkafka's mock cluster in-process, a `redis-server` and `pushworker-dev sandbox` as
/// children on free loopback ports, enqueues one multilingual job (iOS, Android, Web for Chrome,
/// Firefox and Safari, Huawei, a dead token, a malformed one), runs the real worker until every recipient has a result on
/// `push.results.v1`, prints a summary and stops everything it started. The sandbox runs with
/// its inbox and `pushworker events` beside it; `--keep` leaves it all running until Ctrl-C.
enum DemoCommand {
    static let usage = """
    usage: pushworker-dev demo [--keep] [--timeout SECONDS]

    Runs a sample campaign end to end on embedded services and prints the results, and the
    address of the sandbox inbox that shows every notification as the device would.
      --keep       leave everything running (Kafka, Redis, the worker, the sandbox and its inbox,
                   the tracking endpoint) until Ctrl-C, and keep the temporary folder
      --timeout    give up after this many seconds (default 90)
    """

    static func main(_ arguments: [String]) -> Int32 {
        var code: Int32 = 0
        guard let parsed = CommandSupport.parse(arguments, usage: usage, values: ["timeout"], flags: ["keep"], exitCode: &code) else { return code }
        guard let timeout = CommandSupport.usageChecked(usage, { Double(try parsed.integer("timeout", default: 90, in: 5...3600)) }) else {
            return ExitCode.usage
        }
        do {
            return try Demo.run(timeout: timeout, keep: parsed.flag("keep"))
        } catch {
            printError("demo failed: \(error)")
            return ExitCode.software
        }
    }
}
