import Foundation
import PushCore
import PushCrypto
import PushTestSupport
import Testing
#if canImport(Glibc)
import Glibc
import PushEncoding
#endif

/// `pushworker-dev sandbox` as a process, spoken to over HTTP/2 + TLS with the curl CLI and h2load.
@Suite("pushworker-dev sandbox process", .serialized)
struct SandboxProcessTests {
    static let token = String(repeating: "ab", count: 32)

    static func readJSON(_ path: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("it negotiates h2 via ALPN, writes credentials in the worker's format, and accepts a JWT-signed APNs push")
    func apnsOverHTTP2() throws {
        let server = try SandboxServer(apps: ["app1"])
        let apns = try Self.readJSON(server.credentialsPath + "/app1/apns.json")
        #expect(apns["topic"] as? String == "com.example.app1")
        #expect(apns["endpoint"] as? String == server.origin)
        let pem = try #require(apns["privateKey"] as? String)
        #expect(pem.contains("BEGIN PRIVATE KEY"))
        let teamID = try #require(apns["teamId"] as? String)
        let keyID = try #require(apns["keyId"] as? String)
        let key = try P256PrivateKey(pem: pem)
        let jwt = try JWT.signES256(headerJSON: #"{"alg":"ES256","kid":"\#(keyID)"}"#,
                                    claimsJSON: #"{"iss":"\#(teamID)","iat":\#(Int(Date().timeIntervalSince1970))}"#, key: key)
        let body = Data(#"{"aps":{"alert":{"title":"t","body":"b"}},"custom":{"i":"msg-1"}}"#.utf8)
        let reply = try server.curl("POST", "/3/device/\(Self.token)", headers: [
            "authorization": "bearer \(jwt)", "apns-topic": "com.example.app1", "apns-push-type": "alert", "apns-priority": "10",
        ], body: body)
        #expect(reply.httpVersion == "2")
        #expect(reply.status == 200, "\(reply.text) \(reply.curlError)")
        #expect(reply.headers["apns-id"]?.count == 36)
        #expect(reply.body.isEmpty)

        let missing = try server.curl("POST", "/3/device/\(Self.token)", headers: ["apns-topic": "com.example.app1"], body: body)
        #expect(missing.status == 403)
        #expect(missing.json["reason"] as? String == "MissingProviderToken")

        let dead = try server.curl("POST", "/3/device/dead\(Self.token.dropFirst(4))", headers: [
            "authorization": "bearer \(jwt)", "apns-topic": "com.example.app1",
        ], body: body)
        #expect(dead.status == 410)
        #expect(dead.json["reason"] as? String == "Unregistered")
        #expect(dead.json["timestamp"] is NSNumber)

        let fcm = try Self.readJSON(server.credentialsPath + "/app1/fcm.json")
        #expect(fcm["type"] as? String == "service_account")
        #expect(fcm["token_uri"] as? String == server.origin + "/token")
        #expect(fcm["endpoint"] as? String == server.origin)
        #expect((fcm["private_key"] as? String)?.contains("BEGIN PRIVATE KEY") == true)
        let webpush = try Self.readJSON(server.credentialsPath + "/app1/webpush.json")
        #expect(webpush["subject"] as? String == "mailto:ops@example.com")
        #expect(Base64URL.decode(webpush["publicKey"] as? String ?? "", .lenient)?.count == 65)
        #expect(Base64URL.decode(webpush["privateKey"] as? String ?? "", .lenient)?.count == 32)
        #expect(FileManager.default.fileExists(atPath: server.credentialsPath + "/app1/app.json"))

        let stats = try server.stats()
        #expect((stats["accepted"] as? [String: Any])?["ios"] as? Int == 1)
        #expect((stats["responses"] as? [String: Any])?["403"] as? Int == 1)
        #expect((stats["responses"] as? [String: Any])?["410"] as? Int == 1)
        let messages = try server.messages()
        #expect(messages.count == 1)
        #expect(messages.first?["msgId"] as? String == "msg-1")
        #expect((messages.first?["headers"] as? [String: Any])?["authorization"] == nil)
    }

    @Test("FCM: the service account's JWT grant yields an access token that sends; a forged one is UNAUTHENTICATED")
    func fcmFlow() throws {
        let server = try SandboxServer(apps: ["app2"])
        let account = try Self.readJSON(server.credentialsPath + "/app2/fcm.json")
        let email = try #require(account["client_email"] as? String)
        let project = try #require(account["project_id"] as? String)
        let key = try RSAPrivateKey(pem: try #require(account["private_key"] as? String))
        let now = Int(Date().timeIntervalSince1970)
        let assertion = try JWT.signRS256(
            headerJSON: #"{"alg":"RS256","typ":"JWT","kid":"\#(account["private_key_id"] as? String ?? "")"}"#,
            claimsJSON: #"{"iss":"\#(email)","scope":"https://www.googleapis.com/auth/firebase.messaging","aud":"\#(server.origin)/token","iat":\#(now),"exp":\#(now + 3600)}"#,
            key: key)
        let grant = try server.curl("POST", "/token", headers: ["content-type": "application/x-www-form-urlencoded"],
                                    body: Data("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)".utf8))
        #expect(grant.status == 200, "\(grant.text)")
        let accessToken = try #require(grant.json["access_token"] as? String)
        #expect(grant.json["expires_in"] as? Int == 3599)

        let message = Data(#"{"message":{"token":"fcm_token_1","data":{"on.msgId":"m-a","screen":"sale"},"android":{"priority":"HIGH","ttl":"60s"}}}"#.utf8)
        let sent = try server.curl("POST", "/v1/projects/\(project)/messages:send", headers: ["authorization": "Bearer \(accessToken)", "content-type": "application/json"], body: message)
        #expect(sent.status == 200, "\(sent.text)")
        #expect((sent.json["name"] as? String)?.hasPrefix("projects/\(project)/messages/0:") == true)

        let forged = try server.curl("POST", "/v1/projects/\(project)/messages:send", headers: ["authorization": "Bearer ya29.nope"], body: message)
        #expect(forged.status == 401)
        #expect((forged.json["error"] as? [String: Any])?["status"] as? String == "UNAUTHENTICATED")

        let dead = try server.curl("POST", "/v1/projects/\(project)/messages:send", headers: ["authorization": "Bearer \(accessToken)"],
                                   body: Data(#"{"message":{"token":"dead_1","data":{}}}"#.utf8))
        #expect(dead.status == 404)
        let details = (dead.json["error"] as? [String: Any])?["details"] as? [[String: Any]]
        #expect(details?.first?["errorCode"] as? String == "UNREGISTERED")
        #expect(try server.stats()["tokenRequests"] as? Int == 1)
    }

    @Test("Web Push to a subscription printed by `sandbox subscriptions` is decrypted and recorded")
    func webPushFlow() throws {
        let server = try SandboxServer(apps: ["app3"], arguments: ["--seed", "seed-42"])
        let printed = try runCommand(BuiltProducts.pushworkerDev, ["sandbox", "subscriptions", "2", "--origin", server.origin, "--seed", "seed-42"])
        #expect(printed.status == 0)
        let lines = printed.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        let subscription = try #require(try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
        let endpoint = try #require(subscription["endpoint"] as? String)
        #expect(endpoint == server.origin + "/wp/sub2")
        let keys = try #require(subscription["keys"] as? [String: String])
        let p256dh = try #require(Base64URL.decode(keys["p256dh"] ?? "", .lenient))
        let auth = try #require(Base64URL.decode(keys["auth"] ?? "", .lenient))

        let webpush = try Self.readJSON(server.credentialsPath + "/app3/webpush.json")
        let vapidKey = try P256PrivateKey(rawScalar: try #require(Base64URL.decode(webpush["privateKey"] as? String ?? "", .lenient)))
        let authorization = try VAPID.authorization(audience: server.origin, subject: "mailto:ops@example.com",
                                                    expiresAt: Int(Date().timeIntervalSince1970) + 43200, key: vapidKey)
        let plaintext = Array(#"{"title":"Hello","body":"World","msgId":"web-1","data":{"url":"https://shop.example"}}"#.utf8)
        let body = try WebPushEncryption.encrypt(plaintext: plaintext, userAgentPublicKey: p256dh, authSecret: auth)
        let path = String(endpoint.dropFirst(server.origin.count))
        // --browser names the browser in the endpoint's query; the keys are the same.
        let named = try runCommand(BuiltProducts.pushworkerDev, ["sandbox", "subscriptions", "1", "--start", "2", "--origin", server.origin,
                                                                 "--seed", "seed-42", "--browser", "safari"])
        #expect(named.stdout == String(lines[1]).replacingOccurrences(of: "/wp/sub2", with: "/wp/sub2?browser=safari") + "\n")
        let reply = try server.curl("POST", path, headers: [
            "authorization": authorization, "ttl": "3600", "content-encoding": "aes128gcm", "urgency": "high",
            "content-type": "application/octet-stream",
        ], body: Data(body))
        #expect(reply.status == 201, "\(reply.text)")
        #expect(reply.headers["location"]?.hasPrefix(server.origin + "/m/") == true)

        let noTTL = try server.curl("POST", path, headers: ["authorization": authorization, "content-encoding": "aes128gcm"], body: Data(body))
        #expect(noTTL.status == 400)
        let gone = try server.curl("POST", "/wp/dead-1", headers: ["authorization": authorization, "ttl": "0"])
        #expect(gone.status == 410)

        let messages = try server.messages()
        #expect(messages.count == 1)
        #expect(messages.first?["platform"] as? String == "web")
        #expect(messages.first?["msgId"] as? String == "web-1")
        #expect((messages.first?["body"] as? [String: Any])?["title"] as? String == "Hello")
    }

    @Test("faults set at runtime start a 429 storm with Retry-After; reset clears the counters")
    func runtimeFaults() throws {
        let server = try SandboxServer(arguments: ["--no-auth"])
        let body = Data(#"{"aps":{},"custom":{"i":"x"}}"#.utf8)
        let headers = ["apns-topic": "com.example.x"]
        #expect(try server.curl("POST", "/3/device/\(Self.token)", headers: headers, body: body).status == 200)
        let set = try server.curl("POST", "/_sandbox/faults", body: Data(#"{"throttleShare":1,"retryAfter":9}"#.utf8))
        #expect(set.status == 200)
        let throttled = try server.curl("POST", "/3/device/\(Self.token)", headers: headers, body: body)
        #expect(throttled.status == 429)
        #expect(throttled.headers["retry-after"] == "9")
        #expect(throttled.json["reason"] as? String == "TooManyRequests")
        #expect(try server.curl("POST", "/_sandbox/faults", body: Data(#"{"throttleShare":0,"errorShare":1}"#.utf8)).status == 200)
        #expect([500, 503].contains(try server.curl("POST", "/3/device/\(Self.token)", headers: headers, body: body).status))
        let stats = try server.stats()
        #expect(stats["duplicateMsgIds"] as? Int == 0)
        #expect((stats["responses"] as? [String: Any])?["429"] as? Int == 1)
        #expect(try server.curl("POST", "/_sandbox/reset").status == 200)
        #expect(try server.stats()["requests"] as? Int == 0)
    }

    @Test("start-up fault flags and latency apply; --record appends accepted messages")
    func startupFlags() throws {
        let folder = try TemporaryFolder.make(prefix: "record")
        let record = folder.appendingPathComponent("accepted.jsonl").path
        let server = try SandboxServer(arguments: ["--no-auth", "--latency-ms", "300", "--record", record])
        let started = Date()
        let reply = try server.curl("POST", "/3/device/\(Self.token)", headers: ["apns-topic": "t"], body: Data(#"{"custom":{"i":"r1"}}"#.utf8))
        #expect(reply.status == 200)
        #expect(Date().timeIntervalSince(started) >= 0.3)
        #expect(eventually(timeout: 5) { ((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").contains(#""msgId":"r1""#) })

        let unregistered = try SandboxServer(arguments: ["--no-auth", "--unregistered-share", "1"])
        #expect(try unregistered.curl("POST", "/3/device/\(Self.token)", headers: ["apns-topic": "t"], body: Data("{}".utf8)).status == 410)
    }

    @Test("garbage, HTTP/1.1 and TLS without ALPN h2 do not crash it; SIGTERM exits 0")
    func robustness() throws {
        let server = try SandboxServer(arguments: ["--no-auth"])
        // Plain bytes instead of a TLS handshake.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = server.port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(connected == 0)
        var garbage = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8) + (0..<2000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        _ = garbage.withUnsafeMutableBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        close(fd)
        // TLS without h2 in ALPN: the connection is refused.
        let http11 = try runCommand("/usr/bin/curl", ["-sS", "--http1.1", "--cacert", server.certificatePath, "-o", "/dev/null",
                                                      "-w", "%{http_code}", server.origin + "/_sandbox/health"])
        #expect(http11.stdout != "200")
        // TLS with ALPN h2, then bytes that are not an HTTP/2 connection preface.
        _ = try runCommand("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(server.port)", "-alpn", "h2", "-quiet"],
                                       stdin: Data("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8 + (0..<500).map { UInt8(truncatingIfNeeded: $0 &* 13) }), timeout: 10)
        // Malformed bodies on every endpoint.
        for path in ["/3/device/\(Self.token)", "/v1/projects/p/messages:send", "/wp/sub1", "/token", "/_sandbox/faults", "/nowhere"] {
            let reply = try server.curl("POST", path, headers: ["apns-topic": "t", "ttl": "1", "content-encoding": "aes128gcm"],
                                        body: Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) }))
            #expect((400..<500).contains(reply.status), "\(path): \(reply.status)")
        }
        #expect(try server.curl("GET", "/_sandbox/health").status == 200)
        server.process.signal(SIGTERM)
        #expect(server.process.wait(timeout: 10) == 0)
    }

    @Test("h2load: 2000 multiplexed APNs POSTs all succeed and are counted")
    func h2load() throws {
        let server = try SandboxServer(arguments: ["--no-auth", "--threads", "2"])
        let folder = try TemporaryFolder.make(prefix: "h2load")
        let bodyPath = folder.appendingPathComponent("body.json").path
        try Data(#"{"aps":{"alert":"load"},"custom":{"i":"same"}}"#.utf8).write(to: URL(fileURLWithPath: bodyPath))
        let result = try runCommand("/usr/bin/h2load", ["-n", "2000", "-c", "2", "-m", "50", "-d", bodyPath,
                                                         "-H", "apns-topic: com.example.load", "-H", "apns-push-type: alert",
                                                         "\(server.origin)/3/device/\(Self.token)"], timeout: 60)
        #expect(result.stdout.contains("2000 succeeded"), "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("status codes: 2000 2xx"))
        let stats = try server.stats()
        #expect((stats["accepted"] as? [String: Any])?["ios"] as? Int == 2000)
        #expect(stats["distinctMsgIds"] as? Int == 1)
        #expect(stats["duplicateMsgIds"] as? Int == 1)
    }

    @Test("usage errors exit 64")
    func usage() throws {
        #expect(try runCommand(BuiltProducts.pushworkerDev, ["sandbox", "--bogus"]).status == 64)
        #expect(try runCommand(BuiltProducts.pushworkerDev, ["sandbox", "--throttle-share", "2"]).status == 64)
        #expect(try runCommand(BuiltProducts.pushworkerDev, ["sandbox", "subscriptions"]).status == 64)
        #expect(try runCommand(BuiltProducts.pushworkerDev, ["sandbox", "subscriptions", "1", "--browser", "<b>"]).status == 64)
        #expect(try runCommand(BuiltProducts.pushworkerDev, ["sandbox", "--require-client-cert", "app_cert"]).status == 64, "needs --credentials-out")
        #expect(try runCommand(BuiltProducts.pushworkerDev, ["sandbox", "--credentials-out", "/tmp/x", "--require-client-cert", "a/b"]).status == 64)
        #expect(try runCommand(BuiltProducts.pushworkerDev, ["sandbox", "--help"]).status == 0)
    }
}
