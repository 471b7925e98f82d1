import Foundation
import PushCore
import PushTestSupport
import Testing
import PushEncoding

/// The jobs of examples/ (README quick start): they render cleanly with --strict, never go
/// stale (relative dates), and the ones for the sandbox are delivered by `send`.
@Suite("examples/", .serialized)
struct ExamplesTests {
    static let folder: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.appendingPathComponent("examples")
    }()

    static var files: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
    }

    @Test("the examples cover iOS, Android, Web and Huawei, several languages, buttons, a silent push and TTL 0")
    func coverage() throws {
        #expect(Self.files.count >= 6)
        var platforms: Set<String> = [], languages: Set<String> = []
        var hasButtons = false, hasSilent = false, hasTTL0 = false
        for file in Self.files {
            let document = try JSONParser.parse(Array(try Data(contentsOf: Self.folder.appendingPathComponent(file))))
            // Never stale: every example's expiry is relative, resolved when it is used.
            #expect(document["expiresAt"]?.stringValue?.hasPrefix("+") == true, "\(file): expiresAt must be relative")
            for recipient in document["recipients"]?.arrayValue ?? [] { platforms.insert(recipient["platform"]?.stringValue ?? "") }
            for language in document["content"]?["languages"]?.objectValue?.keys ?? [] { languages.insert(language) }
            hasButtons = hasButtons || (document["content"]?["languages"]?.objectValue?.members.contains { $0.value["actions"] != nil } ?? false)
            hasSilent = hasSilent || document["ios"]?["contentAvailable"] == .bool(true)
            hasTTL0 = hasTTL0 || document["ttlSeconds"]?.numberValue == 0
        }
        #expect(platforms == ["ios", "android", "web", "huawei"])
        #expect(languages.count >= 8)
        #expect(hasButtons && hasSilent && hasTTL0)
    }

    @Test("every example renders with --strict: no warning, every recipient ready", arguments: ExamplesTests.files)
    func renders(file: String) throws {
        let path = Self.folder.appendingPathComponent(file).path
        let result = try runCommand(BuiltProducts.pushworker, ["render", "--strict", path],
                                    environment: CLITest.environment(["PUSHWORKER_MSGID_KEYS": CLITest.keys, "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS": "127.0.0.1"]))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains("warning"), "\(result.stderr)")
        let lines = CLITest.lines(result.stdout)
        #expect(!lines.isEmpty)
        for line in lines {
            #expect(line["status"] as? String == "ready", "\(file): \(line["subscriptionId"] ?? "") \(line["reason"] ?? "")")
            #expect((line["truncated"] as? [String])?.isEmpty == true)
        }
        if file == "silent-sync.json" {
            let ios = try #require(lines.first { $0["platform"] as? String == "ios" })
            let headers = (ios["request"] as? [String: Any])?["headers"] as? [String: String]
            #expect(headers?["apns-push-type"] == "background" && headers?["apns-priority"] == "5")
        }
        if file == "huawei-order-update.json" {
            // Huawei batches: the English recipients share one request (3 tokens), Chinese its own;
            // every line of a batch shows the batch's request.
            let batches = lines.map { (($0["batch"] as? [String: Any])?["id"] as? Int ?? 0, ($0["batch"] as? [String: Any])?["size"] as? Int ?? 0) }
            #expect(batches.map(\.0) == [1, 1, 2, 1] && batches.map(\.1) == [3, 3, 1, 3])
            let message = ((lines[0]["request"] as? [String: Any])?["body"] as? [String: Any])?["message"] as? [String: Any]
            #expect((message?["token"] as? [String])?.count == 3)
            #expect((message?["android"] as? [String: Any])?["category"] as? String == "EXPRESS")
            #expect(((lines[0]["request"] as? [String: Any])?["url"] as? String)?.hasSuffix("/v1/<unknown>/messages:send") == true)
        }
        if file == "flash-deal-ttl0.json" {
            for line in lines where line["platform"] as? String == "ios" {
                #expect(((line["request"] as? [String: Any])?["headers"] as? [String: String])?["apns-expiration"] == "0")
            }
        }
    }

    @Test("the worker's decoder refuses the relative dates the CLI resolves")
    func workerRefusesRelativeDates() throws {
        let bytes = Array(try Data(contentsOf: Self.folder.appendingPathComponent("campaign.json")))
        do throws(JobValidationError) {
            _ = try JobDecoder.decode(bytes)
            Issue.record("the worker accepted a relative date")
        } catch {
            #expect(error.problems.map(\.description) == ["$.createdAt: not an RFC 3339 date-time", "$.expiresAt: not an RFC 3339 date-time"])
        }
    }

    /// The origin campaign.json's Web subscriptions point at: the README's sandbox (`--listen 127.0.0.1:8443`).
    static let readmeSandbox = "https://127.0.0.1:8443"

    @Test("campaign.json: iOS, Android, Huawei and Web for Chrome, Firefox and Safari; its subscriptions are the README sandbox's (default seed, ?browser=)")
    func campaignWebRecipients() throws {
        let document = try JSONParser.parse(Array(try Data(contentsOf: Self.folder.appendingPathComponent("campaign.json"))))
        let recipients = document["recipients"]?.arrayValue ?? []
        #expect(Set(recipients.compactMap { $0["platform"]?.stringValue }) == ["ios", "android", "web", "huawei"])
        let web = recipients.filter { $0["platform"]?.stringValue == "web" }
        #expect(web.compactMap { $0["browser"]?.stringValue } == ["chrome", "firefox", "safari"])
        for recipient in web {
            let id = try #require(recipient["subscriptionId"]?.stringValue)
            let browser = try #require(recipient["browser"]?.stringValue)
            let printed = try runCommand(BuiltProducts.pushworkerDev, ["sandbox", "subscriptions", "1", "--origin", Self.readmeSandbox,
                                                                       "--prefix", String(id.dropLast()), "--start", String(id.last ?? "1"), "--browser", browser])
            let expected = try JSONParser.parse(Array(printed.stdout.utf8))
            #expect(recipient["subscription"] == expected, "\(id): regenerate with pushworker-dev sandbox subscriptions")
        }
    }

    @Test("the sandbox's examples are delivered by send: every recipient sent")
    func sendsToTheSandbox() throws {
        let sandbox = try SandboxServer(apps: ["app_demo"])
        let environment = CLITest.environment([
            "PUSHWORKER_CREDENTIALS_DIR": sandbox.credentialsPath, "PUSHWORKER_CA_FILE": sandbox.certificatePath,
            "PUSHWORKER_MSGID_KEYS": CLITest.keys, "PUSHWORKER_LOG_FORMAT": "text", "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS": "127.0.0.1",
        ])
        let work = try TemporaryFolder.make(prefix: "examples")
        for file in Self.files where file != "web-breaking-news.json" {  // its endpoints are the real push services
            // campaign.json's Web subscriptions name the README's sandbox port: here, this sandbox's.
            let text = try String(contentsOf: Self.folder.appendingPathComponent(file), encoding: .utf8)
            let copy = work.appendingPathComponent(file)
            try text.replacingOccurrences(of: Self.readmeSandbox + "/", with: sandbox.origin + "/").write(to: copy, atomically: true, encoding: .utf8)
            let result = try runCommand(BuiltProducts.pushworker, ["send", copy.path], environment: environment)
            #expect(result.status == 0, "\(file): \(result.stderr)")
            #expect(CLITest.lines(result.stdout).allSatisfy { $0["status"] as? String == "sent" }, "\(file): \(result.stdout)")
        }
    }
}
