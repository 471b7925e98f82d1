import PushEncoding
import PushCore
/// Builds the APNs request (`POST <endpoint>/3/device/<token>`, docs/payloads.md "APNs"; Apple's
/// "Generating a remote notification" and "Sending notification requests to APNs").
///
/// Body: `aps` (what iOS shows) + `custom` (what the SDK reads, compact keys, see
/// ``APNSCustomKey``) + the job's `data` at the root when the app sets `additionalDataAtRoot`.
/// Headers: `apns-topic`, `apns-push-type`, `apns-priority`, `apns-expiration`,
/// `apns-collapse-id` (the replace key, docs/payloads.md "Replace key": the job's `collapseId` among the shared
/// headers, else the recipient's derived key in ``ProviderRequest/recipientHeaders``); the transport adds `authorization: bearer <JWT>` (token auth; a
/// certificate app sends none, docs/providers.md "APNs certificate authentication"). A job with `ios.liveActivity` gets the ActivityKit
/// request instead (``buildLiveActivity(_:activity:deviceToken:apns:issuedAtUnix:)``, docs/providers.md "Live Activities").
public enum APNSPayloadBuilder {
    /// APNs rejects larger bodies with 413 `PayloadTooLarge`. Bytes.
    public static let maxPayloadBytes = 4096

    /// - Parameter issuedAtUnix: now, Unix seconds; `apns-expiration` = `issuedAtUnix + ttlSeconds`.
    public static func build(_ content: NotificationContent, deviceToken: String, apns: AppProfile.APNS,
                             additionalDataAtRoot: Bool, issuedAtUnix: Int) -> Result<ProviderRequest, PayloadError> {
        if let activity = content.ios.liveActivity {
            return buildLiveActivity(content, activity: activity, deviceToken: deviceToken, apns: apns, issuedAtUnix: issuedAtUnix)
        }
        let budgets = [PayloadBudget(limit: maxPayloadBytes, measure: .jsonEscaped)]
        var text = NotificationText(content)
        var body = payload(content, text: text, additionalDataAtRoot: additionalDataAtRoot)
        if body.count > maxPayloadBytes {
            guard let fitted = NotificationTextFitter.fit(text, budgets: budgets, sizes: {
                [payload(content, text: $0, additionalDataAtRoot: additionalDataAtRoot).count]
            }) else { return .failure(.payloadTooLarge) }
            text = fitted
            body = payload(content, text: text, additionalDataAtRoot: additionalDataAtRoot)
            guard body.count <= maxPayloadBytes else { return .failure(.payloadTooLarge) }
        }
        var request = ProviderRequest(
            platform: .ios,
            url: "\(apns.endpoint.withoutTrailingSlash)/3/device/\(deviceToken)",
            headers: headers(content, topic: apns.topic, issuedAtUnix: issuedAtUnix),
            body: body)
        request.recipientHeaders = recipientHeaders(content)
        request.truncatedFields = text.changedFields(from: NotificationText(content))
        return .success(request)
    }

    /// A silent background push: `contentAvailable` and no alert text, loc key, sound or badge
    /// (docs/payloads.md "APNs"). Sent as `apns-push-type: background`, `apns-priority: 5`.
    public static func isBackground(_ content: NotificationContent) -> Bool {
        content.ios.contentAvailable && !hasAlert(content) && content.ios.sound == nil && content.ios.badge == nil
    }

    /// The category iOS needs to show action buttons when the job names none: `on.b.` + the
    /// action ids joined by `.` (e.g. `on.b.buy.later`). Deterministic, so the SDK registers each
    /// button set once (from `custom.b`) and reuses it.
    public static func categoryID(for actions: [NotificationAction]) -> String {
        // Appended in place (it is built per iOS payload): `map` + `joined` would cost an array
        // of the ids and the generic joining.
        var id = "on.b."
        for (position, action) in actions.enumerated() {
            if position > 0 { id.append(".") }
            id.append(action.id)
        }
        return id
    }

    /// The request headers, lower case, in this order.
    public static func headers(_ content: NotificationContent, topic: String, issuedAtUnix: Int) -> [KeyValue] {
        let background = isBackground(content)
        var headers = [
            KeyValue("apns-topic", topic),
            KeyValue("apns-push-type", background ? "background" : "alert"),
            KeyValue("apns-priority", background || content.priority == .normal ? "5" : "10"),
        ]
        if let expiration = expiration(content, issuedAtUnix: issuedAtUnix) {
            headers.append(KeyValue("apns-expiration", String(expiration)))
        }
        if let collapseID = content.collapseID, !collapseID.isEmpty {
            headers.append(KeyValue("apns-collapse-id", collapseID))
        }
        return headers
    }

    /// `apns-collapse-id` with the recipient's own replace key (docs/payloads.md "Replace key"), for a job without a
    /// `collapseId` (with one, ``headers(_:topic:issuedAtUnix:)`` carries it). A derived key is 22
    /// characters, within Apple's 64 bytes.
    public static func recipientHeaders(_ content: NotificationContent) -> [KeyValue] {
        if let collapseID = content.collapseID, !collapseID.isEmpty { return [] }
        return [KeyValue("apns-collapse-id", content.resolvedReplaceKey)]
    }

    /// `apns-expiration`: 0 for `ttlSeconds` 0 ("deliver once, do not store"); else
    /// `issuedAtUnix + ttlSeconds`; else `expiresAtUnix`; else nil (APNs' default storage).
    static func expiration(_ content: NotificationContent, issuedAtUnix: Int) -> Int? {
        if let ttl = content.ttlSeconds {
            if ttl <= 0 { return 0 }
            let (sum, overflow) = issuedAtUnix.addingReportingOverflow(ttl)
            let expiration = overflow ? Int.max : sum
            if let expiresAt = content.expiresAtUnix { return min(expiration, expiresAt) }
            return expiration
        }
        return content.expiresAtUnix
    }

    private static func hasAlert(_ content: NotificationContent) -> Bool {
        let text = NotificationText(content)
        return text.title != nil || text.subtitle != nil || text.body != nil
            || content.ios.locKey != nil || content.ios.titleLocKey != nil
    }

    /// The JSON body with `text` in place of the content's texts.
    static func payload(_ content: NotificationContent, text: NotificationText, additionalDataAtRoot: Bool) -> [UInt8] {
        let ios = content.ios
        let background = isBackground(content)
        let alert = !background && (text.title != nil || text.subtitle != nil || text.body != nil
            || ios.locKey != nil || ios.titleLocKey != nil)
        var json = JSONWriter(capacity: 2048)
        json.beginObject()
        json.key(.aps)
        json.beginObject()
        if alert {
            json.key(.alert)
            json.beginObject()
            json.member(.title, ifPresent: text.title)
            json.member(.subtitle, ifPresent: text.subtitle)
            json.member(.body, ifPresent: text.body)
            if let key = ios.titleLocKey {
                json.member(.titleLocKey, key)
                if !ios.titleLocArgs.isEmpty { json.member(.titleLocArgs, strings: ios.titleLocArgs) }
            }
            if let key = ios.locKey {
                json.member(.locKey, key)
                if !ios.locArgs.isEmpty { json.member(.locArgs, strings: ios.locArgs) }
            }
            json.endObject()
        }
        if let badge = ios.badge, badge.mode == .set { json.member(.badge, badge.value) }
        json.member(.sound, ifPresent: ios.sound)
        if let category = ios.category {
            json.member(.category, category)
        } else if !content.actions.isEmpty {
            json.member(.category, categoryID(for: content.actions))
        }
        json.member(.threadID, ifPresent: ios.threadID)
        // The Notification Service Extension attaches the image, registers the buttons'
        // category and applies a badge increment: it only runs with mutable-content.
        let needsExtension = content.imageURL != nil || !content.actions.isEmpty || ios.badge?.mode == .increase
        if !background && (ios.mutableContent || needsExtension) { json.member(.mutableContent, 1) }
        if ios.contentAvailable { json.member(.contentAvailable, 1) }
        json.member(.interruptionLevel, ifPresent: ios.interruptionLevel)
        if let score = ios.relevanceScore { json.member(.relevanceScore, score) }
        json.endObject()

        json.key(.custom)
        json.beginObject()
        writeCustomIdentity(content, into: &json)
        json.member(.customURL, ifPresent: content.url)
        json.member(.customImageURL, ifPresent: content.imageURL)
        if let badge = ios.badge, badge.mode == .increase { json.member(.customBadgeIncrement, badge.value) }
        if !content.actions.isEmpty {
            json.key(.customButtons)
            json.beginArray()
            for action in content.actions {
                json.beginObject()
                json.member(.customButtonID, action.id)
                json.member(.customButtonTitle, action.title)
                json.member(.customButtonURL, ifPresent: action.url)
                json.endObject()
            }
            json.endArray()
        }
        if !additionalDataAtRoot && !content.data.isEmpty {
            json.key(.customData)
            json.beginObject()
            for pair in content.data { json.member(pair.key, pair.value) }
            json.endObject()
        }
        json.endObject()

        if additionalDataAtRoot {
            for pair in content.data { json.member(pair.key, pair.value) }
        }
        json.endObject()
        return json.bytes
    }
}

/// The compact keys of the APNs `custom` object the SDK reads (docs/payloads.md "Where each SDK field travels":
/// `custom.i` identifies the notification). Every byte counts towards the 4096-byte budget.
extension APNSPayloadBuilder {
    /// The `custom` members every APNs payload carries first (notifications and Live
    /// Activities): the msgId, the campaign, the language if known.
    static func writeCustomIdentity(_ content: NotificationContent, into json: inout JSONWriter) {
        json.member(.customMsgID, content.msgID)
        json.member(.customCampaignID, content.campaignID)
        if !content.language.isEmpty { json.member(.customLanguage, content.language) }
    }
}

public enum APNSCustomKey {
    /// The signed msgId (docs/reference/msgid.md). Always present.
    public static let msgID = "i"
    /// The campaign id. Always present.
    public static let campaignID = "c"
    /// The language the texts were chosen in (`pt` for a `pt-BR` recipient), when known.
    public static let language = "l"
    /// The launch URL (`launchURL`), when given.
    public static let url = "u"
    /// The image URL the Notification Service Extension attaches, when given.
    public static let imageURL = "m"
    /// The badge increment (`badgeIncrement`), an integer, for badge mode `increase`.
    public static let badgeIncrement = "bi"
    /// The action buttons: `[{"i": id, "n": title, "u": url?}]`.
    public static let buttons = "b"
    public static let buttonID = "i"
    public static let buttonTitle = "n"
    public static let buttonURL = "u"
    /// The job's `data` (`additionalData`), an object of strings, unless `additionalDataAtRoot`.
    public static let data = "a"
}
