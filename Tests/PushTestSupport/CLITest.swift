import Foundation
import PushCore
import PushEncoding

/// Helpers shared by the CLI tests (render, send, msgid).
public enum CLITest {
    public static let keys = "k1:" + Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 5 &+ 1) }).base64EncodedString()
    public static let otherKeys = "k9:" + Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 3) }).base64EncodedString()

    /// The environment of a CLI run: every PUSHWORKER_ variable of the test process cleared, then `values`.
    public static func environment(_ values: [String: String]) -> [String: String] {
        var environment: [String: String] = [:]
        for key in ProcessInfo.processInfo.environment.keys where key.hasPrefix("PUSHWORKER_") { environment[key] = "" }
        for (key, value) in values { environment[key] = value }
        return environment
    }

    public static func write(_ text: String) throws -> String {
        let folder = try TemporaryFolder.make(prefix: "cli")
        let path = folder.appendingPathComponent("job.json").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    public static func lines(_ stdout: String) -> [[String: Any]] {
        stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    public static func bySubscription(_ lines: [[String: Any]]) -> [String: [String: Any]] {
        var result: [String: [String: Any]] = [:]
        for line in lines { if let id = line["subscriptionId"] as? String { result[id] = line } }
        return result
    }

    public static func future(_ seconds: Double = 3600) -> String { RFC3339Timestamp.format(Date().addingTimeInterval(seconds)) }

    /// A small job for app `appID` with the given recipient objects.
    public static func job(appID: String = "app_cli", expiresAt: String = future(), languages: String? = nil, extra: String = "",
                    recipients: [String]) -> String {
        let content = languages ?? #""en":{"title":"Hi {{ name | default: \"there\" }}","body":"Hello","url":"https://shop.example/x"},"pt":{"title":"Olá {{ name }}","body":"Oi"}"#
        return #"{"schemaVersion":1,"jobId":"j1","appId":"\#(appID)","campaignId":"cmp_cli","variant":"A","expiresAt":"\#(expiresAt)","priority":"high","ttlSeconds":600\#(extra),"content":{"defaultLanguage":"en","languages":{\#(content)}},"recipients":[\#(recipients.joined(separator: ","))]}"#
    }

    public static let iosToken = String(repeating: "ab12", count: 16)
    public static let fcmToken = "fQ2x:APA91b" + String(repeating: "Zk9_", count: 30)

    /// One Web Push subscription (JSON) that `sandbox` can decrypt for, from `pushworker-dev sandbox subscriptions`.
    public static func subscription(_ sandbox: SandboxServer, prefix: String = "sub") throws -> String {
        let result = try runCommand(BuiltProducts.pushworkerDev, ["sandbox", "subscriptions", "1", "--origin", sandbox.origin, "--prefix", prefix])
        guard let line = result.stdout.split(separator: "\n").first.map(String.init) else {
            throw TestSupportError("sandbox subscriptions printed nothing: \(result.stderr)")
        }
        return line
    }
}
