import Foundation

/// RFC 3339 §5.6 `date-time` parsing and UTC formatting, without `DateFormatter` (no locale, no
/// allocation-heavy formatter, no shared mutable state): the one implementation of the code
/// base (jobs' `createdAt`/`expiresAt`/`notBefore`, results' and tokens' `at`, events, log lines,
/// the `failed-at` DLQ header, bench reports).
public enum RFC3339Timestamp {
    /// Parses `2026-11-30T10:00:00Z`, `2026-11-30T10:00:00.250+02:00`, `t`/`z` in lower case
    /// and a space instead of `T` (RFC 3339 §5.6 note). Leap second `:60` is accepted.
    public static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20 else { return nil }
        var index = 0
        func number(_ digits: Int) -> Int? {
            guard index + digits <= bytes.count else { return nil }
            var value = 0
            for _ in 0..<digits {
                let byte = bytes[index]
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
                index += 1
            }
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
              expect("Tt "), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
              let second = number(2) else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month),
              hour <= 23, minute <= 59, second <= 60 else { return nil }
        var fraction = 0.0
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, bytes[index] >= 0x30 && bytes[index] <= 0x39 {
                fraction += Double(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        var offsetSeconds = 0
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let offsetHours = number(2), expect(":"), let offsetMinutes = number(2),
                  offsetHours <= 23, offsetMinutes <= 59 else { return nil }
            offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
        default:
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// Formats as UTC `YYYY-MM-DDTHH:MM:SSZ`, or with `.mmm` when `milliseconds` is true (the
    /// instant rounded to the nearest millisecond first).
    public static func format(_ date: Date, milliseconds: Bool = false) -> String {
        format(unixMillis: unixMillis(date), milliseconds: milliseconds)
    }

    /// Formats milliseconds since the Unix epoch as UTC, `.mmm` included unless `milliseconds`
    /// is false (then the second is truncated: `…:01.999Z` becomes `…:01Z`).
    public static func format(unixMillis: Int64, milliseconds: Bool = true) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        append(unixMillis: unixMillis, milliseconds: milliseconds, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends ``format(unixMillis:milliseconds:)``'s text as ASCII bytes, without intermediate
    /// strings (the per-result path: ``JSONWriter/timestamp(unixMillis:milliseconds:)``).
    /// Instants outside the years 0001…9999 are written as the epoch.
    public static func append(unixMillis: Int64, milliseconds: Bool = true, to out: inout [UInt8]) {
        let inRange = unixMillis >= -62_135_596_800_000 && unixMillis < 253_402_300_800_000
        let total = inRange ? unixMillis : 0
        var seconds = total / 1000
        var millisecond = Int(total % 1000)
        if millisecond < 0 { millisecond += 1000; seconds -= 1 }
        var days = Int(seconds / 86_400)
        var secondOfDay = Int(seconds % 86_400)
        if secondOfDay < 0 { secondOfDay += 86_400; days -= 1 }
        let (year, month, day) = civilFromDays(days)
        let hour = secondOfDay / 3600, minute = secondOfDay / 60 % 60, second = secondOfDay % 60
        // One reservation, the digits written by constant divisions (not appended byte by byte,
        // each append checking capacity and uniqueness: every delivery result carries timestamps).
        out.append(addingCapacity: 24) { text in
            text.append(digit(year / 1000)); text.append(digit(year / 100 % 10))
            text.append(digit(year / 10 % 10)); text.append(digit(year % 10))
            text.append(UInt8(ascii: "-"))
            text.append(digit(month / 10)); text.append(digit(month % 10))
            text.append(UInt8(ascii: "-"))
            text.append(digit(day / 10)); text.append(digit(day % 10))
            text.append(UInt8(ascii: "T"))
            text.append(digit(hour / 10)); text.append(digit(hour % 10))
            text.append(UInt8(ascii: ":"))
            text.append(digit(minute / 10)); text.append(digit(minute % 10))
            text.append(UInt8(ascii: ":"))
            text.append(digit(second / 10)); text.append(digit(second % 10))
            if milliseconds {
                text.append(UInt8(ascii: "."))
                text.append(digit(millisecond / 100)); text.append(digit(millisecond / 10 % 10)); text.append(digit(millisecond % 10))
            }
            text.append(UInt8(ascii: "Z"))
        }
    }

    /// The ASCII digit of `value` (0…9).
    @inline(__always)
    private static func digit(_ value: Int) -> UInt8 { 0x30 &+ UInt8(truncatingIfNeeded: value) }

    /// `date` in whole milliseconds since the Unix epoch (rounded to the nearest); 0 (the
    /// epoch) for non-finite dates or ones more than ~7,900 years away.
    public static func unixMillis(_ date: Date) -> Int64 {
        let interval = date.timeIntervalSince1970
        guard interval.isFinite, abs(interval) < 2.5e11 else { return 0 }
        return Int64((interval * 1000).rounded())
    }

    private static func isLeapYear(_ year: Int) -> Bool { (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 }

    private static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms").
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilFromDays(_ days: Int) -> (Int, Int, Int) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPrime = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthPrime + 2) / 5 + 1
        let month = monthPrime < 10 ? monthPrime + 3 : monthPrime - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
