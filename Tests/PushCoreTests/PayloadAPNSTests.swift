import Foundation
import Testing
@testable import PushCore
@testable import PushProviders

@Suite("APNs payloads")
struct PayloadAPNSTests {
    private func apns(_ content: NotificationContent, profile: AppProfile = payloadProfile) throws -> (ProviderRequest, PayloadJSON) {
        let request = try requirePayload(buildPayload(content, .apns(deviceToken: payloadAPNSToken), profile: profile))
        return (request, try parsePayloadJSON(request.body))
    }

    private func fullContent() -> NotificationContent {
        NotificationContent(
            jobID: "cmp_42:0007", appID: "app_demo", campaignID: "cmp_42", variant: "A", userID: "u1",
            subscriptionID: "s1", msgID: "m.sig", language: "tr", title: "Merhaba Ayşe", subtitle: "Bugün",
            body: "Her şeyde %20 indirim", url: "https://shop.example/sale", imageURL: "https://cdn.example/sale.jpg",
            data: [KeyValue("screen", "sale"), KeyValue("promo", "SPRING20")], priority: .high, ttlSeconds: 3600,
            collapseID: "sale",
            ios: IOSOptions(sound: "default", badge: .init(mode: .set, value: 3), threadID: "sale",
                            category: "promo", interruptionLevel: "time-sensitive", relevanceScore: 0.8))
    }

    @Test("a full alert: aps, custom with compact keys, and headers")
    func fullAlert() throws {
        let (request, json) = try apns(fullContent())
        let expected = PayloadJSON([
            "aps": [
                "alert": ["title": "Merhaba Ayşe", "subtitle": "Bugün", "body": "Her şeyde %20 indirim"],
                "badge": 3, "sound": "default", "category": "promo", "thread-id": "sale",
                "mutable-content": 1, "interruption-level": "time-sensitive", "relevance-score": 0.8,
            ] as [String: Any],
            "custom": [
                "i": "m.sig", "c": "cmp_42", "l": "tr", "u": "https://shop.example/sale", "m": "https://cdn.example/sale.jpg",
                "a": ["screen": "sale", "promo": "SPRING20"],
            ] as [String: Any],
        ])
        #expect(json == expected)
        #expect(request.headers == [
            KeyValue("apns-topic", "com.example.shop"),
            KeyValue("apns-push-type", "alert"),
            KeyValue("apns-priority", "10"),
            KeyValue("apns-expiration", String(payloadIssuedAt + 3600)),
            KeyValue("apns-collapse-id", "sale"),
        ])
        let text = String(decoding: request.body, as: UTF8.self)
        #expect(text.contains(#""relevance-score":0.8"#))
        #expect(text.contains(#""mutable-content":1"#))
    }

    @Test("a minimal alert carries only the alert and custom.i/c, and its own derived replace key")
    func minimal() throws {
        let (request, json) = try apns(payloadSimpleContent())
        #expect(json == PayloadJSON([
            "aps": ["alert": ["title": "Hi", "body": "Sale"]],
            "custom": ["i": "m.sig", "c": "cmp_42", "l": "en"],
        ]))
        #expect(request.header("apns-expiration") == nil)
        // No collapseId: the recipient's replace key (docs/payloads.md "Replace key"), derived from msgId "m.sig".
        #expect(!request.headers.contains { $0.key == "apns-collapse-id" })
        #expect(request.recipientHeaders == [KeyValue("apns-collapse-id", "7mVmqR5oD4HbReCtXytlvw")])
    }

    @Test("a silent push is background, priority 5, content-available only")
    func silent() throws {
        var content = payloadSimpleContent()
        content.title = nil
        content.body = nil
        content.ios.contentAvailable = true
        content.ios.mutableContent = true
        content.data = [KeyValue("sync", "inbox")]
        let (request, json) = try apns(content)
        #expect(json == PayloadJSON([
            "aps": ["content-available": 1],
            "custom": ["i": "m.sig", "c": "cmp_42", "l": "en", "a": ["sync": "inbox"]] as [String: Any],
        ]))
        #expect(request.header("apns-push-type") == "background")
        #expect(request.header("apns-priority") == "5")
    }

    @Test("content-available with an alert stays an alert push", arguments: [
        IOSOptions(sound: "default", contentAvailable: true),
        IOSOptions(badge: .init(mode: .set, value: 1), contentAvailable: true),
    ])
    func contentAvailableWithAlert(ios: IOSOptions) throws {
        var content = payloadSimpleContent()
        content.title = nil
        content.body = nil
        content.ios = ios
        let (request, json) = try apns(content)
        #expect(request.header("apns-push-type") == "alert")
        #expect(request.header("apns-priority") == "10")
        #expect(json["aps"]?["content-available"] == .number(1))
    }

    @Test("priority normal ⇒ apns-priority 5")
    func normalPriority() throws {
        var content = payloadSimpleContent()
        content.priority = .normal
        let (request, _) = try apns(content)
        #expect(request.header("apns-priority") == "5")
        #expect(request.header("apns-push-type") == "alert")
    }

    @Test("loc keys travel in aps.alert beside or instead of text")
    func locKeys() throws {
        var content = payloadSimpleContent()
        content.title = nil
        content.body = nil
        content.ios = IOSOptions(sound: "message.caf", locKey: "NEW_MESSAGE_BODY", locArgs: ["Salom!"],
                                 titleLocKey: "NEW_MESSAGE_TITLE", titleLocArgs: ["Anna"])
        let (_, json) = try apns(content)
        #expect(json["aps"] == PayloadJSON([
            "alert": ["title-loc-key": "NEW_MESSAGE_TITLE", "title-loc-args": ["Anna"],
                      "loc-key": "NEW_MESSAGE_BODY", "loc-args": ["Salom!"]] as [String: Any],
            "sound": "message.caf",
        ] as [String: Any]))

        content.ios.locArgs = []
        content.ios.titleLocKey = nil
        content.body = "fallback"
        let (_, second) = try apns(content)
        #expect(second["aps"]?["alert"] == PayloadJSON(["body": "fallback", "loc-key": "NEW_MESSAGE_BODY"]))
    }

    @Test("badge set ⇒ aps.badge; increase ⇒ custom.bi and mutable-content")
    func badge() throws {
        var content = payloadSimpleContent()
        content.ios.badge = .init(mode: .set, value: 7)
        let (_, set) = try apns(content)
        #expect(set["aps"]?["badge"] == .number(7))
        #expect(set["custom"]?["bi"] == nil)
        #expect(set["aps"]?["mutable-content"] == nil)

        content.ios.badge = .init(mode: .increase, value: 2)
        let (_, increase) = try apns(content)
        #expect(increase["aps"]?["badge"] == nil)
        #expect(increase["custom"]?["bi"] == .number(2))
        #expect(increase["aps"]?["mutable-content"] == .number(1))
    }

    @Test("3 actions: derived category, buttons in custom.b, mutable-content forced")
    func actions() throws {
        var content = payloadSimpleContent()
        content.actions = [NotificationAction(id: "buy", title: "Buy", url: "https://shop.example/cart"),
                           NotificationAction(id: "later", title: "Later"),
                           NotificationAction(id: "no", title: "No thanks")]
        let (_, json) = try apns(content)
        #expect(json["aps"]?["category"] == .string("on.b.buy.later.no"))
        #expect(json["aps"]?["mutable-content"] == .number(1))
        #expect(json["custom"]?["b"] == PayloadJSON([
            ["i": "buy", "n": "Buy", "u": "https://shop.example/cart"],
            ["i": "later", "n": "Later"],
            ["i": "no", "n": "No thanks"],
        ]))
        #expect(APNSPayloadBuilder.categoryID(for: content.actions) == "on.b.buy.later.no")
        #expect(APNSPayloadBuilder.categoryID(for: [NotificationAction(id: "only", title: "x")]) == "on.b.only")
        #expect(APNSPayloadBuilder.categoryID(for: []) == "on.b.")

        content.ios.category = "promo"
        let (_, named) = try apns(content)
        #expect(named["aps"]?["category"] == .string("promo"))
    }

    @Test("additionalDataAtRoot puts data keys at the payload root, not custom.a")
    func additionalDataAtRoot() throws {
        var content = payloadSimpleContent()
        content.data = [KeyValue("promo_code", "SPRING20"), KeyValue("screen", "sale")]
        let profile = AppProfile(apns: payloadProfile.apns, fcm: nil, hasWebPush: false, additionalDataAtRoot: true)
        let (_, json) = try apns(content, profile: profile)
        #expect(json == PayloadJSON([
            "aps": ["alert": ["title": "Hi", "body": "Sale"]],
            "custom": ["i": "m.sig", "c": "cmp_42", "l": "en"],
            "promo_code": "SPRING20", "screen": "sale",
        ] as [String: Any]))
    }

    @Test("apns-expiration", arguments: [
        // (ttlSeconds, expiresAtUnix, expected header)
        (0, nil, "0"),
        (0, 1_900_000_000, "0"),
        (60, nil, "1796036460"),
        (60, 1_796_036_430, "1796036430"),
        (nil, 1_800_000_000, "1800000000"),
    ] as [(Int?, Int?, String)])
    func expiration(ttl: Int?, expiresAt: Int?, expected: String) throws {
        var content = payloadSimpleContent()
        content.ttlSeconds = ttl
        content.expiresAtUnix = expiresAt
        let (request, _) = try apns(content)
        #expect(request.header("apns-expiration") == expected)
    }

    @Test("collapse id becomes apns-collapse-id")
    func collapseID() throws {
        var content = payloadSimpleContent()
        content.collapseID = "sale-2026"
        let (request, _) = try apns(content)
        #expect(request.header("apns-collapse-id") == "sale-2026")
    }
}
