import PushKafka

extension Logger {
    /// Sends librdkafka's log lines to this logger from now on (process-wide), as `librdkafka`
    /// lines with `kafka.facility` and `kafka.log`; syslog levels ≤ 3 are errors, 4 warnings,
    /// 5–6 info, 7 debug.
    public func receiveKafkaLogs() {
        KafkaLogging.setLogHandler { [self] level, facility, message in
            let mapped: Level = level <= 3 ? .error : level == 4 ? .warning : level <= 6 ? .info : .debug
            log(mapped, "librdkafka", ["kafka.facility": facility, "kafka.log": message])
        }
    }
}
