import Foundation
import PushCore
import PushEncoding
import Testing

/// The zone math of docs/local-time.md with an injected instant (no clock read).
@Suite("LocalTimeRules")
struct LocalTimeRulesTests {
    static func date(_ text: String) -> Date { RFC3339Timestamp.parse(text)! }
    static func zone(_ name: String) -> TimeZone { TimeZone(identifier: name)! }
    static let quiet = QuietHours(start: ClockTime(parsing: "22:00")!, end: ClockTime(parsing: "08:00")!)!

    @Test("HH:MM parsing and quiet-hours parsing of PUSHWORKER_QUIET_HOURS")
    func parsing() {
        #expect(ClockTime(parsing: "00:00")?.minutes == 0)
        #expect(ClockTime(parsing: "23:59")?.minutes == 1439)
        for bad in ["24:00", "9:00", "09:60", "0900", "", "aa:bb", "09:0a", "+9:00"] { #expect(ClockTime(parsing: bad) == nil, "\(bad)") }
        #expect(QuietHours.parseDefaults("app_shop=22:00-08:00, app_news=23:00-07:00") == .success([
            "app_shop": Self.quiet, "app_news": QuietHours(start: ClockTime(parsing: "23:00")!, end: ClockTime(parsing: "07:00")!)!]))
        #expect(QuietHours.parseDefaults("") == .success([:]))
        for bad in ["app_shop", "=22:00-08:00", "a=22:00", "a=22:00-22:00", "a=1-2", "a=22:00-08:00,a=23:00-07:00"] {
            if case .success = QuietHours.parseDefaults(bad) { Issue.record("\(bad) accepted") }
        }
        #expect(QuietHours.describe(["b": Self.quiet, "a": Self.quiet]) == "a=22:00-08:00,b=22:00-08:00")
    }

    @Test("inside quiet hours (across midnight or not) the recipient waits until their end in its zone")
    func quietHours() {
        let rules = LocalTimeRules(quietHours: Self.quiet, sendAtLocal: nil, defaultZone: Self.zone("UTC"))
        #expect(rules.timing(now: Self.date("2027-01-15T23:00:00Z"), zone: Self.zone("Europe/Paris"))
                == .deferred(until: Self.date("2027-01-16T07:00:00Z"), reason: .quietHours))
        #expect(rules.timing(now: Self.date("2027-01-15T06:59:59Z"), zone: Self.zone("Europe/Paris"))
                == .deferred(until: Self.date("2027-01-15T07:00:00Z"), reason: .quietHours))
        #expect(rules.timing(now: Self.date("2027-01-15T07:00:00Z"), zone: Self.zone("Europe/Paris")) == .now, "the end is not quiet")
        #expect(rules.timing(now: Self.date("2027-01-15T21:00:00Z"), zone: Self.zone("Europe/Paris")) == .deferred(
            until: Self.date("2027-01-16T07:00:00Z"), reason: .quietHours), "22:00 Paris is the start")
        let day = LocalTimeRules(quietHours: QuietHours(start: ClockTime(parsing: "12:00")!, end: ClockTime(parsing: "14:00")!),
                                 sendAtLocal: nil, defaultZone: Self.zone("UTC"))
        #expect(day.timing(now: Self.date("2027-01-15T13:00:00Z"), zone: Self.zone("UTC"))
                == .deferred(until: Self.date("2027-01-15T14:00:00Z"), reason: .quietHours))
        #expect(day.timing(now: Self.date("2027-01-15T15:00:00Z"), zone: Self.zone("UTC")) == .now)
    }

    @Test("sendAtLocal: the next such time in the zone; up to a minute after it counts as now")
    func sendAtLocal() {
        let rules = LocalTimeRules(quietHours: nil, sendAtLocal: ClockTime(parsing: "09:00"), defaultZone: Self.zone("UTC"))
        #expect(rules.timing(now: Self.date("2027-01-15T08:00:00Z"), zone: Self.zone("UTC"))
                == .deferred(until: Self.date("2027-01-15T09:00:00Z"), reason: .sendAtLocal))
        #expect(rules.timing(now: Self.date("2027-01-15T09:00:30Z"), zone: Self.zone("UTC")) == .now)
        #expect(rules.timing(now: Self.date("2027-01-15T09:01:00Z"), zone: Self.zone("UTC")) == .now)
        #expect(rules.timing(now: Self.date("2027-01-15T09:01:01Z"), zone: Self.zone("UTC"))
                == .deferred(until: Self.date("2027-01-16T09:00:00Z"), reason: .sendAtLocal))
        #expect(rules.timing(now: Self.date("2027-01-15T23:00:00Z"), zone: Self.zone("Asia/Kolkata"))
                == .deferred(until: Self.date("2027-01-16T03:30:00Z"), reason: .sendAtLocal), "a half-hour zone")
    }

    @Test("DST: the wall-clock time holds across a change; a skipped time lands after the gap; a repeated one is its first")
    func daylightSaving() {
        let paris = Self.zone("Europe/Paris")
        let rules = LocalTimeRules(quietHours: nil, sendAtLocal: ClockTime(parsing: "09:00"), defaultZone: paris)
        // 2027-03-28: Paris goes from UTC+1 to UTC+2 at 02:00 local.
        #expect(rules.timing(now: Self.date("2027-03-27T20:00:00Z"), zone: paris)
                == .deferred(until: Self.date("2027-03-28T07:00:00Z"), reason: .sendAtLocal))
        let skipped = LocalTimeRules(quietHours: nil, sendAtLocal: ClockTime(parsing: "02:30"), defaultZone: paris)
        guard case .deferred(let until, _) = skipped.timing(now: Self.date("2027-03-27T20:00:00Z"), zone: paris) else {
            Issue.record("not deferred"); return
        }
        #expect(until >= Self.date("2027-03-28T01:00:00Z") && until <= Self.date("2027-03-28T01:30:00Z"))
        // 2027-10-31: 02:30 happens twice (UTC+2 then UTC+1): the first.
        let repeated = LocalTimeRules(quietHours: nil, sendAtLocal: ClockTime(parsing: "02:30"), defaultZone: paris)
        #expect(repeated.timing(now: Self.date("2027-10-30T20:00:00Z"), zone: paris)
                == .deferred(until: Self.date("2027-10-31T00:30:00Z"), reason: .sendAtLocal))
    }

    @Test("send time first, then quiet hours; a job without rules has none")
    func order() throws {
        let both = LocalTimeRules(quietHours: Self.quiet, sendAtLocal: ClockTime(parsing: "23:00"), defaultZone: Self.zone("UTC"))
        #expect(both.timing(now: Self.date("2027-01-15T23:00:10Z"), zone: Self.zone("UTC"))
                == .deferred(until: Self.date("2027-01-16T08:00:00Z"), reason: .quietHours))
        let job = try JobFixtures.decode(JobFixtures.minimal)
        #expect(LocalTimeRules.of(job, defaults: [:]) == nil)
        #expect(LocalTimeRules.of(job, defaults: ["other": Self.quiet]) == nil)
        #expect(LocalTimeRules.of(job, defaults: ["app_demo": Self.quiet])?.quietHours == Self.quiet)
    }

    @Test("a recipient's decision: its zone (or the job's), now, deferred, bad_timezone, expired past sendBy")
    func decision() throws {
        let job = try JobFixtures.decode(JobFixtures.minimal)
        let rules = LocalTimeRules(quietHours: Self.quiet, sendAtLocal: nil, defaultZone: Self.zone("Asia/Tokyo"))
        let now = Self.date("2027-01-15T23:00:00Z")  // 00:00 in Paris, 08:00 in Tokyo, 18:00 in New York
        var check = LocalTimeCheck(rules: rules, job: job, now: now.timeIntervalSince1970)
        #expect(check.decision(timezone: "Europe/Paris") == .deferred(until: Self.date("2027-01-16T07:00:00Z"), reason: .quietHours))
        #expect(check.decision(timezone: nil) == .now, "the job's zone: 08:00 in Tokyo is the end")
        #expect(check.decision(timezone: "America/New_York") == .now)
        #expect(check.decision(timezone: "Mars/Olympus") == .badTimezone)
        #expect(check.decision(timezone: "Mars/Olympus") == .badTimezone, "a looked-up name answers the same")
        let expiring = try JobFixtures.decode(JobFixtures.minimal.replacingOccurrences(
            of: #""campaignId": "c1","#, with: #""campaignId": "c1", "sendBy": "2027-01-16T06:59:00Z","#))
        var late = LocalTimeCheck(rules: rules, job: expiring, now: now.timeIntervalSince1970)
        #expect(late.decision(timezone: "Europe/Paris") == .expired(.inQuietHours))
        #expect(late.decision(timezone: "America/New_York") == .now)
        let sendAt = LocalTimeRules(quietHours: nil, sendAtLocal: ClockTime(parsing: "09:00"), defaultZone: Self.zone("UTC"))
        var send = LocalTimeCheck(rules: sendAt, job: expiring, now: now.timeIntervalSince1970)
        #expect(send.decision(timezone: "Europe/Paris") == .expired(.beforeSendAtLocal), "09:00 Paris is 08:00Z, after sendBy")
        #expect(send.decision(timezone: "Asia/Tokyo") == .deferred(until: Self.date("2027-01-16T00:00:00Z"), reason: .sendAtLocal))
    }
}
