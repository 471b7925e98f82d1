import Foundation
import PushCore
import Synchronization

/// JSON-lines (or text) logger on standard error. Metadata, not interpolation; never log a
/// secret or a raw token (hash it: ``TokenHash``).
public final class Logger: Sendable {
    public typealias Level = Configuration.LogLevel
    private let minimum: Level
    private let format: Configuration.LogFormat
    private let lock = Mutex(())
    private let sink: (@Sendable (String) -> Void)?

    /// `level` (default info) drops less severe lines; `sink` receives each finished line
    /// (newline included) instead of standard error (tests).
    public init(level: Level = .info, format: Configuration.LogFormat = .json, sink: (@Sendable (String) -> Void)? = nil) {
        self.minimum = level
        self.format = format
        self.sink = sink
    }

    public func isEnabled(_ level: Level) -> Bool { level >= minimum }

    public func log(_ level: Level, _ message: String, _ metadata: [String: String] = [:]) {
        guard isEnabled(level) else { return }
        var line: String
        let timestamp = Timestamp.rfc3339Millis(Date())
        switch format {
        case .json:
            line = "{\"at\":\"\(timestamp)\",\"level\":\"\(level.rawValue)\",\"msg\":\(JSONText.quote(message))"
            for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
                line += ",\(JSONText.quote(key)):\(JSONText.quote(value))"
            }
            line += "}\n"
        case .text:
            // One line per entry whatever the values hold: control characters are escaped, and a
            // value with spaces, quotes or `=` is quoted (JSON string rules).
            line = "\(timestamp) \(level.rawValue.uppercased()) \(Self.textValue(message, quoteSpaces: false))"
            for (key, value) in metadata.sorted(by: { $0.key < $1.key }) { line += " \(key)=\(Self.textValue(value, quoteSpaces: true))" }
            line += "\n"
        }
        if let sink {
            lock.withLock { _ in sink(line) }
            return
        }
        lock.withLock { _ in
            var bytes = Array(line.utf8)
            _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
        }
    }

    static func textValue(_ value: String, quoteSpaces: Bool) -> String {
        let needsQuoting = value.unicodeScalars.contains { scalar in
            scalar.value < 0x20 || scalar.value == 0x7F || scalar == "\"" ||
                (quoteSpaces && (scalar == " " || scalar == "=" || scalar.properties.isWhitespace))
        }
        guard needsQuoting else { return value }
        let quoted = JSONText.quote(value)
        return quoteSpaces ? quoted : String(quoted.dropFirst().dropLast())
    }

    public func debug(_ message: String, _ metadata: [String: String] = [:]) { log(.debug, message, metadata) }
    public func info(_ message: String, _ metadata: [String: String] = [:]) { log(.info, message, metadata) }
    public func warning(_ message: String, _ metadata: [String: String] = [:]) { log(.warning, message, metadata) }
    public func error(_ message: String, _ metadata: [String: String] = [:]) { log(.error, message, metadata) }
}

/// JSON string quoting for log lines and small documents built in the runtime (PushCore's
/// `JSONWriter` does the escaping).
package enum JSONText {
    package static func quote(_ text: String) -> String { String(decoding: JSONWriter.quoted(text), as: UTF8.self) }
}

/// RFC 3339 UTC timestamps with milliseconds (`2026-11-30T10:00:01.234Z`).
public enum Timestamp {
    public static func rfc3339Millis(_ date: Date) -> String {
        let millis = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        return rfc3339Millis(unixMillis: millis)
    }

    public static func rfc3339Millis(unixMillis: Int64) -> String {
        let seconds = unixMillis >= 0 ? unixMillis / 1000 : (unixMillis - 999) / 1000
        let millis = Int(unixMillis - seconds * 1000)
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T" +
            "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }

    /// `"2026-11-30T10:00:01.234Z"` (quotes included) as bytes, without intermediate strings.
    static func rfc3339MillisQuotedBytes(unixMillis: Int64) -> [UInt8] {
        let seconds = unixMillis >= 0 ? unixMillis / 1000 : (unixMillis - 999) / 1000
        let millis = Int32(unixMillis - seconds * 1000)
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        var out = [UInt8]()
        out.reserveCapacity(26)
        func digits(_ value: Int32, _ width: Int) {
            var divisor: Int32 = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = max(0, value)
            if rest >= divisor * 10 { out.append(contentsOf: Array(String(rest).utf8)); return }
            while divisor > 0 {
                out.append(0x30 + UInt8(rest / divisor))
                rest %= divisor
                divisor /= 10
            }
        }
        out.append(0x22)
        digits(parts.tm_year + 1900, 4); out.append(0x2D)
        digits(parts.tm_mon + 1, 2); out.append(0x2D)
        digits(parts.tm_mday, 2); out.append(0x54)
        digits(parts.tm_hour, 2); out.append(0x3A)
        digits(parts.tm_min, 2); out.append(0x3A)
        digits(parts.tm_sec, 2); out.append(0x2E)
        digits(millis, 3); out.append(0x5A)
        out.append(0x22)
        return out
    }

    public static func rfc3339Seconds(_ date: Date) -> String {
        var text = rfc3339Millis(date)
        text.removeSubrange(text.index(text.endIndex, offsetBy: -5)..<text.index(text.endIndex, offsetBy: -1))
        return text
    }
}
