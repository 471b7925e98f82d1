import Foundation

/// A `pushworker-dev sandbox --inbox 127.0.0.1:0` process and a campaign to fill it (the inbox's
/// API and browser tests).
public final class InboxSandbox: Sendable {
    public let sandbox: SandboxServer
    public let inboxPort: UInt16
    public var inboxURL: String { "http://127.0.0.1:\(inboxPort)" }

    /// The msgId keys the campaign is signed with (and the inbox verifies with).
    public static let keys = "k1:" + Data([UInt8](repeating: 7, count: 32)).base64EncodedString()

    public init(apps: [String] = ["app_inbox"], arguments: [String] = []) throws {
        let folder = try TemporaryFolder.make(prefix: "inbox")
        let portFile = folder.appendingPathComponent("inbox.port").path
        sandbox = try SandboxServer(apps: apps, arguments: ["--inbox", "127.0.0.1:0", "--inbox-port-file", portFile,
                                                           "--msgid-keys", Self.keys] + arguments)
        // The inbox port is written before the sandbox's own port file, which SandboxServer waited for.
        guard let text = try? String(contentsOfFile: portFile, encoding: .utf8),
              let port = UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw TestSupportError("no inbox port: \(sandbox.process.stdout())\(sandbox.process.stderr())")
        }
        inboxPort = port
    }

    /// One plain HTTP request with the curl CLI: status, lower-case headers, body.
    public func request(_ method: String, _ path: String, headers extra: [String] = []) throws -> (status: Int, headers: [String: String], body: Data) {
        let work = try TemporaryFolder.make(prefix: "inbox-curl")
        defer { try? FileManager.default.removeItem(at: work) }
        let headerFile = work.appendingPathComponent("h").path, bodyFile = work.appendingPathComponent("b").path
        let result = try runCommand("/usr/bin/curl", ["-s", "-X", method, "-D", headerFile, "-o", bodyFile, "-w", "%{http_code}",
                                                      "--max-time", "20"] + extra.flatMap { ["-H", $0] } + [inboxURL + path])
        var headers: [String: String] = [:]
        for line in ((try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? "").split(whereSeparator: \.isNewline) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (Int(result.stdout) ?? 0, headers, (try? Data(contentsOf: URL(fileURLWithPath: bodyFile))) ?? Data())
    }

    /// `GET /api/messages<query>` as a dictionary.
    public func messages(_ query: String = "") throws -> [String: Any] {
        let reply = try request("GET", "/api/messages" + query)
        guard reply.status == 200, let object = try JSONSerialization.jsonObject(with: reply.body) as? [String: Any] else {
            throw TestSupportError("GET /api/messages\(query): \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        }
        return object
    }

    /// Delivers `job` with the real `pushworker send` (signed with ``keys``); returns its result lines.
    @discardableResult
    public func send(_ job: String) throws -> [[String: Any]] {
        let file = try TemporaryFolder.make(prefix: "inbox-job").appendingPathComponent("job.json")
        try job.write(to: file, atomically: true, encoding: .utf8)
        let result = try runCommand(BuiltProducts.pushworker, ["send", file.path], environment: [
            "PUSHWORKER_CREDENTIALS_DIR": sandbox.credentialsPath, "PUSHWORKER_CA_FILE": sandbox.certificatePath,
            "PUSHWORKER_MSGID_KEYS": Self.keys, "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS": "127.0.0.1", "PUSHWORKER_LOG_LEVEL": "warning",
        ])
        let lines = result.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        guard result.status == 0 else { throw TestSupportError("pushworker send exited \(result.status): \(result.stderr)\n\(result.stdout)") }
        try waitUntilDrawn()
        return lines
    }

    /// Waits until the inbox has drawn everything it accepted (it draws in rounds, every 250 ms).
    public func waitUntilDrawn(timeout: Double = 10) throws {
        var last: [String: Any] = [:]
        let drawn = eventually(timeout: timeout) {
            guard let listing = try? messages("?limit=0") else { return false }
            last = listing
            let accepted = listing["accepted"] as? Int ?? -1, kept = listing["kept"] as? Int ?? 0, forgotten = listing["forgotten"] as? Int ?? 0
            return accepted > 0 && kept + forgotten + (listing["deleted"] as? Int ?? 0) == accepted
        }
        if !drawn { throw TestSupportError("the inbox did not draw what it accepted: \(last)") }
    }

    /// `count` Web Push subscriptions this sandbox decrypts for.
    public func subscriptions(_ count: Int, prefix: String = "sub") throws -> [String] {
        let result = try runCommand(BuiltProducts.pushworkerDev, ["sandbox", "subscriptions", "\(count)", "--origin", sandbox.origin, "--prefix", prefix])
        return result.stdout.split(separator: "\n").map(String.init)
    }

    /// A campaign with one recipient per surface: iOS in Turkish (a title with markup, the
    /// subtitle falling back to English), Android in English (3 buttons), Web in Turkish for
    /// Chrome and in English for Safari.
    public func campaignJob(campaign: String = "cmp_inbox", app: String = "app_inbox", tag: String = "") throws -> String {
        let web = try subscriptions(2, prefix: "w\(campaign.filter { $0.isLetter || $0.isNumber })")
        let token = String(repeating: "ab", count: 31) + String(format: "%02x", campaign.utf8.reduce(0) { ($0 + Int($1)) % 256 })
        return """
        {"schemaVersion":1,"jobId":"\(campaign):1","appId":"\(app)","campaignId":"\(campaign)","variant":"B",
         "createdAt":"2026-01-01T00:00:00Z","expiresAt":"2099-01-01T00:00:00Z","priority":"high","ttlSeconds":3600,"collapseId":"sale",
         "content":{"defaultLanguage":"en","languages":{
           "en":{"title":"Hi {{ first_name | default: \\"there\\" }}\(tag)","subtitle":"Today only","body":"20% off everything",
                 "url":"https://shop.example/sale","imageURL":"https://cdn.example/sale.jpg",
                 "actions":[{"id":"buy","title":"Buy","url":"https://shop.example/cart"},{"id":"later","title":"Later"},{"id":"no","title":"No thanks"}]},
           "tr":{"title":"Merhaba {{ first_name }}\(tag)","body":"Her şeyde %20 indirim",
                 "actions":[{"id":"buy","title":"Satın al","url":"https://shop.example/cart"},{"id":"later","title":"Sonra"},{"id":"no","title":"Hayır"}]}}},
         "data":{"screen":"sale","promo":"SPRING20"},
         "ios":{"sound":"default","badge":{"mode":"increase","value":1},"threadId":"sale","interruptionLevel":"time-sensitive"},
         "android":{"channelId":"promo","smallIcon":"ic_stat","accentColor":"FF2196F3","groupKey":"sale","groupMessage":"New offers"},
         "web":{"iconURL":"https://cdn.example/icon.png"},
         "recipients":[
          {"userId":"u1","subscriptionId":"ios-1","platform":"ios","token":"\(token)","language":"tr","properties":{"first_name":"<img src=x onerror=window.__xss=1>"}},
          {"userId":"u2","subscriptionId":"and-1","platform":"android","token":"fcm:\(campaign)-APA91b_token","language":"en-GB"},
          {"userId":"u3","subscriptionId":"web-1","platform":"web","language":"tr","browser":"chrome","subscription":\(web[0])},
          {"userId":"u4","subscriptionId":"web-2","platform":"web","language":"en","browser":"safari","subscription":\(web[1])}]}
        """
    }
}
