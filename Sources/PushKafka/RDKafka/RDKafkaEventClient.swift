import CRdKafka
import CPushKafka
import Foundation
import Synchronization

/// An `rd_kafka_t` of producer type whose main queue is drained by one dedicated thread using
/// the event API: delivery reports, errors and logs arrive as `rd_kafka_event_t`s.
/// Used by `KafkaProducer` and `KafkaMockCluster` (whose cluster lives in such a handle).
///
/// Thread safety: `handle` and `mainQueue` never change after init; librdkafka handles are
/// thread-safe for the calls made here. They are destroyed once, in `close` (idempotent), after
/// `handleGuard` has stopped new users and waited for current ones, and after the poll thread
/// has exited.
package final class RDKafkaEventClient: @unchecked Sendable {
    package let handle: OpaquePointer
    private let mainQueue: OpaquePointer
    package let handleGuard = RDKafkaHandleGuard()
    private let running = Atomic<Bool>(true)
    private let pollThreadExited = DispatchSemaphore(value: 0)
    private let pollThread = Mutex<pthread_t?>(nil)
    private let errors = Mutex<[KafkaError]>([])
    /// Topic handles of the topics produced to (``announce(_:)``), destroyed by `close`.
    private let announcedTopics = Mutex<[String: OpaquePointer]>([:])
    private let name: String
    /// The poll thread's name, for Foundation and the kernel alike (which keeps 15 bytes).
    private var threadName: String { String("pw-rdk-\(name)".prefix(15)) }

    /// Errors kept for `drainErrors` (oldest dropped beyond this).
    static let maxKeptErrors = 100

    /// Final delivery handler for one produced message; retained across C as the message opaque.
    final class DeliveryBox {
        let completion: @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void
        init(_ completion: @escaping @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void) {
            self.completion = completion
        }
    }

    /// A producer-type client named `name` (thread name, logs) whose poll thread is running.
    /// Built as swift-kafka-client's `RDKafkaClient.makeClient`: the handle first, then this
    /// owner around it; no error path destroys a handle an owner holds.
    package static func makeClient(properties: [String: String], name: String) throws(KafkaError) -> RDKafkaEventClient {
        let config = try RDKafkaConfig.make(properties)
        config.configure { rd_kafka_conf_set_events($0, RD_KAFKA_EVENT_DR | RD_KAFKA_EVENT_ERROR | RD_KAFKA_EVENT_LOG) }
        let handle = try config.makeHandle(RD_KAFKA_PRODUCER)
        // Logs (queued since rd_kafka_new because of log.queue=true) go to the main queue.
        _ = rd_kafka_set_log_queue(handle, nil)
        guard let queue = rd_kafka_queue_get_main(handle) else {
            rd_kafka_destroy(handle)  // no owner holds it yet
            throw KafkaError(code: KafkaError.invalidArgument, message: "rd_kafka_queue_get_main failed")
        }
        return RDKafkaEventClient(handle: handle, mainQueue: queue, name: name)
    }

    /// Takes ownership of `handle` and its `mainQueue` and starts the poll thread.
    private init(handle: OpaquePointer, mainQueue: OpaquePointer, name: String) {
        self.handle = handle
        self.mainQueue = mainQueue
        self.name = name
        let thread = Thread { [self] in self.pollLoop() }
        thread.name = threadName
        thread.start()
    }

    // No deinit: the poll thread keeps this object alive until `close`, the one cleanup path,
    // which owners (`KafkaProducer`, `KafkaAdmin`, `KafkaMockCluster`) call from their own deinit.

    /// Whether the caller is this client's poll thread (i.e. inside a completion).
    private var isOnPollThread: Bool {
        guard let thread = pollThread.withLock({ $0 }) else { return false }
        return pthread_equal(thread, pthread_self()) != 0
    }

    private func pollLoop() {
        pollThread.withLock { $0 = pthread_self() }
        // Its own name in `top -H`, perf and scripts/thread-cpu.py (Foundation's `Thread.name`
        // does not reach the kernel here: the thread was listed as `pushworker`, the consumer
        // loop's name). PushHTTP's `nameCurrentThread` does the same for `pw-http-io`; PushKafka
        // does not depend on PushHTTP.
        try? threadName.write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
        while running.load(ordering: .acquiring) {
            if let event = rd_kafka_queue_poll(mainQueue, 100) {
                handle(event: event)
            }
        }
        pollThreadExited.signal()
    }

    private func handle(event: OpaquePointer) {
        defer { rd_kafka_event_destroy(event) }
        switch rd_kafka_event_type(event) {
        case RD_KAFKA_EVENT_DR:
            while let message = rd_kafka_event_message_next(event) {
                deliver(message)
            }
        case RD_KAFKA_EVENT_LOG:
            var facility: UnsafePointer<CChar>?
            var text: UnsafePointer<CChar>?
            var level: Int32 = 6
            if rd_kafka_event_log(event, &facility, &text, &level) == 0 {
                KafkaLogging.emit(level: level, facility: facility.map { String(cString: $0) } ?? "",
                                  message: text.map { String(cString: $0) } ?? "")
            }
        case RD_KAFKA_EVENT_ERROR:
            let code = rd_kafka_event_error(event).rawValue
            let reason = rd_kafka_event_error_string(event).map { String(cString: $0) } ?? ""
            var error = RDKafkaErrors.fromErrorReport(handle: rd_kafka_event_error_is_fatal(event) != 0 ? handle : nil,
                                                       code: code, reason: reason)
            if rd_kafka_event_error_is_fatal(event) != 0 && !error.isFatal {
                error = KafkaError(code: error.code, message: error.message, isFatal: true)
            }
            record(error)
        default:
            break
        }
    }

    private func deliver(_ report: UnsafePointer<rd_kafka_message_t>) {
        let message = report.pointee
        guard let opaque = message._private else { return }
        let target = Unmanaged<AnyObject>.fromOpaque(opaque).takeRetainedValue()
        if let handler = target as? KafkaDeliveryHandler {
            // Shared by many messages: nothing was kept per message, so a failed one is read
            // back from its report (valid until the event is destroyed) for the caller to retry.
            if message.err == RD_KAFKA_RESP_ERR_NO_ERROR { return handler.body(.delivered) }
            handler.body(.failed(deliveryError(message.err), Self.record(of: report)))
            return
        }
        guard let box = target as? DeliveryBox else { return }
        if message.err == RD_KAFKA_RESP_ERR_NO_ERROR {
            let topic = message.rkt.flatMap { rd_kafka_topic_name($0) }.map { String(cString: $0) } ?? ""
            box.completion(.success(KafkaDeliveryReport(topic: topic, partition: message.partition, offset: message.offset)))
        } else {
            box.completion(.failure(deliveryError(message.err)))
        }
    }

    private func deliveryError(_ code: rd_kafka_resp_err_t) -> KafkaError {
        let error = RDKafkaErrors.error(code, "delivery failed")
        guard code == RD_KAFKA_RESP_ERR__FATAL else { return error }
        return RDKafkaErrors.fromErrorReport(handle: handle, code: code.rawValue, reason: error.message)
    }

    /// What a delivery report says was produced: topic, key, value and headers, copied.
    static func record(of report: UnsafePointer<rd_kafka_message_t>) -> KafkaRecord {
        let message = report.pointee
        let topic = message.rkt.flatMap { rd_kafka_topic_name($0) }.map { String(cString: $0) } ?? ""
        let key = message.key.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: message.key_len)) }
        let value = message.payload.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: message.len)) } ?? []
        var headers: [KafkaHeader] = []
        var list: OpaquePointer?
        if rd_kafka_message_headers(report, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list {
            var index = 0
            var name: UnsafePointer<CChar>?
            var bytes: UnsafeRawPointer?
            var size = 0
            while rd_kafka_header_get_all(list, index, &name, &bytes, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
                headers.append(KafkaHeader(name: name.map { String(cString: $0) } ?? "",
                                           value: bytes.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: size)) }))
                index += 1
            }
        }
        return KafkaRecord(topic: topic, key: key, value: value, headers: headers)
    }

    func record(_ error: KafkaError) {
        KafkaLogging.emit(level: error.isFatal ? 2 : 3, facility: "ERROR", message: "\(name): \(error)")
        errors.withLock { list in
            list.append(error)
            if list.count > Self.maxKeptErrors { list.removeFirst(list.count - Self.maxKeptErrors) }
        }
    }

    func drainErrors() -> [KafkaError] {
        errors.withLock { list in
            defer { list.removeAll() }
            return list
        }
    }

    /// Makes librdkafka look up `topic`'s partition leaders now, the first time this client
    /// produces to it. `rd_kafka_produceva` creates an unknown topic without asking for its
    /// metadata: when the connection's own metadata request went out before the topic existed,
    /// the first record waits for librdkafka's 1 s topic scan (librdkafka issue #5032, fixed in
    /// 2.10.1; Debian ships 2.0). `rd_kafka_topic_new` asks at once. Called inside `handleGuard`.
    private func announce(_ topic: String) {
        announcedTopics.withLock { topics in
            guard topics[topic] == nil, let created = rd_kafka_topic_new(handle, topic, nil) else { return }
            topics[topic] = created
        }
    }

    /// Produces one message (to `partition`, or where the partitioner puts its key when nil);
    /// `completion` runs on the poll thread (or right here on a synchronous failure).
    func produce(topic: String, partition: Int32? = nil, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader],
                 completion: @escaping @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void) {
        guard handleGuard.enter() else {
            completion(.failure(KafkaError(code: KafkaError.destroyed, message: "producer is closed")))
            return
        }
        defer { handleGuard.leave() }
        announce(topic)
        var hdrs: OpaquePointer?
        if !headers.isEmpty {
            hdrs = rd_kafka_headers_new(headers.count)
            for header in headers {
                if let value = header.value {
                    _ = value.withUnsafeBytes { bytes in
                        // An empty non-null value needs a non-NULL pointer: NULL means a null value.
                        rd_kafka_header_add(hdrs, header.name, -1, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), bytes.count)
                    }
                } else {
                    _ = rd_kafka_header_add(hdrs, header.name, -1, nil, 0)
                }
            }
        }
        let opaque = Unmanaged.passRetained(DeliveryBox(completion)).toOpaque()
        // Key and value are copied by librdkafka (RD_KAFKA_MSG_F_COPY) before this returns.
        let failure: OpaquePointer? = value.withUnsafeBytes { valueBytes in
            if let key {
                return key.withUnsafeBytes { keyBytes in
                    pw_rdk_produce(handle, topic, partition ?? -1 /* RD_KAFKA_PARTITION_UA: the partitioner's choice */, keyBytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), keyBytes.count,
                                   valueBytes.baseAddress, valueBytes.count, hdrs, opaque)
                }
            }
            return pw_rdk_produce(handle, topic, partition ?? -1, nil, 0, valueBytes.baseAddress, valueBytes.count, hdrs, opaque)
        }
        if let failure {
            // On failure librdkafka neither owns the headers nor will report the message.
            if let hdrs { rd_kafka_headers_destroy(hdrs) }
            Unmanaged<DeliveryBox>.fromOpaque(opaque).release()
            completion(.failure(RDKafkaErrors.consume(failure, "produce to \(topic)")))
        }
    }

    /// Produces one message whose outcome goes to `handler`, shared by many messages: the
    /// message only retains it (no allocation here beyond librdkafka's copy of key and value).
    /// A refused message reaches `handler` right here, as a failure with its copy.
    func produce(topic: String, key: UnsafeRawBufferPointer?, value: UnsafeRawBufferPointer, handler: KafkaDeliveryHandler) {
        func refused(_ error: KafkaError) {
            handler.body(.failed(error, KafkaRecord(topic: topic, key: key.map { [UInt8]($0) }, value: [UInt8](value))))
        }
        guard handleGuard.enter() else { return refused(KafkaError(code: KafkaError.destroyed, message: "producer is closed")) }
        defer { handleGuard.leave() }
        announce(topic)
        let opaque = Unmanaged.passRetained(handler).toOpaque()
        // Key and value are copied by librdkafka (RD_KAFKA_MSG_F_COPY) before this returns.
        // An empty key needs a non-NULL pointer: NULL means no key.
        let keyPointer: UnsafeRawPointer? = if let key { key.baseAddress ?? UnsafeRawPointer(bitPattern: 1) } else { nil }
        let failure = pw_rdk_produce(handle, topic, -1 /* RD_KAFKA_PARTITION_UA: the partitioner's choice */,
                                     keyPointer, key?.count ?? 0, value.baseAddress, value.count, nil, opaque)
        if let failure {
            Unmanaged<KafkaDeliveryHandler>.fromOpaque(opaque).release()
            refused(RDKafkaErrors.consume(failure, "produce to \(topic)"))
        }
    }

    func flush(timeout: Duration) throws(KafkaError) {
        guard !isOnPollThread else {
            throw KafkaError(code: KafkaError.invalidArgument, message: "flush called from a delivery completion would wait for itself")
        }
        guard handleGuard.enter() else { return }
        defer { handleGuard.leave() }
        let err = rd_kafka_flush(handle, timeout.rdkafkaMilliseconds)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw RDKafkaErrors.error(err, "flush: \(rd_kafka_outq_len(handle)) messages still queued")
        }
    }

    /// Flushes up to `timeout`, purges what is left (its completions get `_PURGE_QUEUE` /
    /// `_PURGE_INFLIGHT`), stops the poll thread and destroys the handle. Idempotent.
    package func close(timeout: Duration) {
        if isOnPollThread {
            // Called from a completion: the poll thread cannot wait for itself.
            Thread { self.close(timeout: timeout) }.start()
            return
        }
        guard handleGuard.closeAndWait() else { return }
        _ = rd_kafka_flush(handle, timeout.rdkafkaMilliseconds)
        if rd_kafka_outq_len(handle) > 0 {
            _ = rd_kafka_purge(handle, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT)
            _ = rd_kafka_flush(handle, 1000)
        }
        running.store(false, ordering: .releasing)
        rd_kafka_queue_yield(mainQueue)
        pollThreadExited.wait()
        // Serve whatever is left so every completion runs exactly once.
        while let event = rd_kafka_queue_poll(mainQueue, 0) {
            handle(event: event)
        }
        rd_kafka_queue_destroy(mainQueue)
        for topic in announcedTopics.withLock({ Array($0.values) }) { rd_kafka_topic_destroy(topic) }
        rd_kafka_destroy(handle)
    }
}
