import Foundation
import PushCore
import PushHTTP
@testable import pushworker
import PushTestSupport
import Synchronization
import Testing

/// `pushworker send` against the sandbox (docs/reference/cli.md `send`).
@Suite("pushworker send", .serialized)
struct SendCommandTests {
    static func environment(_ sandbox: SandboxServer, extra: [String: String] = [:]) -> [String: String] {
        var values = [
            "PUSHWORKER_CREDENTIALS_DIR": sandbox.credentialsPath, "PUSHWORKER_CA_FILE": sandbox.certificatePath,
            "PUSHWORKER_MSGID_KEYS": CLITest.keys, "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS": "127.0.0.1", "PUSHWORKER_LOG_FORMAT": "text",
        ]
        for (key, value) in extra { values[key] = value }
        return CLITest.environment(values)
    }

    static let ios = #"{"userId":"u1","subscriptionId":"i1","platform":"ios","token":"\#(CLITest.iosToken)","language":"pt-BR"}"#

    @Test("one §4 result line per recipient: sent, invalid_token, rejected")
    func delivers() throws {
        let sandbox = try SandboxServer(apps: ["app_cli"])
        let recipients = [
            Self.ios,
            #"{"userId":"u2","subscriptionId":"i2","platform":"ios","token":"dead\#(CLITest.iosToken.dropFirst(4))"}"#,
            #"{"userId":"u3","subscriptionId":"a1","platform":"android","token":"\#(CLITest.fcmToken)"}"#,
            #"{"userId":"u4","subscriptionId":"a2","platform":"android","token":"bad token!"}"#,
            #"{"userId":"u5","subscriptionId":"w1","platform":"web","subscription":\#(try CLITest.subscription(sandbox))}"#,
            #"{"userId":"u6","subscriptionId":"w2","platform":"web","subscription":\#(try CLITest.subscription(sandbox, prefix: "dead"))}"#,
        ]
        let result = try runCommand(BuiltProducts.pushworker, ["send", try CLITest.write(CLITest.job(recipients: recipients))],
                                    environment: Self.environment(sandbox))
        #expect(result.status == 1, "\(result.stderr)")  // not every recipient was sent
        #expect(result.stderr.contains("send: 6 recipients: sent=3 invalid_token=2 rejected=1 failed=0 expired=0 duplicate=0"))
        #expect(result.stderr.contains("send: 1 android recipient of app_cli rejected bad_token: the token is not in the platform's format"))
        let lines = CLITest.lines(result.stdout)
        #expect(lines.map { $0["subscriptionId"] as? String } == ["i1", "i2", "a1", "a2", "w1", "w2"])
        let by = CLITest.bySubscription(lines)
        func summary(_ id: String) -> String { "\(by[id]?["status"] ?? "-")/\(by[id]?["reason"] ?? "-")/\(by[id]?["httpStatus"] ?? "-")" }
        #expect(summary("i1") == "sent/<null>/200")
        #expect(summary("i2") == "invalid_token/Unregistered/410")
        #expect(summary("a1") == "sent/<null>/200")
        #expect(summary("a2") == "rejected/bad_token/<null>")
        #expect(summary("w1") == "sent/<null>/201")
        #expect(summary("w2") == "invalid_token/<null>/410")
        let sent = try #require(by["i1"])
        #expect(sent["schemaVersion"] as? Int == 1)
        #expect(sent["jobId"] as? String == "j1")
        #expect(sent["appId"] as? String == "app_cli")
        #expect(sent["userId"] as? String == "u1")
        #expect(sent["attempts"] as? Int == 1)
        #expect(sent["providerMessageId"] is String)
        #expect(sent["latencyMs"] is Double || sent["latencyMs"] is Int)
        let accepted = try sandbox.messages()
        #expect(Set(accepted.compactMap { $0["msgId"] as? String }) == Set(["i1", "a1", "w1"].compactMap { by[$0]?["msgId"] as? String }))
    }

    @Test("a 429 storm that ends: sent after more than one attempt")
    func throttledThenSent() throws {
        let sandbox = try SandboxServer(apps: ["app_cli"], arguments: ["--throttle-share", "1", "--retry-after", "1"])
        let process = try TestProcess(BuiltProducts.pushworker, ["send", try CLITest.write(CLITest.job(recipients: [Self.ios]))],
                                      environment: Self.environment(sandbox))
        defer { process.stop() }
        #expect(eventually(timeout: 20) { ((try? sandbox.stats())?["responses"] as? [String: Any])?["429"] as? Int ?? 0 >= 1 })
        #expect(try sandbox.curl("POST", "/_sandbox/faults", body: Data(#"{"throttleShare":0}"#.utf8)).status == 200)
        #expect(process.wait(timeout: 30) == 0, "\(process.stderr())")
        let line = try #require(CLITest.lines(process.stdout()).first)
        #expect(line["status"] as? String == "sent")
        #expect((line["attempts"] as? Int ?? 0) > 1)
    }

    @Test("a 429 storm that never ends: failed after 3 attempts, each wait honouring Retry-After")
    func throttledForever() throws {
        let sandbox = try SandboxServer(apps: ["app_cli"], arguments: ["--throttle-share", "1", "--retry-after", "2"])
        let started = Date()
        let result = try runCommand(BuiltProducts.pushworker, ["send", try CLITest.write(CLITest.job(recipients: [Self.ios]))],
                                    environment: Self.environment(sandbox))
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.status == 1, "\(result.stderr)")
        let line = try #require(CLITest.lines(result.stdout).first)
        #expect(line["status"] as? String == "failed")
        #expect(line["reason"] as? String == "TooManyRequests")
        #expect(line["httpStatus"] as? Int == 429)
        #expect(line["attempts"] as? Int == 3)
        #expect(elapsed >= 4 && elapsed < 30)  // two waits of max(backoff, Retry-After 2 s)
        #expect(((try sandbox.stats())["responses"] as? [String: Any])?["429"] as? Int == 3)
    }

    @Test("credentials the provider does not trust: rejected with its reason, and a loud log")
    func wrongCredentials() throws {
        let sandbox = try SandboxServer(apps: ["app_cli", "app_other"])
        // app_cli's key id and team, signed with app_other's key: the sandbox refuses the signature.
        let path = sandbox.credentialsPath + "/app_cli/apns.json"
        var apns = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        let other = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: sandbox.credentialsPath + "/app_other/apns.json"))) as? [String: Any])
        apns["privateKey"] = other["privateKey"]
        try JSONSerialization.data(withJSONObject: apns).write(to: URL(fileURLWithPath: path))
        let result = try runCommand(BuiltProducts.pushworker, ["send", try CLITest.write(CLITest.job(recipients: [Self.ios]))],
                                    environment: Self.environment(sandbox))
        #expect(result.status == 1)
        let line = try #require(CLITest.lines(result.stdout).first)
        #expect(line["status"] as? String == "rejected")
        #expect(line["reason"] as? String == "InvalidProviderToken")
        #expect(result.stderr.contains("rejected InvalidProviderToken HTTP 403: APNs refused the provider token: keyId, teamId and the private key"))
        #expect(line["httpStatus"] as? Int == 403)
        #expect(line["attempts"] as? Int == 1)
        #expect(result.stderr.contains("refused the credentials"))
        #expect(!result.stderr.contains("BEGIN PRIVATE KEY"))
    }

    @Test("no credentials: rejected/no_credentials, nothing sent")
    func noCredentials() throws {
        let sandbox = try SandboxServer(apps: ["app_cli"])
        try FileManager.default.removeItem(atPath: sandbox.credentialsPath + "/app_cli/apns.json")
        let recipients = [Self.ios, #"{"subscriptionId":"a1","platform":"android","token":"\#(CLITest.fcmToken)"}"#]
        let result = try runCommand(BuiltProducts.pushworker, ["send", try CLITest.write(CLITest.job(recipients: recipients))],
                                    environment: Self.environment(sandbox))
        let by = CLITest.bySubscription(CLITest.lines(result.stdout))
        #expect(by["i1"]?["status"] as? String == "rejected")
        #expect(by["i1"]?["reason"] as? String == "no_credentials")
        #expect(by["i1"]?["attempts"] as? Int == 0)
        #expect(by["a1"]?["status"] as? String == "sent")
        let none = try runCommand(BuiltProducts.pushworker, ["send", try CLITest.write(CLITest.job(appID: "app_none", recipients: recipients))],
                                  environment: Self.environment(sandbox))
        #expect(CLITest.lines(none.stdout).map { $0["reason"] as? String } == ["no_credentials", "no_credentials"])
        #expect(none.stderr.contains("no credentials"))
        #expect(((try sandbox.stats())["accepted"] as? [String: Any])?["ios"] as? Int == 0)
    }

    @Test("every recipient sent: exit 0 and the summary on stderr")
    func allSent() throws {
        let sandbox = try SandboxServer(apps: ["app_cli"])
        let result = try runCommand(BuiltProducts.pushworker, ["send", try CLITest.write(CLITest.job(recipients: [Self.ios]))],
                                    environment: Self.environment(sandbox))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("send: 1 recipient: sent=1 invalid_token=0 rejected=0 failed=0 expired=0 duplicate=0"))
    }

    @Test("a provider certificate nobody trusts: failed tls_error, and the fix (PUSHWORKER_CA_FILE) on stderr")
    func untrustedCertificate() throws {
        let sandbox = try SandboxServer(apps: ["app_cli"])
        var environment = Self.environment(sandbox)
        environment["PUSHWORKER_CA_FILE"] = ""
        let result = try runCommand(BuiltProducts.pushworker, ["send", "--attempts", "1", try CLITest.write(CLITest.job(recipients: [Self.ios]))],
                                    environment: environment)
        #expect(result.status == 1)
        let line = try #require(CLITest.lines(result.stdout).first)
        #expect(line["status"] as? String == "failed")
        #expect(line["reason"] as? String == "tls_error")
        #expect(result.stderr.contains("send: 1 ios recipient of app_cli failed tls_error: TLS: the provider's certificate is not trusted"), "\(result.stderr)")
        #expect(result.stderr.contains("set PUSHWORKER_CA_FILE"))
    }

    @Test("an invalid job exits 65; missing configuration exits 78; --help exits 0")
    func errors() throws {
        let sandbox = try SandboxServer(apps: ["app_cli"])
        let invalid = CLITest.job(extra: #","data":{"from":"x"}"#, recipients: [Self.ios])
        let result = try runCommand(BuiltProducts.pushworker, ["send", "-"], stdin: Data(invalid.utf8), environment: Self.environment(sandbox))
        #expect(result.status == 65)
        #expect(result.stderr.contains("from"))
        #expect(try runCommand(BuiltProducts.pushworker, ["send", "-"], stdin: Data(), environment: CLITest.environment([:])).status == 78)
        let help = try runCommand(BuiltProducts.pushworker, ["send", "--help"])
        #expect(help.status == 0 && help.stdout.contains("usage: pushworker send"))
    }
}

