import Foundation
import PushTestSupport
import Testing

/// `render` and `send` with an FCM audience job (docs/reference/job.md): one line, the topic or condition
/// in the request, the audience warnings.
@Suite("render and send: FCM topics and conditions")
struct FCMAudienceCommandTests {
    static func job(languages: String, audience: String) -> Data {
        Data(#"{"schemaVersion":1,"jobId":"j","appId":"app_demo","campaignId":"c","content":{"defaultLanguage":"en","languages":\#(languages)},"audience":\#(audience)}"#.utf8)
    }

    @Test("render prints one line for a condition job, with message.condition and no token")
    func renderOne() throws {
        let condition = "'a' in topics || 'b' in topics"
        let result = try runCommand(BuiltProducts.pushworker, ["render", "--strict", "-"],
                                    stdin: Self.job(languages: #"{"en":{"title":"T","body":"B"}}"#, audience: #"{"condition":"\#(condition)"}"#),
                                    environment: CLITest.environment(["PUSHWORKER_MSGID_KEYS": CLITest.keys]))
        #expect(result.status == 0, "\(result.stderr)")
        let lines = CLITest.lines(result.stdout)
        #expect(lines.count == 1)
        let line = try #require(lines.first)
        #expect(line["subscriptionId"] as? String == condition && line["status"] as? String == "ready")
        let message = ((line["request"] as? [String: Any])?["body"] as? [String: Any])?["message"] as? [String: Any]
        #expect(message?["condition"] as? String == condition)
        #expect(message?["token"] == nil && message?["topic"] == nil)
    }

    @Test("unused languages and variables without a default are warnings; --strict refuses them; a bad topic is an error")
    func warningsAndErrors() throws {
        let environment = CLITest.environment(["PUSHWORKER_MSGID_KEYS": CLITest.keys])
        let job = Self.job(languages: #"{"en":{"title":"Hi {{ name }}","body":"B"},"de":{"title":"Hallo","body":"B"}}"#,
                           audience: #"{"topic":"news"}"#)
        let lenient = try runCommand(BuiltProducts.pushworker, ["render", "-"], stdin: job, environment: environment)
        #expect(lenient.status == 0)
        #expect(lenient.stderr.contains("warning: $.content.languages.de: not used: an audience (topic) job is rendered once, in defaultLanguage en"))
        #expect(lenient.stderr.contains("template variable name has no default"))
        #expect(CLITest.lines(lenient.stdout).first?["subscriptionId"] as? String == "news")
        let strict = try runCommand(BuiltProducts.pushworker, ["render", "--strict", "-"], stdin: job, environment: environment)
        #expect(strict.status == 65 && strict.stdout.isEmpty)
        let bad = try runCommand(BuiltProducts.pushworker, ["render", "-"],
                                 stdin: Self.job(languages: #"{"en":{"title":"T","body":"B"}}"#, audience: #"{"topic":"a/b"}"#),
                                 environment: environment)
        #expect(bad.status == 65)
        #expect(bad.stderr.contains(#"$.audience.topic: character "/" not allowed in a topic name"#), "\(bad.stderr)")
    }

    @Test("send: an audience whose request got no answer is failed (unanswered) after one attempt, never sent again")
    func unansweredIsNotRetried() throws {
        let sandbox = try SandboxServer(apps: ["app_aud"], arguments: ["--latency-ms", "1500"])
        let job = #"{"schemaVersion":1,"jobId":"j","appId":"app_aud","campaignId":"c","content":{"defaultLanguage":"en","languages":{"en":{"title":"T","body":"B"}}},"audience":{"topic":"news"}}"#
        let result = try runCommand(BuiltProducts.pushworker, ["send", "--attempts", "3", try CLITest.write(job)],
                                    environment: SendCommandTests.environment(sandbox, extra: ["PUSHWORKER_REQUEST_TIMEOUT_MS": "300"]))
        #expect(result.status == 1, "\(result.stderr)")
        let lines = CLITest.lines(result.stdout)
        #expect(lines.count == 1)
        let line = try #require(lines.first)
        // Written and never answered: FCM may have fanned it out (docs/reliability.md), never `timeout`.
        #expect(line["status"] as? String == "failed" && line["reason"] as? String == "unanswered", "\(line)")
        #expect(line["attempts"] as? Int == 1, "\(line)")
        // The sandbox got (and, after its latency, accepted) exactly one request: FCM would have fanned it out once.
        #expect(eventually(timeout: 10) { ((try? sandbox.messages()) ?? []).count == 1 })
        Thread.sleep(forTimeInterval: 2)
        #expect(((try? sandbox.messages()) ?? []).count == 1)
    }
}
