import PushCore
/// Parses an HTTP `Retry-After` value (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
public enum RetryAfter {
    /// Seconds to wait from `nowUnix`, or nil when absent or unparseable. Negative results clamp to 0.
    public static func seconds(_ value: String?, nowUnix: Double) -> Double? {
        guard let raw = value?.trimmingSpaces, !raw.isEmpty else { return nil }
        if raw.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            return raw.count <= 9 ? Double(raw) : nil
        }
        guard let date = parseIMFFixdate(raw) else { return nil }
        return max(0, date - nowUnix)
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` → Unix seconds. The obsolete RFC 850 / asctime forms are
    /// not accepted (providers send IMF-fixdate).
    static func parseIMFFixdate(_ text: String) -> Double? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT",
              let day = Int(parts[1]), let year = Int(parts[3]),
              let month = months.firstIndex(of: String(parts[2])) else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]),
              (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second),
              (1970...9999).contains(year) else { return nil }
        let days = daysFromCivil(year: year, month: month + 1, day: day)
        return Double(days * 86400 + hour * 3600 + minute * 60 + second)
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }
}

extension String {
    var trimmingSpaces: String {
        var view = Substring(self)
        while let first = view.first, first == " " || first == "\t" { view = view.dropFirst() }
        while let last = view.last, last == " " || last == "\t" { view = view.dropLast() }
        return String(view)
    }
}
