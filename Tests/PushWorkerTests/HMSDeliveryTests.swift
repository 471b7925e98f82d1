import Foundation
@testable import PushRuntime
import PushCore
@testable import PushDelivery
import PushHTTP
import PushTestSupport
@testable import PushWorker
import Synchronization
import Testing
import PushProviders

/// `hms.json` and the worker's Huawei batches (docs/providers.md), without services.
@Suite("Huawei credentials and batches")
struct HMSCredentialsTests {
    static func load(_ object: [String: Any]) throws -> AppCredentials {
        let root = try TemporaryFolder.make(prefix: "hmscred")
        let folder = root.appendingPathComponent("app_h")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try JSONSerialization.data(withJSONObject: object).write(to: folder.appendingPathComponent("hms.json"))
        return AppCredentials.load(appID: "app_h", folder: folder)
    }

    @Test("hms.json: numeric ids, Huawei's default endpoints, appId in the send path, badgeClass in the profile")
    func loads() throws {
        let credentials = try Self.load(["clientId": 104523567, "clientSecret": "s3cr+t", "appId": "104523999", "badgeClass": "com.example.Main"])
        #expect(credentials.problems.isEmpty, "\(credentials.problems)")
        let hms = try #require(credentials.hms)
        #expect(hms.clientID == "104523567" && hms.pathID == "104523999")
        #expect(hms.endpoint == "https://push-api.cloud.huawei.com")
        #expect(hms.tokenEndpoint == "https://oauth-login.cloud.huawei.com/oauth2/v3/token")
        #expect(credentials.profile.hms == AppProfile.HMS(pathID: "104523999", endpoint: "https://push-api.cloud.huawei.com",
                                                          badgeClass: "com.example.Main"))
        let plain = try Self.load(["clientId": "104523567", "clientSecret": "x", "endpoint": "https://127.0.0.1:9/"])
        #expect(plain.hms?.pathID == "104523567" && plain.hms?.endpoint == "https://127.0.0.1:9")
    }

    @Test("unusable hms.json files are problems, never credentials", arguments: [
        (#"{"clientSecret":"x"}"#, "needs clientId and clientSecret"),
        (#"{"clientId":"1","clientSecret":""}"#, "needs clientId and clientSecret"),
        (#"{"clientId":"1/../2","clientSecret":"x"}"#, "must be letters, digits"),
        (#"{"clientId":"..","clientSecret":"x"}"#, "must be letters, digits"),
        (#"{"clientId":"1","clientSecret":"x","appId":"."}"#, "must be letters, digits"),
        (#"{"clientId":1.5,"clientSecret":"x"}"#, "needs clientId and clientSecret"),
        (#"{"clientId":"1","clientSecret":"x","endpoint":"http://push-api.cloud.huawei.com"}"#, "must be https URLs"),
        (#"{"clientId":"1","clientSecret":"x","tokenEndpoint":"ftp://x"}"#, "must be https URLs"),
    ])
    func refused(_ json: String, _ message: String) throws {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let credentials = try Self.load(object)
        #expect(credentials.hms == nil && credentials.profile.hms == nil)
        #expect(credentials.problems.count == 1)
        #expect(credentials.problems.first?.hasPrefix("app_h/hms.json: ") == true)
        #expect(credentials.problems.first?.contains(message) == true, "\(credentials.problems)")
    }

    @Test("the planner batches Huawei recipients by identical payloads: one per language and text; others and rejected ones stay out")
    func batches() throws {
        let planner = JobPlanner(keyring: try MsgIDKeyring(parsing: CLITest.keys), webPushPolicy: WebPushPolicy(extraAllowedHosts: []))
        let token = { (n: Int) in "IQAAAACy0kYzAACcTw9fkQ3sXo3T_tok\(n)" }
        let recipients = [
            #"{"userId":"u1","subscriptionId":"h1","platform":"huawei","token":"\#(token(1))"}"#,
            #"{"userId":"u2","subscriptionId":"h2","platform":"huawei","token":"\#(token(2))","language":"pt"}"#,
            #"{"userId":"u3","subscriptionId":"h3","platform":"huawei","token":"\#(token(3))"}"#,
            #"{"userId":"u4","subscriptionId":"a4","platform":"android","token":"\#(CLITest.fcmToken)"}"#,
            #"{"userId":"u5","subscriptionId":"h5","platform":"huawei","token":"bad token"}"#,
            #"{"userId":"u6","subscriptionId":"h6","platform":"huawei","token":"\#(token(6))","properties":{"name":"Ana"}}"#,
            #"{"userId":"u7","subscriptionId":"h7","platform":"huawei","token":"\#(token(7))","language":"pt"}"#,
        ]
        let job = try JobDecoder.decode(Array(CLITest.job(recipients: recipients).utf8))
        var profile = AppProfile.placeholder
        profile.hms = AppProfile.HMS(pathID: "1")
        let plans = planner.plan(job, profile: profile, now: Date())
        #expect(JobPlanner.hmsBatches(plans) == [[0, 2], [1, 6], [5]], "en, pt, and the personalized title alone")
        // Each recipient keeps its own msgId; the shared payload carries the batch msgId.
        guard case .ready(let first) = plans[0].state, case .ready(let third) = plans[2].state else { Issue.record("not ready"); return }
        #expect(first.body == third.body)
        #expect(plans[0].msgID != plans[2].msgID)
        let data = try #require(try JSONSerialization.jsonObject(with: Data(first.body)) as? [String: Any])
        let sdk = try #require(((data["message"] as? [String: Any])?["data"] as? String).flatMap {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        })
        let batchMsgID = try #require(sdk["on.msgId"] as? String)
        #expect(batchMsgID != plans[0].msgID)
        #expect(MsgID.decode(batchMsgID)?.fields.isBatch == true)
    }
}

/// The Deliverer's Huawei batches against the real sandbox (OAuth grant, messages:send, codes).
@Suite("Huawei delivery", .serialized)
struct HMSDeliveryTests {
    struct Fixture {
        let sandbox: SandboxServer
        let http: HTTP2Client
        let deliverer: Deliverer
        let credentials: AppCredentials
        let planner: JobPlanner

        init() throws {
            sandbox = try SandboxServer(apps: ["app_cli"])
            var configuration = HTTPClientConfiguration()
            configuration.caFile = sandbox.certificatePath
            http = try HTTP2Client(configuration: configuration)
            deliverer = Deliverer(http: http, metrics: Metrics(), logger: Logger(level: .critical), requestTimeout: .seconds(10))
            credentials = AppCredentials.load(appID: "app_cli", folder: URL(fileURLWithPath: sandbox.credentialsPath + "/app_cli"))
            planner = JobPlanner(keyring: try MsgIDKeyring(parsing: CLITest.keys), webPushPolicy: WebPushPolicy(extraAllowedHosts: []))
        }

        /// The shared request of one Huawei recipient.
        func request() throws -> ProviderRequest {
            let recipient = #"{"subscriptionId":"h1","platform":"huawei","token":"\#(HMSDeliveryTests.token(0))"}"#
            let job = try JobDecoder.decode(Array(CLITest.job(recipients: [recipient]).utf8))
            guard case .ready(let request) = planner.plan(job, profile: credentials.profile, now: Date())[0].state else {
                throw TestSupportError("recipient not ready")
            }
            return request
        }

        func deliver(_ tokens: [String], credentials: AppCredentials? = nil) throws -> [Deliverer.Attempt] {
            let box = Mutex<[Deliverer.Attempt]?>(nil)
            let done = DispatchSemaphore(value: 0)
            deliverer.deliverHMSBatch(try request(), tokens: tokens, credentials: credentials ?? self.credentials) { attempts in
                box.withLock { $0 = attempts }
                done.signal()
            }
            _ = done.wait(timeout: .now() + 30)
            return try #require(box.withLock { $0 })
        }

        func fault(_ json: String) throws {
            try sandbox.setFaults(json)
        }

        func stats() throws -> [String: Any] { try sandbox.stats() }
        func responses() throws -> [String: Any] { try stats()["responses"] as? [String: Any] ?? [:] }
        func shutdown() { http.shutdown(drainTimeout: .seconds(1)) }
    }

    static func token(_ n: Int, dead: Bool = false) -> String { (dead ? "dead" : "") + "IQAAAACy0kYzAACcTw9fkQ3sXo3T_hms\(n)" }

    @Test("one request for the batch: all sent; the access token is fetched once and reused")
    func sentAndCached() throws {
        let fixture = try Fixture()
        defer { fixture.shutdown() }
        let tokens = (0..<5).map { Self.token($0) }
        let attempts = try fixture.deliver(tokens)
        #expect(attempts.count == 5)
        for attempt in attempts {
            guard case .sent(let id) = attempt.outcome else { Issue.record("not sent: \(attempt.outcome)"); continue }
            #expect(id?.isEmpty == false, "requestId")
            #expect(attempt.httpStatus == 200 && attempt.attempts == 1)
        }
        _ = try fixture.deliver([Self.token(9)])
        let stats = try fixture.stats()
        #expect(stats["tokenRequests"] as? Int == 1)
        #expect(stats["requests"] as? Int == 2)
        #expect((stats["accepted"] as? [String: Any])?["huawei"] as? Int == 6)
        let recorded = try fixture.sandbox.messages().filter { $0["platform"] as? String == "huawei" }
        let first = try #require(recorded.first)
        #expect((first["path"] as? String) == "/v1/\(fixture.credentials.hms?.clientID ?? "")/messages:send")
        #expect(first["authorization"] as? String == "Bearer")
        #expect(((first["body"] as? [String: Any])?["message"] as? [String: Any])?["token"] as? [String] == tokens)
    }

    @Test("80100000: the illegal tokens are invalid_token, the others sent; all dead is 80300007 for each")
    func partialFailure() throws {
        let fixture = try Fixture()
        defer { fixture.shutdown() }
        let attempts = try fixture.deliver([Self.token(1), Self.token(2, dead: true), Self.token(3)])
        #expect(attempts.map(\.outcome.finalStatus) == [.sent, .invalidToken, .sent])
        #expect(attempts[1].outcome.reason == "80100000")
        let dead = try fixture.deliver([Self.token(4, dead: true), Self.token(5, dead: true)])
        #expect(dead.map(\.outcome.finalStatus) == [.invalidToken, .invalidToken])
        #expect(dead.first?.outcome.reason == "80300007")
    }

    @Test("80200003: the access token is fetched again and the batch re-sent once (2 attempts)")
    func refreshOnExpiry() throws {
        let fixture = try Fixture()
        defer { fixture.shutdown() }
        _ = try fixture.deliver([Self.token(1)])
        try fixture.fault(#"{"hmsAnswers":["80200003"]}"#)
        let attempts = try fixture.deliver([Self.token(2), Self.token(3)])
        #expect(attempts.map(\.outcome.finalStatus) == [.sent, .sent])
        #expect(attempts.allSatisfy { $0.attempts == 2 })
        #expect(try fixture.stats()["tokenRequests"] as? Int == 2)
        #expect(try fixture.responses()["401"] as? Int == 1)
    }

    @Test("80200001 on the fresh token too: no third request; a retry of the whole app, failed when retries run out")
    func refusedTwice() throws {
        let fixture = try Fixture()
        defer { fixture.shutdown() }
        try fixture.fault(#"{"hmsAnswers":["80200001","80200001"]}"#)
        let attempts = try fixture.deliver([Self.token(1)])
        #expect(attempts.first?.outcome == .retry(reason: "80200001", retryAfterSeconds: nil, scope: .provider))
        #expect(attempts.first?.attempts == 2)
        #expect(try fixture.responses()["401"] as? Int == 2)
        #expect(try fixture.stats()["tokenRequests"] as? Int == 2)
    }

    @Test("80300010: the batch is split in halves until Huawei takes them; every token sent")
    func split() throws {
        let fixture = try Fixture()
        defer { fixture.shutdown() }
        try fixture.fault(#"{"hmsTokenLimit":2}"#)
        let tokens = (0..<5).map { Self.token($0) }
        let attempts = try fixture.deliver(tokens)
        #expect(attempts.map(\.outcome.finalStatus) == Array(repeating: .sent, count: 5))
        #expect((try fixture.stats()["accepted"] as? [String: Any])?["huawei"] as? Int == 5)
        #expect(try fixture.responses()["400"] as? Int ?? 0 >= 1)
        // One token over a limit of 1 cannot be split: rejected with the code.
        try fixture.fault(#"{"hmsTokenLimit":1,"hmsAnswers":["80300010"]}"#)
        let single = try fixture.deliver([Self.token(7)])
        #expect(single.first?.outcome == .rejected(reason: "80300010"))
    }

    @Test("502, 503 (with Retry-After) and 81000001 are retries of the whole app; 80300008 payload_too_large; other codes rejected")
    func codes() throws {
        let fixture = try Fixture()
        defer { fixture.shutdown() }
        try fixture.fault(#"{"retryAfter":4,"hmsAnswers":["502","503","81000001","80300008","80300002"]}"#)
        let expected: [ProviderOutcome] = [
            .retry(reason: "http_502", retryAfterSeconds: nil, scope: .provider),
            .retry(reason: "http_503", retryAfterSeconds: 4, scope: .provider),
            .retry(reason: "81000001", retryAfterSeconds: nil, scope: .provider),
            .rejected(reason: "payload_too_large"),
            .rejected(reason: "80300002"),
        ]
        for outcome in expected {
            let attempts = try fixture.deliver([Self.token(1), Self.token(2)])
            #expect(attempts.map(\.outcome) == [outcome, outcome])
            #expect(attempts.first?.attempts == 1)
        }
        #expect(expected.map(\.finalStatus) == [.failed, .failed, .failed, .rejected, .rejected])
    }

    @Test("a refused client secret is rejected auth_error; an unreachable token endpoint a retry auth_unavailable")
    func grantFailures() throws {
        let fixture = try Fixture()
        defer { fixture.shutdown() }
        var wrong = fixture.credentials
        wrong.hms?.clientSecret = "not-the-secret"
        let refused = try fixture.deliver([Self.token(1)], credentials: wrong)
        #expect(refused.first?.outcome == .rejected(reason: "auth_error"))
        #expect(refused.first?.detail?.contains("400") == true)
        var unreachable = fixture.credentials
        unreachable.hms?.tokenEndpoint = "https://127.0.0.1:\(freeLoopbackPort())/oauth2/v3/token"
        let down = try fixture.deliver([Self.token(1)], credentials: unreachable)
        #expect(down.first?.outcome == .retry(reason: "auth_unavailable", retryAfterSeconds: nil, scope: .provider))
        #expect(try fixture.stats()["requests"] as? Int == 0, "nothing was sent without a token")
        var none = fixture.credentials
        none.hms = nil
        #expect(try fixture.deliver([Self.token(1)], credentials: none).first?.outcome == .rejected(reason: "no_credentials"))
    }
}
