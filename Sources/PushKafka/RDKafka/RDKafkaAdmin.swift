import CRdKafka

/// Raw Admin API calls on an `RDKafkaEventClient`'s handle. Each call creates a dedicated
/// result queue (`rd_kafka_queue_new`), starts the request, blocks in `rd_kafka_queue_poll`
/// until its result event arrives (or `timeout` plus a margin passes), converts the result to
/// Swift values and destroys the event, the options, the request objects and the queue.
/// Blocking: call from a thread of your own.
enum RDKafkaAdmin {
    struct TopicResult {
        var topic: String
        var error: KafkaError?
    }

    struct ConfigEntry {
        var name: String
        var value: String?
        var isDefault: Bool
        var isReadOnly: Bool
        var isSensitive: Bool
        /// `rd_kafka_ConfigSource_t` name, e.g. `DYNAMIC_TOPIC_CONFIG`, `DEFAULT_CONFIG`.
        var source: String
    }

    struct ConfigResult {
        var topic: String
        var error: KafkaError?
        var entries: [ConfigEntry]
    }

    /// Full cluster metadata (all topics; never auto-creates a topic).
    static func metadata(_ handle: OpaquePointer, timeout: Duration) throws(KafkaError) -> KafkaClusterMetadata {
        var pointer: UnsafePointer<rd_kafka_metadata>?
        let err = rd_kafka_metadata(handle, 1, nil, &pointer, timeout.rdkafkaMilliseconds)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let pointer else {
            throw RDKafkaErrors.error(err, "metadata")
        }
        defer { rd_kafka_metadata_destroy(pointer) }
        let md = pointer.pointee
        var brokers: [KafkaBrokerMetadata] = []
        if md.broker_cnt > 0, let list = md.brokers {
            for index in 0..<Int(md.broker_cnt) {
                let broker = list[index]
                brokers.append(KafkaBrokerMetadata(id: broker.id, host: broker.host.map { String(cString: $0) } ?? "", port: Int(broker.port)))
            }
        }
        var topics: [KafkaTopicMetadata] = []
        if md.topic_cnt > 0, let list = md.topics {
            for index in 0..<Int(md.topic_cnt) {
                let topic = list[index]
                var replication = 0
                if topic.partition_cnt > 0, let partitions = topic.partitions {
                    replication = Int(partitions[0].replica_cnt)
                }
                let error = topic.err == RD_KAFKA_RESP_ERR_NO_ERROR ? nil : RDKafkaErrors.error(topic.err, "topic")
                topics.append(KafkaTopicMetadata(name: topic.topic.map { String(cString: $0) } ?? "",
                                                 partitions: Int(topic.partition_cnt), replicationFactor: replication, error: error))
            }
        }
        return KafkaClusterMetadata(brokers: brokers, topics: topics)
    }

    /// Admin options with a request timeout and, for creations, an operation timeout; `broker`
    /// forces the target broker (topic configs may be described/altered by any broker).
    private static func options(_ handle: OpaquePointer, _ op: rd_kafka_admin_op_t, timeout: Duration,
                                operationTimeout: Bool, broker: Int32?) throws(KafkaError) -> OpaquePointer {
        guard let options = rd_kafka_AdminOptions_new(handle, op) else {
            throw KafkaError(code: KafkaError.invalidArgument, message: "rd_kafka_AdminOptions_new failed")
        }
        var errstr = [CChar](repeating: 0, count: 256)
        var err = rd_kafka_AdminOptions_set_request_timeout(options, timeout.rdkafkaMilliseconds, &errstr, errstr.count)
        if err == RD_KAFKA_RESP_ERR_NO_ERROR && operationTimeout {
            err = rd_kafka_AdminOptions_set_operation_timeout(options, timeout.rdkafkaMilliseconds, &errstr, errstr.count)
        }
        if err == RD_KAFKA_RESP_ERR_NO_ERROR, let broker {
            err = rd_kafka_AdminOptions_set_broker(options, broker, &errstr, errstr.count)
        }
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            rd_kafka_AdminOptions_destroy(options)
            throw RDKafkaErrors.error(err, "admin options: \(errorText(errstr))")
        }
        return options
    }

    /// The signature the four `rd_kafka_<Request>` calls share: handle, request objects, their
    /// count, options, the result queue.
    private typealias Start = (OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?, Int, OpaquePointer?, OpaquePointer?) -> Void

    /// One Admin request: builds its options, a result queue, starts the request with `objects`,
    /// waits for the result event (librdkafka always posts one, on its own timeout at the
    /// latest; the 5 s margin only guards against a lost event), takes the typed result off the
    /// event (`result`; nil means an unexpected event type) and its per-object results
    /// (`items`), converts those with `read` while the event still owns them, then destroys the
    /// event, the queue and the options. `objects` stay the caller's to destroy.
    private static func request<Value>(_ handle: OpaquePointer, _ what: String, _ op: rd_kafka_admin_op_t, timeout: Duration,
                                       operationTimeout: Bool, broker: Int32?, objects: inout [OpaquePointer?], start: Start,
                                       result: (OpaquePointer?) -> OpaquePointer?,
                                       items: (OpaquePointer?, UnsafeMutablePointer<Int>?) -> UnsafeMutablePointer<OpaquePointer?>?,
                                       read: ([OpaquePointer]) -> Value) throws(KafkaError) -> Value {
        let options = try options(handle, op, timeout: timeout, operationTimeout: operationTimeout, broker: broker)
        defer { rd_kafka_AdminOptions_destroy(options) }
        guard let queue = rd_kafka_queue_new(handle) else {
            throw KafkaError(code: KafkaError.invalidArgument, message: "rd_kafka_queue_new failed")
        }
        defer { rd_kafka_queue_destroy(queue) }
        objects.withUnsafeMutableBufferPointer { start(handle, $0.baseAddress, $0.count, options, queue) }
        let wait = timeout + .seconds(5)
        guard let event = rd_kafka_queue_poll(queue, wait.rdkafkaMilliseconds) else {
            throw KafkaError(code: RD_KAFKA_RESP_ERR__TIMED_OUT.rawValue, message: "\(what): no result within \(wait)")
        }
        defer { rd_kafka_event_destroy(event) }
        let err = rd_kafka_event_error(event)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            let text = rd_kafka_event_error_string(event).map { String(cString: $0) } ?? RDKafkaErrors.describe(err.rawValue)
            throw KafkaError(code: err.rawValue, message: "\(what): \(text)")
        }
        guard let typed = result(event) else {
            throw KafkaError(code: KafkaError.invalidArgument, message: "\(what): unexpected event type \(rd_kafka_event_type(event))")
        }
        var count = 0
        guard let list = items(typed, &count), count > 0 else { return read([]) }
        return read((0..<count).compactMap { list[$0] })
    }

    /// The text librdkafka wrote into an `errstr` buffer.
    private static func errorText(_ errstr: [CChar]) -> String {
        String(decoding: errstr.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func topicResults(_ list: [OpaquePointer]) -> [TopicResult] {
        list.map { result in
            let name = rd_kafka_topic_result_name(result).map { String(cString: $0) } ?? ""
            let err = rd_kafka_topic_result_error(result)
            guard err != RD_KAFKA_RESP_ERR_NO_ERROR else { return TopicResult(topic: name, error: nil) }
            let text = rd_kafka_topic_result_error_string(result).map { String(cString: $0) } ?? RDKafkaErrors.describe(err.rawValue)
            return TopicResult(topic: name, error: KafkaError(code: err.rawValue, message: text))
        }
    }

    static func createTopics(_ handle: OpaquePointer, _ topics: [KafkaNewTopic], timeout: Duration) throws(KafkaError) -> [TopicResult] {
        guard !topics.isEmpty else { return [] }
        var newTopics: [OpaquePointer?] = []
        defer { for topic in newTopics { rd_kafka_NewTopic_destroy(topic) } }
        for topic in topics {
            var errstr = [CChar](repeating: 0, count: 256)
            guard let newTopic = rd_kafka_NewTopic_new(topic.name, Int32(clamping: topic.partitions),
                                                       Int32(clamping: topic.replicationFactor), &errstr, errstr.count) else {
                throw KafkaError(code: KafkaError.invalidArgument, message: "topic \(topic.name): \(errorText(errstr))")
            }
            newTopics.append(newTopic)
            for (name, value) in topic.config {
                let err = rd_kafka_NewTopic_set_config(newTopic, name, value)
                if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw RDKafkaErrors.error(err, "topic \(topic.name) config \(name)") }
            }
        }
        return try request(handle, "CreateTopics", RD_KAFKA_ADMIN_OP_CREATETOPICS, timeout: timeout, operationTimeout: true, broker: nil,
                           objects: &newTopics, start: rd_kafka_CreateTopics, result: rd_kafka_event_CreateTopics_result,
                           items: rd_kafka_CreateTopics_result_topics, read: topicResults)
    }

    static func createPartitions(_ handle: OpaquePointer, _ requests: [(topic: String, totalCount: Int)], timeout: Duration) throws(KafkaError) -> [TopicResult] {
        guard !requests.isEmpty else { return [] }
        var newPartitions: [OpaquePointer?] = []
        defer { for item in newPartitions { rd_kafka_NewPartitions_destroy(item) } }
        for request in requests {
            var errstr = [CChar](repeating: 0, count: 256)
            guard let item = rd_kafka_NewPartitions_new(request.topic, request.totalCount, &errstr, errstr.count) else {
                throw KafkaError(code: KafkaError.invalidArgument, message: "topic \(request.topic): \(errorText(errstr))")
            }
            newPartitions.append(item)
        }
        return try request(handle, "CreatePartitions", RD_KAFKA_ADMIN_OP_CREATEPARTITIONS, timeout: timeout, operationTimeout: true, broker: nil,
                           objects: &newPartitions, start: rd_kafka_CreatePartitions, result: rd_kafka_event_CreatePartitions_result,
                           items: rd_kafka_CreatePartitions_result_topics, read: topicResults)
    }

    private static func configResults(_ list: [OpaquePointer]) -> [ConfigResult] {
        list.map { resource in
            let name = rd_kafka_ConfigResource_name(resource).map { String(cString: $0) } ?? ""
            let err = rd_kafka_ConfigResource_error(resource)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR {
                let text = rd_kafka_ConfigResource_error_string(resource).map { String(cString: $0) } ?? RDKafkaErrors.describe(err.rawValue)
                return ConfigResult(topic: name, error: KafkaError(code: err.rawValue, message: text), entries: [])
            }
            var entryCount = 0
            var entries: [ConfigEntry] = []
            if let entryList = rd_kafka_ConfigResource_configs(resource, &entryCount), entryCount > 0 {
                for position in 0..<entryCount {
                    guard let entry = entryList[position] else { continue }
                    entries.append(ConfigEntry(
                        name: rd_kafka_ConfigEntry_name(entry).map { String(cString: $0) } ?? "",
                        value: rd_kafka_ConfigEntry_value(entry).map { String(cString: $0) },
                        isDefault: rd_kafka_ConfigEntry_is_default(entry) != 0,
                        isReadOnly: rd_kafka_ConfigEntry_is_read_only(entry) != 0,
                        isSensitive: rd_kafka_ConfigEntry_is_sensitive(entry) != 0,
                        source: rd_kafka_ConfigSource_name(rd_kafka_ConfigEntry_source(entry)).map { String(cString: $0) } ?? ""))
                }
            }
            return ConfigResult(topic: name, error: nil, entries: entries)
        }
    }

    private static func configResources(_ items: [(topic: String, config: [(String, String)])]) throws(KafkaError) -> [OpaquePointer?] {
        var resources: [OpaquePointer?] = []
        for item in items {
            guard let resource = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, item.topic) else {
                for created in resources { rd_kafka_ConfigResource_destroy(created) }
                throw KafkaError(code: KafkaError.invalidArgument, message: "rd_kafka_ConfigResource_new failed for \(item.topic)")
            }
            resources.append(resource)
            for (name, value) in item.config {
                let err = rd_kafka_ConfigResource_set_config(resource, name, value)
                if err != RD_KAFKA_RESP_ERR_NO_ERROR {
                    for created in resources { rd_kafka_ConfigResource_destroy(created) }
                    throw RDKafkaErrors.error(err, "topic \(item.topic) config \(name)")
                }
            }
        }
        return resources
    }

    static func describeTopicConfigs(_ handle: OpaquePointer, _ topics: [String], broker: Int32?, timeout: Duration) throws(KafkaError) -> [ConfigResult] {
        guard !topics.isEmpty else { return [] }
        var resources = try configResources(topics.map { ($0, []) })
        defer { for resource in resources { rd_kafka_ConfigResource_destroy(resource) } }
        return try request(handle, "DescribeConfigs", RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, timeout: timeout, operationTimeout: false, broker: broker,
                           objects: &resources, start: rd_kafka_DescribeConfigs, result: rd_kafka_event_DescribeConfigs_result,
                           items: rd_kafka_DescribeConfigs_result_resources, read: configResults)
    }

    static func alterTopicConfigs(_ handle: OpaquePointer, _ items: [(topic: String, config: [(String, String)])], broker: Int32?, timeout: Duration) throws(KafkaError) -> [TopicResult] {
        guard !items.isEmpty else { return [] }
        var resources = try configResources(items)
        defer { for resource in resources { rd_kafka_ConfigResource_destroy(resource) } }
        return try request(handle, "AlterConfigs", RD_KAFKA_ADMIN_OP_ALTERCONFIGS, timeout: timeout, operationTimeout: false, broker: broker,
                           objects: &resources, start: rd_kafka_AlterConfigs, result: rd_kafka_event_AlterConfigs_result,
                           items: rd_kafka_AlterConfigs_result_resources, read: { configResults($0).map { TopicResult(topic: $0.topic, error: $0.error) } })
    }
}
