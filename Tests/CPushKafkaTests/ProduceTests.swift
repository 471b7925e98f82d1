import CPushKafka
import CRdKafka
import Synchronization
import Testing

/// `pw_rdk_produce` (CPushKafka) on its own: what it hands to `rd_kafka_produceva`, read back
/// from the delivery reports of librdkafka's mock cluster.
@Suite("CPushKafka: produce")
struct ProduceTests {
    /// The delivery reports received, as the callback copied them.
    struct Report: Sendable, Equatable {
        var error: Int32
        var partition: Int32
        var key: [UInt8]?
        var value: [UInt8]
        var opaque: Int
        var header: [UInt8]?
    }

    static let reports = Mutex<[Report]>([])

    static let deliveryReport: @convention(c) (OpaquePointer?, UnsafePointer<rd_kafka_message_t>?, UnsafeMutableRawPointer?) -> Void = { _, pointer, _ in
        // librdkafka finds a message's headers from the message's own address: pass it, not a copy.
        guard let pointer else { return }
        let message = pointer.pointee
        let key = message.key.map { Array(UnsafeRawBufferPointer(start: $0, count: message.key_len)) }
        let value = message.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: message.len)) } ?? []
        var header: [UInt8]?
        var headers: OpaquePointer?
        if rd_kafka_message_headers(pointer, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR, let headers {
            var data: UnsafeRawPointer?
            var size = 0
            if rd_kafka_header_get_last(headers, "h", &data, &size) == RD_KAFKA_RESP_ERR_NO_ERROR, let data {
                header = Array(UnsafeRawBufferPointer(start: data, count: size))
            }
        }
        let report = Report(error: Int32(message.err.rawValue), partition: message.partition, key: key, value: value,
                            opaque: Int(bitPattern: message._private), header: header)
        reports.withLock { $0.append(report) }
    }

    /// A producer on a mock cluster of one broker (`test.mock.num.brokers`), with `extra` set.
    static func producer(_ extra: [(String, String)] = []) throws -> OpaquePointer {
        let conf = rd_kafka_conf_new()
        var error = [CChar](repeating: 0, count: 256)
        func text(_ error: [CChar]) -> String { String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        for (name, value) in [("test.mock.num.brokers", "1"), ("log_level", "0")] + extra {
            guard rd_kafka_conf_set(conf, name, value, &error, error.count) == RD_KAFKA_CONF_OK else {
                throw ProduceError(text(error))
            }
        }
        rd_kafka_conf_set_dr_msg_cb(conf, deliveryReport)
        guard let producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, &error, error.count) else { throw ProduceError(text(error)) }
        return producer
    }

    struct ProduceError: Error { let message: String; init(_ message: String) { self.message = message } }

    @Test("topic, partition, key, value, header and opaque reach the broker; a nil key and the partitioner's choice too")
    func produces() throws {
        Self.reports.withLock { $0 = [] }
        let producer = try Self.producer()
        defer { rd_kafka_destroy(producer) }
        let headers = rd_kafka_headers_new(1)
        #expect(rd_kafka_header_add(headers, "h", -1, "v1", 2) == RD_KAFKA_RESP_ERR_NO_ERROR)
        let key = Array("key-1".utf8), value = Array("value-1".utf8)
        let first = key.withUnsafeBytes { keyBytes in
            value.withUnsafeBytes { valueBytes in
                pw_rdk_produce(producer, "t", 0, keyBytes.baseAddress, keyBytes.count, valueBytes.baseAddress, valueBytes.count,
                               headers, UnsafeMutableRawPointer(bitPattern: 7))
            }
        }
        #expect(first == nil, "queued; librdkafka owns the headers now")
        let second = Array("value-2".utf8).withUnsafeBytes {
            pw_rdk_produce(producer, "t", -1, nil, 0, $0.baseAddress, $0.count, nil, UnsafeMutableRawPointer(bitPattern: 9))
        }
        #expect(second == nil)
        #expect(rd_kafka_flush(producer, 10_000) == RD_KAFKA_RESP_ERR_NO_ERROR)
        let reports = Self.reports.withLock { $0 }.sorted { $0.opaque < $1.opaque }
        #expect(reports.count == 2)
        #expect(reports.first == Report(error: 0, partition: 0, key: key, value: value, opaque: 7, header: Array("v1".utf8)))
        let chosen = try #require(reports.last)
        #expect(chosen == Report(error: 0, partition: chosen.partition, key: nil, value: Array("value-2".utf8), opaque: 9, header: nil))
        #expect(chosen.partition >= 0, "the partitioner chose one")
    }

    @Test("a refused message returns the error and leaves the headers to the caller")
    func refused() throws {
        let producer = try Self.producer([("message.max.bytes", "1000")])
        defer { rd_kafka_destroy(producer) }
        let headers = rd_kafka_headers_new(1)
        #expect(rd_kafka_header_add(headers, "h", -1, "v", 1) == RD_KAFKA_RESP_ERR_NO_ERROR)
        let value = [UInt8](repeating: 0x61, count: 5000)
        let error = value.withUnsafeBytes {
            pw_rdk_produce(producer, "t", -1, nil, 0, $0.baseAddress, $0.count, headers, nil)
        }
        let refusal = try #require(error)
        #expect(rd_kafka_error_code(refusal) == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE)
        rd_kafka_error_destroy(refusal)
        rd_kafka_headers_destroy(headers)
        #expect(rd_kafka_outq_len(producer) == 0)
    }
}
