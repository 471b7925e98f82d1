#if canImport(Glibc)
import Glibc
#endif
import PushKafka

/// `pushworker-dev dev-broker`: librdkafka's mock cluster as a process (development only, docs/kafka.md).
///
/// Creates the cluster and its topics, writes the bootstrap address atomically to the bootstrap
/// file (temporary file + rename) once ready, prints it on stdout, then runs until SIGTERM or
/// SIGINT and returns 0 (removing the bootstrap file). SIGUSR1 takes every broker down
/// (`rd_kafka_mock_broker_set_down`: connections drop, messages are kept) and SIGUSR2 brings them
/// back, so clients can be tested against a broker outage.
public enum DevBroker {
    /// Where to write the bootstrap address, how many brokers, which topics.
    public struct Options: Equatable, Sendable {
        public var bootstrapFile: String?
        public var brokers = 1
        public var topics: [Topic] = []

        public struct Topic: Equatable, Sendable {
            public var name: String
            public var partitions: Int32
            public init(name: String, partitions: Int32) { self.name = name; self.partitions = partitions }
        }

        public init() {}
    }

    /// Runs the broker until SIGTERM/SIGINT; returns the exit status (70 when the cluster cannot
    /// start, 73 when the bootstrap file cannot be written).
    public static func run(_ options: Options) -> Int32 {
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
            writeStderr("pushworker-dev dev-broker: \(error)\n")
            return 70
        }
        if let path = options.bootstrapFile {
            if let problem = writeAtomically(path: path, contents: cluster.bootstrapServers + "\n") {
                writeStderr("pushworker-dev dev-broker: cannot write \(path): \(problem)\n")
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
                    writeStderr("pushworker-dev dev-broker: brokers \(down ? "down" : "up")\n")
                } catch {
                    writeStderr("pushworker-dev dev-broker: \(error)\n")
                }
                continue
            }
            break
        }
        cluster.close()
        if let path = options.bootstrapFile { unlink(path) }
        return 0
    }

    private static func writeStderr(_ text: String) {
        var bytes = Array(text.utf8)
        _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
    }

    /// Writes `contents` to a temporary file beside `path` and renames it over `path`, so a
    /// reader never sees a partial address. Returns an error description, or nil on success.
    public static func writeAtomically(path: String, contents: String) -> String? {
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
