import CRdKafka

/// Asks librdkafka itself whether properties are usable, without connecting anywhere: each
/// property is set on a scratch `rd_kafka_conf_t` (unknown names and bad values are refused
/// there), then, when all are accepted, a client of the given type is created from them with
/// no bootstrap servers (settings that only fail together — a SASL mechanism this build
/// lacks, an unreadable `ssl.ca.location` — fail here) and destroyed at once.
///
/// Not thread-safe per call; every call owns its scratch objects.
enum RDKafkaConfigProbe {
    /// `(property, librdkafka's message)` for each refused property; `(nil, message)` when only
    /// the client creation failed.
    static func problems(_ properties: [String: String], type: rd_kafka_type_t) -> [(property: String?, message: String)] {
        var problems: [(String?, String)] = []
        for (name, value) in properties.sorted(by: { $0.key < $1.key }) {
            guard let conf = rd_kafka_conf_new() else { return [(nil, "rd_kafka_conf_new failed")] }
            defer { rd_kafka_conf_destroy(conf) }
            var errstr = [CChar](repeating: 0, count: 512)
            if rd_kafka_conf_set(conf, name, value, &errstr, errstr.count) != RD_KAFKA_CONF_OK {
                problems.append((name, text(errstr)))
            }
        }
        guard problems.isEmpty else { return problems }
        guard let conf = rd_kafka_conf_new() else { return [(nil, "rd_kafka_conf_new failed")] }
        var owned: OpaquePointer? = conf  // rd_kafka_new takes it over on success only
        defer { if let owned { rd_kafka_conf_destroy(owned) } }
        var errstr = [CChar](repeating: 0, count: 512)
        for (name, value) in properties where name != "bootstrap.servers" && name != "metadata.broker.list" {
            guard rd_kafka_conf_set(conf, name, value, &errstr, errstr.count) == RD_KAFKA_CONF_OK else {
                return [(name, text(errstr))]
            }
        }
        rd_kafka_conf_set_log_cb(conf, silentLog)
        guard let handle = rd_kafka_new(type, conf, &errstr, errstr.count) else { return [(nil, text(errstr))] }
        owned = nil
        rd_kafka_destroy(handle)
        return []
    }

    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The scratch client's log lines (e.g. "consumer property ignored by this producer") are not news.
private let silentLog: @convention(c) (OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Void = { _, _, _, _ in }
