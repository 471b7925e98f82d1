import Foundation
import PushCore
import PushKafka
import PushEncoding

/// One record of the dead-letter topic (docs/reference/records.md): a job the worker could not
/// decode or validate (`error`, `source-topic`, `source-partition`, `source-offset`,
/// `failed-at`, maybe `truncated-from`), or a message Kafka refused for good (`error`,
/// `target-topic`, `failed-at`).
struct DeadLetterEntry {
    /// Headers the worker adds when it dead-letters; a replay drops them.
    static let deadLetterHeaders: Set<String> = ["error", "source-topic", "source-partition", "source-offset", "failed-at",
                                                 "truncated-from", "target-topic", "replayed-from", "replayed-at"]

    var topic: String
    var partition: Int32
    var offset: Int64
    var key: [UInt8]?
    var timestampMs: Int64?
    var headers: [KafkaHeader]
    var value: [UInt8]

    init(_ message: KafkaMessage) {
        topic = message.topic; partition = message.partition; offset = message.offset; key = message.key
        timestampMs = message.timestampMs; headers = message.headers; value = message.value
    }

    /// The last header `name`, as text.
    func header(_ name: String) -> String? {
        headers.last { $0.name == name }?.value.map { String(decoding: $0, as: UTF8.self) }
    }

    var keyText: String? { key.map { String(decoding: $0, as: UTF8.self) } }

    /// `push.dlq.v1[0]@12`.
    var position: String { "\(topic)[\(partition)]@\(offset)" }

    /// Where the message came from or was going: `push.jobs.v1[3]@4411`, or `push.results.v1`.
    var origin: String? {
        if let source = header("source-topic") {
            return "\(source)[\(header("source-partition") ?? "?")]@\(header("source-offset") ?? "?")"
        }
        return header("target-topic")
    }

    /// The topic the message belongs to: its source, else its target.
    var originTopic: String? { header("source-topic") ?? header("target-topic") }

    /// jobId and campaignId when the value is still a JSON object that has them.
    var identifiers: (jobID: String?, campaignID: String?) {
        guard let document = try? JSONParser.parse(value, maxDepth: 64) else { return (nil, nil) }
        return (document["jobId"]?.stringValue, document["campaignId"]?.stringValue)
    }

    /// The headers a replay keeps: the original message's.
    var originalHeaders: [KafkaHeader] { headers.filter { !Self.deadLetterHeaders.contains($0.name) } }

    /// Why this entry cannot go back onto the jobs topic, if it cannot.
    func replayRefusal(jobTopics: Set<String>) -> String? {
        if let size = header("truncated-from") { return "only the first \(value.count) of \(size) bytes were kept" }
        guard let origin = originTopic else { return "no source-topic or target-topic header: not a dead-lettered job" }
        guard jobTopics.contains(origin) else { return "a copy of a message for \(origin), not a job" }
        return nil
    }

    /// The text form: a header line, the error, the original headers.
    func lines() -> [String] {
        let ids = identifiers
        var first = position
        if let key = keyText { first += "  key=\(key)" }
        if let at = header("failed-at") { first += "  failed-at=\(at)" }
        if let origin { first += "  from=\(origin)" }
        first += "  bytes=\(value.count)"
        if let size = header("truncated-from") { first += " (truncated from \(size))" }
        if let job = ids.jobID { first += "  jobId=\(job)" }
        if let campaign = ids.campaignID { first += "  campaignId=\(campaign)" }
        var lines = [first]
        let error = header("error") ?? "(no error header)"
        // The decoder joins a job's problems with "; ": one per line reads better.
        for part in error.components(separatedBy: "; ") { lines.append("  error: \(part)") }
        for extra in originalHeaders { lines.append("  header \(extra.name)=\(extra.value.map { String(decoding: $0, as: UTF8.self) } ?? "<null>")") }
        return lines
    }

    /// One JSON object (`inspect dlq --json`); `value` with `includeValue`.
    func json(includeValue: Bool) -> String {
        let ids = identifiers
        return JSONWriter.object { w in
            w.member("topic", topic)
            w.member("partition", Int(partition))
            w.member("offset", Int(offset))
            w.member("key", orNull: keyText)
            if let timestampMs { w.key("timestamp"); w.timestamp(unixMillis: timestampMs) } else { w.key("timestamp"); w.null() }
            w.member("bytes", value.count)
            w.member("jobId", orNull: ids.jobID)
            w.member("campaignId", orNull: ids.campaignID)
            w.member("error", orNull: header("error"))
            w.member("headers") { h in
                for header in headers { h.member(header.name, orNull: header.value.map { String(decoding: $0, as: UTF8.self) }) }
            }
            if includeValue { w.member("value", String(decoding: value, as: UTF8.self)) }
        }.text
    }
}
