import Foundation
import PushCore
import PushCrypto
import PushTestSupport
import Testing

/// `pushworker send`, `render` and `config check` with Live Activities (docs/reference/job.md) and APNs
/// certificate authentication (§18), against one sandbox holding a token app and a
/// certificate app (`--require-client-cert`).
@Suite("pushworker with Live Activities and APNs certificates", .serialized)
struct AppleProviderCommandTests {
    static let start = #"""
    ,"ios":{"sound":"default","liveActivity":{"event":"start","contentState":{"status":"preparing","etaMin":25},
     "attributesType":"DeliveryAttributes","attributes":{"orderId":"A-1001"},"staleDate":"2099-01-01T00:00:00Z","inputPushToken":true}}
    """#
    static let ios = #"{"userId":"u1","subscriptionId":"i1","platform":"ios","token":"\#(CLITest.iosToken)"}"#

    static func environment(_ sandbox: SandboxServer) -> [String: String] {
        CLITest.environment(["PUSHWORKER_CREDENTIALS_DIR": sandbox.credentialsPath, "PUSHWORKER_CA_FILE": sandbox.certificatePath,
                             "PUSHWORKER_MSGID_KEYS": CLITest.keys, "PUSHWORKER_LOG_FORMAT": "text"])
    }

    static func send(_ job: String, _ sandbox: SandboxServer) throws -> (status: Int32, lines: [[String: Any]], stderr: String) {
        let result = try runCommand(BuiltProducts.pushworker, ["send", try CLITest.write(job)], environment: environment(sandbox))
        return (result.status, CLITest.lines(result.stdout), result.stderr)
    }

    @Test("send: a token app and a certificate app both deliver; a Live Activity goes out for the token app, unsupported_auth for the certificate app; render shows both")
    func bothModes() throws {
        let sandbox = try SandboxServer(apps: ["app_cli"], arguments: ["--require-client-cert", "app_cert"])

        let token = try Self.send(CLITest.job(recipients: [Self.ios]), sandbox)
        #expect(token.status == 0 && token.lines.first?["status"] as? String == "sent", "\(token.stderr)")
        let certificate = try Self.send(CLITest.job(appID: "app_cert", recipients: [Self.ios]), sandbox)
        #expect(certificate.status == 0 && certificate.lines.first?["status"] as? String == "sent", "\(certificate.stderr)")

        let activity = try Self.send(CLITest.job(extra: Self.start, recipients: [Self.ios]), sandbox)
        #expect(activity.status == 0 && activity.lines.first?["status"] as? String == "sent", "\(activity.stderr)")
        let refused = try Self.send(CLITest.job(appID: "app_cert", extra: Self.start, recipients: [Self.ios]), sandbox)
        #expect(refused.lines.first?["status"] as? String == "rejected" && refused.lines.first?["reason"] as? String == "unsupported_auth")

        // What the sandbox accepted: the certificate app without authorization, the activity with
        // its push type and topic.
        let records = try sandbox.messages()
        #expect(records.count == 3)
        let headers = records.map { $0["headers"] as? [String: Any] ?? [:] }
        #expect(records[1]["authorization"] is NSNull && records[1]["clientCertificate"] is String)
        #expect(headers[1]["apns-topic"] as? String == "com.example.app_cert")
        #expect(headers[2]["apns-push-type"] as? String == "liveactivity")
        #expect(headers[2]["apns-topic"] as? String == "com.example.app_cli.push-type.liveactivity")
        #expect((records[2]["body"] as? [String: Any]).flatMap { $0["aps"] as? [String: Any] }?["event"] as? String == "start")

        // render: the exact requests, no authorization header for the certificate app.
        let render = try runCommand(BuiltProducts.pushworker, ["render", try CLITest.write(CLITest.job(appID: "app_cert", recipients: [Self.ios]))],
                                    environment: Self.environment(sandbox))
        let request = try #require(CLITest.lines(render.stdout).first?["request"] as? [String: Any])
        let renderedHeaders = try #require(request["headers"] as? [String: Any])
        #expect(renderedHeaders["authorization"] == nil && renderedHeaders["apns-topic"] as? String == "com.example.app_cert")
        let renderActivity = try runCommand(BuiltProducts.pushworker, ["render", try CLITest.write(CLITest.job(extra: Self.start, recipients: [Self.ios]))],
                                            environment: Self.environment(sandbox))
        let activityRequest = try #require(CLITest.lines(renderActivity.stdout).first?["request"] as? [String: Any])
        #expect((activityRequest["headers"] as? [String: Any])?["apns-push-type"] as? String == "liveactivity")
        #expect((activityRequest["headers"] as? [String: Any])?["authorization"] as? String == "bearer <redacted>")
        let aps = try #require((activityRequest["body"] as? [String: Any])?["aps"] as? [String: Any])
        #expect(aps["attributes-type"] as? String == "DeliveryAttributes" && aps["input-push-token"] as? Int == 1)
        #expect(aps["content-state"] as? [String: Any] != nil)
    }

    @Test("every job in examples/ renders, each recipient ready; the Live Activity ones as ActivityKit requests")
    func examples() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("examples")
        let jobs = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }.sorted()
        #expect(jobs.contains("live-activity-start.json") && jobs.contains("campaign.json"))
        for name in jobs {
            // campaign.json's Web Push subscriptions are the sandbox's, on 127.0.0.1 (examples/README.md).
            let result = try runCommand(BuiltProducts.pushworker, ["render", folder.appendingPathComponent(name).path],
                                        environment: CLITest.environment(["PUSHWORKER_WEBPUSH_ALLOWED_HOSTS": "127.0.0.1"]))
            #expect(result.status == 0, "\(name): \(result.stderr)")
            let lines = CLITest.lines(result.stdout)
            #expect(!lines.isEmpty && lines.allSatisfy { $0["status"] as? String == "ready" }, "\(name): \(result.stdout)")
            if name.hasPrefix("live-activity-") {
                let headers = (lines.first?["request"] as? [String: Any])?["headers"] as? [String: Any]
                #expect(headers?["apns-push-type"] as? String == "liveactivity", "\(name)")
            }
        }
    }

    @Test("a bad Live Activity section makes the job invalid: render and send exit 65 with the path")
    func invalidActivity() throws {
        let job = CLITest.job(extra: #","ios":{"liveActivity":{"event":"start","contentState":{}}}"#, recipients: [Self.ios])
        let render = try runCommand(BuiltProducts.pushworker, ["render", try CLITest.write(job)], environment: CLITest.environment([:]))
        #expect(render.status == 65)
        #expect(render.stderr.contains("$.ios.liveActivity.attributesType"), "\(render.stderr)")
    }

    @Test("config check: an expired certificate is a problem (78), one expiring within 30 days a warning")
    func configCheck() throws {
        let folder = try TemporaryFolder.make(prefix: "cfgcert")
        let authority = try CertificateAuthority.generate(commonName: "config check CA")
        let now = Date().timeIntervalSince1970
        func app(_ name: String, notAfter: Double) throws {
            let issued = try authority.issueClientCertificate(commonName: "Apple Push Services: com.example.\(name)", uid: "com.example.\(name)",
                                                              notBefore: now - 86400, notAfter: notAfter)
            let directory = folder.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(try issued.pkcs12(password: "pw")).write(to: directory.appendingPathComponent("push.p12"))
            try #"{"certificateFile":"push.p12","password":"pw"}"#.write(to: directory.appendingPathComponent("apns.json"), atomically: true, encoding: .utf8)
        }
        try app("app_soon", notAfter: now + 5 * 86400)
        let base = ["PUSHWORKER_KAFKA_BROKERS": "127.0.0.1:9092", "PUSHWORKER_REDIS_URL": "redis://127.0.0.1:6379",
                    "PUSHWORKER_MSGID_KEYS": CLITest.keys, "PUSHWORKER_CREDENTIALS_DIR": folder.path]
        let soon = try runCommand(BuiltProducts.pushworker, ["config", "check"], environment: base)
        #expect(soon.status == 0, "\(soon.stderr)")
        #expect(soon.stderr.contains("app_soon/apns.json: the certificate expires at"), "\(soon.stderr)")
        try app("app_gone", notAfter: now - 60)
        let gone = try runCommand(BuiltProducts.pushworker, ["config", "check"], environment: base)
        #expect(gone.status == 78)
        #expect(gone.stderr.contains("app_gone/apns.json: the certificate expired at"), "\(gone.stderr)")
        #expect(!gone.stderr.contains("BEGIN"))
    }
}
