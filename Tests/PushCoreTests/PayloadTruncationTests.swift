import Foundation
import Testing
@testable import PushCore
import PushEncoding
@testable import PushProviders

/// Texts that stress grapheme clusters and escaping.
let payloadTruncationSamples: [(String, String)] = [
    ("Turkish", "Ağaç İşçi Şükrü ıĞü çöğüş "),
    ("Korean", "모든 상품 20% 할인 한정 판매 "),
    ("Uzbek Latin", "Oʻzbekiston gʻalaba shoʻx "),
    ("Uzbek Cyrillic", "Ўзбекистон ғалаба Қўқон ҳаёт "),
    ("emoji ZWJ", "👨‍👩‍👧‍👦 family 🧑🏽‍💻 coder 🏳️‍🌈 "),
    ("flags", "🇺🇿🇹🇷🇰🇷🇧🇷"),
    ("combining", "e\u{301}a\u{308}o\u{302}\u{323}n\u{303} "),
    ("escapes", "quote\" back\\slash\nline\ttab\u{1}ctl "),
]

enum PayloadTruncationPlatform: String, CaseIterable, Sendable {
    case apns, fcm, web

    var target: DeliveryTarget {
        switch self {
        case .apns: .apns(deviceToken: payloadAPNSToken)
        case .fcm: .fcm(registrationToken: payloadFCMToken)
        case .web: .webPush(payloadWebSubscription(.chrome))
        }
    }

    /// Whether `text` rendered into `content` fits every budget of the platform.
    func fits(_ content: NotificationContent, _ text: NotificationText) -> Bool {
        switch self {
        case .apns:
            return APNSPayloadBuilder.payload(content, text: text, additionalDataAtRoot: false).count <= 4096
        case .fcm:
            let rendered = FCMPayloadBuilder.payload(content, token: payloadFCMToken, text: text,
                                                     actionsJSON: FCMPayloadBuilder.actionsJSON(content.actions))
            return rendered.dataBytes <= 4096 && rendered.body.count <= 4096
        case .web:
            return WebPushPayloadBuilder.payload(content, browser: .chrome, text: text).count <= 3993
        }
    }

    var limit: Int { self == .web ? 3993 : 4096 }

    /// The title, subtitle and body as they travel.
    func texts(_ json: PayloadJSON) -> NotificationText {
        switch self {
        case .apns:
            let alert = json["aps"]?["alert"]
            return NotificationText(title: alert?["title"]?.stringValue, subtitle: alert?["subtitle"]?.stringValue,
                                    body: alert?["body"]?.stringValue)
        case .fcm:
            let data = json["message"]?["data"]
            return NotificationText(title: data?["on.title"]?.stringValue, subtitle: data?["on.subtitle"]?.stringValue,
                                    body: data?["on.body"]?.stringValue)
        case .web:
            return NotificationText(title: json["title"]?.stringValue, subtitle: nil, body: json["body"]?.stringValue)
        }
    }
}

@Suite("Payload truncation")
struct PayloadTruncationTests {
    /// Asserts `cut` is `original`'s first k characters + "…", that the payload fits, and that
    /// one more character would not.
    private func expectMaximalCut(_ received: NotificationText, of original: String, platform: PayloadTruncationPlatform,
                                  content: NotificationContent, field: WritableKeyPath<NotificationText, String?>,
                                  sourceLocation: SourceLocation = #_sourceLocation) {
        // Web Push sends no subtitle: measure with the content's.
        var text = received
        if platform == .web { text.subtitle = content.subtitle }
        guard let cut = received[keyPath: field], cut.hasSuffix("…") else {
            Issue.record("not cut with an ellipsis: \(String(describing: received[keyPath: field]))", sourceLocation: sourceLocation)
            return
        }
        let kept = Array(cut.dropLast())
        let characters = Array(original)
        let keptCount = kept.count
        let isShorter = kept.count < characters.count
        #expect(isShorter, "kept \(keptCount) of \(characters.count)", sourceLocation: sourceLocation)
        let isPrefix = Array(characters.prefix(kept.count)) == kept
        #expect(isPrefix, "split a grapheme or changed text", sourceLocation: sourceLocation)
        let fits = platform.fits(content, text)
        #expect(fits, "the cut text does not fit", sourceLocation: sourceLocation)
        if kept.count + 1 < characters.count {
            text[keyPath: field] = String(characters.prefix(kept.count + 1)) + "…"
            let oneMoreFits = platform.fits(content, text)
            #expect(!oneMoreFits, "one more character would still fit", sourceLocation: sourceLocation)
        }
    }

    @Test("an overlong body is cut at a grapheme boundary, as long as fits",
          arguments: PayloadTruncationPlatform.allCases, payloadTruncationSamples.map(\.1))
    func bodyCut(platform: PayloadTruncationPlatform, sample: String) throws {
        var content = payloadSimpleContent()
        content.title = "Başlık 🇹🇷"
        content.subtitle = "Subtitle"
        content.body = String(repeating: sample, count: 5000 / sample.utf8.count + 2)
        content.data = [KeyValue("screen", "sale")]
        let request = try requirePayload(buildPayload(content, platform.target))
        #expect(request.body.count <= platform.limit)
        #expect(String(bytes: request.body, encoding: .utf8) != nil)
        let texts = platform.texts(try parsePayloadJSON(request.body))
        #expect(texts.title == "Başlık 🇹🇷")
        if platform != .web { #expect(texts.subtitle == "Subtitle") }
        #expect(request.truncatedFields == ["body"])
        expectMaximalCut(texts, of: content.body ?? "", platform: platform, content: content, field: \.body)
    }

    @Test("body to … alone, then subtitle, then title", arguments: PayloadTruncationPlatform.allCases)
    func cutOrder(platform: PayloadTruncationPlatform) throws {
        var content = payloadSimpleContent()
        content.title = String(repeating: "Ўзбекистон 👨‍👩‍👧 ", count: 300)
        content.subtitle = platform == .web ? nil : String(repeating: "Oʻzbek ", count: 800)
        content.body = String(repeating: "모든 상품 ", count: 800)
        let request = try requirePayload(buildPayload(content, platform.target))
        #expect(request.body.count <= platform.limit)
        let texts = platform.texts(try parsePayloadJSON(request.body))
        let body = texts.body
        let subtitle = texts.subtitle
        #expect(body == "…")
        if platform != .web { #expect(subtitle == "…") }
        #expect(request.truncatedFields == (platform == .web ? ["title", "body"] : ["title", "subtitle", "body"]))
        expectMaximalCut(texts, of: content.title ?? "", platform: platform, content: content, field: \.title)
    }

    @Test("only the body is cut when that suffices; a long title survives", arguments: PayloadTruncationPlatform.allCases)
    func onlyBody(platform: PayloadTruncationPlatform) throws {
        var content = payloadSimpleContent()
        content.title = String(repeating: "Ş", count: 500)
        content.body = String(repeating: "ğ", count: 3000)
        let request = try requirePayload(buildPayload(content, platform.target))
        let texts = platform.texts(try parsePayloadJSON(request.body))
        let titleKept = texts.title == content.title
        #expect(titleKept)
        expectMaximalCut(texts, of: content.body ?? "", platform: platform, content: content, field: \.body)
    }

    @Test("a payload that fits is not touched", arguments: PayloadTruncationPlatform.allCases)
    func untouched(platform: PayloadTruncationPlatform) throws {
        var content = payloadSimpleContent()
        content.body = String(repeating: "a", count: 3000)
        let request = try requirePayload(buildPayload(content, platform.target))
        let isUntouched = platform.texts(try parsePayloadJSON(request.body)).body == content.body
        #expect(isUntouched)
        #expect(request.truncatedFields.isEmpty)
    }

    @Test("huge data or URL cannot fit: payload_too_large", arguments: PayloadTruncationPlatform.allCases, [true, false])
    func tooLarge(platform: PayloadTruncationPlatform, hugeData: Bool) {
        var content = payloadSimpleContent()
        if hugeData {
            content.data = [KeyValue("blob", String(repeating: "d", count: 4100))]
        } else {
            content.url = "https://shop.example/" + String(repeating: "u", count: 4100)
        }
        #expect(buildPayload(content, platform.target) == .failure(.payloadTooLarge))
    }

    @Test("the fitter cuts a text no longer than … last: it would not help")
    func tinyField() {
        let text = NotificationText(title: "ab", subtitle: nil, body: "x")
        let fitted = NotificationTextFitter.fit(text, budgets: [PayloadBudget(limit: 2, measure: .jsonEscaped)]) {
            [($0.title?.utf8.count ?? 0) + ($0.body?.utf8.count ?? 0)]
        }
        #expect(fitted == nil)
        let roomy = NotificationTextFitter.fit(text, budgets: [PayloadBudget(limit: 3, measure: .utf8)]) {
            [($0.title?.utf8.count ?? 0) + ($0.body?.utf8.count ?? 0)]
        }
        #expect(roomy == text)
    }

    @Test("escaped measure: a quote costs 2 bytes, so fewer characters fit")
    func escapedMeasure() {
        let text = NotificationText(title: nil, subtitle: nil, body: String(repeating: "\"", count: 10))
        let size: (NotificationText) -> [Int] = { [JSONWriter.escapedCount($0.body ?? "")] }
        let escaped = NotificationTextFitter.fit(text, budgets: [PayloadBudget(limit: 11, measure: .jsonEscaped)], sizes: size)
        #expect(escaped?.body == String(repeating: "\"", count: 4) + "…")
    }
}
