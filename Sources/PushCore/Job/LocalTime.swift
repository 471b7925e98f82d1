import Foundation

/// A wall-clock time of day, `HH:MM` (00:00 … 23:59), as minutes after midnight.
public struct ClockTime: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// 0 ..< 1440.
    public let minutes: Int

    public init?(minutes: Int) {
        guard (0..<1440).contains(minutes) else { return nil }
        self.minutes = minutes
    }

    /// `HH:MM` with two digits each; nil for anything else (`24:00`, `9:00`, `09:60`).
    public init?(parsing text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 5, bytes[2] == UInt8(ascii: ":"),
              let hour = Int(String(decoding: bytes[0..<2], as: UTF8.self)), let minute = Int(String(decoding: bytes[3..<5], as: UTF8.self)),
              bytes[0..<2].allSatisfy({ $0 >= 48 && $0 <= 57 }), bytes[3..<5].allSatisfy({ $0 >= 48 && $0 <= 57 }),
              hour < 24, minute < 60 else { return nil }
        self.minutes = hour * 60 + minute
    }

    public var description: String {
        let hour = minutes / 60, minute = minutes % 60
        return (hour < 10 ? "0" : "") + "\(hour):" + (minute < 10 ? "0" : "") + "\(minute)"
    }
}

/// A recipient's quiet hours (docs/local-time.md): from `start` (included) to `end` (excluded) in
/// its time zone, across midnight when `start` is later than `end`. `start` ≠ `end`.
public struct QuietHours: Sendable, Equatable, CustomStringConvertible {
    public let start: ClockTime
    public let end: ClockTime

    public init?(start: ClockTime, end: ClockTime) {
        guard start != end else { return nil }
        self.start = start; self.end = end
    }

    /// `HH:MM-HH:MM`.
    public var description: String { "\(start)-\(end)" }

    /// Whether `secondOfDay` (0 ..< 86 400, local) is inside.
    public func contains(secondOfDay: Int) -> Bool {
        let from = start.minutes * 60, to = end.minutes * 60
        return from < to ? (secondOfDay >= from && secondOfDay < to) : (secondOfDay >= from || secondOfDay < to)
    }

    /// A problem with `PUSHWORKER_QUIET_HOURS`.
    public struct ParseProblem: Error, Sendable, Equatable {
        public var message: String
    }

    /// `PUSHWORKER_QUIET_HOURS`: `app=HH:MM-HH:MM` entries, comma-separated (spaces around
    /// entries ignored; an app listed twice is a problem).
    public static func parseDefaults(_ text: String) -> Result<[String: QuietHours], ParseProblem> {
        var table: [String: QuietHours] = [:]
        for raw in text.split(separator: ",", omittingEmptySubsequences: true) {
            let entry = raw.trimmingCharacters(in: .whitespaces)
            if entry.isEmpty { continue }
            let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty else {
                return .failure(ParseProblem(message: "'\(entry)' is not app=HH:MM-HH:MM"))
            }
            let range = parts[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            guard range.count == 2, let start = ClockTime(parsing: range[0]), let end = ClockTime(parsing: range[1]) else {
                return .failure(ParseProblem(message: "'\(entry)': the hours must be HH:MM-HH:MM"))
            }
            guard let hours = QuietHours(start: start, end: end) else {
                return .failure(ParseProblem(message: "'\(entry)': start and end must differ"))
            }
            guard table[parts[0]] == nil else { return .failure(ParseProblem(message: "app '\(parts[0])' is listed twice")) }
            table[parts[0]] = hours
        }
        return .success(table)
    }

    /// The table as `PUSHWORKER_QUIET_HOURS` text, apps sorted.
    public static func describe(_ table: [String: QuietHours]) -> String {
        table.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
    }
}

/// Why a recipient waits (metric label of `pushworker_deferred_total`, docs/local-time.md).
public enum DeferralReason: String, Sendable, CaseIterable {
    case quietHours = "quiet_hours"
    case sendAtLocal = "send_at_local"
}

/// When one recipient may be sent, by its local time (docs/local-time.md).
public enum LocalTiming: Sendable, Equatable {
    case now
    case deferred(until: Date, reason: DeferralReason)
}

/// A job's local-time rules (docs/local-time.md): its quiet hours (its own, or its app's default
/// for a bulk job) and its local send time, with the zone of recipients that name none. Pure: the
/// caller passes the instant; the math only reads the zones' offsets (DST included).
public struct LocalTimeRules: Sendable, Equatable {
    public var quietHours: QuietHours?
    public var sendAtLocal: ClockTime?
    /// The job's `timezone`, else UTC.
    public var defaultZone: TimeZone

    /// A recipient whose local time is at most this long past `sendAtLocal` is sent at once
    /// (otherwise it waits for the next day's).
    public static let sendAtLocalWindowSeconds = 60.0

    public init(quietHours: QuietHours?, sendAtLocal: ClockTime?, defaultZone: TimeZone) {
        self.quietHours = quietHours; self.sendAtLocal = sendAtLocal; self.defaultZone = defaultZone
    }

    /// The rules of `job`, or nil when it has none (then no recipient's time is looked at):
    /// `quietHours` applies when the job sets it, or when the job is bulk and its app has a
    /// default in `defaults` (transactional jobs ignore the app's default).
    public static func of(_ job: FanOutJob, defaults: [String: QuietHours]) -> LocalTimeRules? {
        let quiet = job.quietHours ?? (job.lane == .bulk && !defaults.isEmpty ? defaults[job.appID] : nil)
        guard quiet != nil || job.sendAtLocal != nil else { return nil }
        let zone = job.timezone.flatMap(TimeZone.init(identifier:)) ?? TimeZone(identifier: "UTC") ?? TimeZone(secondsFromGMT: 0)!
        return LocalTimeRules(quietHours: quiet, sendAtLocal: job.sendAtLocal, defaultZone: zone)
    }

    /// When a recipient in `zone` may be sent at `now`: its local send time first (the next one,
    /// unless `now` is within ``sendAtLocalWindowSeconds`` after one), then the end of its
    /// quiet hours if `now` is inside them.
    public func timing(now: Date, zone: TimeZone) -> LocalTiming {
        if let sendAtLocal {
            let previous = Self.occurrence(of: sendAtLocal, onOrBefore: now, zone: zone)
            let since = now.timeIntervalSince(previous)
            if !(since >= 0 && since <= Self.sendAtLocalWindowSeconds) {
                let next = Self.occurrence(of: sendAtLocal, onOrAfter: now, zone: zone)
                if next > now { return .deferred(until: next, reason: .sendAtLocal) }
            }
        }
        if let quietHours, let end = Self.quietEnd(quietHours, now: now, zone: zone) {
            return .deferred(until: end, reason: .quietHours)
        }
        return .now
    }

    // MARK: zone math

    /// Seconds since 1970 of `now` read on `zone`'s wall clock.
    static func localSeconds(_ now: Date, _ zone: TimeZone) -> Double {
        now.timeIntervalSince1970 + Double(zone.secondsFromGMT(for: now))
    }

    /// The instant whose wall-clock reading in `zone` is `local` (seconds since 1970 on the wall
    /// clock). A reading a DST change skips lands after the gap; one it repeats is its first.
    static func instant(local: Double, _ zone: TimeZone) -> Date {
        let guess = local - Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: local)))
        let offset = zone.secondsFromGMT(for: Date(timeIntervalSince1970: guess))
        let first = local - Double(offset)
        // A repeated reading: the earlier offset's instant reads the same, and comes first.
        let earlier = local - Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: first - 3600)))
        if earlier < first, localSeconds(Date(timeIntervalSince1970: earlier), zone) == local {
            return Date(timeIntervalSince1970: earlier)
        }
        return Date(timeIntervalSince1970: first)
    }

    /// The first instant at or after `now` whose local time in `zone` is `time`.
    static func occurrence(of time: ClockTime, onOrAfter now: Date, zone: TimeZone) -> Date {
        let local = localSeconds(now, zone)
        let day = (local / 86_400).rounded(.down) * 86_400
        for offset in 0...2 {
            let candidate = instant(local: day + Double(offset * 86_400 + time.minutes * 60), zone)
            if candidate >= now { return candidate }
        }
        return now
    }

    /// The last instant at or before `now` whose local time in `zone` is `time`.
    static func occurrence(of time: ClockTime, onOrBefore now: Date, zone: TimeZone) -> Date {
        let local = localSeconds(now, zone)
        let day = (local / 86_400).rounded(.down) * 86_400
        for offset in 0...2 {
            let candidate = instant(local: day - Double(offset * 86_400) + Double(time.minutes * 60), zone)
            if candidate <= now { return candidate }
        }
        return now
    }

    /// When `now` is inside `hours` in `zone`: the instant they end; else nil.
    static func quietEnd(_ hours: QuietHours, now: Date, zone: TimeZone) -> Date? {
        let local = localSeconds(now, zone)
        let secondOfDay = Int(local - (local / 86_400).rounded(.down) * 86_400)
        guard hours.contains(secondOfDay: secondOfDay) else { return nil }
        return occurrence(of: hours.end, onOrAfter: now, zone: zone)
    }
}

/// What a job's local-time rules decide for one recipient (docs/local-time.md).
public enum LocalDecision: Sendable, Equatable {
    /// Sent at once.
    case now
    /// Deferred through the retry topic, due at `until`.
    case deferred(until: Date, reason: DeferralReason)
    /// Its `timezone` names no time zone: it ends `rejected`, reason `bad_timezone`.
    case badTimezone
    /// Its wait ends after the job's `expiresAt` or `sendBy`: it ends `expired` with `reason`.
    case expired(ExpiryReason)
}

/// One job's local-time rules at one instant, with the zones it met (each looked up once). The
/// worker's intake and `pushworker render` both decide through ``decision(timezone:)``.
public struct LocalTimeCheck: Sendable {
    public let rules: LocalTimeRules
    public let now: Date
    /// The earlier of the job's `expiresAt` and `sendBy` (Unix seconds), if any.
    public let deadline: Double?
    private var zones: [String: TimeZone?] = [:]
    private var timings: [String: LocalTiming] = [:]

    /// `now`: Unix seconds.
    public init(rules: LocalTimeRules, job: FanOutJob, now: Double) {
        self.rules = rules
        self.now = Date(timeIntervalSince1970: now)
        let limits = [job.expiresAt, job.sendBy].compactMap { $0?.timeIntervalSince1970 }
        deadline = limits.min()
    }

    /// The recipient's zone (nil name: the job's default); nil when the name is no time zone.
    public mutating func zone(_ name: String?) -> TimeZone? {
        guard let name else { return rules.defaultZone }
        if let known = zones[name] { return known }
        let zone = TimeZone(identifier: name)
        zones[name] = zone
        return zone
    }

    /// The rules' answer for `zone` now (the same for every recipient of the zone).
    public mutating func timing(zone: TimeZone) -> LocalTiming {
        if let known = timings[zone.identifier] { return known }
        let timing = rules.timing(now: now, zone: zone)
        timings[zone.identifier] = timing
        return timing
    }

    /// The decision for a recipient whose `timezone` is `name` (nil: the job's zone): a bad zone,
    /// sent now, deferred to the end of its wait, or expired when that end is past the deadline.
    public mutating func decision(timezone name: String?) -> LocalDecision {
        guard let zone = zone(name) else { return .badTimezone }
        guard case .deferred(let until, let reason) = timing(zone: zone) else { return .now }
        if let deadline, until.timeIntervalSince1970 > deadline {
            return .expired(reason == .quietHours ? .inQuietHours : .beforeSendAtLocal)
        }
        return .deferred(until: until, reason: reason)
    }
}
