import Foundation
import Testing
@testable import PushEncoding
@testable import PushProviders

/// Every constant member name of the payload builders (PayloadKeys.swift) against the literal it
/// replaced: the names of `aps`, `message`, Huawei's and Web Push's members as the builders
/// wrote them before (literals copied from the builders at b0f0477), the `custom` and `on.*`
/// names against ``APNSCustomKey`` and ``FCMDataKey``, which the sandbox and the SDK read.
/// A typo in a key fails here, whether or not an example or another test reaches it.
@Suite("Payload JSON keys")
struct PayloadKeyTests {
    static let keys: [(JSONKey, String)] = [
        (.`class`, "class"),
        (.action, "action"),
        (.actionType, "action_type"),
        (.actions, "actions"),
        (.addNum, "add_num"),
        (.alert, "alert"),
        (.android, "android"),
        (.aps, "aps"),
        (.attributes, "attributes"),
        (.attributesType, "attributes-type"),
        (.badge, "badge"),
        (.biTag, "bi_tag"),
        (.body, "body"),
        (.buttons, "buttons"),
        (.campaignId, "campaignId"),
        (.category, "category"),
        (.channelID, "channel_id"),
        (.clickAction, "click_action"),
        (.collapseKey, "collapse_key"),
        (.condition, "condition"),
        (.contentAvailable, "content-available"),
        (.contentState, "content-state"),
        (.custom, "custom"),
        (.data, "data"),
        (.defaultSound, "default_sound"),
        (.dismissalDate, "dismissal-date"),
        (.event, "event"),
        (.icon, "icon"),
        (.id, "id"),
        (.image, "image"),
        (.inputPushToken, "input-push-token"),
        (.intent, "intent"),
        (.interruptionLevel, "interruption-level"),
        (.lang, "lang"),
        (.locArgs, "loc-args"),
        (.locKey, "loc-key"),
        (.message, "message"),
        (.msgId, "msgId"),
        (.mutableContent, "mutable-content"),
        (.name, "name"),
        (.notification, "notification"),
        (.priority, "priority"),
        (.relevanceScore, "relevance-score"),
        (.requireInteraction, "requireInteraction"),
        (.setNum, "set_num"),
        (.sound, "sound"),
        (.staleDate, "stale-date"),
        (.subtitle, "subtitle"),
        (.tag, "tag"),
        (.threadID, "thread-id"),
        (.timestamp, "timestamp"),
        (.title, "title"),
        (.titleLocArgs, "title-loc-args"),
        (.titleLocKey, "title-loc-key"),
        (.token, "token"),
        (.topic, "topic"),
        (.ttl, "ttl"),
        (.type, "type"),
        (.urgency, "urgency"),
        (.url, "url"),
        (.validateOnly, "validate_only"),
        (.customMsgID, APNSCustomKey.msgID),
        (.customCampaignID, APNSCustomKey.campaignID),
        (.customLanguage, APNSCustomKey.language),
        (.customURL, APNSCustomKey.url),
        (.customImageURL, APNSCustomKey.imageURL),
        (.customBadgeIncrement, APNSCustomKey.badgeIncrement),
        (.customButtons, APNSCustomKey.buttons),
        (.customButtonID, APNSCustomKey.buttonID),
        (.customButtonTitle, APNSCustomKey.buttonTitle),
        (.customButtonURL, APNSCustomKey.buttonURL),
        (.customData, APNSCustomKey.data),
        (.sdkMsgID, FCMDataKey.msgID),
        (.sdkCampaignID, FCMDataKey.campaignID),
        (.sdkLanguage, FCMDataKey.language),
        (.sdkTitle, FCMDataKey.title),
        (.sdkSubtitle, FCMDataKey.subtitle),
        (.sdkBody, FCMDataKey.body),
        (.sdkURL, FCMDataKey.url),
        (.sdkImageURL, FCMDataKey.imageURL),
        (.sdkActions, FCMDataKey.actions),
        (.sdkCollapseID, FCMDataKey.collapseID),
        (.sdkTag, FCMDataKey.tag),
        (.sdkChannelID, FCMDataKey.channelID),
        (.sdkSmallIcon, FCMDataKey.smallIcon),
        (.sdkLargeIcon, FCMDataKey.largeIcon),
        (.sdkAccentColor, FCMDataKey.accentColor),
        (.sdkLedColor, FCMDataKey.ledColor),
        (.sdkVisibility, FCMDataKey.visibility),
        (.sdkDisplayPriority, FCMDataKey.displayPriority),
        (.sdkGroupKey, FCMDataKey.groupKey),
        (.sdkGroupMessage, FCMDataKey.groupMessage),
        (.sdkSound, FCMDataKey.sound),
        (.sdkBadge, FCMDataKey.badge),
        (.sdkBadgeIncrement, FCMDataKey.badgeIncrement),
        (.sdkActionID, FCMDataKey.actionID),
    ]

    @Test("the list covers every key declared in PayloadKeys.swift")
    func coverage() throws {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/PushProviders/Payload/PayloadKeys.swift")
        let text = try String(contentsOf: source, encoding: .utf8)
        let declared = text.components(separatedBy: "= JSONKey(\"").dropFirst().compactMap { $0.split(separator: "\"").first.map(String.init) }
        #expect(declared.count > 50)
        #expect(declared.sorted() == Self.keys.map { $0.0.string }.sorted())
    }

    @Test("each constant key writes what the escaping path writes for its literal, first and after a member",
          arguments: Self.keys)
    func sameBytes(key: JSONKey, literal: String) {
        #expect(JSONKey.needsNoEscape(key.name))
        #expect(key.string == literal)
        var constant = JSONWriter()
        constant.beginObject(); constant.key(key); constant.int(1); constant.member(key, "v"); constant.endObject()
        var generic = JSONWriter()
        generic.beginObject(); generic.key(literal); generic.int(1); generic.member(literal, "v"); generic.endObject()
        #expect(constant.text == generic.text)
    }
}
