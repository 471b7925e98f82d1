import PushCLI

/// The `pushworker-dev` command line, the development executable: the provider sandbox, the
/// development broker, the demo, the benchmarks and the chaos drills (docs/reference/cli.md).
/// Never linked into `pushworker`, never shipped in its image.
enum PushworkerDevCLI {
    static let usage = """
    usage: pushworker-dev <command> [options]

    commands:
      sandbox             the HTTP/2 provider emulator (APNs, FCM, Web Push, Huawei)
      dev-broker          development Kafka broker (librdkafka mock cluster)
      demo                run a sample campaign end to end on embedded services
      bench e2e|http|redis|decode|events  benchmarks (release build; docs/performance.md)
      chaos               reliability drills against real processes (docs/reliability.md)

    Run `pushworker-dev <command> --help` for a command's options. The benchmarks, the demo and
    the drills start `pushworker` (run, events) from the folder this executable is in.
    """

    static let tool = CommandLineTool(
        name: "pushworker-dev", usage: usage,
        commands: [
            "sandbox": SandboxCommand.main, "dev-broker": DevBrokerCommand.main, "demo": DemoCommand.main,
            "bench": BenchCommand.main, "chaos": ChaosCommand.main,
        ],
        sibling: .init(name: "pushworker", role: "the production executable",
                       commands: ["run", "events", "render", "send", "enqueue", "topics", "msgid", "config", "inspect", "version"]))

    /// Runs the command line `arguments` (without the program name); returns the exit status.
    static func main(_ arguments: [String]) -> Int32 { tool.main(arguments) }
}
