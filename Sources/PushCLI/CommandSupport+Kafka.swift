import PushKafka

extension CommandSupport {
    /// One-shot commands (`enqueue`, `topics`) report the failure themselves: librdkafka's
    /// per-connection warnings are only shown with `--verbose`.
    package static func quietKafkaLogs(unless verbose: Bool) {
        if !verbose { KafkaLogging.setLogHandler { _, _, _ in } }
    }
}
