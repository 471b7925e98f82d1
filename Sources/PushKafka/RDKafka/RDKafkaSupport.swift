import CRdKafka
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

func writeStderr(_ line: String) {
    var bytes = Array(line.utf8)
    bytes.withUnsafeMutableBytes { buffer in
        _ = write(2, buffer.baseAddress, buffer.count)
    }
}

/// Error conversion from librdkafka codes, done once here.
package enum RDKafkaErrors {
    static func name(_ code: Int32) -> String {
        String(cString: rd_kafka_err2name(rd_kafka_resp_err_t(rawValue: code)))
    }

    static func describe(_ code: Int32) -> String {
        String(cString: rd_kafka_err2str(rd_kafka_resp_err_t(rawValue: code)))
    }

    package static func error(_ err: rd_kafka_resp_err_t, _ context: String? = nil) -> KafkaError {
        let text = describe(err.rawValue)
        return KafkaError(code: err.rawValue, message: context.map { "\($0): \(text)" } ?? text)
    }

    /// Converts and destroys an `rd_kafka_error_t`.
    static func consume(_ error: OpaquePointer, _ context: String? = nil) -> KafkaError {
        defer { rd_kafka_error_destroy(error) }
        let code = rd_kafka_error_code(error).rawValue
        let text = rd_kafka_error_string(error).map { String(cString: $0) } ?? describe(code)
        return KafkaError(code: code, message: context.map { "\($0): \(text)" } ?? text,
                          isFatal: rd_kafka_error_is_fatal(error) != 0)
    }

    /// An error from an error callback/event; `_FATAL` is replaced by the underlying fatal error.
    static func fromErrorReport(handle: OpaquePointer?, code: Int32, reason: String) -> KafkaError {
        if code == RD_KAFKA_RESP_ERR__FATAL.rawValue, let handle {
            var buffer = [CChar](repeating: 0, count: 512)
            let underlying = rd_kafka_fatal_error(handle, &buffer, buffer.count)
            let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return KafkaError(code: underlying.rawValue, message: text.isEmpty ? reason : text, isFatal: true)
        }
        return KafkaError(code: code, message: reason)
    }
}

/// Owns one `rd_kafka_conf_t` until `rd_kafka_new` takes it over, which it does on success
/// only (librdkafka contract): built by ``make(_:)``, destroyed in `deinit` unless a handle
/// was made from it. No error path destroys it, so nothing can destroy it twice.
///
/// Not thread-safe: a local of the client factory that builds a handle from it.
final class RDKafkaConfig {
    /// nil once `rd_kafka_new` owns the configuration.
    private var pointer: OpaquePointer?

    /// A configuration with `properties` (set in name order, so the first refused one is
    /// reported deterministically) and the log callback.
    static func make(_ properties: [String: String]) throws(KafkaError) -> RDKafkaConfig {
        guard let pointer = rd_kafka_conf_new() else {
            throw KafkaError(code: KafkaError.invalidArgument, message: "rd_kafka_conf_new failed")
        }
        let config = RDKafkaConfig(pointer: pointer)
        for (name, value) in properties.sorted(by: { $0.key < $1.key }) {
            var errstr = [CChar](repeating: 0, count: 512)
            if rd_kafka_conf_set(pointer, name, value, &errstr, errstr.count) != RD_KAFKA_CONF_OK {
                throw KafkaError(code: KafkaError.invalidArgument, message: "property \(name): \(Self.text(errstr))")
            }
        }
        rd_kafka_conf_set_log_cb(pointer, rdkafkaLogCallback)
        return config
    }

    private init(pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        if let pointer { rd_kafka_conf_destroy(pointer) }
    }

    /// Runs `body` on the configuration (callbacks, opaque, events) before a handle is made from it.
    func configure(_ body: (OpaquePointer) -> Void) {
        if let pointer { body(pointer) }
    }

    /// `rd_kafka_new`: on success the handle owns the configuration (this object then holds
    /// nothing); on failure it is still this object's.
    func makeHandle(_ type: rd_kafka_type_t) throws(KafkaError) -> OpaquePointer {
        guard let pointer else {
            throw KafkaError(code: KafkaError.invalidArgument, message: "rd_kafka_new: configuration already used")
        }
        var errstr = [CChar](repeating: 0, count: 512)
        guard let handle = rd_kafka_new(type, pointer, &errstr, errstr.count) else {
            throw KafkaError(code: KafkaError.invalidArgument, message: "rd_kafka_new: \(Self.text(errstr))")
        }
        self.pointer = nil
        return handle
    }

    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// librdkafka's log callback. With `log.queue=true` it is only called from a poll call made by
/// our own threads, never spontaneously from librdkafka's internal threads.
let rdkafkaLogCallback: @convention(c) (OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Void = { _, level, facility, message in
    KafkaLogging.emit(level: level,
                      facility: facility.map { String(cString: $0) } ?? "",
                      message: message.map { String(cString: $0) } ?? "")
}

/// Topic-partition list conversions (`rd_kafka_topic_partition_list_t`).
enum RDKafkaTopicPartitionList {
    struct Element {
        var topicPartition: TopicPartition
        var offset: Int64
        var error: Int32
    }

    /// A new list; destroy with `rd_kafka_topic_partition_list_destroy`.
    static func make(_ entries: [(TopicPartition, Int64?)]) -> UnsafeMutablePointer<rd_kafka_topic_partition_list_t> {
        guard let list = rd_kafka_topic_partition_list_new(Int32(clamping: max(entries.count, 1))) else {
            fatalError("rd_kafka_topic_partition_list_new: out of memory")
        }
        for (tp, offset) in entries {
            if let element = rd_kafka_topic_partition_list_add(list, tp.topic, tp.partition), let offset {
                element.pointee.offset = offset
            }
        }
        return list
    }

    static func read(_ list: UnsafePointer<rd_kafka_topic_partition_list_t>) -> [Element] {
        let count = Int(list.pointee.cnt)
        guard count > 0, let elems = list.pointee.elems else { return [] }
        return (0..<count).map { i in
            let e = elems[i]
            return Element(topicPartition: TopicPartition(topic: e.topic.map { String(cString: $0) } ?? "", partition: e.partition),
                           offset: e.offset, error: e.err.rawValue)
        }
    }
}

/// Copies a consumed `rd_kafka_message_t` into a `KafkaMessage`.
enum RDKafkaMessageReader {
    /// A polled message: the record, or the consumer error it carries (librdkafka puts the
    /// error string in the payload), prefixed with `topic[partition]` when it names one.
    static func result(_ message: UnsafeMutablePointer<rd_kafka_message_t>) -> Result<KafkaMessage, KafkaError> {
        guard message.pointee.err != RD_KAFKA_RESP_ERR_NO_ERROR else { return .success(read(message)) }
        let code = message.pointee.err.rawValue
        var text = RDKafkaErrors.describe(code)
        if let payload = message.pointee.payload, message.pointee.len > 0 {
            text = String(decoding: UnsafeRawBufferPointer(start: payload, count: message.pointee.len), as: UTF8.self)
        }
        if let topic = message.pointee.rkt.flatMap({ rd_kafka_topic_name($0) }) {
            text = "\(String(cString: topic))[\(message.pointee.partition)]: \(text)"
        }
        return .failure(KafkaError(code: code, message: text))
    }

    static func read(_ message: UnsafeMutablePointer<rd_kafka_message_t>) -> KafkaMessage {
        let m = message.pointee
        let topic = m.rkt.flatMap { rd_kafka_topic_name($0) }.map { String(cString: $0) } ?? ""
        var key: [UInt8]?
        if let pointer = m.key {
            key = Array(UnsafeRawBufferPointer(start: pointer, count: m.key_len))
        }
        var value: [UInt8] = []
        if let pointer = m.payload, m.len > 0 {
            value = Array(UnsafeRawBufferPointer(start: pointer, count: m.len))
        }
        var headers: [KafkaHeader] = []
        var hdrs: OpaquePointer?
        if rd_kafka_message_headers(message, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR, let hdrs {
            var index = 0
            while true {
                var name: UnsafePointer<CChar>?
                var valuePointer: UnsafeRawPointer?
                var size = 0
                guard rd_kafka_header_get_all(hdrs, index, &name, &valuePointer, &size) == RD_KAFKA_RESP_ERR_NO_ERROR else { break }
                let headerValue = valuePointer.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) }
                headers.append(KafkaHeader(name: name.map { String(cString: $0) } ?? "", value: headerValue))
                index += 1
            }
        }
        var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let timestamp = rd_kafka_message_timestamp(message, &timestampType)
        return KafkaMessage(topic: topic, partition: m.partition, offset: m.offset, key: key, value: value,
                            headers: headers, timestampMs: timestamp >= 0 ? timestamp : nil)
    }
}

/// Guards a C handle against use after destroy: calls `enter`/`leave` around each use;
/// `closeAndWait` flips to closed and waits for current users to leave.
package final class RDKafkaHandleGuard: Sendable {
    private struct State { var closed = false; var users = 0 }
    private let state = Mutex(State())

    func enter() -> Bool {
        state.withLock { s in
            if s.closed { return false }
            s.users += 1
            return true
        }
    }

    func leave() { state.withLock { $0.users -= 1 } }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Returns false if it was already closed.
    func closeAndWait() -> Bool {
        let first = state.withLock { s in
            defer { s.closed = true }
            return !s.closed
        }
        guard first else { return false }
        while state.withLock({ $0.users }) > 0 { usleep(1000) }
        return true
    }

    package func with<T>(_ body: () -> T) -> T? {
        guard enter() else { return nil }
        defer { leave() }
        return body()
    }
}

extension Duration {
    /// Milliseconds, clamped to Int32, never negative.
    var rdkafkaMilliseconds: Int32 {
        let (seconds, attoseconds) = components
        let ms = seconds.multipliedReportingOverflow(by: 1000)
        if ms.overflow || seconds < 0 { return seconds < 0 ? 0 : Int32.max }
        let total = ms.partialValue + attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(0, total))
    }
}
