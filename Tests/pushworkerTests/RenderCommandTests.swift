import Foundation
import PushCore
import PushEncoding
import PushTestSupport
import Testing

@Suite("pushworker render")
struct RenderCommandTests {
    static let expectedKeys: Set<String> = ["subscriptionId", "platform", "language", "msgId", "status", "reason", "payloadBytes",
                                            "truncated", "request"]

    @Test("the docs/reference/job.md example without credentials: production endpoints, <unknown> placeholders, redacted auth")
    func designExample() throws {
        let path = try CLITest.write(SampleJobs.designExample(expiresAt: Date().addingTimeInterval(3600)))
        let result = try runCommand(BuiltProducts.pushworker, ["render", path], environment: CLITest.environment(["PUSHWORKER_MSGID_KEYS": CLITest.keys]))
        #expect(result.status == 0, "\(result.stderr)")
        let raw = result.stdout.split(separator: "\n")
        #expect(raw.count == 3)
        #expect(raw.allSatisfy { $0.hasPrefix(#"{"subscriptionId":"#) })
        let lines = CLITest.lines(result.stdout)
        #expect(lines.allSatisfy { Set($0.keys) == Self.expectedKeys })
        let keyring = try MsgIDKeyring(parsing: CLITest.keys)
        let by = CLITest.bySubscription(lines)

        let ios = try #require(by["s1"])
        #expect(ios["platform"] as? String == "ios")
        #expect(ios["language"] as? String == "tr")
        #expect(ios["status"] as? String == "ready")
        #expect(ios["reason"] is NSNull)
        let iosID = try #require(ios["msgId"] as? String)
        #expect(MsgID.verify(iosID, keyring: keyring)?.subscriptionID == "s1")
        let iosRequest = try #require(ios["request"] as? [String: Any])
        #expect(iosRequest["method"] as? String == "POST")
        #expect(iosRequest["url"] as? String == "https://api.push.apple.com/3/device/5f2b8c4e1a9d7e3f6b0c2a4d8e1f3b5c7a9e0d2f4b6c8a1e3d5f7b9c0a2e4d6f")
        let iosHeaders = try #require(iosRequest["headers"] as? [String: String])
        #expect(iosHeaders["apns-topic"] == "<unknown>")
        #expect(iosHeaders["authorization"] == "bearer <redacted>")
        let aps = (iosRequest["body"] as? [String: Any])?["aps"] as? [String: Any]
        #expect((aps?["alert"] as? [String: Any])?["title"] as? String == "Merhaba Ayşe")

        let android = try #require(by["s2"])
        #expect(android["language"] as? String == "en")  // pt-BR → pt → defaultLanguage en
        let androidRequest = try #require(android["request"] as? [String: Any])
        #expect(androidRequest["url"] as? String == "https://fcm.googleapis.com/v1/projects/<unknown>/messages:send")
        #expect((androidRequest["headers"] as? [String: String])?["authorization"] == "Bearer <redacted>")
        let message = (androidRequest["body"] as? [String: Any])?["message"] as? [String: Any]
        #expect((message?["data"] as? [String: Any])?["on.msgId"] as? String == android["msgId"] as? String)

        let web = try #require(by["s3"])
        #expect(web["language"] as? String == "en")
        let webRequest = try #require(web["request"] as? [String: Any])
        #expect((webRequest["url"] as? String)?.hasPrefix("https://fcm.googleapis.com/fcm/send/") == true)
        let webHeaders = try #require(webRequest["headers"] as? [String: String])
        #expect(webHeaders["authorization"]?.contains("<redacted>") == true)
        #expect(webHeaders["content-encoding"] == "aes128gcm")
        let body = try #require(webRequest["body"] as? [String: Any])
        let plaintext = try #require(body["plaintext"] as? [String: Any])
        #expect(plaintext["msgId"] as? String == web["msgId"] as? String)
        let plaintextBytes = try JSONSerialization.data(withJSONObject: plaintext).count
        let encrypted = try #require(body["encryptedBytes"] as? Int)
        #expect(encrypted > plaintextBytes)  // header 86 bytes + padding delimiter + 16-byte tag
        #expect(!result.stdout.contains("eyJ"))  // no JWT leaks
        // payloadBytes: the body's bytes as written in the line (Web Push: the plaintext's).
        let rawLines = raw.map(String.init)
        #expect(ios["payloadBytes"] as? Int == Self.rawBody(rawLines[0]).utf8.count)
        #expect(web["payloadBytes"] as? Int == Self.rawBody(rawLines[2], prefix: #"{"plaintext":"#, suffix: #","encryptedBytes":\#(encrypted)}"#).utf8.count)
        #expect(ios["truncated"] as? [String] == [])
        #expect(result.stderr.isEmpty || !result.stderr.contains("warning"), "\(result.stderr)")
    }

    /// The request body's JSON text inside a render line (the `body` member comes last in
    /// `request`, after `headers`, whose values hold no `"body":`).
    static func rawBody(_ line: String, prefix: String = "", suffix: String = "") -> String {
        guard let headers = line.range(of: #""headers":"#), let body = line.range(of: #""body":"#, range: headers.upperBound..<line.endIndex) else { return "" }
        var text = String(line[body.upperBound...].dropLast(2))
        if text.hasPrefix(prefix) { text.removeFirst(prefix.count) }
        if text.hasSuffix(suffix) { text.removeLast(suffix.count) }
        return text
    }

    /// docs/payloads.md "Replace key": every request carries its replace key, and `render` shows it where it is sent.
    @Test("render shows each request's replace key: apns-collapse-id and topic headers, collapse_key, on.tag and tag")
    func replaceKey() throws {
        let web = #"{"userId":"u3","subscriptionId":"s3","platform":"web","subscription":{"endpoint":"https://fcm.googleapis.com/fcm/send/ep","keys":{"p256dh":"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4","auth":"BTBZMqHH6r4Tts7J_aSIgg"}}}"#
        let recipients = [#"{"userId":"u1","subscriptionId":"s1","platform":"ios","token":"\#(CLITest.iosToken)"}"#,
                          #"{"userId":"u2","subscriptionId":"s2","platform":"android","token":"\#(CLITest.fcmToken)"}"#, web]
        for collapseID in [nil, "sale"] {
            let extra = collapseID.map { #","collapseId":"\#($0)""# } ?? ""
            let path = try CLITest.write(CLITest.job(extra: extra, recipients: recipients))
            let result = try runCommand(BuiltProducts.pushworker, ["render", path], environment: CLITest.environment(["PUSHWORKER_MSGID_KEYS": CLITest.keys]))
            #expect(result.status == 0, "\(result.stderr)")
            let by = CLITest.bySubscription(CLITest.lines(result.stdout))
            func request(_ id: String) throws -> [String: Any] { try #require(by[id]?["request"] as? [String: Any]) }
            func key(_ id: String) throws -> String {
                try collapseID ?? ReplaceKey.derive(msgID: #require(by[id]?["msgId"] as? String))
            }
            let (iosKey, androidKey, webKey) = (try key("s1"), try key("s2"), try key("s3"))
            let iosHeaders = try #require(try request("s1")["headers"] as? [String: String])
            #expect(iosHeaders["apns-collapse-id"] == iosKey)
            let message = try #require((try request("s2")["body"] as? [String: Any])?["message"] as? [String: Any])
            #expect((message["android"] as? [String: Any])?["collapse_key"] as? String == androidKey)
            #expect((message["data"] as? [String: Any])?["on.tag"] as? String == androidKey)
            let webRequest = try request("s3")
            let webHeaders = try #require(webRequest["headers"] as? [String: String])
            #expect(webHeaders["topic"] == webKey)
            let plaintext = (webRequest["body"] as? [String: Any])?["plaintext"] as? [String: Any]
            #expect(plaintext?["tag"] as? String == webKey)
        }
    }

    @Test("payloadBytes and the fields truncated to fit the budget")
    func truncation() throws {
        let long = String(repeating: "ç", count: 3000)
        let job = CLITest.job(languages: #""en":{"title":"T","body":"\#(long)"}"#, recipients: [
            #"{"subscriptionId":"i1","platform":"ios","token":"\#(CLITest.iosToken)"}"#,
            #"{"subscriptionId":"p1","platform":"pager","token":"x"}"#,
        ])
        let result = try runCommand(BuiltProducts.pushworker, ["render", try CLITest.write(job)], environment: CLITest.environment([:]))
        #expect(result.status == 0, "\(result.stderr)")
        let by = CLITest.bySubscription(CLITest.lines(result.stdout))
        #expect(by["i1"]?["truncated"] as? [String] == ["body"])
        let bytes = try #require(by["i1"]?["payloadBytes"] as? Int)
        #expect(bytes <= 4096 && bytes > 4000)
        #expect(by["p1"]?["payloadBytes"] is NSNull)
        #expect(by["p1"]?["truncated"] is NSNull)
    }

    @Test("unknown fields and empty template variables are warnings on stderr; --strict makes them errors")
    func warnings() throws {
        let job = CLITest.job(languages: #""en":{"title":"Hi {{ name }}","message":"Hello"}"#,
                              recipients: [#"{"subscriptionId":"i1","platform":"ios","deviceToken":"\#(CLITest.iosToken)","token":"\#(CLITest.iosToken)"}"#])
        let path = try CLITest.write(job)
        let result = try runCommand(BuiltProducts.pushworker, ["render", path], environment: CLITest.environment([:]))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("warning: $.content.languages.en.message: unknown field (did you mean body?)"))
        #expect(result.stderr.contains("warning: $.recipients[0].deviceToken: unknown field (did you mean token?)"))
        #expect(result.stderr.contains("warning: $.content.languages.en.title: template variable name has no value and no default for 1 of 1 recipient"))
        #expect(CLITest.lines(result.stdout).count == 1)
        let strict = try runCommand(BuiltProducts.pushworker, ["render", path, "--strict"], environment: CLITest.environment([:]))
        #expect(strict.status == 65)
        #expect(strict.stdout.isEmpty)
        #expect(strict.stderr.contains("invalid job: 3 warnings refused by --strict"))
        #expect(strict.stderr.contains("$.content.languages.en.message: unknown field (did you mean body?) (--strict)"))
    }

    @Test("every problem of an invalid job is listed at once")
    func everyProblem() throws {
        let job = #"{"schemaVersion":1,"appId":"app x","campaignId":"c","priority":"urgent","content":{"defaultLanguage":"en","languages":{"en":{"title":5}}},"recipients":[]}"#
        let result = try runCommand(BuiltProducts.pushworker, ["render", try CLITest.write(job)], environment: CLITest.environment([:]))
        #expect(result.status == 65)
        #expect(result.stderr.contains("invalid job: 5 problems"))
        for line in ["$.jobId: required", "$.appId: must match", "$.priority: must be", "$.content.languages.en.title: expected a string, got number",
                     "$.content.languages.en: no text"] {
            #expect(result.stderr.contains("  " + line), "\(line) in \(result.stderr)")
        }
    }

    @Test("relative dates: expiresAt \"+4h\" is resolved by the CLI; the worker's decoder refuses it")
    func relativeDates() throws {
        let job = CLITest.job(expiresAt: "+4h", recipients: [#"{"subscriptionId":"i1","platform":"ios","token":"\#(CLITest.iosToken)"}"#])
        let result = try runCommand(BuiltProducts.pushworker, ["render", try CLITest.write(job)], environment: CLITest.environment([:]))
        #expect(result.status == 0, "\(result.stderr)")
        let line = try #require(CLITest.lines(result.stdout).first)
        let expiration = try #require(((line["request"] as? [String: Any])?["headers"] as? [String: String])?["apns-expiration"])
        #expect(abs((Double(expiration) ?? 0) - Date().timeIntervalSince1970 - 600) < 60)  // ttlSeconds 600 < 4 h
        #expect(throws: JobValidationError.self) { try JobDecoder.decode(Array(job.utf8)) }
    }

    @Test("language is the one chosen: pt for pt-BR")
    func chosenLanguage() throws {
        let job = CLITest.job(recipients: [
            #"{"subscriptionId":"a1","platform":"android","token":"\#(CLITest.fcmToken)","language":"pt-BR","properties":{"name":"Ana"}}"#,
            #"{"subscriptionId":"a2","platform":"android","token":"\#(CLITest.fcmToken)","language":"de"}"#,
        ])
        let result = try runCommand(BuiltProducts.pushworker, ["render", try CLITest.write(job)], environment: CLITest.environment([:]))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("ephemeral"))
        let by = CLITest.bySubscription(CLITest.lines(result.stdout))
        #expect(by["a1"]?["language"] as? String == "pt")
        let data = ((by["a1"]?["request"] as? [String: Any])?["body"] as? [String: Any]).flatMap { ($0["message"] as? [String: Any])?["data"] as? [String: Any] }
        #expect(data?["on.title"] as? String == "Olá Ana")
        #expect(by["a2"]?["language"] as? String == "en")
    }

    @Test("with a credentials folder: sandbox endpoints; a platform without credentials is rejected/no_credentials")
    func withCredentials() throws {
        let sandbox = try SandboxServer(apps: ["app_cli"])
        try FileManager.default.removeItem(atPath: sandbox.credentialsPath + "/app_cli/apns.json")
        let recipients = [
            #"{"subscriptionId":"i1","platform":"ios","token":"\#(CLITest.iosToken)"}"#,
            #"{"subscriptionId":"a1","platform":"android","token":"\#(CLITest.fcmToken)"}"#,
        ]
        let environment = CLITest.environment(["PUSHWORKER_MSGID_KEYS": CLITest.keys, "PUSHWORKER_CREDENTIALS_DIR": sandbox.credentialsPath])
        let result = try runCommand(BuiltProducts.pushworker, ["render", try CLITest.write(CLITest.job(recipients: recipients))], environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        let by = CLITest.bySubscription(CLITest.lines(result.stdout))
        #expect(by["i1"]?["status"] as? String == "rejected")
        #expect(by["i1"]?["reason"] as? String == "no_credentials")
        #expect(by["i1"]?["request"] is NSNull)
        #expect(by["a1"]?["status"] as? String == "ready")
        #expect((by["a1"]?["request"] as? [String: Any])?["url"] as? String == "\(sandbox.origin)/v1/projects/sandbox-appcli/messages:send")  // project ids drop the underscore

        // An app with no folder at all: every recipient no_credentials.
        let other = try runCommand(BuiltProducts.pushworker, ["render", try CLITest.write(CLITest.job(appID: "app_none", recipients: recipients))],
                                   environment: environment)
        #expect(other.status == 0)
        let statuses = CLITest.lines(other.stdout).map { "\($0["status"] ?? "")/\($0["reason"] ?? "")" }
        #expect(statuses == ["rejected/no_credentials", "rejected/no_credentials"])
    }

    @Test("an invalid job exits 65 with the reason on stderr and prints nothing")
    func invalidJob() throws {
        let job = CLITest.job(extra: #","collapseId":"\#(String(repeating: "x", count: 65))""#,
                              recipients: [#"{"subscriptionId":"i1","platform":"ios","token":"\#(CLITest.iosToken)"}"#])
        let result = try runCommand(BuiltProducts.pushworker, ["render", try CLITest.write(job)], environment: CLITest.environment([:]))
        #expect(result.status == 65)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("collapseId"))
        let garbage = try runCommand(BuiltProducts.pushworker, ["render", "-"], stdin: Data("{not json".utf8), environment: CLITest.environment([:]))
        #expect(garbage.status == 65)
        #expect(garbage.stderr.contains("invalid job"))
    }

    @Test("reads standard input for -; a bad recipient rejects only itself")
    func standardInput() throws {
        let job = CLITest.job(recipients: [
            #"{"subscriptionId":"i1","platform":"ios","token":"\#(CLITest.iosToken)"}"#,
            #"{"subscriptionId":"i2","platform":"ios","token":"not hex"}"#,
            #"{"subscriptionId":"p1","platform":"pager","token":"x"}"#,
        ])
        let result = try runCommand(BuiltProducts.pushworker, ["render", "-"], stdin: Data(job.utf8), environment: CLITest.environment([:]))
        #expect(result.status == 0, "\(result.stderr)")
        let by = CLITest.bySubscription(CLITest.lines(result.stdout))
        #expect(by["i1"]?["status"] as? String == "ready")
        #expect(by["i2"]?["reason"] as? String == "bad_token")
        #expect(by["p1"]?["reason"] as? String == "unknown_platform")
    }

    @Test("an expired job: every recipient expired (reason expires_at_passed), no request")
    func expired() throws {
        let job = CLITest.job(expiresAt: "2020-01-01T00:00:00Z", recipients: [
            #"{"subscriptionId":"i1","platform":"ios","token":"\#(CLITest.iosToken)"}"#,
            #"{"subscriptionId":"a1","platform":"android","token":"\#(CLITest.fcmToken)"}"#,
        ])
        let result = try runCommand(BuiltProducts.pushworker, ["render", try CLITest.write(job)], environment: CLITest.environment([:]))
        #expect(result.status == 0)
        let lines = CLITest.lines(result.stdout)
        #expect(lines.count == 2)
        #expect(lines.allSatisfy { $0["status"] as? String == "expired" && $0["request"] is NSNull && $0["msgId"] is String })
        #expect(lines.allSatisfy { $0["reason"] as? String == "expires_at_passed" }, "\(result.stdout)")
    }

    @Test("--help prints the usage; usage errors exit 64; a missing file exits 66")
    func usage() throws {
        let help = try runCommand(BuiltProducts.pushworker, ["render", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("usage: pushworker render"))
        #expect(try runCommand(BuiltProducts.pushworker, ["render", "a.json", "b.json"]).status == 64)
        #expect(try runCommand(BuiltProducts.pushworker, ["render", "--bogus"]).status == 64)
        #expect(try runCommand(BuiltProducts.pushworker, ["render", "/nonexistent/job.json"], environment: CLITest.environment([:])).status == 66)
    }

    /// `HH:MM` (UTC) of now + `seconds`.
    static func utcClock(_ seconds: Double) -> String {
        let minute = Int(Date().addingTimeInterval(seconds).timeIntervalSince1970 / 60)
        return String(format: "%02d:%02d", minute / 60 % 24, minute % 60)
    }

    static func render(_ job: String, _ environment: [String: String] = [:]) throws -> (status: Int32, lines: [String: [String: Any]], stderr: String) {
        let result = try runCommand(BuiltProducts.pushworker, ["render", try CLITest.write(job)], environment: CLITest.environment(environment))
        return (result.status, CLITest.bySubscription(CLITest.lines(result.stdout)), result.stderr)
    }

    static let zoned = [
        #"{"subscriptionId":"utc","platform":"ios","token":"\#(CLITest.iosToken)","timezone":"UTC"}"#,
        #"{"subscriptionId":"tokyo","platform":"ios","token":"\#(CLITest.iosToken)","timezone":"Asia/Tokyo"}"#,
        #"{"subscriptionId":"mars","platform":"ios","token":"\#(CLITest.iosToken)","timezone":"Mars/Olympus"}"#,
        #"{"subscriptionId":"job","platform":"android","token":"\#(CLITest.fcmToken)"}"#,
    ]

    @Test("quiet hours: each recipient deferred to their end (reason, until), sent now (deferral null), or rejected/bad_timezone")
    func quietHours() throws {
        // Quiet from an hour ago to an hour ahead in UTC: 9 hours off in Tokyo, so not there.
        let hours = #","timezone":"UTC","quietHours":{"start":"\#(Self.utcClock(-3600))","end":"\#(Self.utcClock(3600))"}"#
        let run = try Self.render(CLITest.job(expiresAt: CLITest.future(4 * 3600), extra: hours, recipients: Self.zoned))
        #expect(run.status == 0, "\(run.stderr)")
        for id in ["utc", "job"] {
            let deferral = try #require(run.lines[id]?["deferral"] as? [String: Any], "\(id)")
            #expect(run.lines[id]?["status"] as? String == "deferred")
            #expect(deferral["reason"] as? String == "quiet_hours")
            let until = try #require((deferral["until"] as? String).flatMap(RFC3339Timestamp.parse))
            #expect(until.timeIntervalSinceNow > 3500 && until.timeIntervalSinceNow <= 3600, "\(until)")
            #expect(run.lines[id]?["request"] is [String: Any], "the request it will send")
        }
        #expect(run.lines["tokyo"]?["status"] as? String == "ready")
        #expect(run.lines["tokyo"]?["deferral"] is NSNull)
        #expect(run.lines["mars"]?["status"] as? String == "rejected")
        #expect(run.lines["mars"]?["reason"] as? String == "bad_timezone")
        #expect(run.lines["mars"]?["request"] is NSNull)

        // The end is after sendBy: expired, the reason named.
        let sendBy = #","sendBy":"\#(CLITest.future(1800))""# + hours
        let late = try Self.render(CLITest.job(expiresAt: CLITest.future(4 * 3600), extra: sendBy, recipients: Self.zoned))
        #expect(late.lines["utc"]?["status"] as? String == "expired")
        #expect(late.lines["utc"]?["reason"] as? String == "expired_in_quiet_hours")
        #expect(late.lines["utc"]?["request"] is NSNull)
        #expect(late.lines["tokyo"]?["status"] as? String == "ready")
    }

    @Test("sendAtLocal defers to the next such time in each zone; a job without rules has no deferral member")
    func sendAtLocal() throws {
        let extra = #","timezone":"UTC","sendAtLocal":"\#(Self.utcClock(7200))""#
        let run = try Self.render(CLITest.job(expiresAt: CLITest.future(4 * 3600), extra: extra, recipients: Self.zoned))
        #expect(run.status == 0, "\(run.stderr)")
        let deferral = try #require(run.lines["job"]?["deferral"] as? [String: Any])
        #expect(deferral["reason"] as? String == "send_at_local")
        let until = try #require((deferral["until"] as? String).flatMap(RFC3339Timestamp.parse))
        #expect(until.timeIntervalSinceNow > 7100 && until.timeIntervalSinceNow <= 7200, "\(until)")
        #expect(run.lines["tokyo"]?["status"] as? String == "expired", "that time comes 17 hours later in Tokyo: past expiresAt")
        #expect(run.lines["tokyo"]?["reason"] as? String == "expired_before_send_at_local")
        let plain = try Self.render(CLITest.job(recipients: [Self.zoned[0]]))
        #expect(plain.lines["utc"].map { Set($0.keys) } == Self.expectedKeys)
    }

    @Test("PUSHWORKER_QUIET_HOURS: a bulk job takes the app's default, a transactional one ignores it; a bad value exits 78")
    func appDefault() throws {
        let environment = ["PUSHWORKER_QUIET_HOURS": "app_cli=\(Self.utcClock(-3600))-\(Self.utcClock(3600))"]
        let bulk = try Self.render(CLITest.job(recipients: [Self.zoned[0]]), environment)
        #expect(bulk.status == 0, "\(bulk.stderr)")
        #expect((bulk.lines["utc"]?["deferral"] as? [String: Any])?["reason"] as? String == "quiet_hours")
        let transactional = try Self.render(CLITest.job(extra: #","lane":"transactional""#, recipients: [Self.zoned[0]]), environment)
        #expect(transactional.lines["utc"]?["status"] as? String == "ready")
        #expect(transactional.lines["utc"]?["deferral"] == nil)
        let bad = try Self.render(CLITest.job(recipients: [Self.zoned[0]]), ["PUSHWORKER_QUIET_HOURS": "app_cli=22:00"])
        #expect(bad.status == 78)
        #expect(bad.stderr.contains("PUSHWORKER_QUIET_HOURS"), "\(bad.stderr)")
        #expect(bad.lines.isEmpty)
    }
}
