import Dispatch
import PushCore
import PushKafka
import Synchronization

/// Produces the jobs of one `POST /v1/jobs` to their lane's jobs topic (docs/lanes.md), keyed by
/// jobId (as `pushworker enqueue` does), and waits until Kafka acknowledged every one or one failed.
///
/// Failures: a job over the topic's size limit (`MSG_SIZE_TOO_LARGE`) is the caller's to fix
/// (422 `job_too_large`, naming the job); anything else (brokers down, topic missing, no
/// acknowledgement within `timeout`) is 503 `kafka_unavailable`. Jobs of the request may have
/// been produced before a failure: a retry produces them again, and the workers' de-duplication
/// (docs/reference/redis.md) keeps a device from being notified twice.
public struct JobPublisher: Sendable {
    public let producer: KafkaProducer
    public let topic: String
    /// The transactional lane's topic (`PUSHWORKER_TOPIC_JOBS_TRANSACTIONAL`); nil sends every job to `topic`.
    public let transactionalTopic: String?
    /// Longest wait for the acknowledgements (the producer's `message.timeout.ms` is set to it).
    public let timeout: Duration

    public init(producer: KafkaProducer, topic: String, transactionalTopic: String? = nil, timeout: Duration) {
        self.producer = producer; self.topic = topic; self.transactionalTopic = transactionalTopic; self.timeout = timeout
    }

    /// The topic of a job of `lane`.
    public func topic(for lane: JobLane) -> String {
        lane == .transactional ? transactionalTopic ?? topic : topic
    }

    /// Blocking: call it from the listener's thread, never from the cooperative pool.
    /// `lanes`: each record's lane (missing ones are bulk).
    public func publish(jobIDs: [String], records: [[UInt8]], lanes: [JobLane] = []) -> Result<Void, APIError> {
        let group = DispatchGroup()
        let state = Mutex<(acknowledged: Int, failure: (index: Int, error: KafkaError)?)>((0, nil))
        for (index, record) in records.enumerated() {
            group.enter()
            producer.produce(topic: topic(for: index < lanes.count ? lanes[index] : .bulk), key: Array(jobIDs[index].utf8), value: record) { result in
                state.withLock { state in
                    switch result {
                    case .success: state.acknowledged += 1
                    case .failure(let error):
                        if state.failure.map({ index < $0.index }) ?? true { state.failure = (index, error) }
                    }
                }
                group.leave()
            }
        }
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        // librdkafka reports every record within message.timeout.ms; a little more covers the report's way back.
        if group.wait(timeout: .now() + seconds + 5) == .timedOut {
            let acknowledged = state.withLock { $0.acknowledged }
            return .failure(.kafkaUnavailable("\(acknowledged) of \(records.count) jobs acknowledged within \(Int(seconds)) s"))
        }
        let (acknowledged, failure) = state.withLock { ($0.acknowledged, $0.failure) }
        guard let failure else { return .success(()) }
        let field = records.count == 1 ? "$" : "$[\(failure.index)]"
        if failure.error.name == "MSG_SIZE_TOO_LARGE" {
            return .failure(.jobTooLarge(field: field, detail: "\(records[failure.index].count) bytes"))
        }
        var detail = "\(field) (jobId \(jobIDs[failure.index])): \(failure.error.message) [\(failure.error.name)]"
        if failure.error.code == KafkaError.unknownTopic || failure.error.code == KafkaError.unknownTopicOrPartition {
            let failedTopic = topic(for: failure.index < lanes.count ? lanes[failure.index] : .bulk)
            detail += " (create the topic \(failedTopic): pushworker topics apply)"
        }
        return .failure(.kafkaUnavailable("\(detail); \(acknowledged) of \(records.count) jobs acknowledged"))
    }
}
