import PushCLI
import PushCore
import PushRuntime
import PushKafkaMock
import PushWorker

/// `pushworker-dev dev-broker`: parses the options of ``DevBroker`` (development only, docs/kafka.md).
enum DevBrokerCommand {
    static let usage = """
    usage: pushworker-dev dev-broker [--bootstrap-file FILE] [--brokers N] [--topic NAME[:PARTITIONS]]...

    Runs librdkafka's mock Kafka cluster on random loopback ports until SIGTERM/SIGINT.
    Development and tests only: no Admin API, no persistence, ~5 MiB / 100k messages kept
    per partition, consumers need session.timeout.ms >= 3000.
    Outage drills: SIGUSR1 takes every broker down (clients are disconnected, data is kept),
    SIGUSR2 brings them back up.

    options:
      --bootstrap-file FILE   write the bootstrap address (host:port,...) here when ready
      --brokers N             number of mock brokers (default 1)
      --topic NAME[:P]        create topic NAME with P partitions (default 1); repeatable
      -h, --help              this help
    """

    typealias Options = DevBroker.Options

    struct UsageError: Error, Equatable {
        let message: String
    }

    /// Parses the arguments after `dev-broker`; `--flag value` and `--flag=value` both work.
    static func parse(_ arguments: [String]) throws(UsageError) -> (options: Options, isHelp: Bool) {
        let parsed: CommandArguments
        do {
            parsed = try CommandArguments(arguments, valueOptions: ["bootstrap-file", "brokers", "topic"])
        } catch {
            throw UsageError(message: error.message)
        }
        guard parsed.positionals.isEmpty else { throw UsageError(message: "unknown argument '\(parsed.positionals[0])'") }
        var options = Options()
        if let path = parsed.value("bootstrap-file") {
            guard !path.isEmpty else { throw UsageError(message: "--bootstrap-file needs a path") }
            options.bootstrapFile = path
        }
        if let text = parsed.value("brokers") {
            guard let n = Int(text), (1...16).contains(n) else { throw UsageError(message: "--brokers must be 1...16, got '\(text)'") }
            options.brokers = n
        }
        for text in parsed.allValues("topic") {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), !parts[0].isEmpty,
                  parts[0].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-") }),
                  parts[0].count <= 249 else {
                throw UsageError(message: "--topic must be NAME[:PARTITIONS] with NAME of [A-Za-z0-9._-], got '\(text)'")
            }
            var partitions: Int32 = 1
            if parts.count == 2 {
                guard let p = Int32(parts[1]), (1...1000).contains(p) else {
                    throw UsageError(message: "--topic partitions must be 1...1000, got '\(parts[1])'")
                }
                partitions = p
            }
            options.topics.append(.init(name: String(parts[0]), partitions: partitions))
        }
        return (options, parsed.wantsHelp)
    }

    /// Runs the subcommand with `arguments` (after `dev-broker`); returns the exit status.
    static func main(_ arguments: [String]) -> Int32 {
        let parsed: (options: Options, isHelp: Bool)
        do {
            parsed = try parse(arguments)
        } catch {
            return CommandSupport.usageError(error.message, usage: usage)
        }
        if parsed.isHelp {
            print(usage)
            return ExitCode.ok
        }
        return DevBroker.run(parsed.options)
    }
}
