import Foundation
import PushCore
import PushEncoding
import Testing

/// The job fields of docs/lanes.md and docs/local-time.md: `lane`, `quietHours`, `sendAtLocal`,
/// `timezone`, and the recipients' `timezone`.
@Suite("Job lane and local-time fields")
struct LaneAndLocalTimeJobTests {
    static func decode(_ bytes: [UInt8]) throws -> FanOutJob { try JobDecoder.decode(bytes) }

    static func problems(_ bytes: [UInt8]) -> [String] {
        do { _ = try JobDecoder.decode(bytes); return [] } catch { return error.problems.map(\.description) }
    }

    @Test("lane defaults to bulk; transactional and bulk are read; anything else is a job error")
    func lane() throws {
        #expect(try JobFixtures.decode(JobFixtures.minimal).lane == .bulk)
        #expect(try Self.decode(JobFixtures.edit(["lane"], #""transactional""#)).lane == .transactional)
        #expect(try Self.decode(JobFixtures.edit(["lane"], #""bulk""#)).lane == .bulk)
        #expect(Self.problems(JobFixtures.edit(["lane"], #""urgent""#)) == [#"$.lane: must be "transactional" or "bulk""#])
        #expect(Self.problems(JobFixtures.edit(["lane"], "3")) == ["$.lane: expected a string, got number"])
    }

    @Test("quietHours, sendAtLocal and timezone are read; bad values are job errors listed together")
    func localTimeFields() throws {
        var text = JobFixtures.edit(["quietHours"], #"{"start": "22:00", "end": "08:00"}"#)
        text = JobFixtures.edit(["sendAtLocal"], #""09:30""#, in: String(decoding: text, as: UTF8.self))
        text = JobFixtures.edit(["timezone"], #""Europe/Paris""#, in: String(decoding: text, as: UTF8.self))
        let job = try Self.decode(text)
        #expect(job.quietHours?.description == "22:00-08:00")
        #expect(job.sendAtLocal?.description == "09:30")
        #expect(job.timezone == "Europe/Paris")

        #expect(Self.problems(JobFixtures.edit(["quietHours"], #"{"start": "22:00"}"#)) == ["$.quietHours.end: required"])
        #expect(Self.problems(JobFixtures.edit(["quietHours"], #"{"start": "24:00", "end": "8:00"}"#))
                == ["$.quietHours.start: must be HH:MM (00:00 to 23:59)", "$.quietHours.end: must be HH:MM (00:00 to 23:59)"])
        #expect(Self.problems(JobFixtures.edit(["quietHours"], #"{"start": "22:00", "end": "22:00"}"#)) == ["$.quietHours.end: must differ from start"])
        #expect(Self.problems(JobFixtures.edit(["quietHours"], #""22:00-08:00""#)) == ["$.quietHours: expected an object, got string"])
        #expect(Self.problems(JobFixtures.edit(["sendAtLocal"], #""9am""#)) == ["$.sendAtLocal: must be HH:MM (00:00 to 23:59)"])
        #expect(Self.problems(JobFixtures.edit(["timezone"], #""Mars/Olympus""#))
                == ["$.timezone: not an IANA time zone name (e.g. Europe/Paris)"])
    }

    @Test("a recipient's timezone is kept as given (checked only when the job has local-time rules) and written back")
    func recipientTimezone() throws {
        let job = try Self.decode(JobFixtures.edit(["recipients", "0", "timezone"], #""Asia/Tokyo""#))
        #expect(job.recipients[0].timezone == "Asia/Tokyo")
        let bad = try Self.decode(JobFixtures.edit(["recipients", "0", "timezone"], #""not a zone""#))
        #expect(bad.recipients[0].timezone == "not a zone")
        let wrongType = try Self.decode(JobFixtures.edit(["recipients", "0", "timezone"], "7"))
        #expect(wrongType.recipients[0].timezone == nil)
        var built = Recipient(subscriptionID: "s", platformName: "ios")
        built.timezone = "Europe/Paris"
        #expect(built.json.objectValue?["timezone"] == .string("Europe/Paris"))
    }

    @Test("encoded(without:) leaves the named members out and keeps the others")
    func encodedWithout() throws {
        let job = try Self.decode(JobFixtures.edit(["sendAtLocal"], #""09:00""#))
        let bytes = job.encoded(recipients: job.recipients, attempt: 1, notBefore: nil, without: ["sendAtLocal"])
        let again = try JobDecoder.decode(bytes)
        #expect(again.sendAtLocal == nil)
        #expect(again.recipients.count == 1)
        #expect(try JobDecoder.decode(job.encoded(recipients: job.recipients)).sendAtLocal?.description == "09:00")
    }
}
