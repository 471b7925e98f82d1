import Foundation
import PushKafka
import Synchronization

/// Runs blocking `body` (librdkafka polls) on a thread of its own, off the cooperative pool.
func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

/// Consumer properties for the mock cluster: fast heartbeats, short session.
func consumerProperties(_ bootstrap: String, group: String, extra: [String: String] = [:]) -> [String: String] {
    var properties = [
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "500",
        "topic.metadata.refresh.interval.ms": "1000",
    ]
    for (key, value) in extra { properties[key] = value }
    if let debug = ProcessInfo.processInfo.environment["PW_KAFKA_TEST_DEBUG"] {
        properties["debug"] = debug
        KafkaLogging.setLogHandler { level, facility, message in
            FileHandle.standardError.write(Data("rdk \(level) \(facility) \(message)\n".utf8))
        }
    }
    return properties
}

/// Polls until `count` messages arrived or `timeout` passed; errors are collected apart.
func consume(_ consumer: KafkaConsumer, count: Int, timeout: Duration = .seconds(40)) -> (messages: [KafkaMessage], errors: [KafkaError]) {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    var messages: [KafkaMessage] = []
    var errors: [KafkaError] = []
    while messages.count < count && clock.now < deadline {
        for result in consumer.pollBatch(max: 100, timeout: .milliseconds(100)) {
            switch result {
            case .success(let message): messages.append(message)
            case .failure(let error): errors.append(error)
            }
        }
    }
    return (messages, errors)
}

/// Polls (serving rebalances) until `condition` holds or `timeout` passes.
func pollUntil(_ consumers: [KafkaConsumer], timeout: Duration = .seconds(40), _ condition: () -> Bool) -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        for consumer in consumers { _ = consumer.poll(timeout: .milliseconds(50)) }
        if condition() { return true }
    }
    return condition()
}

func unique(_ prefix: String) -> String { "\(prefix)-\(UUID().uuidString.prefix(8))" }

/// Collects log lines routed through `KafkaLogging`.
final class LogRecorder: Sendable {
    let lines = Mutex<[(level: Int32, facility: String, message: String)]>([])
    var count: Int { lines.withLock { $0.count } }
}

/// Closes `closing` while `others` keep polling on another thread. A member that leaves in the
/// middle of a group rebalance waits for the rest of the group to take part in it, which they
/// only do inside `poll`: closing one member of an unpolled group can otherwise block until
/// `max.poll.interval.ms` (librdkafka 2.0.2, cooperative-sticky).
func closeWhilePolling(_ closing: KafkaConsumer, others: [KafkaConsumer]) async {
    let done = Atomic<Bool>(false)
    let poller = Thread {
        while !done.load(ordering: .acquiring) {
            for consumer in others { _ = consumer.poll(timeout: .milliseconds(20)) }
        }
    }
    poller.start()
    await onThread { closing.close() }
    done.store(true, ordering: .releasing)
    while poller.isExecuting { try? await Task.sleep(for: .milliseconds(10)) }
}
