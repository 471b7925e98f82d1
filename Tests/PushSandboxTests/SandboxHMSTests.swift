import Foundation
import PushCore
import Testing
@testable import PushInbox
@testable import PushSandbox
import PushEncoding

/// The Huawei Push Kit emulator without I/O (docs/providers.md "Huawei Push Kit"): the token endpoint and messages:send.
@Suite("Sandbox Huawei Push Kit")
struct SandboxHMSTests {
    static let now = 1_800_000_000.0
    static let client = HMSTrustedClient(appID: "app_h", clientID: "104523567", clientSecret: "s3cr+t/=", pathID: "104523567")
    static let other = HMSTrustedClient(appID: "app_o", clientID: "999000111", clientSecret: "other", pathID: "999000111")
    static let tokenA = "IQAAAACy0kYzAACcTw9fkQ3sXo3T_tokenA"
    static let tokenB = "IQAAAACy0kYzAACcTw9fkQ3sXo3T_tokenB"

    final class Clock: @unchecked Sendable { var now = SandboxHMSTests.now }

    static func router(faults: SandboxFaults = SandboxFaults(), clock: Clock = Clock()) -> (SandboxRouter, SandboxState) {
        var trust = SandboxTrust()
        trust.add(client)
        trust.add(other)
        let state = SandboxState(faults: faults)
        let configuration = SandboxConfiguration(origin: "https://127.0.0.1:8443")
        return (SandboxRouter(configuration: configuration, state: state, trust: trust, clock: { clock.now }, randomSeed: 3), state)
    }

    static func request(_ path: String, method: String = "POST", headers: [(String, String)] = [], body: String) -> SandboxRequest {
        var request = SandboxRequest()
        request.method = method
        request.path = path
        request.headers = headers.map { (name: $0.0, value: $0.1) }
        request.body = Array(body.utf8)
        request.bodyLength = request.body.count
        return request
    }

    static func grant(_ router: SandboxRouter, id: String = client.clientID, secret: String = "s3cr%2Bt%2F%3D") -> SandboxResponse {
        router.handle(request(SandboxRouter.hmsTokenPath, headers: [("content-type", "application/x-www-form-urlencoded")],
                              body: "grant_type=client_credentials&client_id=\(id)&client_secret=\(secret)"))
    }

    static func accessToken(_ router: SandboxRouter) throws -> String {
        try #require(JSONValue.parse(grant(router).body)?["access_token"]?.stringValue)
    }

    static func message(tokens: [String], android: String = #"{"urgency":"HIGH","ttl":"3600s","collapse_key":-1,"category":"MARKETING","notification":{"title":"Hi","body":"Sale","click_action":{"type":3}}}"#,
                        data: String = #"{\"on.msgId\":\"m.batch\"}"#, validateOnly: Bool = false) -> String {
        let list = tokens.map { "\"\($0)\"" }.joined(separator: ",")
        return #"{"validate_only":\#(validateOnly),"message":{"data":"\#(data)","android":\#(android),"token":[\#(list)]}}"#
    }

    static func send(_ router: SandboxRouter, token: String?, path: String = "/v1/104523567/messages:send", body: String) -> SandboxResponse {
        router.handle(request(path, headers: token.map { [("authorization", "Bearer \($0)")] } ?? [], body: body))
    }

    static func code(_ response: SandboxResponse) -> String? { JSONValue.parse(response.body)?["code"]?.stringValue }

    @Test("the client-credentials grant issues an hour's Bearer token; wrong secrets, unknown clients and other grants are refused")
    func tokenEndpoint() throws {
        let (router, state) = Self.router()
        let ok = Self.grant(router)
        #expect(ok.status == 200)
        let answer = try #require(JSONValue.parse(ok.body))
        #expect(answer["expires_in"]?.numberValue == 3600 && answer["token_type"]?.stringValue == "Bearer")
        #expect(Self.grant(router, secret: "wrong").status == 400)
        #expect(JSONValue.parse(Self.grant(router, secret: "wrong").body)?["error_description"]?.stringValue == "invalid client secret")
        #expect(Self.grant(router, id: "123").status == 400)
        let other = router.handle(Self.request(SandboxRouter.hmsTokenPath, body: "grant_type=password&client_id=1&client_secret=2"))
        #expect(other.status == 400)
        #expect(router.handle(Self.request(SandboxRouter.hmsTokenPath, body: "client_id=1")).status == 400)
        #expect(router.handle(Self.request(SandboxRouter.hmsTokenPath, method: "GET", body: "")).status == 405)
        #expect(state.statsJSON().contains("\"tokenRequests\":7"))
    }

    @Test("a valid batch: 80000000, every token counted once under the batch msgId, recorded with its tokens")
    func success() throws {
        let (router, state) = Self.router()
        let token = try Self.accessToken(router)
        let response = Self.send(router, token: token, body: Self.message(tokens: [Self.tokenA, Self.tokenB]))
        #expect(response.status == 200)
        #expect(Self.code(response) == "80000000")
        #expect(JSONValue.parse(response.body)?["requestId"]?.stringValue?.isEmpty == false)
        #expect(state.statsJSON().contains("\"huawei\":2"))
        #expect(state.acceptedCount(msgID: "m.batch/" + Self.tokenA) == 1)
        let line = state.messagesText(platform: "huawei")
        #expect(line.contains(Self.tokenB) && line.contains("\"msgId\":\"m.batch\""))
        // validate_only: checked, neither delivered nor recorded.
        let check = Self.send(router, token: token, body: Self.message(tokens: [Self.tokenA], validateOnly: true))
        #expect(Self.code(check) == "80000000")
        #expect(state.statsJSON().contains("\"huawei\":2"))
    }

    @Test("dead tokens: 80100000 names them in msg's illegal_tokens; all dead is 80300007")
    func illegalTokens() throws {
        let (router, state) = Self.router()
        let token = try Self.accessToken(router)
        let dead = "dead" + Self.tokenA
        let partial = Self.send(router, token: token, body: Self.message(tokens: [Self.tokenA, dead]))
        #expect(partial.status == 200 && Self.code(partial) == "80100000")
        let msg = try #require(JSONValue.parse(partial.body)?["msg"]?.stringValue)
        let parsed = try #require(JSONValue.parse(Array(msg.utf8)))
        #expect(parsed["illegal_tokens"]?.arrayValue?.compactMap(\.stringValue) == [dead])
        #expect(parsed["success"]?.numberValue == 1 && parsed["failure"]?.numberValue == 1)
        #expect(state.statsJSON().contains("\"huawei\":1"))
        let none = Self.send(router, token: token, body: Self.message(tokens: [dead, "dead-too-" + Self.tokenB]))
        #expect(Self.code(none) == "80300007")
    }

    @Test("authentication: missing, unknown or foreign tokens are 80200001; an expired one 80200003")
    func authentication() throws {
        let clock = Clock()
        let (router, _) = Self.router(clock: clock)
        let body = Self.message(tokens: [Self.tokenA])
        #expect(Self.code(Self.send(router, token: nil, body: body)) == "80200001")
        #expect(Self.send(router, token: "nope", body: body).status == 401)
        let token = try Self.accessToken(router)
        #expect(Self.code(Self.send(router, token: token, path: "/v1/999000111/messages:send", body: body)) == "80200001",
                "a token of another client id")
        clock.now += 3601
        let expired = Self.send(router, token: token, body: body)
        #expect(expired.status == 401 && Self.code(expired) == "80200003")
    }

    @Test("message errors carry Huawei's codes", arguments: [
        (#"{"message":{"token":["IQAAAACy0kYzAACcTw9fkQ3sXo3T_tokenA"],"android":{"collapse_key":101}}}"#, "80100013"),
        (#"{"message":{"token":["IQAAAACy0kYzAACcTw9fkQ3sXo3T_tokenA"],"android":{"urgency":"LOUD"}}}"#, "80100001"),
        (#"{"message":{"token":["IQAAAACy0kYzAACcTw9fkQ3sXo3T_tokenA"],"android":{"category":"SPAM"}}}"#, "80100001"),
        (#"{"message":{"token":["IQAAAACy0kYzAACcTw9fkQ3sXo3T_tokenA"],"android":{"ttl":"2000000s"}}}"#, "80100001"),
        (#"{"message":{"token":["IQAAAACy0kYzAACcTw9fkQ3sXo3T_tokenA"],"android":{"notification":{"title":"x"}}}}"#, "80100001"),
        (#"{"message":{"token":["IQAAAACy0kYzAACcTw9fkQ3sXo3T_tokenA"],"android":{"notification":{"click_action":{"type":2,"url":"http://x"}}}}}"#, "80100001"),
        (#"{"message":{"token":["IQAAAACy0kYzAACcTw9fkQ3sXo3T_tokenA"],"data":{"a":"b"}}}"#, "80100003"),
        (#"{"message":{"token":["IQAAAACy0kYzAACcTw9fkQ3sXo3T_tokenA","IQAAAACy0kYzAACcTw9fkQ3sXo3T_tokenA"]}}"#, "80100001"),
        (#"{"message":{"topic":"news"}}"#, "80100001"),
        (#"{"message":{}}"#, "80100003"),
        (#"{"message":{"token":[]}}"#, "80100003"),
        ("not json", "80100003"),
    ])
    func messageErrors(body: String, code: String) throws {
        let (router, state) = Self.router()
        let response = Self.send(router, token: try Self.accessToken(router), body: body)
        #expect(response.status == 400)
        #expect(Self.code(response) == code, "\(String(decoding: response.body, as: UTF8.self))")
        #expect(state.statsJSON().contains("\"huawei\":0"))
    }

    @Test("a body over 4096 bytes without its tokens is 80300008; 1000 tokens do not count; more than the limit is 80300010")
    func limits() throws {
        let (router, _) = Self.router()
        let token = try Self.accessToken(router)
        let thousand = (0..<1000).map { "IQAAAACy0kYzAACcTw9fkQ3sXo3T_t\(String(format: "%05d", $0))" }
        #expect(Self.code(Self.send(router, token: token, body: Self.message(tokens: thousand))) == "80000000")
        #expect(Self.code(Self.send(router, token: token, body: Self.message(tokens: thousand + ["IQAAAACy0kYzAACcTw9fkQ3sXo3T_extra"]))) == "80300010")
        let big = Self.message(tokens: [Self.tokenA], data: String(repeating: "x", count: 4100))
        #expect(Self.code(Self.send(router, token: token, body: big)) == "80300008")
        let (limited, _) = Self.router(faults: { var f = SandboxFaults(); f.hmsTokenLimit = 1; return f }())
        let limitedToken = try Self.accessToken(limited)
        #expect(Self.code(Self.send(limited, token: limitedToken, body: Self.message(tokens: [Self.tokenA, Self.tokenB]))) == "80300010")
    }

    @Test("hmsAnswers: queued answers come first, in order; 80200003 revokes the access token; faults validate them")
    func queuedAnswers() throws {
        let update = try #require(JSONValue.parse(Array(#"{"hmsAnswers":["503","502","81000001","80200003","80300002"]}"#.utf8)))
        let faults = try #require(SandboxFaults().updated(with: update))
        let (router, state) = Self.router(faults: faults)
        let token = try Self.accessToken(router)
        let body = Self.message(tokens: [Self.tokenA])
        let busy = Self.send(router, token: token, body: body)
        #expect(busy.status == 503 && busy.headers.contains { $0.name == "retry-after" })
        #expect(Self.send(router, token: token, body: body).status == 502)
        let internalError = Self.send(router, token: token, body: body)
        #expect(internalError.status == 500 && Self.code(internalError) == "81000001")
        #expect(Self.code(Self.send(router, token: token, body: body)) == "80200003")
        #expect(Self.code(Self.send(router, token: token, body: body)) == "80200001", "the revoked token is unknown now")
        let fresh = try Self.accessToken(router)
        #expect(Self.code(Self.send(router, token: fresh, body: body)) == "80300002")
        #expect(Self.code(Self.send(router, token: fresh, body: body)) == "80000000", "the queue is empty")
        #expect(state.faults.hmsAnswers.isEmpty)
        for bad in [#"{"hmsAnswers":["8000"]}"#, #"{"hmsAnswers":[80000000]}"#, #"{"hmsAnswers":"503"}"#, #"{"hmsTokenLimit":0}"#, #"{"hmsTokenLimit":1001}"#] {
            let value = try #require(JSONValue.parse(Array(bad.utf8)))
            #expect(SandboxFaults().updated(with: value) == nil, "\(bad)")
        }
    }

    @Test("errorShare answers 81000001 or 502; throttleShare 503 with Retry-After")
    func randomFaults() throws {
        var faults = SandboxFaults()
        faults.errorShare = 1
        let (router, _) = Self.router(faults: faults)
        let token = try Self.accessToken(router)
        var statuses: Set<Int> = []
        for _ in 0..<20 { statuses.insert(Self.send(router, token: token, body: Self.message(tokens: [Self.tokenA])).status) }
        #expect(statuses == [500, 502])
        var throttled = SandboxFaults()
        throttled.throttleShare = 1
        let (busy, _) = Self.router(faults: throttled)
        #expect(Self.send(busy, token: try Self.accessToken(busy), body: Self.message(tokens: [Self.tokenA])).status == 503)
    }

    @Test("generated credentials hold hms.json pointing at the sandbox; loading a folder trusts its client")
    func credentials() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hms-cred-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let trust = try SandboxCredentials.generate(appIDs: ["app_h"], directory: directory, origin: "https://127.0.0.1:9")
        let client = try #require(trust.hmsClients.values.first)
        let data = try #require(FileManager.default.contents(atPath: directory + "/app_h/hms.json"))
        let hms = try #require(JSONValue.parse([UInt8](data)))
        #expect(hms["clientId"]?.stringValue == client.clientID && hms["clientSecret"]?.stringValue == client.clientSecret)
        #expect(hms["endpoint"]?.stringValue == "https://127.0.0.1:9")
        #expect(hms["tokenEndpoint"]?.stringValue == "https://127.0.0.1:9/oauth2/v3/token")
        var loaded = SandboxTrust()
        try SandboxCredentials.load(directory: directory, into: &loaded)
        #expect(loaded.hmsClients[client.clientID]?.clientSecret == client.clientSecret)
    }

    @Test("the inbox draws a Huawei batch from its SDK keys, addressed to its first token")
    func inbox() {
        let body = #"{"message":{"data":"{\"on.msgId\":\"m1\",\"on.title\":\"Hi\",\"on.body\":\"Sale\"}","token":["tokA","tokB"]}}"#
        let record = InboxRecord(id: 1, receivedAtMilliseconds: 0, platform: "huawei", path: "/v1/1/messages:send", headers: [],
                                 body: Array(body.utf8), encryptedBytes: nil)
        let message = InboxDrawing.draw(record, keyring: nil)
        #expect(message.problem == nil)
        #expect(message.token == "tokA")
        #expect(message.displays.first?.label == "Huawei")
        #expect(message.displays.first?.title == "Hi" && message.displays.first?.body == "Sale")
        #expect(message.displays.first?.notes.contains("one request for 2 devices") == true)
    }
}
