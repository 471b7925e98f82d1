import Foundation
import PushCore
@testable import PushInbox
import Testing
import PushEncoding
import PushProviders

/// The inbox's drawing model (docs/sandbox.md "Inbox"): the payloads PushCore's builders make,
/// drawn as each platform would. Pure: a record in, a view model out.
@Suite("Inbox drawing")
struct InboxDrawingTests {
    static let keyring = try! MsgIDKeyring(keys: [(keyID: "k1", key: Array(repeating: 7, count: 32))])
    static let profile = AppProfile(apns: .init(topic: "com.example.shop", endpoint: "https://127.0.0.1:8443"),
                                    fcm: .init(projectID: "sandbox-app_demo", endpoint: "https://127.0.0.1:8443"), hasWebPush: true)
    static let iosToken = String(repeating: "ab", count: 32)

    static func content(platform: String, language: String = "tr", actions: Int = 3) -> NotificationContent {
        let msgID = MsgID.sign(MsgIDFields(appID: "app_demo", campaignID: "cmp_42", userID: "u1", subscriptionID: "s1",
                                           platform: platform, variant: "B"), keyring: keyring)
        let buttons = [NotificationAction(id: "buy", title: "Satın al", url: "https://shop.example/cart"),
                       NotificationAction(id: "later", title: "Sonra"), NotificationAction(id: "no", title: "Hayır")]
        return NotificationContent(
            jobID: "cmp_42:1", appID: "app_demo", campaignID: "cmp_42", variant: "B", userID: "u1", subscriptionID: "s1",
            msgID: msgID, language: language, title: "Merhaba <img src=x onerror=alert(1)>", subtitle: "Today only",
            body: "Her şeyde %20 indirim", url: "https://shop.example/sale", imageURL: "https://cdn.example/sale.jpg",
            actions: Array(buttons.prefix(actions)), data: [KeyValue("screen", "sale"), KeyValue("promo", "SPRING20")],
            collapseID: "sale",
            ios: IOSOptions(sound: "default", badge: .init(mode: .increase, value: 1), threadID: "sale", interruptionLevel: "time-sensitive"),
            android: AndroidOptions(channelID: "promo", smallIcon: "ic_stat", largeIcon: "https://cdn.example/l.png", accentColor: "FF2196F3",
                                    visibility: 1, groupKey: "sale", groupMessage: "New offers", sound: "chime"),
            web: WebOptions(iconURL: "https://cdn.example/icon.png", badgeURL: "https://cdn.example/badge.png"))
    }

    /// The request PushCore builds, as the sandbox records it (Web Push: the plaintext).
    static func record(_ content: NotificationContent, _ target: DeliveryTarget) throws -> InboxRecord {
        guard case .success(let request) = PayloadBuilder.build(content, target: target, profile: profile, issuedAtUnix: 1_796_036_400) else {
            throw TestError("payload not built")
        }
        let platform: String = request.platform.rawValue
        let path = String(request.url.dropFirst("https://127.0.0.1:8443".count))
        var headers = request.headers.map { (name: $0.key, value: $0.value) }
        headers.append((name: "authorization", value: InboxRecord.redactAuthorization("bearer eyJhbGciOi.x.y")))
        return InboxRecord(id: 7, receivedAtMilliseconds: 1_796_036_400_123, platform: platform, path: path, headers: headers,
                           body: request.body, encryptedBytes: platform == "web" ? request.body.count + 103 : nil)
    }

    static func webTarget(_ browser: Browser) -> DeliveryTarget {
        .webPush(WebPushSubscription(endpoint: "https://127.0.0.1:8443/wp/sub1", p256dh: Array(repeating: 4, count: 65),
                                     auth: Array(repeating: 7, count: 16), browser: browser))
    }

    @Test("iOS: banner texts as sent, badge increase, sound, thread, derived category with its 3 buttons, image via the extension")
    func ios() throws {
        let message = InboxDrawing.draw(try Self.record(Self.content(platform: "ios"), .apns(deviceToken: Self.iosToken)), keyring: Self.keyring)
        #expect(message.problem == nil)
        #expect(message.language == "tr")
        #expect(message.app == "app_demo")
        #expect(message.campaign == "cmp_42")
        #expect(message.token == Self.iosToken)
        #expect(message.url == "https://shop.example/sale")
        #expect(message.data.map { "\($0.key)=\($0.value)" } == ["screen=sale", "promo=SPRING20"])
        let display = try #require(message.displays.first)
        #expect(message.displays.count == 1)
        #expect(display.surface == "ios")
        #expect(!display.isSilent)
        #expect(display.title == "Merhaba <img src=x onerror=alert(1)>")
        #expect(display.subtitle == "Today only")
        #expect(display.body == "Her şeyde %20 indirim")
        #expect(display.badge == "+1")
        #expect(display.sound == "default")
        #expect(display.group == "sale")
        #expect(display.category == "on.b.buy.later.no")
        #expect(display.interruptionLevel == "time-sensitive")
        #expect(display.imageURL == "https://cdn.example/sale.jpg")
        #expect(display.appName == "com.example.shop")
        // A button without its own URL leads to the notification's (docs/payloads.md "Where each SDK field travels").
        #expect(display.buttons == [InboxButton(id: "buy", title: "Satın al", url: "https://shop.example/cart"),
                                    InboxButton(id: "later", title: "Sonra", url: "https://shop.example/sale"),
                                    InboxButton(id: "no", title: "Hayır", url: "https://shop.example/sale")])
        #expect(display.hiddenButtons.isEmpty)
    }

    @Test("Android: from the FCM data message, 3 buttons, accent colour as CSS, icons, group and channel")
    func android() throws {
        let message = InboxDrawing.draw(try Self.record(Self.content(platform: "android"), .fcm(registrationToken: "fcm:APA91b-token_1")),
                                        keyring: Self.keyring)
        let display = try #require(message.displays.first)
        #expect(display.surface == "android")
        #expect(display.title == "Merhaba <img src=x onerror=alert(1)>")
        #expect(display.subtitle == "Today only")
        #expect(display.body == "Her şeyde %20 indirim")
        #expect(display.buttons.map(\.id) == ["buy", "later", "no"])
        #expect(display.buttons.map(\.url) == ["https://shop.example/cart", "https://shop.example/sale", "https://shop.example/sale"])
        #expect(display.accentColor == "#2196F3")
        #expect(display.smallIcon == "ic_stat")
        #expect(display.iconURL == "https://cdn.example/l.png")
        #expect(display.imageURL == "https://cdn.example/sale.jpg")
        #expect(display.group == "sale")
        #expect(display.groupMessage == "New offers")
        #expect(display.channel == "promo")
        #expect(display.sound == "chime")
        #expect(display.badge == "+1")
        #expect(display.notes.contains("lock screen: public"))
        #expect(message.token == "fcm:APA91b-token_1")
        #expect(message.language == "tr")
        // The SDK's own keys are not the app's data.
        #expect(message.data.map(\.key) == ["screen", "promo"])
    }

    @Test("Web: Chrome/Edge show 2 buttons, Firefox and Safari none; image only in Chrome; button URLs from data[a:id]")
    func web() throws {
        let message = InboxDrawing.draw(try Self.record(Self.content(platform: "web"), Self.webTarget(.chrome)), keyring: Self.keyring)
        #expect(message.displays.map(\.surface) == ["chrome", "firefox", "safari"])
        let counts = message.displays.map(\.buttons.count)
        #expect(counts == [2, 0, 0])
        let chrome = message.displays[0]
        #expect(chrome.buttons == [InboxButton(id: "buy", title: "Satın al", url: "https://shop.example/cart"),
                                   InboxButton(id: "later", title: "Sonra", url: "https://shop.example/sale")])
        #expect(chrome.imageURL == "https://cdn.example/sale.jpg")
        #expect(chrome.iconURL == "https://cdn.example/icon.png")
        #expect(chrome.smallIcon == "https://cdn.example/badge.png")
        #expect(message.displays[1].imageURL == nil)
        #expect(message.displays[1].iconURL == "https://cdn.example/icon.png")
        #expect(message.displays[2].iconURL == nil)
        #expect(message.displays[2].hiddenButtons.count == 2)
        #expect(message.displays.allSatisfy { $0.title == "Merhaba <img src=x onerror=alert(1)>" && $0.subtitle == nil })
        #expect(message.token == "sub1")
        #expect(message.language == "tr")
        #expect(message.url == "https://shop.example/sale")
        #expect(message.data.map(\.key) == ["screen", "promo"])
        #expect(message.record.encryptedBytes == message.record.body.count + 103)

        // Sent for Safari, the payload has no actions at all: every browser draws none.
        let safari = InboxDrawing.draw(try Self.record(Self.content(platform: "web"), Self.webTarget(.safari)), keyring: Self.keyring)
        #expect(safari.displays.map(\.buttons.count) == [0, 0, 0])
    }

    @Test("more buttons than a surface shows: Chrome 2, Android 3, iOS 4; the rest listed as not shown")
    func buttonLimits() throws {
        let actions = (1...5).map { #"{"id":"b\#($0)","title":"B\#($0)"}"# }.joined(separator: ",")
        let fcm = #"{"message":{"token":"t1","data":{"on.msgId":"x","on.title":"T","on.body":"B","on.actions":"[\#(actions.replacingOccurrences(of: "\"", with: "\\\""))]"}}}"#
        let android = InboxDrawing.draw(InboxRecord(platform: "android", path: "/v1/projects/p/messages:send", headers: [], body: Array(fcm.utf8)), keyring: nil)
        #expect(android.displays[0].buttons.map(\.id) == ["b1", "b2", "b3"])
        #expect(android.displays[0].hiddenButtons.map(\.id) == ["b4", "b5"])

        let web = #"{"title":"T","msgId":"x","actions":[\#((1...3).map { #"{"action":"a\#($0)","title":"A\#($0)"}"# }.joined(separator: ","))],"data":{"url":"https://u","a:a2":"https://two"}}"#
        let chrome = InboxDrawing.draw(InboxRecord(platform: "web", path: "/wp/s", headers: [], body: Array(web.utf8)), keyring: nil).displays[0]
        #expect(chrome.buttons == [InboxButton(id: "a1", title: "A1", url: "https://u"), InboxButton(id: "a2", title: "A2", url: "https://two")])
        #expect(chrome.hiddenButtons.map(\.id) == ["a3"])

        let apns = #"{"aps":{"alert":"hi","mutable-content":1},"custom":{"i":"x","b":[\#((1...5).map { #"{"i":"i\#($0)","n":"I\#($0)"}"# }.joined(separator: ","))]}}"#
        let ios = InboxDrawing.draw(InboxRecord(platform: "ios", path: "/3/device/\(Self.iosToken)", headers: [], body: Array(apns.utf8)), keyring: nil).displays[0]
        #expect(ios.buttons.count == 4)
        #expect(ios.hiddenButtons.map(\.id) == ["i5"])
        #expect(ios.body == "hi")
    }

    @Test("iOS buttons and image need mutable-content: without it they are listed as not shown")
    func iosWithoutMutableContent() {
        let apns = #"{"aps":{"alert":{"title":"T"},"category":"promo"},"custom":{"i":"x","m":"https://img","b":[{"i":"ok","n":"OK"}]}}"#
        let display = InboxDrawing.draw(InboxRecord(platform: "ios", path: "/3/device/\(Self.iosToken)", headers: [], body: Array(apns.utf8)), keyring: nil).displays[0]
        #expect(display.buttons.isEmpty)
        #expect(display.hiddenButtons.map(\.id) == ["ok"])
        #expect(display.imageURL == nil)
        #expect(display.notes.contains("image not attached: needs mutable-content"))
    }

    @Test("silent pushes are not displayed: APNs background, FCM data only")
    func silent() throws {
        var content = Self.content(platform: "ios", actions: 0)
        content.title = nil; content.subtitle = nil; content.body = nil; content.imageURL = nil
        content.ios = IOSOptions(contentAvailable: true)
        let ios = InboxDrawing.draw(try Self.record(content, .apns(deviceToken: Self.iosToken)), keyring: nil)
        #expect(ios.displays[0].isSilent)
        #expect(ios.displays[0].buttons.isEmpty)
        #expect(ios.record.header("apns-push-type") == "background")
        content.android = AndroidOptions()
        let android = InboxDrawing.draw(try Self.record(content, .fcm(registrationToken: "t")), keyring: nil)
        #expect(android.displays[0].isSilent)
        #expect(android.data.map(\.key) == ["screen", "promo"])
    }

    @Test("iOS loc keys (the SDK contract) are shown as keys with their arguments")
    func locKeys() throws {
        var content = Self.content(platform: "ios", actions: 0)
        content.title = nil; content.subtitle = nil; content.body = nil
        content.ios = IOSOptions(sound: "message.caf", locKey: "NEW_MESSAGE_BODY", locArgs: ["Salom!"], titleLocKey: "NEW_MESSAGE_TITLE", titleLocArgs: ["Anna"])
        let display = InboxDrawing.draw(try Self.record(content, .apns(deviceToken: Self.iosToken)), keyring: nil).displays[0]
        #expect(display.titleLocalization == "NEW_MESSAGE_TITLE “Anna”")
        #expect(display.bodyLocalization == "NEW_MESSAGE_BODY “Salom!”")
        #expect(display.title == nil)
        #expect(!display.isSilent)
    }

    @Test("a body the worker cut to fit is shown exactly as sent, with its …")
    func truncationAsSent() throws {
        var content = Self.content(platform: "ios")
        content.body = String(repeating: "çok uzun metin 🎉 ", count: 400)
        let record = try Self.record(content, .apns(deviceToken: Self.iosToken))
        let sent = try #require(JSONValue.parse(record.body)?["aps"]?["alert"]?["body"]?.stringValue)
        #expect(sent.hasSuffix("…"))
        #expect(sent.count < content.body?.count ?? 0)
        let display = InboxDrawing.draw(record, keyring: nil).displays[0]
        #expect(display.body == sent)
    }

    @Test("the msgId is decoded; valid with the signing keys, invalid with others, unverified without keys")
    func msgID() throws {
        let record = try Self.record(Self.content(platform: "android"), .fcm(registrationToken: "t"))
        let valid = try #require(InboxDrawing.draw(record, keyring: Self.keyring).decodedMsgID)
        #expect(valid.isValid == true)
        #expect(valid.keyID == "k1")
        #expect(valid.fields == MsgIDFields(appID: "app_demo", campaignID: "cmp_42", userID: "u1", subscriptionID: "s1", platform: "android", variant: "B"))
        let other = try MsgIDKeyring(keys: [(keyID: "k1", key: Array(repeating: 9, count: 32))])
        #expect(InboxDrawing.draw(record, keyring: other).decodedMsgID?.isValid == false)
        #expect(InboxDrawing.draw(record, keyring: nil).decodedMsgID?.isValid == nil)
        let garbage = InboxDrawing.draw(InboxRecord(platform: "web", path: "/wp/s", headers: [], body: Array(#"{"msgId":"not-a-msgid"}"#.utf8)), keyring: Self.keyring)
        #expect(garbage.msgID == "not-a-msgid")
        #expect(garbage.decodedMsgID == nil)
    }

    @Test("the JSON keeps payload text verbatim (markup stays text), redacts authorization, parses back")
    func json() throws {
        let message = InboxDrawing.draw(try Self.record(Self.content(platform: "ios"), .apns(deviceToken: Self.iosToken)), keyring: Self.keyring)
        let bytes = message.json()
        #expect(!bytes.contains(10), "one line: fits one Server-Sent Events data line")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        let display = try #require((object["displays"] as? [[String: Any]])?.first)
        #expect(display["title"] as? String == "Merhaba <img src=x onerror=alert(1)>")
        #expect((display["buttons"] as? [[String: Any]])?.count == 3)
        #expect(object["language"] as? String == "tr")
        #expect(object["receivedAt"] as? String == "2026-11-30T11:00:00.123Z")
        let fields = try #require(object["msgIdFields"] as? [String: Any])
        #expect(fields["valid"] as? Bool == true)
        #expect(fields["variant"] as? String == "B")
        let request = try #require(object["request"] as? [String: Any])
        let headers = try #require(request["headers"] as? [[String]])
        #expect(headers.contains(["authorization", "bearer <redacted>"]))
        #expect(!String(decoding: bytes, as: UTF8.self).contains("eyJhbGciOi"))
        #expect(request["body"] as? String == String(decoding: message.record.body, as: UTF8.self))
    }

    @Test("bodies that are not the platform's payload are kept raw with a problem, never a crash", arguments: [
        ("ios", "not json"), ("android", "[1,2]"), ("web", "\"text\""), ("android", #"{"message":{"notification":{"title":"x"}}}"#),
        ("ios", #"{"aps":{"alert":{"title":7},"badge":"x"},"custom":{"b":[1,{"i":2}]}}"#),
    ])
    func hostile(platform: String, body: String) {
        let message = InboxDrawing.draw(InboxRecord(platform: platform, path: "/x", headers: [], body: Array(body.utf8)), keyring: Self.keyring)
        #expect(message.json().count > 0)
        #expect(message.msgID == nil)
    }

    @Test("filters: platform, app and campaign exact, token as a substring")
    func filters() throws {
        let message = InboxDrawing.draw(try Self.record(Self.content(platform: "android"), .fcm(registrationToken: "fcm:APA91b-token_1")), keyring: nil)
        #expect(message.matches(InboxFilter()))
        #expect(message.matches(InboxFilter(platform: "android", app: "app_demo", campaign: "cmp_42", token: "token_1")))
        #expect(!message.matches(InboxFilter(platform: "ios")))
        #expect(!message.matches(InboxFilter(app: "app_dem")))
        #expect(!message.matches(InboxFilter(campaign: "cmp_4")))
        #expect(!message.matches(InboxFilter(token: "nope")))
        #expect(message.matches(InboxFilter(platform: "", app: "", campaign: "", token: "")))
    }

    @Test("the inbox keeps the newest N, lists newest first, and clears")
    func bounded() {
        let inbox = Inbox(settings: Inbox.Settings(capacity: 3))
        let drawn = (1...5).map { id in
            InboxDrawing.draw(InboxRecord(id: id, platform: id % 2 == 0 ? "web" : "ios", path: "/3/device/\(Self.iosToken)", headers: [],
                                          body: Array(#"{"aps":{"alert":"m\#(id)"}}"#.utf8)), keyring: nil)
        }
        inbox.store(Array(drawn.prefix(2)))
        inbox.store(Array(drawn.dropFirst(2)))
        #expect(inbox.messages(InboxFilter(), limit: 10).map(\.id) == [5, 4, 3])
        #expect(inbox.messages(InboxFilter(), limit: 2).map(\.id) == [5, 4])
        #expect(inbox.messages(InboxFilter(platform: "web"), limit: 10).map(\.id) == [4])
        #expect(inbox.counts.forgotten == 2)
        #expect(inbox.message(id: 1) == nil)
        #expect(inbox.message(id: 4)?.displays.first?.body == nil)
        inbox.clear()
        #expect(inbox.keptCount == 0)
    }

    @Test("--events-url accepts http://HOST:PORT[/base] only")
    func eventsURL() {
        #expect(PlainHTTPURL("http://127.0.0.1:9400") == PlainHTTPURL("http://127.0.0.1:9400/"))
        #expect(PlainHTTPURL("http://127.0.0.1:9400/track/")?.basePath == "/track")
        #expect(PlainHTTPURL("http://[::1]:9400")?.host == "::1")
        #expect(PlainHTTPURL("http://events")?.port == 80)
        for bad in ["https://127.0.0.1:9400", "127.0.0.1:9400", "http://:80", "http://a:b", "http://h:0", "http://u@h:1", "http://h:1/?q"] {
            #expect(PlainHTTPURL(bad) == nil, "\(bad)")
        }
    }
}

struct TestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
