import Foundation
@testable import PushWorker
import PushEncoding
import Testing

@Suite("ResultRecord JSON")
struct ResultRecordTests {
    @Test("latencyMs is written with one decimal exactly as Double's description of the rounded value",
          arguments: [0, 0.04, 0.05, 0.1, 0.96, 1, 5, 12.34, 12.35, 99.95, 123.4, 1234.56, 59_999.99, 86_400_000, 123_456_789_012.3,
                      -0.5, -12.34, 5e13, 9.9e13])
    func tenthsMatchDescription(value: Double) {
        let expected = String(((value * 10).rounded()) / 10)
        #expect(String(decoding: ResultRecord.tenths(value), as: UTF8.self) == expected)
    }

    @Test("huge latencies fall back to Double's description; NaN and infinities are null (JSON has neither)")
    func tenthsEdges() {
        #expect(String(decoding: ResultRecord.tenths(1e20), as: UTF8.self) == String(1e20))
        #expect(String(decoding: ResultRecord.tenths(.nan), as: UTF8.self) == "null")
        #expect(String(decoding: ResultRecord.tenths(.infinity), as: UTF8.self) == "null")
        #expect(String(decoding: ResultRecord.tenths(-.infinity), as: UTF8.self) == "null")
    }

    @Test("a result with a latency is valid JSON carrying the rounded number")
    func resultJSON() throws {
        let record = ResultRecord(jobID: "j", appID: "a", campaignID: "c", subscriptionID: "s", platform: "ios", status: .sent,
                                  attempts: 1, latencyMs: 12.349, atUnixMs: 1_800_000_000_000)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(record.jsonBytes())) as? [String: Any])
        #expect(object["latencyMs"] as? Double == 12.3)
        let infinite = ResultRecord(jobID: "j", appID: "a", campaignID: "c", subscriptionID: "s", platform: "ios", status: .sent,
                                    attempts: 1, latencyMs: .infinity, atUnixMs: 1_800_000_000_000)
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(infinite.jsonBytes())) as? [String: Any])
        #expect(parsed["latencyMs"] is NSNull)
    }

    /// The result as the escaping path writes it, every member name a String literal (the
    /// writer calls ``ResultRecord/jsonBytes()`` made before its names became constants).
    private static func generic(_ r: ResultRecord) -> String {
        var writer = JSONWriter()
        writer.beginObject()
        writer.member("schemaVersion", 1)
        writer.member("jobId", r.jobID)
        writer.member("msgId", orNull: r.msgID)
        writer.member("appId", r.appID)
        writer.member("campaignId", r.campaignID)
        writer.member("variant", orNull: r.variant)
        writer.member("userId", orNull: r.userID)
        writer.member("subscriptionId", r.subscriptionID)
        writer.member("platform", r.platform)
        writer.member("status", r.status.rawValue)
        writer.member("reason", orNull: r.reason)
        writer.key("httpStatus"); writer.int(orNull: r.httpStatus)
        writer.member("providerMessageId", orNull: r.providerMessageID)
        writer.member("attempts", r.attempts)
        writer.key("latencyMs")
        if let latency = r.latencyMs, (latency * 10).rounded().isFinite {
            writer.raw(Array(String(((latency * 10).rounded()) / 10).utf8))
        } else {
            writer.null()
        }
        writer.key("at"); writer.timestamp(unixMillis: r.atUnixMs)
        writer.endObject()
        return writer.text
    }

    @Test("a result's JSON is byte for byte what string keys and Double's description write",
          arguments: [nil, 0, 12.349, -0.5, 99.95, 59_999.99, 1e20, .infinity, .nan] as [Double?])
    func sameAsGenericPath(latency: Double?) {
        let full = ResultRecord(jobID: "cmp:1", msgID: "AQJr\"x", appID: "app_demo", campaignID: "cmp", variant: "B", userID: "u\n1",
                                subscriptionID: "ios-1", platform: "ios", status: .sent, reason: nil, httpStatus: 200,
                                providerMessageID: "5A1B", attempts: 2, latencyMs: latency, atUnixMs: 1_800_000_000_123)
        #expect(full.json() == Self.generic(full))
        let empty = ResultRecord(jobID: "j", appID: "a", campaignID: "c", subscriptionID: "s", platform: "android", status: .rejected,
                                 reason: "no_credentials", attempts: 0, latencyMs: latency, atUnixMs: 0)
        #expect(empty.json() == Self.generic(empty))
    }
}
