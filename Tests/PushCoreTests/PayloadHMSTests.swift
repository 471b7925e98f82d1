import Foundation
import Testing
@testable import PushCore
import PushEncoding
@testable import PushProviders

let payloadHMSToken = "IQAAAACy0kYzAACcTw9fkQ3sXo3T_hms-token-1"
let payloadHMSProfile: AppProfile = {
    var profile = payloadProfile
    profile.hms = AppProfile.HMS(pathID: "104523567", endpoint: "https://hms.test/", badgeClass: "com.example.shop.MainActivity")
    return profile
}()

/// Huawei Push Kit request bodies (docs/providers.md; docs/payloads.md "Huawei").
@Suite("Huawei Push Kit payloads")
struct PayloadHMSTests {
    private func hms(_ content: NotificationContent, profile: AppProfile = payloadHMSProfile) throws -> (ProviderRequest, PayloadJSON) {
        let request = try requirePayload(buildPayload(content, .huawei(token: payloadHMSToken), profile: profile))
        return (request, try parsePayloadJSON(request.body))
    }

    /// `message.data` is a JSON object's text: parsed.
    private func data(_ json: PayloadJSON) throws -> PayloadJSON {
        let text = try #require(json["message"]?["data"]?.stringValue)
        return try parsePayloadJSON(Array(text.utf8))
    }

    private func fullContent() -> NotificationContent {
        var content = NotificationContent(
            jobID: "cmp_42:0007", appID: "app_demo", campaignID: "cmp_42", subscriptionID: "s2", msgID: "m.own",
            language: "pt", title: "Olá", body: "20% \"off\"",
            url: "https://shop.example/sale", imageURL: "https://cdn.example/sale.jpg",
            actions: [NotificationAction(id: "buy", title: "Comprar", url: "https://shop.example/cart"),
                      NotificationAction(id: "later", title: "Depois"),
                      NotificationAction(id: "no", title: "Não"),
                      NotificationAction(id: "fourth", title: "Quarto")],
            data: [KeyValue("screen", "sale")],
            priority: .high, ttlSeconds: 86400,
            ios: IOSOptions(badge: .init(mode: .increase, value: 1)),
            android: AndroidOptions(channelID: "promo", category: "MARKETING", collapseKey: 0))
        content.batchMsgID = "m.batch"
        return content
    }

    @Test("a full request: android options, notification with https click action, badge, 3 buttons; SDK keys as a string; no tokens")
    func full() throws {
        let (request, json) = try hms(fullContent())
        #expect(request.platform == .huawei)
        #expect(request.url == "https://hms.test/v1/104523567/messages:send")
        #expect(request.headers == [KeyValue("content-type", "application/json;charset=UTF-8")])
        #expect(request.hmsToken == payloadHMSToken)
        #expect(json["validate_only"] == .bool(false))
        #expect(json["message"]?["token"] == nil, "the shared body carries no token")
        let android = try #require(json["message"]?["android"])
        #expect(android["collapse_key"] == .number(0))
        #expect(android["urgency"] == .string("HIGH"))
        #expect(android["category"] == .string("MARKETING"))
        #expect(android["ttl"] == .string("86400s"))
        #expect(android["bi_tag"] == .string("cmp_42:0007"))
        let notification = try #require(android["notification"])
        #expect(notification["title"] == .string("Olá"))
        #expect(notification["body"] == .string("20% \"off\""))
        #expect(notification["image"] == .string("https://cdn.example/sale.jpg"))
        #expect(notification["channel_id"] == .string("promo"))
        #expect(notification["click_action"] == PayloadJSON(["type": 2, "url": "https://shop.example/sale"] as [String: Any]))
        #expect(notification["badge"] == PayloadJSON(["add_num": 1, "class": "com.example.shop.MainActivity"] as [String: Any]))
        guard case .array(let buttons)? = notification["buttons"] else { Issue.record("no buttons"); return }
        #expect(buttons.count == 3, "Huawei shows at most 3 buttons")
        #expect(buttons.first == PayloadJSON(["name": "Comprar", "action_type": 2, "intent": "https://shop.example/cart"] as [String: Any]))
        #expect(buttons[1]["action_type"] == .number(0))
        #expect(buttons[1]["data"] == .string(#"{"on.actionId":"later"}"#))
        let sdk = try data(json)
        #expect(sdk["on.msgId"] == .string("m.batch"), "the shared payload carries the batch msgId")
        #expect(sdk["on.title"] == .string("Olá"))
        #expect(sdk["screen"] == .string("sale"))
    }

    @Test("no https URL: click_action type 3 (open the app); a non-https image is left out; no badge without badgeClass; normal urgency")
    func defaults() throws {
        var content = payloadSimpleContent()
        content.url = "shop://sale"
        content.priority = .normal
        content.imageURL = "http://cdn.example/x.jpg"
        content.ios.badge = .init(mode: .set, value: 5)
        var profile = payloadHMSProfile
        profile.hms?.badgeClass = nil
        let (_, json) = try hms(content, profile: profile)
        let android = try #require(json["message"]?["android"])
        #expect(android["urgency"] == .string("NORMAL"))
        #expect(android["collapse_key"] == nil && android["category"] == nil && android["ttl"] == nil)
        let notification = try #require(android["notification"])
        #expect(notification["click_action"] == PayloadJSON(["type": 3] as [String: Any]))
        #expect(notification["image"] == nil)
        #expect(notification["badge"] == nil)
        #expect(try data(json)["on.url"] == .string("shop://sale"), "the app finds the deep link among the SDK keys")
    }

    @Test("a badge set is set_num, clamped to Huawei's 0…99; the ttl is clamped to 15 days")
    func clamps() throws {
        var content = payloadSimpleContent()
        content.ios.badge = .init(mode: .set, value: 500)
        content.ttlSeconds = 90 * 86400
        let (_, json) = try hms(content)
        #expect(json["message"]?["android"]?["ttl"] == .string("1296000s"))
        #expect(json["message"]?["android"]?["notification"]?["badge"]?["set_num"] == .number(99))
    }

    @Test("a job without texts is a data message: no android.notification")
    func dataMessage() throws {
        var content = payloadSimpleContent()
        content.title = nil
        content.body = nil
        let (_, json) = try hms(content)
        #expect(json["message"]?["android"]?["notification"] == nil)
        #expect(try data(json)["on.msgId"] == .string("m.sig"))
    }

    @Test("a body over 4096 bytes is cut with … and named in truncatedFields; the result fits")
    func truncation() throws {
        var content = payloadSimpleContent()
        content.body = String(repeating: "ü", count: 3000)
        let (request, json) = try hms(content)
        #expect(request.body.count <= HMSPayloadBuilder.maxPayloadBytes)
        #expect(request.truncatedFields == ["body"])
        let body = try #require(json["message"]?["android"]?["notification"]?["body"]?.stringValue)
        #expect(body.hasSuffix("…") && body.count < 3000)
    }

    @Test("data that cannot fit is payload_too_large; no hms.json is no_credentials")
    func failures() {
        var content = payloadSimpleContent()
        content.data = [KeyValue("blob", String(repeating: "x", count: 5000))]
        #expect(buildPayload(content, .huawei(token: payloadHMSToken), profile: payloadHMSProfile) == .failure(.payloadTooLarge))
        #expect(buildPayload(payloadSimpleContent(), .huawei(token: payloadHMSToken), profile: payloadProfile) == .failure(.noCredentials))
    }

    @Test("Huawei tokens: 20…4096 of [A-Za-z0-9_:.+/=-]")
    func tokens() {
        #expect(RecipientTargeting.isHMSToken(payloadHMSToken))
        #expect(RecipientTargeting.isHMSToken("AQ+b/c=" + String(repeating: "a", count: 20)))
        #expect(!RecipientTargeting.isHMSToken("short"))
        #expect(!RecipientTargeting.isHMSToken(String(repeating: "a", count: 30) + " x"))
        #expect(!RecipientTargeting.isHMSToken(String(repeating: "a", count: 30) + "\""))
        #expect(!RecipientTargeting.isHMSToken(String(repeating: "a", count: 4097)))
    }
}

@Suite("Huawei batching")
struct HMSBatchingTests {
    @Test("identical bodies share a batch in input order; different bodies do not; batches are cut at the limit")
    func grouping() {
        let a = Array("A".utf8), b = Array("B".utf8)
        #expect(HMSBatching.group([a, b, a, a, b]) == [[0, 2, 3], [1, 4]])
        #expect(HMSBatching.group([a, a, a, a, a], limit: 2) == [[0, 1], [2, 3], [4]])
        #expect(HMSBatching.group([]) == [])
        #expect(HMSBatching.group([a, a], limit: 0) == [[0], [1]], "a limit below 1 counts as 1")
        let thousandOne = Array(repeating: a, count: 1001)
        #expect(HMSBatching.group(thousandOne).map(\.count) == [1000, 1])
    }

    @Test("the batch body is the shared body with message.token as its last member")
    func body() throws {
        let shared = try requirePayload(buildPayload(payloadSimpleContent(), .huawei(token: payloadHMSToken), profile: payloadHMSProfile)).body
        let bytes = try #require(HMSBatching.body(shared: shared, tokens: ["t1", "t\"2"]))
        let json = try parsePayloadJSON(bytes)
        #expect(json["message"]?["token"] == .array([.string("t1"), .string("t\"2")]))
        #expect(json["message"]?["android"] != nil)
        #expect(HMSBatching.body(shared: shared, tokens: []) == nil)
        #expect(HMSBatching.body(shared: Array("{}".utf8), tokens: ["t"]) == nil)
        #expect(HMSBatching.body(shared: Array(#"{"a":1}"#.utf8), tokens: ["t"]) == nil)
    }
}

@Suite("Huawei answers")
struct HMSResponseClassifierTests {
    static let tokens = ["tokA", "tokB", "tokC"]
    static let now = 1_800_000_000.0

    static func answer(_ code: String, _ msg: String = "x") -> [UInt8] {
        Array(JSONWriter.object { w in w.member("code", code); w.member("msg", msg); w.member("requestId", "req-1") }.bytes)
    }

    static func classify(_ status: Int, _ body: [UInt8], retryAfter: String? = nil, tokens: [String] = tokens) -> HMSResponseClassifier.Verdict {
        HMSResponseClassifier.classify(status: status, header: { $0 == "retry-after" ? retryAfter : nil }, body: body,
                                       tokens: tokens, nowUnix: now)
    }

    static func all(_ outcome: ProviderOutcome) -> HMSResponseClassifier.Verdict { .outcomes(Array(repeating: outcome, count: tokens.count)) }

    @Test("whole-batch codes: one outcome for every token", arguments: [
        (200, "80000000", ProviderOutcome.sent(providerMessageID: "req-1")),
        (400, "80300007", .invalidToken(reason: "80300007", invalidSinceMs: 1_800_000_000_000)),
        (400, "80300008", .rejected(reason: "payload_too_large")),
        (401, "80200001", .authExpired(reason: "80200001")),
        (401, "80200003", .authExpired(reason: "80200003")),
        (500, "81000001", .retry(reason: "81000001", retryAfterSeconds: nil, scope: .provider)),
        (400, "80100001", .rejected(reason: "80100001")),
        (400, "80100016", .rejected(reason: "80100016")),
        (200, "80300002", .rejected(reason: "80300002")),
    ])
    func batchCodes(status: Int, code: String, outcome: ProviderOutcome) {
        #expect(Self.classify(status, Self.answer(code)) == Self.all(outcome))
    }

    @Test("80100000: the tokens in msg's illegal_tokens are invalid_token, the rest sent")
    func partial() {
        let msg = #"{"success":2,"failure":1,"illegal_tokens":["tokB"]}"#
        let verdict = Self.classify(200, Self.answer("80100000", msg))
        #expect(verdict == .outcomes([.sent(providerMessageID: "req-1"),
                                      .invalidToken(reason: "80100000", invalidSinceMs: 1_800_000_000_000),
                                      .sent(providerMessageID: "req-1")]))
    }

    @Test("80100000 whose msg is not readable: every token counts as sent (never sent twice)")
    func partialUnreadable() {
        #expect(Self.classify(200, Self.answer("80100000", "not json")) == Self.all(.sent(providerMessageID: "req-1")))
        #expect(Self.classify(200, Self.answer("80100000", #"{"illegal_tokens":"tokB"}"#)) == Self.all(.sent(providerMessageID: "req-1")))
    }

    @Test("80300010: split, nothing sent")
    func split() {
        #expect(Self.classify(400, Self.answer("80300010")) == .split(reason: "80300010"))
    }

    @Test("502 and 503 retry the whole app with Retry-After, whatever the body")
    func gateway() {
        #expect(Self.classify(503, Array("Service Unavailable".utf8), retryAfter: "7")
            == Self.all(.retry(reason: "http_503", retryAfterSeconds: 7, scope: .provider)))
        #expect(Self.classify(502, []) == Self.all(.retry(reason: "http_502", retryAfterSeconds: nil, scope: .provider)))
        #expect(Self.classify(503, Self.answer("80000000")) == Self.all(.retry(reason: "80000000", retryAfterSeconds: nil, scope: .provider)))
    }

    @Test("answers without a code: 2xx sent, 401 refresh, 5xx retry, other statuses rejected with http_<status>")
    func noCode() {
        #expect(Self.classify(200, []) == Self.all(.sent(providerMessageID: nil)))
        #expect(Self.classify(401, Array("<html>".utf8)) == Self.all(.authExpired(reason: "http_401")))
        #expect(Self.classify(500, Array(#"{"code":""}"#.utf8)) == Self.all(.retry(reason: "http_500", retryAfterSeconds: nil, scope: .provider)))
        #expect(Self.classify(404, Array(#"{"oops":true}"#.utf8)) == Self.all(.rejected(reason: "http_404")))
    }

    @Test("a numeric code reads as its digits; bodies over 1 MiB are not parsed")
    func oddBodies() {
        #expect(Self.classify(200, Array(#"{"code":80300007}"#.utf8)) == Self.all(.invalidToken(reason: "80300007", invalidSinceMs: 1_800_000_000_000)))
        let huge = Array(#"{"code":"80300007","msg":""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: 1 << 20) + Array(#""}"#.utf8)
        #expect(Self.classify(400, huge) == Self.all(.rejected(reason: "http_400")))
    }

    @Test("one token: the per-recipient view; 80300010 cannot split further")
    func single() {
        let classify = { (status: Int, body: [UInt8]) in
            HMSResponseClassifier.classify(status: status, header: { _ in nil }, body: body, nowUnix: Self.now)
        }
        #expect(classify(200, Self.answer("80000000")) == .sent(providerMessageID: "req-1"))
        #expect(classify(400, Self.answer("80300010")) == .rejected(reason: "80300010"))
        #expect(ResponseClassifier.classify(platform: .huawei, status: 400, header: { _ in nil }, body: Self.answer("80300007"), nowUnix: Self.now)
            == .invalidToken(reason: "80300007", invalidSinceMs: 1_800_000_000_000))
    }

    @Test("huawei metric labels: documented codes kept, the rest other")
    func labels() {
        #expect(MetricLabels.reason("80300007", platform: .huawei) == "80300007")
        #expect(MetricLabels.reason("89999999", platform: .huawei) == "other")
        #expect(MetricLabels.platform("huawei") == "huawei")
        #expect(MetricLabels.possibleReasons(platform: .huawei).isSuperset(of: MetricLabels.hms))
    }
}

@Suite("OAuth access token state")
struct AccessTokenStateTests {
    @Test("the first request fetches; later ones wait for that fetch; the answer goes to every waiter in order")
    func singleFlight() {
        var state = AccessTokenState<Int>()
        #expect(state.request(now: 0, waiter: 1) == .fetch)
        #expect(state.request(now: 0, waiter: 2) == .wait)
        #expect(state.request(now: 1, waiter: 3) == .wait)
        #expect(state.fetched(token: "T1", expiresIn: 3600, now: 2) == [1, 2, 3])
        #expect(state.request(now: 10, waiter: 4) == .use("T1"))
    }

    @Test("a token is used until 5 minutes before expires_in, then fetched again")
    func refreshMargin() {
        var state = AccessTokenState<Int>()
        _ = state.request(now: 0, waiter: 1)
        _ = state.fetched(token: "T1", expiresIn: 3600, now: 0)
        #expect(state.request(now: 3299, waiter: 2) == .use("T1"))
        #expect(state.request(now: 3300, waiter: 3) == .fetch)
        #expect(AccessTokenState<Int>.refreshMargin(lifetime: 120) == 60, "half the lifetime of a short token")
    }

    @Test("no or a bad expires_in means Huawei's 3600 s")
    func defaultLifetime() {
        for expiresIn in [nil, 0, -5, Double.infinity] as [Double?] {
            var state = AccessTokenState<Int>()
            _ = state.request(now: 0, waiter: 1)
            _ = state.fetched(token: "T", expiresIn: expiresIn, now: 0)
            #expect(state.request(now: 3299, waiter: 2) == .use("T"))
            #expect(state.request(now: 3300, waiter: 3) == .fetch)
        }
    }

    @Test("a failed fetch keeps nothing: the waiters get the failure, the next request fetches")
    func failure() {
        var state = AccessTokenState<Int>()
        _ = state.request(now: 0, waiter: 1)
        _ = state.request(now: 0, waiter: 2)
        #expect(state.fetched(token: nil, expiresIn: nil, now: 0) == [1, 2])
        #expect(state.request(now: 1, waiter: 3) == .fetch)
    }

    @Test("a refused token is forgotten once; a token already replaced is not; an answer nobody waits for is dropped")
    func invalidate() {
        var state = AccessTokenState<Int>()
        #expect(state.fetched(token: "stray", expiresIn: 3600, now: 0) == [])
        _ = state.request(now: 0, waiter: 1)
        _ = state.fetched(token: "T1", expiresIn: 3600, now: 0)
        let older = state.invalidate("T0")
        #expect(!older, "an older token: the current one stays")
        #expect(state.request(now: 1, waiter: 2) == .use("T1"))
        let current = state.invalidate("T1")
        let again = state.invalidate("T1")
        #expect(current && !again)
        #expect(state.request(now: 2, waiter: 3) == .fetch)
    }
}
