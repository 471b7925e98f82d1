import CRdKafka
import Foundation
import Synchronization

/// State written by librdkafka callbacks and read by `KafkaConsumer`.
/// The callbacks are served only from `rd_kafka_consumer_poll` / `rd_kafka_consumer_close`
/// calls made by PushKafka (`log.queue=true`, main queue forwarded to the consumer queue), so
/// they run on the application's polling thread, never on librdkafka's internal threads.
final class RDKafkaConsumerContext: Sendable {
    struct State {
        var errors: [KafkaError] = []
        var rebalanceEvents: [KafkaRebalanceEvent] = []
        var hasJoinedGroup = false
    }

    let state = Mutex(State())

    func record(_ error: KafkaError) {
        KafkaLogging.emit(level: error.isFatal ? 2 : 3, facility: "ERROR", message: "consumer: \(error)")
        state.withLock { s in
            s.errors.append(error)
            if s.errors.count > RDKafkaEventClient.maxKeptErrors { s.errors.removeFirst() }
        }
    }

    /// Records a rebalance; an assignment (even empty) means the member has joined and the
    /// sticky assignor has its state.
    func record(_ event: KafkaRebalanceEvent) {
        state.withLock { s in
            s.rebalanceEvents.append(event)
            if case .assigned = event { s.hasJoinedGroup = true }
        }
    }

    func popError() -> KafkaError? {
        state.withLock { s in s.errors.isEmpty ? nil : s.errors.removeFirst() }
    }
}

private func context(_ opaque: UnsafeMutableRawPointer?) -> RDKafkaConsumerContext? {
    opaque.map { Unmanaged<RDKafkaConsumerContext>.fromOpaque($0).takeUnretainedValue() }
}

/// Assigns/unassigns on the polling thread (cooperative: incrementally) and records the event.
private let rebalanceCallback: @convention(c) (OpaquePointer?, rd_kafka_resp_err_t, UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?, UnsafeMutableRawPointer?) -> Void = { handle, err, partitions, opaque in
    guard let handle, let context = context(opaque) else { return }
    let list = partitions.map { RDKafkaTopicPartitionList.read($0).map(\.topicPartition) } ?? []
    let isCooperative = rd_kafka_rebalance_protocol(handle).map { String(cString: $0) } == "COOPERATIVE"
    switch err {
    case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
        if isCooperative {
            if let error = rd_kafka_incremental_assign(handle, partitions) {
                context.record(RDKafkaErrors.consume(error, "incremental assign"))
            }
        } else {
            let result = rd_kafka_assign(handle, partitions)
            if result != RD_KAFKA_RESP_ERR_NO_ERROR { context.record(RDKafkaErrors.error(result, "assign")) }
        }
        // A newly assigned partition starts unpaused. librdkafka keeps an application pause on a
        // partition across its revocation and re-assignment (librdkafka #1849, confluent-kafka-go
        // #193), while its owner forgot the pause with the revoke: the partition then never
        // delivers again (seen as a chaos join-leave drill with two jobs never started).
        if let partitions, !list.isEmpty {
            let resumed = rd_kafka_resume_partitions(handle, partitions)
            if resumed != RD_KAFKA_RESP_ERR_NO_ERROR { context.record(RDKafkaErrors.error(resumed, "resume after assign")) }
        }
        context.record(.assigned(list))
    case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
        let isLost = rd_kafka_assignment_lost(handle) != 0
        if isCooperative {
            if let error = rd_kafka_incremental_unassign(handle, partitions) {
                context.record(RDKafkaErrors.consume(error, "incremental unassign"))
            }
        } else {
            _ = rd_kafka_assign(handle, nil)
        }
        context.record(isLost ? .lost(list) : .revoked(list))
    default:
        _ = rd_kafka_assign(handle, nil)
        context.record(RDKafkaErrors.error(err, "rebalance"))
    }
}

private let errorCallback: @convention(c) (OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> Void = { handle, code, reason, opaque in
    guard let context = context(opaque) else { return }
    context.record(RDKafkaErrors.fromErrorReport(handle: handle, code: code, reason: reason.map { String(cString: $0) } ?? ""))
}

/// An `rd_kafka_t` of consumer type subscribed to topics.
///
/// Built by ``makeClient(properties:topics:)`` (swift-kafka-client's `RDKafkaClient.makeClient`):
/// the handle first, then this owner around it (a non-throwing `init`), then the steps that
/// can fail (subscribe). A failure only throws: the owner is released and its `deinit`
/// destroys the handle, once. `close` is the one cleanup path (leave the group, destroy), run
/// once, by the owner's `close()` or by `deinit`.
///
/// Thread safety: `handle` never changes after init and librdkafka's consumer calls are
/// thread-safe; every use goes through `handleGuard`, and `close` destroys the handle only after
/// the guard has shut out new users and waited for current ones. `context` outlives the handle
/// (it is released only after `rd_kafka_destroy`), so the callbacks' unretained opaque stays valid.
final class RDKafkaConsumerClient: @unchecked Sendable {
    private let handle: OpaquePointer
    let context: RDKafkaConsumerContext
    private let handleGuard = RDKafkaHandleGuard()

    /// A consumer of `topics` (names, or regexes starting with `^`). Throws for a property
    /// librdkafka refuses, a handle it cannot create, or a subscription it refuses (e.g. the
    /// invalid regex `^[`).
    static func makeClient(properties: [String: String], topics: [String]) throws(KafkaError) -> RDKafkaConsumerClient {
        let context = RDKafkaConsumerContext()
        let config = try RDKafkaConfig.make(properties)
        config.configure { conf in
            // Unretained: the client holds `context` for as long as the handle exists.
            rd_kafka_conf_set_opaque(conf, Unmanaged.passUnretained(context).toOpaque())
            rd_kafka_conf_set_rebalance_cb(conf, rebalanceCallback)
            rd_kafka_conf_set_error_cb(conf, errorCallback)
        }
        let client = RDKafkaConsumerClient(handle: try config.makeHandle(RD_KAFKA_CONSUMER), context: context)
        try client.subscribe(topics)
        return client
    }

    /// Takes ownership of `handle`, whose configuration's opaque is `context`.
    private init(handle: OpaquePointer, context: RDKafkaConsumerContext) {
        self.handle = handle
        self.context = context
        _ = rd_kafka_set_log_queue(handle, nil)
        _ = rd_kafka_poll_set_consumer(handle)
    }

    private func subscribe(_ topics: [String]) throws(KafkaError) {
        let list = RDKafkaTopicPartitionList.make(topics.map { (TopicPartition(topic: $0, partition: RD_KAFKA_PARTITION_UA), nil) })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let err = rd_kafka_subscribe(handle, list)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw RDKafkaErrors.error(err, "subscribe to \(topics.joined(separator: ","))")
        }
    }

    deinit { close() }

    /// One `rd_kafka_consumer_poll`; nil on timeout (or when closed).
    func poll(timeoutMs: Int32) -> Result<KafkaMessage, KafkaError>? {
        if let error = context.popError() { return .failure(error) }
        let result: Result<KafkaMessage, KafkaError>?? = handleGuard.with {
            guard let message = rd_kafka_consumer_poll(handle, timeoutMs) else { return nil }
            defer { rd_kafka_message_destroy(message) }
            return RDKafkaMessageReader.result(message)
        }
        if let result = result ?? nil { return result }
        return context.popError().map { .failure($0) }
    }

    func commit(_ offsets: [TopicPartition: Int64]) throws(KafkaError) {
        guard !offsets.isEmpty else { return }
        let outcome: Result<Void, KafkaError>? = handleGuard.with {
            let list = RDKafkaTopicPartitionList.make(offsets.map { ($0.key, $0.value) })
            defer { rd_kafka_topic_partition_list_destroy(list) }
            let err = rd_kafka_commit(handle, list, 0)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR { return .failure(RDKafkaErrors.error(err, "commit")) }
            if let failed = RDKafkaTopicPartitionList.read(list).first(where: { $0.error != 0 }) {
                return .failure(KafkaError(code: failed.error, message: "commit \(failed.topicPartition): \(RDKafkaErrors.describe(failed.error))"))
            }
            return .success(())
        }
        guard let outcome else { throw KafkaError(code: KafkaError.destroyed, message: "consumer is closed") }
        try outcome.get()
    }

    func setPaused(_ partitions: [TopicPartition], paused: Bool) {
        guard !partitions.isEmpty else { return }
        _ = handleGuard.with {
            let list = RDKafkaTopicPartitionList.make(partitions.map { ($0, nil) })
            defer { rd_kafka_topic_partition_list_destroy(list) }
            let err = paused ? rd_kafka_pause_partitions(handle, list) : rd_kafka_resume_partitions(handle, list)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR {
                context.record(RDKafkaErrors.error(err, paused ? "pause" : "resume"))
            }
        }
    }

    var assignment: [TopicPartition] {
        handleGuard.with {
            var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
            guard rd_kafka_assignment(handle, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return [] }
            defer { rd_kafka_topic_partition_list_destroy(list) }
            return RDKafkaTopicPartitionList.read(list).map(\.topicPartition)
        } ?? []
    }

    /// Lag per assigned partition: high watermark − committed offset (low watermark if nothing
    /// is committed yet). Blocks up to `timeoutMs` for the committed offsets.
    func lag(timeoutMs: Int32) -> [TopicPartition: Int64] {
        let partitions = assignment
        guard !partitions.isEmpty else { return [:] }
        return handleGuard.with {
            let list = RDKafkaTopicPartitionList.make(partitions.map { ($0, nil) })
            defer { rd_kafka_topic_partition_list_destroy(list) }
            guard rd_kafka_committed(handle, list, timeoutMs) == RD_KAFKA_RESP_ERR_NO_ERROR else { return [:] }
            var lags: [TopicPartition: Int64] = [:]
            for element in RDKafkaTopicPartitionList.read(list) {
                let tp = element.topicPartition
                var low: Int64 = -1, high: Int64 = -1
                if rd_kafka_get_watermark_offsets(handle, tp.topic, tp.partition, &low, &high) != RD_KAFKA_RESP_ERR_NO_ERROR || high < 0 {
                    guard rd_kafka_query_watermark_offsets(handle, tp.topic, tp.partition, &low, &high, timeoutMs) == RD_KAFKA_RESP_ERR_NO_ERROR else { continue }
                }
                let committed = element.offset >= 0 ? element.offset : max(low, 0)
                lags[tp] = max(0, high - committed)
            }
            return lags
        } ?? [:]
    }

    var memberID: String? {
        handleGuard.with {
            guard let id = rd_kafka_memberid(handle) else { return nil }
            defer { rd_kafka_mem_free(handle, id) }
            let s = String(cString: id)
            return s.isEmpty ? nil : s
        } ?? nil
    }

    /// librdkafka before 2.3.0 aborts in `rd_kafka_destroy` (assertion `assignor_state` in
    /// rdkafka_sticky_assignor.c, confluentinc/librdkafka#4312, fixed by #4381) when a
    /// cooperative-sticky member got its JoinGroup response but no assignment yet.
    static let hasStickyDestroyBug = rd_kafka_version() < 0x0203_00ff

    private static func memberID(_ handle: OpaquePointer) -> String? {
        guard let id = rd_kafka_memberid(handle) else { return nil }
        defer { rd_kafka_mem_free(handle, id) }
        let s = String(cString: id)
        return s.isEmpty ? nil : s
    }

    /// How long ``close()`` waits for librdkafka to leave the group. Default: 15 s.
    static let closeTimeoutSeconds = 15.0

    /// The handle handed to the closing thread. Thread safety: after `closeAndWait` nothing else
    /// uses it; the closing thread is its last user.
    private struct ClosingHandle: @unchecked Sendable { let handle: OpaquePointer }

    /// Leaves the group (serving the final revoke) and destroys the handle, on a thread of its
    /// own, waiting at most ``closeTimeoutSeconds``: librdkafka 2.0.2 can block in
    /// `rd_kafka_consumer_close` for good when a rebalance is under way (seen under load with the
    /// mock cluster). Past the bound the caller goes on (logged); the thread finishes the close
    /// if librdkafka ever returns, and the coordinator drops the member after its session
    /// timeout otherwise. The thread holds the handle and the callbacks' context, never `self`
    /// (this also runs from `deinit`).
    func close() {
        guard handleGuard.closeAndWait() else { return }
        let closing = ClosingHandle(handle: handle)
        let context = self.context
        let finished = DispatchSemaphore(value: 0)
        let closer = Thread {
            Self.closeNow(closing.handle, context: context)
            finished.signal()
        }
        closer.name = "rdkafka-close"
        closer.start()
        if finished.wait(timeout: .now() + Self.closeTimeoutSeconds) == .timedOut {
            KafkaLogging.emit(level: 3, facility: "CLOSE",
                              message: "consumer close did not finish in \(Int(Self.closeTimeoutSeconds)) s (librdkafka); going on without it: the group drops this member after session.timeout.ms")
        }
    }

    private static func closeNow(_ handle: OpaquePointer, context: RDKafkaConsumerContext) {
        let memberBefore = memberID(handle)
        let err = rd_kafka_consumer_close(handle)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            KafkaLogging.emit(level: 4, facility: "CLOSE", message: "consumer close: \(RDKafkaErrors.describe(err.rawValue))")
        }
        let hasAssignorState = context.state.withLock { $0.hasJoinedGroup }
        if hasStickyDestroyBug && !hasAssignorState && (memberBefore != nil || memberID(handle) != nil) {
            // Destroying now would abort the process; the handle (threads, sockets) is leaked
            // instead. Only happens when closing in the middle of the first group join.
            KafkaLogging.emit(level: 4, facility: "CLOSE", message: "consumer closed during its first group join: handle not destroyed to avoid librdkafka#4312 (upgrade librdkafka to >= 2.3.0)")
            return
        }
        rd_kafka_destroy(handle)
    }
}
