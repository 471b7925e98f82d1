import Foundation
@testable import PushWorker
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
        var infinite = record
        infinite.latencyMs = .infinity
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(infinite.jsonBytes())) as? [String: Any])
        #expect(parsed["latencyMs"] is NSNull)
    }
}
