import PushCore
import Synchronization
import PushEncoding

/// Where librdkafka's log lines go. librdkafka never writes to stderr by itself once a PushKafka
/// client exists: every client sets `log.queue=true` and its logs are served on the client's
/// own poll thread (producer/mock) or on the thread calling `KafkaConsumer.poll`.
///
/// The handler receives the syslog level (0 emergency … 3 error, 4 warning, 6 info, 7 debug),
/// librdkafka's facility (`FAIL`, `REQTMOUT`, `CGRPOP`, …) and the message. It runs on a
/// client's poll thread: keep it cheap and non-blocking.
/// Default: warnings and worse go to stderr as one JSON line; info/debug are dropped.
public enum KafkaLogging {
    public typealias Handler = @Sendable (_ level: Int32, _ facility: String, _ message: String) -> Void

    private static let handler = Mutex<Handler>(defaultHandler)

    /// Replaces the process-wide librdkafka log handler.
    public static func setLogHandler(_ handler: @escaping Handler) {
        self.handler.withLock { $0 = handler }
    }

    /// Restores the default handler (warnings and errors as JSON lines on stderr).
    public static func resetLogHandler() {
        handler.withLock { $0 = defaultHandler }
    }

    static func emit(level: Int32, facility: String, message: String) {
        let current = handler.withLock { $0 }
        current(level, facility, message)
    }

    /// The default: levels ≤ 4 (warning) as a JSON line on stderr.
    public static let defaultHandler: Handler = { level, facility, message in
        guard level <= 4 else { return }
        let name = level <= 3 ? "error" : "warning"
        let line = JSONWriter.object { w in
            w.member("level", name)
            w.member("logger", "rdkafka")
            w.member("rdkafka.facility", facility)
            w.member("message", message)
        }.text
        writeStderr(line + "\n")
    }
}
