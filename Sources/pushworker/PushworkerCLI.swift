import PushCore
import PushKafka
import PushSandbox
#if canImport(Glibc)
import Glibc
import PushWorker
import PushEvents
import PushDevTools
#endif

/// The `pushworker` command line: subcommand dispatch (DESIGN §10).
enum PushworkerCLI {
    static let usage = """
    usage: pushworker <command> [options]

    commands:
      run                 the worker: consume jobs, deliver, publish results
      render [FILE|-]     dry run: print the provider requests of a job, one JSON line per recipient
      send [FILE|-]       deliver one job directly (no Kafka), one result line per recipient
      enqueue [FILE|-]    validate and produce jobs to the jobs topic
      sandbox             the HTTP/2 provider emulator (APNs, FCM, Web Push)
      dev-broker          development Kafka broker (librdkafka mock cluster)
      demo                run a sample campaign end to end on embedded services
      bench e2e           end-to-end benchmark beside h2load (release build)
      bench http          the HTTP/2 client alone beside h2load (release build)
      topics apply|print  declared topics
      msgid verify|decode|sign  a signed message id
      config check|print  configuration
      events              the tracking endpoint
      chaos               reliability drills against real processes (docs/reliability.md)

    Run `pushworker <command> --help` for a command's options.
    """

    /// Runs the command line `arguments` (without the program name); returns the exit status.
    static func main(_ arguments: [String]) -> Int32 {
        guard let command = arguments.first else {
            printError(usage)
            return ExitCode.usage
        }
        let rest = Array(arguments.dropFirst())
        switch command {
        case "--help", "-h", "help":
            print(usage)
            return ExitCode.ok
        case "run": return RunCommand.main(rest)
        case "render": return RenderCommand.main(rest)
        case "send": return SendCommand.main(rest)
        case "msgid": return MsgIDCommand.main(rest)
        case "config": return ConfigCommand.main(rest)
        case "demo": return DemoCommand.main(rest)
        case "sandbox": return SandboxCommand.main(rest)
        case "dev-broker": return DevBrokerCommand.main(rest)
        case "enqueue": return EnqueueCommand.main(rest)
        case "topics": return TopicsCommand.main(rest)
        case "events": return EventsCommand.main(rest)
        case "chaos": return ChaosCommand.main(rest)
        case "bench": return BenchCommand.main(rest)
        default:
            printError("pushworker: unknown command '\(command)'\n\n\(usage)")
            return ExitCode.usage
        }
    }
}
