#if canImport(Glibc)
import Glibc
#endif

/// `pushworker dev-broker`: librdkafka's mock cluster as a process (development only, DESIGN §13).
///
/// Creates the cluster and its topics, writes the bootstrap address atomically to
/// `--bootstrap-file` (temporary file + rename) once ready, prints it on stdout, then runs
/// until SIGTERM or SIGINT and exits 0 (removing the bootstrap file). SIGUSR1 takes every
/// broker down (`rd_kafka_mock_broker_set_down`: connections drop, messages are kept) and
/// SIGUSR2 brings them back, so clients can be tested against a broker outage.
public enum DevBrokerCommand {
    static let usage = """
    usage: pushworker dev-broker [--bootstrap-file FILE] [--brokers N] [--topic NAME[:PARTITIONS]]...

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

    struct Options: Equatable {
        var bootstrapFile: String?
        var brokers = 1
        var topics: [(name: String, partitions: Int32)] = []
        var isHelp = false

        static func == (a: Options, b: Options) -> Bool {
            a.bootstrapFile == b.bootstrapFile && a.brokers == b.brokers && a.isHelp == b.isHelp
                && a.topics.map(\.name) == b.topics.map(\.name) && a.topics.map(\.partitions) == b.topics.map(\.partitions)
        }
    }

    struct UsageError: Error, Equatable {
        let message: String
    }

    /// Parses the arguments after `dev-broker`; `--flag value` and `--flag=value` both work.
    static func parse(_ arguments: [String]) throws(UsageError) -> Options {
        var options = Options()
        var index = 0
        func value(for flag: String, inline: String?) throws(UsageError) -> String {
            if let inline { return inline }
            index += 1
            guard index < arguments.count else { throw UsageError(message: "\(flag) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            var flag = argument
            var inline: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                flag = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            switch flag {
            case "-h", "--help":
                options.isHelp = true
            case "--bootstrap-file":
                let path = try value(for: flag, inline: inline)
                guard !path.isEmpty else { throw UsageError(message: "--bootstrap-file needs a path") }
                options.bootstrapFile = path
            case "--brokers":
                let text = try value(for: flag, inline: inline)
                guard let n = Int(text), (1...16).contains(n) else {
                    throw UsageError(message: "--brokers must be 1...16, got '\(text)'")
                }
                options.brokers = n
            case "--topic":
                let text = try value(for: flag, inline: inline)
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
                options.topics.append((String(parts[0]), partitions))
            default:
                throw UsageError(message: "unknown argument '\(argument)'")
            }
            index += 1
        }
        return options
    }

    /// Runs the subcommand with `arguments` (after `dev-broker`); returns the exit status.
    public static func main(_ arguments: [String]) -> Int32 {
        let options: Options
        do {
            options = try parse(arguments)
        } catch {
            writeStderr("pushworker dev-broker: \(error.message)\n\n\(usage)\n")
            return 64
        }
        if options.isHelp {
            print(usage)
            return 0
        }

        // Block the stop signals before librdkafka starts its threads (they inherit the mask),
        // so sigwait below is the only place they are taken.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGUSR1)
        sigaddset(&signals, SIGUSR2)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let cluster: KafkaMockCluster
        do {
            cluster = try KafkaMockCluster(brokers: options.brokers)
            for topic in options.topics {
                try cluster.createTopic(topic.name, partitions: topic.partitions)
            }
        } catch {
            writeStderr("pushworker dev-broker: \(error)\n")
            return 70
        }
        if let path = options.bootstrapFile {
            if let problem = writeAtomically(path: path, contents: cluster.bootstrapServers + "\n") {
                writeStderr("pushworker dev-broker: cannot write \(path): \(problem)\n")
                cluster.close()
                return 73
            }
        }
        print(cluster.bootstrapServers)
        fflush(nil)

        var received: Int32 = 0
        while true {
            guard sigwait(&signals, &received) == 0 else { continue }
            if received == SIGUSR1 || received == SIGUSR2 {
                let down = received == SIGUSR1
                do {
                    try cluster.setBrokersDown(down)
                    writeStderr("pushworker dev-broker: brokers \(down ? "down" : "up")\n")
                } catch {
                    writeStderr("pushworker dev-broker: \(error)\n")
                }
                continue
            }
            break
        }
        cluster.close()
        if let path = options.bootstrapFile { unlink(path) }
        return 0
    }

    /// Writes `contents` to a temporary file beside `path` and renames it over `path`, so a
    /// reader never sees a partial address. Returns an error description, or nil on success.
    static func writeAtomically(path: String, contents: String) -> String? {
        let temporary = "\(path).tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        var bytes = Array(contents.utf8)
        let written = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == bytes.count, synced == 0 else {
            unlink(temporary)
            return "short write"
        }
        guard rename(temporary, path) == 0 else {
            let problem = String(cString: strerror(errno))
            unlink(temporary)
            return problem
        }
        return nil
    }
}
