import PushEncoding
import PushCore
/// Builds the FCM HTTP v1 request (`POST <endpoint>/v1/projects/<projectID>/messages:send`,
/// docs/payloads.md, §15 FCM layout, §19 topics and conditions).
///
/// A data message the SDK draws itself (so it can apply channels, buttons, restore rules):
/// `{"message": {"token"|"topic"|"condition", "data": {…}, "android": {"priority", "ttl",
/// "collapse_key"}}}`; `collapse_key` and `data["on.tag"]` carry the replace key (docs/payloads.md
/// "Replace key"). `message.data` holds the job's `data` keys verbatim plus the SDK's keys,
/// which all start with `on.` (``FCMDataKey``); every value is a string, as FCM requires.
public enum FCMPayloadBuilder {
    /// FCM's limit on the keys + values of `message.data`, and ours on the whole body. Bytes.
    public static let maxPayloadBytes = 4096
    /// FCM's limit on the keys + values of `message.data` of a topic or condition message:
    /// "4096 bytes for most messages, or 2048 bytes in the case of messages to topics. This
    /// includes both the keys and the values" (FCM ErrorCode reference, INVALID_ARGUMENT).
    public static let maxTopicDataBytes = 2048

    public static func build(_ content: NotificationContent, registrationToken: String,
                             fcm: AppProfile.FCM) -> Result<ProviderRequest, PayloadError> {
        build(content, target: .token(registrationToken), fcm: fcm)
    }

    /// The request for `target`: texts truncated to fit the data budget of that target (4096
    /// bytes for a token, ``maxTopicDataBytes`` for a topic or condition) and the 4096-byte body.
    public static func build(_ content: NotificationContent, target: FCMMessageTarget,
                             fcm: AppProfile.FCM) -> Result<ProviderRequest, PayloadError> {
        let dataLimit = target.maxDataBytes
        let budgets = [PayloadBudget(limit: dataLimit, measure: .utf8),
                       PayloadBudget(limit: maxPayloadBytes, measure: .jsonEscaped)]
        let actions = actionsJSON(content.actions)
        var text = NotificationText(content)
        var rendered = payload(content, target: target, text: text, actionsJSON: actions)
        if !fits(rendered, dataLimit: dataLimit) {
            guard let fitted = NotificationTextFitter.fit(text, budgets: budgets, sizes: {
                let probe = payload(content, target: target, text: $0, actionsJSON: actions)
                return [probe.dataBytes, probe.body.count]
            }) else { return .failure(.payloadTooLarge) }
            text = fitted
            rendered = payload(content, target: target, text: text, actionsJSON: actions)
            guard fits(rendered, dataLimit: dataLimit) else { return .failure(.payloadTooLarge) }
        }
        var request = ProviderRequest(
            platform: .android,
            url: "\(fcm.endpoint.withoutTrailingSlash)/v1/projects/\(fcm.projectID)/messages:send",
            headers: [KeyValue("content-type", "application/json")],
            body: rendered.body)
        request.truncatedFields = text.changedFields(from: NotificationText(content))
        return .success(request)
    }

    private static func fits(_ rendered: (body: [UInt8], dataBytes: Int), dataLimit: Int) -> Bool {
        rendered.dataBytes <= dataLimit && rendered.body.count <= maxPayloadBytes
    }

    /// `message.data` one pair at a time, in order: the job's data through `job`, then the `on.*`
    /// keys present (``FCMDataKey``, constants) through `sdk`. No array of pairs: the payload
    /// writes each pair as it comes.
    static func forEachDataPair(_ content: NotificationContent, text: NotificationText, actionsJSON: String?,
                                job: (_ key: String, _ value: String) -> Void,
                                sdk: (_ key: JSONKey, _ value: String) -> Void) {
        for pair in content.data { job(pair.key, pair.value) }
        func add(_ key: JSONKey, _ value: String?) {
            if let value { sdk(key, value) }
        }
        let android = content.android
        add(.sdkMsgID, content.msgID)
        add(.sdkCampaignID, content.campaignID)
        add(.sdkLanguage, content.language.isEmpty ? nil : content.language)
        add(.sdkTitle, text.title)
        add(.sdkSubtitle, text.subtitle)
        add(.sdkBody, text.body)
        add(.sdkURL, content.url)
        add(.sdkImageURL, content.imageURL)
        add(.sdkActions, actionsJSON)
        add(.sdkCollapseID, content.collapseID)
        add(.sdkTag, content.resolvedReplaceKey)
        add(.sdkChannelID, android.channelID)
        add(.sdkSmallIcon, android.smallIcon)
        add(.sdkLargeIcon, android.largeIcon)
        add(.sdkAccentColor, android.accentColor)
        add(.sdkLedColor, android.ledColor)
        add(.sdkVisibility, android.visibility.map(String.init))
        add(.sdkDisplayPriority, android.priority.map(String.init))
        add(.sdkGroupKey, android.groupKey)
        add(.sdkGroupMessage, android.groupMessage)
        add(.sdkSound, android.sound)
        if let badge = content.ios.badge {
            add(badge.mode == .set ? .sdkBadge : .sdkBadgeIncrement, String(badge.value))
        }
    }

    /// `on.actions`: `[{"id","title","url"?}]` as a JSON string, nil without actions.
    static func actionsJSON(_ actions: [NotificationAction]) -> String? {
        guard !actions.isEmpty else { return nil }
        var json = JSONWriter(capacity: 128)
        json.beginArray()
        for action in actions {
            json.beginObject()
            json.member(.id, action.id)
            json.member(.title, action.title)
            json.member(.url, ifPresent: action.url)
            json.endObject()
        }
        json.endArray()
        return String(decoding: json.bytes, as: UTF8.self)
    }

    /// ``payload(_:target:text:actionsJSON:)`` for a registration token.
    static func payload(_ content: NotificationContent, token: String, text: NotificationText,
                        actionsJSON: String?) -> (body: [UInt8], dataBytes: Int) {
        payload(content, target: .token(token), text: text, actionsJSON: actionsJSON)
    }

    /// The body, and the keys + values bytes of `message.data` (FCM's size rule).
    static func payload(_ content: NotificationContent, target: FCMMessageTarget, text: NotificationText,
                        actionsJSON: String?) -> (body: [UInt8], dataBytes: Int) {
        var dataBytes = 0
        var json = JSONWriter(capacity: 2048)
        json.beginObject()
        json.key(.message)
        json.beginObject()
        json.member(target.memberKey, target.value)
        json.key(.data)
        json.beginObject()
        forEachDataPair(content, text: text, actionsJSON: actionsJSON, job: { key, value in
            dataBytes += key.utf8.count + value.utf8.count
            json.member(key, value)
        }, sdk: { key, value in
            dataBytes += key.utf8Count + value.utf8.count
            json.member(key, value)
        })
        json.endObject()
        json.key(.android)
        json.beginObject()
        json.member(.priority, content.priority == .high ? "HIGH" : "NORMAL")
        if let ttl = content.ttlSeconds { json.member(.ttl, "\(max(ttl, 0))s") }
        // The replace key (docs/payloads.md "Replace key"): FCM keeps only the newest stored message per collapse key.
        json.member(.collapseKey, content.resolvedReplaceKey)
        json.endObject()
        json.endObject()
        json.endObject()
        return (json.bytes, dataBytes)
    }
}

/// Who an FCM HTTP v1 message goes to: "exactly one of token, topic or condition" (FCM v1
/// `Message` reference).
public enum FCMMessageTarget: Sendable, Equatable {
    /// One app instance's registration token.
    case token(String)
    /// Every device subscribed to the topic (name without `/topics/`).
    case topic(String)
    /// Every device whose subscriptions satisfy the condition.
    case condition(String)

    /// The `message` member: `token`, `topic` or `condition`.
    public var memberName: String { memberKey.string }

    /// ``memberName`` as a constant key.
    var memberKey: JSONKey {
        switch self {
        case .token: .token
        case .topic: .topic
        case .condition: .condition
        }
    }

    public var value: String {
        switch self {
        case .token(let text), .topic(let text), .condition(let text): text
        }
    }

    /// FCM's limit on the keys + values of `message.data` for this target.
    public var maxDataBytes: Int {
        switch self {
        case .token: FCMPayloadBuilder.maxPayloadBytes
        case .topic, .condition: FCMPayloadBuilder.maxTopicDataBytes
        }
    }
}

/// The SDK's keys in FCM `message.data` (docs/payloads.md "FCM HTTP v1"). All values are strings.
public enum FCMDataKey {
    /// The signed msgId. Always present.
    public static let msgID = "on.msgId"
    /// Always present.
    public static let campaignID = "on.campaignId"
    /// The language the texts were chosen in (`pt` for a `pt-BR` recipient), when known.
    public static let language = "on.language"
    public static let title = "on.title"
    public static let subtitle = "on.subtitle"
    public static let body = "on.body"
    /// The launch URL.
    public static let url = "on.url"
    /// The big picture.
    public static let imageURL = "on.imageURL"
    /// Action buttons, a JSON array as a string: `[{"id","title","url"?}]`.
    public static let actions = "on.actions"
    /// The job's `collapseId`: the SDK replaces a shown notification with the same id.
    public static let collapseID = "on.collapseId"
    /// The replace key (docs/payloads.md "Replace key"), always present: the SDK draws the notification with this tag,
    /// so a second copy of it replaces the first.
    public static let tag = "on.tag"
    public static let channelID = "on.channelId"
    public static let smallIcon = "on.smallIcon"
    public static let largeIcon = "on.largeIcon"
    /// ARGB hex, e.g. `FF2196F3`.
    public static let accentColor = "on.accentColor"
    public static let ledColor = "on.ledColor"
    /// Lock-screen visibility `1`/`0`/`-1` (public/private/secret).
    public static let visibility = "on.visibility"
    /// The notification's display priority `-2`…`2` (not FCM's delivery priority).
    public static let displayPriority = "on.priority"
    public static let groupKey = "on.groupKey"
    public static let groupMessage = "on.groupMessage"
    public static let sound = "on.sound"
    /// The job's `ios.badge` with mode `set`: the launcher badge count.
    public static let badge = "on.badge"
    /// The job's `ios.badge` with mode `increase`.
    public static let badgeIncrement = "on.badgeIncrement"
}
