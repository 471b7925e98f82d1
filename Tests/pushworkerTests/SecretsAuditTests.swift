import Foundation
import PushRuntime
import PushCore
import PushKafkaMock
import PushTestSupport
import Testing
import PushEncoding

/// Secrets never reach a log line or `config print` (docs/reference/configuration.md, docs/security.md):
/// the real binaries run through their failure paths at `trace` level —
/// a bad APNs key, OAuth refused by the sandbox, an APNs token refused, a TLS error with the
/// wrong CA, Redis AUTH failing for `run` and `events`, `config check`/`print` with every
/// secret set — and every line they print is searched for the fixtures' secrets.
@Suite("Secrets audit: no secret in any output of the real binaries", .serialized)
struct SecretsAuditTests {
    /// Every secret of the run, with a name for the failure message.
    final class Secrets: @unchecked Sendable {
        var items: [(name: String, value: String)] = []
        func add(_ name: String, _ value: String) {
            guard value.utf8.count >= 5 else { return }
            items.append((name, value))
        }
        /// The base64 body of a PEM key, line by line (a leak of any part of it counts).
        func addPEM(_ name: String, _ pem: String) {
            let lines = pem.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix("-----") }.map(String.init)
            for (index, line) in lines.enumerated() where line.utf8.count >= 16 { add("\(name) line \(index + 1)", line) }
            // Also the body as one string without newlines (a key logged after JSON-escaping or joining).
            add("\(name) joined", String(lines.joined().prefix(40)))
        }
    }

    static func openssl(_ arguments: [String]) throws -> String {
        let result = try runCommand("/usr/bin/openssl", arguments, timeout: 60)
        guard result.status == 0 else { throw TestSupportError("openssl \(arguments): \(result.stderr)") }
        return result.stdout
    }

    static func json(_ path: URL) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(contentsOf: path)) as? [String: Any] ?? [:]
    }

    static func write(_ object: [String: Any], to url: URL) throws {
        try JSONSerialization.data(withJSONObject: object).write(to: url)
    }

    @Test("send, run, events, render and config through every failure path: no private key, client secret, token, password or msgId key")
    func audit() throws {
        let secrets = Secrets()
        var outputs: [(name: String, text: String)] = []
        let sandbox = try SandboxServer(apps: ["app_ok"])
        let work = try TemporaryFolder.make(prefix: "audit")
        defer { try? FileManager.default.removeItem(at: work) }
        let credentials = work.appendingPathComponent("credentials")
        try FileManager.default.copyItem(atPath: sandbox.credentialsPath, toPath: credentials.path)
        let ok = credentials.appendingPathComponent("app_ok")

        // The sandbox's own credentials (trusted): every private part is a secret.
        let apns = try Self.json(ok.appendingPathComponent("apns.json"))
        let fcm = try Self.json(ok.appendingPathComponent("fcm.json"))
        let webPush = try Self.json(ok.appendingPathComponent("webpush.json"))
        secrets.addPEM("app_ok APNs key", apns["privateKey"] as? String ?? "")
        secrets.addPEM("app_ok FCM key", fcm["private_key"] as? String ?? "")
        secrets.add("app_ok FCM private_key_id", fcm["private_key_id"] as? String ?? "")
        secrets.add("app_ok VAPID private key", webPush["privateKey"] as? String ?? "")
        try Self.write(["webhook": ["url": "https://127.0.0.1:9/hook", "secret": "whsec_Audit-Webhook-S3cret"]],
                       to: ok.appendingPathComponent("app.json"))
        secrets.add("webhook secret", "whsec_Audit-Webhook-S3cret")

        // app_untrusted: well-formed keys the sandbox does not know (APNs refuses the JWT, the
        // OAuth grant is refused).
        let untrusted = credentials.appendingPathComponent("app_untrusted")
        try FileManager.default.createDirectory(at: untrusted, withIntermediateDirectories: true)
        let ecKey = try Self.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])
        let rsaKey = try Self.openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])
        secrets.addPEM("untrusted APNs key", ecKey)
        secrets.addPEM("untrusted FCM key", rsaKey)
        var untrustedAPNS = apns
        untrustedAPNS["privateKey"] = ecKey
        untrustedAPNS["keyId"] = "UNTRUSTED1"
        try Self.write(untrustedAPNS, to: untrusted.appendingPathComponent("apns.json"))
        var untrustedFCM = fcm
        untrustedFCM["private_key"] = rsaKey
        untrustedFCM["private_key_id"] = "5ec7e7a11d0f00ba7c0ffee5ec7e7a11d0f00ba7"
        secrets.add("untrusted FCM private_key_id", "5ec7e7a11d0f00ba7c0ffee5ec7e7a11d0f00ba7")
        try Self.write(untrustedFCM, to: untrusted.appendingPathComponent("fcm.json"))

        // app_badkey: keys that do not parse.
        let badKey = credentials.appendingPathComponent("app_badkey")
        try FileManager.default.createDirectory(at: badKey, withIntermediateDirectories: true)
        let badBody = "QmFkS2V5TWF0ZXJpYWxUaGF0TXVzdE5ldmVyTGVha0luQW55TG9nTGluZTEyMzQ1"
        var badAPNS = apns
        badAPNS["privateKey"] = "-----BEGIN PRIVATE KEY-----\n\(badBody)\n-----END PRIVATE KEY-----\n"
        try Self.write(badAPNS, to: badKey.appendingPathComponent("apns.json"))
        var badFCM = fcm
        badFCM["private_key"] = "-----BEGIN PRIVATE KEY-----\nUlNBQmFkS2V5Qm9keVRoYXRJc05vdEFLZXlBdEFsbDk4NzY1NDMyMTA=\n-----END PRIVATE KEY-----\n"
        try Self.write(badFCM, to: badKey.appendingPathComponent("fcm.json"))
        let badScalar = Base64URL.encode([UInt8](repeating: 0xFF, count: 32))
        try Self.write(["subject": "mailto:ops@example.com", "publicKey": webPush["publicKey"] ?? "", "privateKey": badScalar],
                       to: badKey.appendingPathComponent("webpush.json"))
        secrets.add("bad APNs key body", badBody)
        secrets.add("bad FCM key body", "UlNBQmFkS2V5Qm9keVRoYXRJc05vdEFLZXlBdEFsbDk4NzY1NDMyMTA=")
        secrets.add("bad VAPID key", badScalar)

        // Configuration secrets.
        let msgIDKey = String(CLITest.keys.dropFirst(3))
        secrets.add("msgId key", msgIDKey)
        let redisURLPassword = "R3dis-Url-Pa55word", redisEnvPassword = "R3dis-Env-Pa55word", redisRealPassword = "R3dis-Real-Pa55word"
        for (name, value) in [("Redis URL password", redisURLPassword), ("Redis env password", redisEnvPassword),
                              ("Redis server password", redisRealPassword), ("SASL password", "K4fka-Sasl-Pa55word"),
                              ("SSL key password", "K4fka-Ssl-Key-Pa55word")] { secrets.add(name, value) }
        // What the providers hand out and what we sign: no access token or JWT may be printed.
        secrets.add("an OAuth access token", "ya29.")
        secrets.add("a JWT header (alg)", "eyJhbGci")
        secrets.add("a JWT header (kid)", "eyJraWQi")
        secrets.add("a JWT header (typ)", "eyJ0eXAi")

        let base = CLITest.environment([
            "PUSHWORKER_CREDENTIALS_DIR": credentials.path, "PUSHWORKER_CA_FILE": sandbox.certificatePath,
            "PUSHWORKER_MSGID_KEYS": CLITest.keys, "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS": "127.0.0.1",
            "PUSHWORKER_LOG_LEVEL": "trace",
        ])
        func env(_ extra: [String: String]) -> [String: String] { base.merging(extra) { $1 } }
        let web = try CLITest.subscription(sandbox)
        let recipients = [
            #"{"subscriptionId":"i1","platform":"ios","token":"\#(CLITest.iosToken)"}"#,
            #"{"subscriptionId":"a1","platform":"android","token":"\#(CLITest.fcmToken)"}"#,
            #"{"subscriptionId":"w1","platform":"web","subscription":\#(web)}"#,
        ]
        func job(_ app: String) throws -> String { try CLITest.write(CLITest.job(appID: app, recipients: recipients)) }

        // 1. send: the good path (tokens minted and used), then refused credentials, bad keys, a TLS error.
        let good = try runCommand(BuiltProducts.pushworker, ["send", try job("app_ok")], environment: env([:]), timeout: 60)
        outputs.append(("send app_ok", good.stdout + good.stderr))
        #expect(CLITest.lines(good.stdout).compactMap { $0["status"] as? String } == ["sent", "sent", "sent"], "\(good.stderr.suffix(2000))")
        let refused = try runCommand(BuiltProducts.pushworker, ["send", try job("app_untrusted")], environment: env([:]), timeout: 90)
        outputs.append(("send app_untrusted", refused.stdout + refused.stderr))
        let refusedStatuses = CLITest.bySubscription(CLITest.lines(refused.stdout)).mapValues { "\($0["status"] ?? "")/\($0["reason"] ?? "")" }
        #expect(refusedStatuses["i1"]?.hasPrefix("rejected/") == true || refusedStatuses["i1"]?.hasPrefix("failed/") == true, "\(refusedStatuses)")
        #expect(refusedStatuses["a1"]?.hasPrefix("sent") == false, "\(refusedStatuses)")
        let bad = try runCommand(BuiltProducts.pushworker, ["send", try job("app_badkey")], environment: env([:]), timeout: 60)
        outputs.append(("send app_badkey", bad.stdout + bad.stderr))
        #expect(CLITest.lines(bad.stdout).allSatisfy { $0["reason"] as? String == "no_credentials" }, "\(bad.stdout)")
        let otherCA = work.appendingPathComponent("other-ca.pem").path
        _ = try Self.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=Not the sandbox",
                              "-days", "1", "-keyout", work.appendingPathComponent("other-ca.key").path, "-out", otherCA])
        let tls = try runCommand(BuiltProducts.pushworker, ["send", try job("app_ok")],
                                 environment: env(["PUSHWORKER_CA_FILE": otherCA]), timeout: 120)
        outputs.append(("send with the wrong CA", tls.stdout + tls.stderr))
        #expect(CLITest.lines(tls.stdout).allSatisfy { $0["status"] as? String == "failed" }, "\(tls.stdout)")
        let render = try runCommand(BuiltProducts.pushworker, ["render", try job("app_ok")], environment: env([:]), timeout: 60)
        outputs.append(("render", render.stdout + render.stderr))
        #expect(render.status == 0)

        // 2. run and events against a Redis that refuses their password (URL and PUSHWORKER_REDIS_PASSWORD).
        let redis = try RedisServer(password: redisRealPassword)
        let cluster = try KafkaMockCluster()
        defer { cluster.close() }
        for topic in ["push.jobs.v1", "push.retry.v1", "push.results.v1", "push.tokens.v1", "push.dlq.v1", "push.events.v1"] {
            try cluster.createTopic(topic, partitions: 1)
        }
        let services = [
            "PUSHWORKER_KAFKA_BROKERS": cluster.bootstrapServers,
            "PUSHWORKER_REDIS_URL": "redis://:\(redisURLPassword)@127.0.0.1:\(redis.port)",
            "PUSHWORKER_RDKAFKA_SESSION_TIMEOUT_MS": "6000",
        ]
        for (command, extra) in [("run", ["PUSHWORKER_REDIS_PASSWORD": redisEnvPassword]), ("run", [:]), ("events", ["PUSHWORKER_REDIS_PASSWORD": redisEnvPassword])] {
            let port = freeLoopbackPort()
            let process = try TestProcess(BuiltProducts.pushworker, [command],
                                          environment: env(services.merging(extra) { $1 }).merging(["PUSHWORKER_HTTP_ADDR": "127.0.0.1:\(port)"]) { $1 })
            #expect(eventually(timeout: 20) { isListening(port: port) || !process.isRunning }, "\(process.stderr())")
            // Until Redis has refused the password (the worker tries at once; events when counters flush).
            if command == "run" { #expect(eventually(timeout: 15) { process.stderr().contains("WRONGPASS") }, "\(process.stderr().suffix(1500))") }
            if command == "events" {
                // A ping, so the counters flush (and fail) against Redis.
                let keyring = try MsgIDKeyring(parsing: CLITest.keys)
                let msgID = MsgID.sign(MsgIDFields(appID: "app_ok", campaignID: "c", userID: nil, subscriptionID: "s", platform: "ios",
                                                   variant: nil), keyring: keyring)
                let ping = try runCommand("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                                                            "http://127.0.0.1:\(port)/v1/e/o/\(msgID)"])
                #expect(ping.stdout == "204")
                #expect(eventually(timeout: 15) { process.stderr().contains("WRONGPASS") }, "\(process.stderr().suffix(1500))")
            }
            let ready = try runCommand("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/readyz"])
            #expect(ready.stdout == "503", "\(command) is not ready without Redis: \(ready.stdout)")
            process.signal(SIGTERM)
            _ = process.wait(timeout: 30)
            outputs.append(("\(command) with a refused Redis password \(extra.keys.sorted())", process.stdout() + process.stderr()))
            #expect(process.stderr().lowercased().contains("redis"), "\(command) did reach Redis: \(process.stderr().suffix(1500))")
        }

        // 2b. run against Sentinels that refuse their password and a master that refuses its own
        // (redis+sentinel://), and against a TLS Redis with a client key and a CA that did not sign it.
        let sentinelSet = try RedisSentinelServer(replicas: 0, sentinels: 1, password: redisRealPassword, sentinelPassword: "S3ntinel-Real-Pa55word")
        defer { sentinelSet.stop() }
        let tlsFiles = try RedisTLSFiles.shared()
        let tlsRedis = try RedisServer(tls: .init(files: tlsFiles, requireClientCertificate: true))
        let clientKey = try String(contentsOfFile: tlsFiles.clientKey, encoding: .utf8)
        secrets.add("Sentinel password given", "S3ntinel-Given-Pa55word")
        secrets.add("Sentinel server password", "S3ntinel-Real-Pa55word")
        secrets.addPEM("Redis client key", clientKey)
        let sentinelURL = "redis+sentinel://app:\(redisURLPassword)@127.0.0.1:\(sentinelSet.sentinelPorts[0])/\(sentinelSet.masterName)"
        for (label, extra, says) in [
            ("run with a refused Sentinel password", ["PUSHWORKER_REDIS_URL": sentinelURL, "PUSHWORKER_REDIS_SENTINEL_PASSWORD": "S3ntinel-Given-Pa55word"],
             "PUSHWORKER_REDIS_SENTINEL_PASSWORD"),
            ("run with a refused master password via Sentinel", ["PUSHWORKER_REDIS_URL": sentinelURL, "PUSHWORKER_REDIS_SENTINEL_PASSWORD": "S3ntinel-Real-Pa55word"],
             "WRONGPASS"),
            ("run over TLS with another CA and a client key", ["PUSHWORKER_REDIS_URL": "rediss://:\(redisURLPassword)@127.0.0.1:\(tlsRedis.port)",
                                                              "PUSHWORKER_REDIS_CA_FILE": tlsFiles.otherCAFile, "PUSHWORKER_REDIS_CERT_FILE": tlsFiles.clientCertificate,
                                                              "PUSHWORKER_REDIS_KEY_FILE": tlsFiles.clientKey], "PUSHWORKER_REDIS_CA_FILE"),
        ] {
            let port = freeLoopbackPort()
            let process = try TestProcess(BuiltProducts.pushworker, ["run"],
                                          environment: env(services.merging(extra) { $1 }).merging(["PUSHWORKER_HTTP_ADDR": "127.0.0.1:\(port)"]) { $1 })
            #expect(eventually(timeout: 20) { process.stderr().contains(says) }, "\(label): \(process.stderr().suffix(1500))")
            process.signal(SIGTERM)
            _ = process.wait(timeout: 30)
            outputs.append((label, process.stdout() + process.stderr()))
        }
        let sentinelInputs = "S3ntinel-Given-Pa55word S3ntinel-Real-Pa55word " + clientKey

        // 3. config check and print with every secret set.
        let configuration = env(services.merging([
            "PUSHWORKER_REDIS_PASSWORD": redisEnvPassword, "PUSHWORKER_RDKAFKA_SASL_USERNAME": "svc-push",
            "PUSHWORKER_RDKAFKA_SASL_PASSWORD": "K4fka-Sasl-Pa55word", "PUSHWORKER_RDKAFKA_SSL_KEY_PASSWORD": "K4fka-Ssl-Key-Pa55word",
        ]) { $1 })
        for subcommand in ["print", "check"] {
            let result = try runCommand(BuiltProducts.pushworker, ["config", subcommand], environment: configuration)
            outputs.append(("config \(subcommand)", result.stdout + result.stderr))
            #expect(!result.stdout.isEmpty || !result.stderr.isEmpty)
        }
        #expect(outputs.first { $0.name == "config check" }?.text.contains("app_badkey/apns.json") == true, "the bad key is reported")

        // The audit. First: every secret taken from a file or the environment really is in it
        // (the list is not empty strings or fragments that match nothing).
        var inputs = base.values.joined(separator: "\n") + configuration.values.joined(separator: "\n") + redisRealPassword + sentinelInputs
        for app in try FileManager.default.contentsOfDirectory(atPath: credentials.path) {
            for file in try FileManager.default.contentsOfDirectory(atPath: credentials.appendingPathComponent(app).path) {
                let text = try String(contentsOf: credentials.appendingPathComponent(app).appendingPathComponent(file), encoding: .utf8)
                inputs += text + text.replacingOccurrences(of: "\\n", with: "").replacingOccurrences(of: "\\/", with: "/")
            }
        }
        for secret in secrets.items where !secret.name.hasPrefix("a JWT") && !secret.name.hasPrefix("an OAuth") {
            #expect(inputs.contains(secret.value), "\(secret.name) is not in the inputs")
        }
        #expect(secrets.items.count >= 20)
        for (name, text) in outputs {
            #expect(!text.isEmpty, "\(name) printed nothing")
            for secret in secrets.items where text.contains(secret.value) {
                let line = text.split(whereSeparator: \.isNewline).first { $0.contains(secret.value) } ?? ""
                Issue.record("\(secret.name) appears in the output of \(name): \(line.prefix(400))")
            }
        }
    }
}
