import Foundation
@testable import PushRuntime
import Synchronization
@testable import PushWorker
import Testing

/// `Logger`: JSON lines with `at`, `level`, `msg` and metadata; level filtering; no secrets.
@Suite("Logger")
struct LoggerTests {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
        func append(_ line: String) { lines.withLock { $0.append(line) } }
    }

    @Test("a JSON line holds at, level, msg and every metadata entry, escaped")
    func jsonLine() throws {
        let lines = Lines()
        let logger = Logger(level: .info, format: .json, sink: lines.append)
        logger.warning("produce failed, retrying", ["kafka.topic": "push.results.v1", "kafka.error": "broker \"down\"\nnext"])
        let line = try #require(lines.all.first)
        #expect(line.hasSuffix("}\n") && line.filter { $0 == "\n" }.count == 1, "one line")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        #expect(object["level"] == "warning")
        #expect(object["msg"] == "produce failed, retrying")
        #expect(object["kafka.topic"] == "push.results.v1")
        #expect(object["kafka.error"] == "broker \"down\"\nnext")
        let at = try #require(object["at"])
        #expect(at.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/) != nil, "\(at)")
        #expect(line.hasPrefix("{\"at\":"), "at first, for humans reading raw lines")
    }

    @Test("lines below the configured level are dropped", arguments: Configuration.LogLevel.allCases)
    func filtering(minimum: Configuration.LogLevel) {
        let lines = Lines()
        let logger = Logger(level: minimum, sink: lines.append)
        for level in Configuration.LogLevel.allCases { logger.log(level, "m-\(level.rawValue)") }
        let expected = Configuration.LogLevel.allCases.filter { $0 >= minimum }
        #expect(lines.all.count == expected.count)
        for level in expected { #expect(lines.all.contains { $0.contains("\"level\":\"\(level.rawValue)\"") }) }
        #expect(logger.isEnabled(minimum) && (minimum == .trace || !logger.isEnabled(.trace)))
    }

    @Test("levels are ordered trace < debug < info < notice < warning < error < critical")
    func order() {
        #expect(Configuration.LogLevel.allCases == Configuration.LogLevel.allCases.sorted())
        #expect(Configuration.LogLevel.debug < .info && Configuration.LogLevel.error > .warning)
    }

    @Test("text lines stay one line per entry; values with spaces are quoted")
    func textLine() {
        let lines = Lines()
        let logger = Logger(level: .debug, format: .text, sink: lines.append)
        logger.info("two\nlines", ["plain": "v", "spaced": "a b", "forged": "x\n2026-01-01T00:00:00.000Z ERROR fake"])
        let line = lines.all.first ?? ""
        #expect(line.filter { $0 == "\n" }.count == 1)
        #expect(line.contains(" INFO two\\nlines "))
        #expect(line.contains(" plain=v") && line.contains(" spaced=\"a b\""))
        #expect(line.contains("forged=\"x\\n2026-01-01T00:00:00.000Z ERROR fake\""))
    }

    /// docs/operations.md: logs carry no secrets and tokens only hashed. A review aid that keeps it so:
    /// no log call in Sources passes a raw token, key, password or JWT as metadata or message.
    @Test("no log call in Sources passes a token, key, password or JWT")
    func noSecretsInLogCalls() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        let call = try Regex(#"logger\??\.(log|trace|debug|info|notice|warning|error|critical)\((.*)$"#)
        let forbidden = try Regex(#"(?i)\\\((recipient\.token|token\b|\w*[pP]rivateKey|\w*[pP]assword|authorization|assertion|jwt|msgIDKeys|keyring)|"(token|password|privateKey|authorization)""#)
        var calls = 0
        for case let url as URL in files where url.pathExtension == "swift" {
            for (number, line) in try String(contentsOf: url, encoding: .utf8).split(separator: "\n").enumerated() {
                guard let match = line.firstMatch(of: call) else { continue }
                calls += 1
                let arguments = String(match.output[2].substring ?? "")
                #expect(arguments.firstMatch(of: forbidden) == nil, "\(url.lastPathComponent):\(number + 1): \(line)")
            }
        }
        #expect(calls >= 15)
    }
}
