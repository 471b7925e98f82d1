import Foundation
import PushCore
import Synchronization
import PushEncoding

/// JSON-lines (or text) logger on standard error. Metadata, not interpolation; never log a
/// secret or a raw token (hash it: `TokenHash`).
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
        let now = RFC3339Timestamp.unixMillis(Date())
        switch format {
        case .json:
            line = JSONWriter.object { w in
                w.key("at"); w.timestamp(unixMillis: now)
                w.member("level", level.rawValue)
                w.member("msg", message)
                for (key, value) in metadata.sorted(by: { $0.key < $1.key }) { w.member(key, value) }
            }.text + "\n"
        case .text:
            let timestamp = RFC3339Timestamp.format(unixMillis: now)
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
        let quoted = JSONWriter.quotedString(value)
        return quoteSpaces ? quoted : String(quoted.dropFirst().dropLast())
    }

    public func debug(_ message: String, _ metadata: [String: String] = [:]) { log(.debug, message, metadata) }
    public func info(_ message: String, _ metadata: [String: String] = [:]) { log(.info, message, metadata) }
    public func warning(_ message: String, _ metadata: [String: String] = [:]) { log(.warning, message, metadata) }
    public func error(_ message: String, _ metadata: [String: String] = [:]) { log(.error, message, metadata) }
}
