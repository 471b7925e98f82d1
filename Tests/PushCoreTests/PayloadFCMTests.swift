import Foundation
import Testing
@testable import PushCore
@testable import PushProviders

@Suite("FCM HTTP v1 payloads")
struct PayloadFCMTests {
    private func fcm(_ content: NotificationContent) throws -> (ProviderRequest, PayloadJSON) {
        let request = try requirePayload(buildPayload(content, .fcm(registrationToken: payloadFCMToken)))
        return (request, try parsePayloadJSON(request.body))
    }

    private func fullContent() -> NotificationContent {
        NotificationContent(
            jobID: "cmp_42:0007", appID: "app_demo", campaignID: "cmp_42", subscriptionID: "s2", msgID: "m.sig",
            language: "pt", title: "Olá", subtitle: "Hoje", body: "20% \"off\"\nem tudo",
            url: "https://shop.example/sale", imageURL: "https://cdn.example/sale.jpg",
            actions: [NotificationAction(id: "buy", title: "Comprar", url: "https://shop.example/cart"),
                      NotificationAction(id: "later", title: "Depois"),
                      NotificationAction(id: "no", title: "Não")],
            data: [KeyValue("screen", "sale"), KeyValue("promo", "SPRING20")],
            priority: .high, ttlSeconds: 86400, collapseID: "sale",
            ios: IOSOptions(badge: .init(mode: .increase, value: 1)),
            android: AndroidOptions(channelID: "promo", priority: 1, smallIcon: "ic_stat",
                                    largeIcon: "https://cdn.example/l.png", accentColor: "FF2196F3",
                                    ledColor: "FF00FF00", visibility: -1, groupKey: "sale",
                                    groupMessage: "New offers", sound: "chime"))
    }

    @Test("a full data message: job data verbatim + on.* keys, android block, content-type")
    func full() throws {
        let (request, json) = try fcm(fullContent())
        let actions = #"[{"id":"buy","title":"Comprar","url":"https://shop.example/cart"},{"id":"later","title":"Depois"},{"id":"no","title":"Não"}]"#
        let expected = PayloadJSON(["message": [
            "token": payloadFCMToken,
            "data": [
                "screen": "sale", "promo": "SPRING20",
                "on.msgId": "m.sig", "on.campaignId": "cmp_42", "on.language": "pt",
                "on.title": "Olá", "on.subtitle": "Hoje", "on.body": "20% \"off\"\nem tudo",
                "on.url": "https://shop.example/sale", "on.imageURL": "https://cdn.example/sale.jpg",
                "on.actions": actions, "on.collapseId": "sale", "on.tag": "sale",
                "on.channelId": "promo", "on.smallIcon": "ic_stat", "on.largeIcon": "https://cdn.example/l.png",
                "on.accentColor": "FF2196F3", "on.ledColor": "FF00FF00", "on.visibility": "-1",
                "on.priority": "1", "on.groupKey": "sale", "on.groupMessage": "New offers",
                "on.sound": "chime", "on.badgeIncrement": "1",
            ],
            "android": ["priority": "HIGH", "ttl": "86400s", "collapse_key": "sale"],
        ] as [String: Any]])
        #expect(json == expected)
        #expect(request.headers == [KeyValue("content-type", "application/json")])
        // on.actions parses back to the three buttons.
        let parsedActions = try parsePayloadJSON(Array(actions.utf8))
        #expect(parsedActions == PayloadJSON([["id": "buy", "title": "Comprar", "url": "https://shop.example/cart"],
                                       ["id": "later", "title": "Depois"], ["id": "no", "title": "Não"]]))
    }

    @Test("a minimal message: only msgId, campaignId, title, body, the replace key and the priority")
    func minimal() throws {
        let (_, json) = try fcm(payloadSimpleContent())
        // No collapseId: the replace key is derived from msgId "m.sig" (docs/payloads.md "Replace key").
        #expect(json == PayloadJSON(["message": [
            "token": payloadFCMToken,
            "data": ["on.msgId": "m.sig", "on.campaignId": "cmp_42", "on.language": "en", "on.title": "Hi", "on.body": "Sale",
                     "on.tag": "7mVmqR5oD4HbReCtXytlvw"],
            "android": ["priority": "HIGH", "collapse_key": "7mVmqR5oD4HbReCtXytlvw"],
        ] as [String: Any]]))
    }

    @Test("every value of message.data is a string", arguments: 0..<3)
    func allStrings(variant: Int) throws {
        var content = variant == 0 ? payloadSimpleContent() : fullContent()
        if variant == 2 { content.ios.badge = .init(mode: .set, value: 12) }
        let (_, json) = try fcm(content)
        guard case .object(let data)? = json["message"]?["data"] else {
            Issue.record("message.data missing")
            return
        }
        #expect(!data.isEmpty)
        for (key, value) in data {
            #expect(value.stringValue != nil, "\(key) is \(value)")
        }
        if variant == 2 { #expect(data["on.badge"] == .string("12")) }
    }

    @Test("priority normal, ttl 0 and collapse id in the android block")
    func androidBlock() throws {
        var content = payloadSimpleContent()
        content.priority = .normal
        content.ttlSeconds = 0
        content.collapseID = "c1"
        let (_, json) = try fcm(content)
        #expect(json["message"]?["android"] == PayloadJSON(["priority": "NORMAL", "ttl": "0s", "collapse_key": "c1"]))
    }

    @Test("a silent job carries no title or body: the SDK draws nothing")
    func silent() throws {
        var content = payloadSimpleContent()
        content.title = nil
        content.body = ""
        content.ios.contentAvailable = true
        content.data = [KeyValue("sync", "inbox")]
        let (_, json) = try fcm(content)
        #expect(json["message"]?["data"] == PayloadJSON(["sync": "inbox", "on.msgId": "m.sig", "on.campaignId": "cmp_42", "on.language": "en",
                                                         "on.tag": "7mVmqR5oD4HbReCtXytlvw"]))
    }

    @Test("the data budget counts keys + values of message.data")
    func dataBudget() throws {
        var content = payloadSimpleContent()
        // 4096-byte rule on keys + values: fill the data so that exactly 4096 fit.
        let fixed = "on.msgId".utf8.count + "m.sig".utf8.count + "on.campaignId".utf8.count + "cmp_42".utf8.count
            + "on.language".utf8.count + "en".utf8.count
            + "on.title".utf8.count + 2 + "on.body".utf8.count + 4 + "on.tag".utf8.count + ReplaceKey.derivedLength + "k".utf8.count
        content.data = [KeyValue("k", String(repeating: "x", count: 4096 - fixed))]
        let rendered = FCMPayloadBuilder.payload(content, token: payloadFCMToken, text: NotificationText(content), actionsJSON: nil)
        #expect(rendered.dataBytes == 4096)
        // The whole body is then over 4096: the body text is cut to "…" … and more is needed: too large.
        #expect(buildPayload(content, .fcm(registrationToken: payloadFCMToken)) == .failure(.payloadTooLarge))
    }
}
