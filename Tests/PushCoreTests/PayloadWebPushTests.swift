import Foundation
import Testing
@testable import PushCore
@testable import PushProviders

@Suite("Web Push payloads")
struct PayloadWebPushTests {
    private func web(_ content: NotificationContent, _ browser: Browser = .chrome) throws -> (ProviderRequest, PayloadJSON) {
        let request = try requirePayload(buildPayload(content, .webPush(payloadWebSubscription(browser))))
        return (request, try parsePayloadJSON(request.body))
    }

    private func fullContent() -> NotificationContent {
        NotificationContent(
            jobID: "cmp_42:0007", appID: "app_demo", campaignID: "cmp_42", subscriptionID: "s3", msgID: "m.sig",
            language: "ko", title: "안녕하세요", subtitle: "오늘만", body: "모든 상품 20% 할인",
            url: "https://shop.example/sale", imageURL: "https://cdn.example/sale.jpg",
            actions: [NotificationAction(id: "buy", title: "구매", url: "https://shop.example/cart"),
                      NotificationAction(id: "later", title: "나중에"),
                      NotificationAction(id: "third", title: "셋째", url: "https://shop.example/3")],
            data: [KeyValue("screen", "sale")], priority: .normal, ttlSeconds: 3600, collapseID: "sale",
            web: WebOptions(iconURL: "https://cdn.example/i.png", badgeURL: "https://cdn.example/b.png",
                            requireInteraction: true, urgency: "low", topic: "sale"))
    }

    @Test("Chrome: full plaintext with 2 actions and button URLs in data")
    func chrome() throws {
        let (request, json) = try web(fullContent(), .chrome)
        #expect(json == PayloadJSON([
            "title": "안녕하세요", "body": "모든 상품 20% 할인",
            "icon": "https://cdn.example/i.png", "image": "https://cdn.example/sale.jpg",
            "badge": "https://cdn.example/b.png", "tag": "sale",
            "msgId": "m.sig", "campaignId": "cmp_42", "lang": "ko", "requireInteraction": true,
            "actions": [["action": "buy", "title": "구매"], ["action": "later", "title": "나중에"]],
            "data": ["screen": "sale", "url": "https://shop.example/sale", "a:buy": "https://shop.example/cart"],
        ] as [String: Any]))
        #expect(request.headers == [
            KeyValue("ttl", "3600"), KeyValue("urgency", "low"), KeyValue("topic", "sale"),
            KeyValue("content-type", "application/octet-stream"),
        ])
        #expect(request.webPush == payloadWebSubscription(.chrome))
    }

    @Test("actions per browser: Chrome/Edge 2, Firefox/Safari none", arguments: [
        (Browser.chrome, 2), (.edge, 2), (.firefox, 0), (.safari, 0),
    ])
    func actionsPerBrowser(browser: Browser, shown: Int) throws {
        let (_, json) = try web(fullContent(), browser)
        if case .array(let actions)? = json["actions"] {
            #expect(actions.count == shown)
        } else {
            #expect(shown == 0)
            #expect(json["actions"] == nil)
        }
        #expect((json["data"]?["a:buy"] != nil) == (shown > 0))
        #expect(json["data"]?["a:third"] == nil)
        #expect(json["data"]?["url"] == .string("https://shop.example/sale"))
    }

    @Test("minimal plaintext: title, body, ids, the replace key as tag and an empty data object")
    func minimal() throws {
        let (request, json) = try web(payloadSimpleContent())
        // No collapseId: the replace key is derived from msgId "m.sig" (docs/payloads.md "Replace key").
        #expect(json == PayloadJSON(["title": "Hi", "body": "Sale", "msgId": "m.sig", "campaignId": "cmp_42", "lang": "en",
                              "tag": "7mVmqR5oD4HbReCtXytlvw", "data": [String: Any]()] as [String: Any]))
        #expect(request.header("ttl") == "2419200")
        #expect(request.header("urgency") == "high")
        // The derived key is the recipient's own Topic, not one of the job's shared headers.
        #expect(!request.headers.contains { $0.key == "topic" })
        #expect(request.recipientHeaders == [KeyValue("topic", "7mVmqR5oD4HbReCtXytlvw")])
    }

    @Test("ttl and urgency headers", arguments: [
        // (ttlSeconds, priority, web.urgency, ttl header, urgency header)
        (0, DeliveryPriority.high, nil, "0", "high"),
        (nil, .normal, nil, "2419200", "normal"),
        (60, .high, "very-low", "60", "very-low"),
    ] as [(Int?, DeliveryPriority, String?, String, String)])
    func headers(ttl: Int?, priority: DeliveryPriority, urgency: String?, ttlHeader: String, urgencyHeader: String) throws {
        var content = payloadSimpleContent()
        content.ttlSeconds = ttl
        content.priority = priority
        content.web.urgency = urgency
        let (request, _) = try web(content)
        #expect(request.header("ttl") == ttlHeader)
        #expect(request.header("urgency") == urgencyHeader)
        #expect(request.header("content-type") == "application/octet-stream")
    }

    @Test("encrypted length = plaintext + 103 (RFC 8291 one record, 65-byte keyid)", arguments: [0, 100, 3993])
    func sizing(plaintext: Int) {
        #expect(WebPushSizing.encryptedLength(plaintextCount: plaintext) == plaintext + 86 + 1 + 16)
        #expect(WebPushSizing.encryptedLength(plaintextCount: WebPushPayloadBuilder.maxPlaintextBytes) == 4096)
    }
}
