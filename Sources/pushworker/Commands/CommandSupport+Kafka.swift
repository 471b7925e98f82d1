import PushKafka
import PushCore
import PushWorker
import PushEvents
import PushDevTools

extension CommandSupport {
    /// One-shot commands (`enqueue`, `topics`) report the failure themselves: librdkafka's
    /// per-connection warnings are only shown with `--verbose`.
    static func quietKafkaLogs(unless verbose: Bool) {
        if !verbose { KafkaLogging.setLogHandler { _, _, _ in } }
    }
}
