import PushEncoding
import PushCore
/// Builds the FCM HTTP v1 request (`POST <endpoint>/v1/projects/<projectID>/messages:send`,
/// DESIGN §5, §15 FCM layout, §19 topics and conditions).
///
/// A data message the SDK draws itself (so it can apply channels, buttons, restore rules):
/// `{"message": {"token"|"topic"|"condition", "data": {…}, "android": {"priority", "ttl",
/// "collapse_key"}}}`. `message.data` holds the job's `data` keys verbatim plus the SDK's keys,
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

    /// `message.data` as ordered pairs: the job's data, then the `on.*` keys present.
    static func dataPairs(_ content: NotificationContent, text: NotificationText, actionsJSON: String?) -> [KeyValue] {
        var pairs: [KeyValue] = []
        pairs.reserveCapacity(content.data.count + 12)
        forEachDataPair(content, text: text, actionsJSON: actionsJSON) { pairs.append(KeyValue($0, $1)) }
        return pairs
    }

    /// ``dataPairs(_:text:actionsJSON:)`` one pair at a time, in that order, without building the
    /// array (the payload writes each pair as it comes).
    static func forEachDataPair(_ content: NotificationContent, text: NotificationText, actionsJSON: String?,
                                _ body: (_ key: String, _ value: String) -> Void) {
        for pair in content.data { body(pair.key, pair.value) }
        func add(_ key: String, _ value: String?) {
            if let value { body(key, value) }
        }
        let android = content.android
        add(FCMDataKey.msgID, content.msgID)
        add(FCMDataKey.campaignID, content.campaignID)
        add(FCMDataKey.language, content.language.isEmpty ? nil : content.language)
        add(FCMDataKey.title, text.title)
        add(FCMDataKey.subtitle, text.subtitle)
        add(FCMDataKey.body, text.body)
        add(FCMDataKey.url, content.url)
        add(FCMDataKey.imageURL, content.imageURL)
        add(FCMDataKey.actions, actionsJSON)
        add(FCMDataKey.collapseID, content.collapseID)
        add(FCMDataKey.channelID, android.channelID)
        add(FCMDataKey.smallIcon, android.smallIcon)
        add(FCMDataKey.largeIcon, android.largeIcon)
        add(FCMDataKey.accentColor, android.accentColor)
        add(FCMDataKey.ledColor, android.ledColor)
        add(FCMDataKey.visibility, android.visibility.map(String.init))
        add(FCMDataKey.displayPriority, android.priority.map(String.init))
        add(FCMDataKey.groupKey, android.groupKey)
        add(FCMDataKey.groupMessage, android.groupMessage)
        add(FCMDataKey.sound, android.sound)
        if let badge = content.ios.badge {
            add(badge.mode == .set ? FCMDataKey.badge : FCMDataKey.badgeIncrement, String(badge.value))
        }
    }

    /// `on.actions`: `[{"id","title","url"?}]` as a JSON string, nil without actions.
    static func actionsJSON(_ actions: [NotificationAction]) -> String? {
        guard !actions.isEmpty else { return nil }
        var json = JSONWriter(capacity: 128)
        json.beginArray()
        for action in actions {
            json.beginObject()
            json.member("id", action.id)
            json.member("title", action.title)
            json.member("url", ifPresent: action.url)
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
        json.key("message")
        json.beginObject()
        json.member(target.memberName, target.value)
        json.key("data")
        json.beginObject()
        forEachDataPair(content, text: text, actionsJSON: actionsJSON) { key, value in
            dataBytes += key.utf8.count + value.utf8.count
            json.member(key, value)
        }
        json.endObject()
        json.key("android")
        json.beginObject()
        json.member("priority", content.priority == .high ? "HIGH" : "NORMAL")
        if let ttl = content.ttlSeconds { json.member("ttl", "\(max(ttl, 0))s") }
        if let collapseID = content.collapseID, !collapseID.isEmpty { json.member("collapse_key", collapseID) }
        json.endObject()
        json.endObject()
        json.endObject()
        return (json.bytes, dataBytes)
    }
}

/// Who an FCM HTTP v1 message goes to: "exactly one of token, topic or condition" (FCM v1
/// `Message`, research/providers.md §4 [F2]).
public enum FCMMessageTarget: Sendable, Equatable {
    /// One app instance's registration token.
    case token(String)
    /// Every device subscribed to the topic (name without `/topics/`).
    case topic(String)
    /// Every device whose subscriptions satisfy the condition.
    case condition(String)

    /// The `message` member: `token`, `topic` or `condition`.
    public var memberName: String {
        switch self {
        case .token: "token"
        case .topic: "topic"
        case .condition: "condition"
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

/// The SDK's keys in FCM `message.data` (DESIGN §15 FCM layout). All values are strings.
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
