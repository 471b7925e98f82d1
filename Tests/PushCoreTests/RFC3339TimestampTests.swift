import Foundation
import Testing
@testable import PushCore
import PushEncoding

/// The one RFC 3339 implementation: what the job decoder accepts, and what results, tokens,
/// events and log lines are written with (they had their own formatter until it moved here).
@Suite("RFC 3339 timestamps")
struct RFC3339TimestampTests {
    @Test("accepted forms: Z or z, numeric offsets, fractions of any length, t and space separators", arguments: [
        ("2026-11-30T10:00:00Z", 1_796_032_800.0),
        ("2026-11-30t10:00:00z", 1_796_032_800),
        ("2026-11-30 10:00:00Z", 1_796_032_800),
        ("2026-11-30T10:00:00+00:00", 1_796_032_800),
        ("2026-11-30T10:00:00-00:00", 1_796_032_800),
        ("2026-11-30T11:30:00+01:30", 1_796_032_800),
        ("2026-11-30T00:00:00-10:00", 1_796_032_800),
        ("2026-12-01T09:59:00+23:59", 1_796_032_800),
        ("2026-11-30T10:00:00.250Z", 1_796_032_800.25),
        ("2026-11-30T10:00:00.1Z", 1_796_032_800.1),
        ("2026-11-30T12:00:00.125+02:00", 1_796_032_800.125),
        ("2026-11-30T10:00:00.000000001Z", 1_796_032_800.000000001),
        ("2026-12-31T23:59:60Z", 1_798_761_600),
    ])
    func accepts(text: String, seconds: Double) throws {
        let date = try #require(RFC3339Timestamp.parse(text))
        #expect(abs(date.timeIntervalSince1970 - seconds) < 1e-6)
    }

    @Test("refused forms", arguments: [
        "2026-11-30T10:00:00", "2026-11-30T10:00:00+0200", "2026-11-30T10:00:00+02", "2026-11-30T10:00:00+24:00",
        "2026-11-30T10:00:00+02:60", "2026-11-30T10:00:00.Z", "2026-11-30T10:00:00,5Z", "2026-11-30T24:00:00Z",
        "2026-11-30T10:60:00Z", "2026-11-30T10:00:61Z", "2026-02-30T10:00:00Z", "26-11-30T10:00:00Z", " 2026-11-30T10:00:00Z",
        "2026-11-30T10:00:00Z ", "2026-11-30_10:00:00Z",
    ])
    func refuses(text: String) {
        #expect(RFC3339Timestamp.parse(text) == nil)
    }

    @Test("milliseconds since the epoch format as UTC, with or without the fraction", arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z", "1970-01-01T00:00:00Z"),
        (1_796_032_801_234, "2026-11-30T10:00:01.234Z", "2026-11-30T10:00:01Z"),
        (1_796_032_801_999, "2026-11-30T10:00:01.999Z", "2026-11-30T10:00:01Z"),
        (-1, "1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59Z"),
        (-86_400_000, "1969-12-31T00:00:00.000Z", "1969-12-31T00:00:00Z"),
        (951_782_400_000, "2000-02-29T00:00:00.000Z", "2000-02-29T00:00:00Z"),
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59Z"),
        (-62_135_596_800_000, "0001-01-01T00:00:00.000Z", "0001-01-01T00:00:00Z"),
        (-30_630_934_310_990, "0999-05-06T07:08:09.010Z", "0999-05-06T07:08:09Z"),
        (253_402_300_800_000, "1970-01-01T00:00:00.000Z", "1970-01-01T00:00:00Z"),
        (Int64.min, "1970-01-01T00:00:00.000Z", "1970-01-01T00:00:00Z"),
    ])
    func formatsMillis(millis: Int64, withFraction: String, withoutFraction: String) {
        #expect(RFC3339Timestamp.format(unixMillis: millis) == withFraction)
        #expect(RFC3339Timestamp.format(unixMillis: millis, milliseconds: false) == withoutFraction)
        var bytes: [UInt8] = [0x41]
        RFC3339Timestamp.append(unixMillis: millis, to: &bytes)
        #expect(bytes == [0x41] + Array(withFraction.utf8))
    }

    @Test("dates round to the nearest millisecond; absurd dates format as the epoch")
    func dates() {
        #expect(RFC3339Timestamp.format(Date(timeIntervalSince1970: 1_796_032_801.2346), milliseconds: true) == "2026-11-30T10:00:01.235Z")
        #expect(RFC3339Timestamp.format(Date(timeIntervalSince1970: 1_796_032_801.9996), milliseconds: true) == "2026-11-30T10:00:02.000Z")
        #expect(RFC3339Timestamp.unixMillis(Date(timeIntervalSince1970: -0.0004)) == 0)
        #expect(RFC3339Timestamp.format(Date(timeIntervalSince1970: .infinity)) == "1970-01-01T00:00:00Z")
        #expect(RFC3339Timestamp.format(Date.distantFuture) == "4001-01-01T00:00:00Z")
        #expect(RFC3339Timestamp.format(Date(timeIntervalSince1970: 1e12)) == "1970-01-01T00:00:00Z")
    }

    @Test("formatting and parsing agree for every millisecond form")
    func roundTrip() {
        for millis in stride(from: Int64(-50_000_000_000), to: 4_000_000_000_000, by: 86_399_937 * 13) {
            let text = RFC3339Timestamp.format(unixMillis: millis)
            #expect(RFC3339Timestamp.parse(text).map(RFC3339Timestamp.unixMillis) == millis)
        }
    }

    @Test("JSONWriter writes a timestamp as a JSON string")
    func writer() {
        var writer = JSONWriter()
        writer.beginArray()
        writer.timestamp(unixMillis: 1_796_032_801_234)
        writer.timestamp(unixMillis: 1_796_032_801_234, milliseconds: false)
        writer.endArray()
        #expect(writer.text == #"["2026-11-30T10:00:01.234Z","2026-11-30T10:00:01Z"]"#)
    }
}
