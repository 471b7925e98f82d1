import PushCLI

/// The `pushworker` command line, the production executable: subcommand dispatch
/// (docs/reference/cli.md). The development commands are `pushworker-dev`'s.
enum PushworkerCLI {
    static let usage = """
    usage: pushworker <command> [options]

    commands:
      run                 the worker: consume jobs, deliver, publish results
      events              the tracking endpoint
      api                 the operators' HTTP API: jobs in, campaign control
      campaign status|pause|resume|cancel|throttle|deadline  steer a campaign fleet-wide
      render [FILE|-]     dry run: print the provider requests of a job, one JSON line per recipient
      send [FILE|-]       deliver one job directly (no Kafka), one result line per recipient
      enqueue [FILE|-]    validate and produce jobs to the jobs topic
      topics apply|print  declared topics
      msgid verify|decode|sign  a signed message id
      config check|print  configuration
      inspect results|dlq|stats  delivery results, dead letters (and replay), a campaign's counts
      version             version, git commit and C library versions (also --version)

    Run `pushworker <command> --help` for a command's options. The development commands
    (sandbox, dev-broker, demo, bench, chaos) are in `pushworker-dev`.
    """

    static let tool = CommandLineTool(
        name: "pushworker", usage: usage,
        commands: [
            "run": RunCommand.main, "events": EventsCommand.main, "api": APICommand.main, "campaign": CampaignCommand.main,
            "render": RenderCommand.main, "send": SendCommand.main,
            "enqueue": EnqueueCommand.main, "topics": TopicsCommand.main, "msgid": MsgIDCommand.main,
            "config": ConfigCommand.main, "inspect": InspectCommand.main, "version": VersionCommand.main,
        ],
        version: VersionCommand.main,
        sibling: .init(name: "pushworker-dev", role: "the development executable (not in the production binary or image)",
                       commands: ["sandbox", "dev-broker", "demo", "bench", "chaos"]))

    /// Runs the command line `arguments` (without the program name); returns the exit status.
    static func main(_ arguments: [String]) -> Int32 { tool.main(arguments) }
}
