import PushCore
import PushRuntime
import PushKafka
import PushSandbox
#if canImport(Glibc)
import Glibc
import PushWorker
import PushEvents
import PushDevTools
#endif

/// The `pushworker` command line: subcommand dispatch (docs/reference/cli.md).
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
      inspect results|dlq|stats  delivery results, dead letters (and replay), a campaign's counts
      version             version, git commit and C library versions (also --version)

    Run `pushworker <command> --help` for a command's options.
    """

    /// Every subcommand, by name: each takes the arguments after its name and returns the exit status.
    static let commands: [String: @Sendable ([String]) -> Int32] = [
        "run": RunCommand.main, "render": RenderCommand.main, "send": SendCommand.main, "msgid": MsgIDCommand.main,
        "config": ConfigCommand.main, "demo": DemoCommand.main, "sandbox": SandboxCommand.main,
        "dev-broker": DevBrokerCommand.main, "enqueue": EnqueueCommand.main, "topics": TopicsCommand.main,
        "events": EventsCommand.main, "chaos": ChaosCommand.main, "bench": BenchCommand.main,
        "version": VersionCommand.main, "inspect": InspectCommand.main,
    ]

    /// Runs the command line `arguments` (without the program name); returns the exit status.
    static func main(_ arguments: [String]) -> Int32 {
        guard let command = arguments.first else {
            printError(usage)
            return ExitCode.usage
        }
        if ["--help", "-h", "help"].contains(command) {
            print(usage)
            return ExitCode.ok
        }
        if command == "--version" { return VersionCommand.main(Array(arguments.dropFirst())) }
        guard let main = commands[command] else {
            printError("pushworker: unknown command '\(command)'\n\n\(usage)")
            return ExitCode.usage
        }
        return main(Array(arguments.dropFirst()))
    }
}
