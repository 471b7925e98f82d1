import PushEncoding
import PushCore
/// The ActivityKit request for a job with `ios.liveActivity` (docs/providers.md "Live Activities"; sources: Apple, "Starting and updating Live Activities with
/// ActivityKit push notifications" [A1], "Sending notification requests to APNs" [A3]).
///
/// Headers: `apns-push-type: liveactivity`, `apns-topic: <bundle id>.push-type.liveactivity`
/// (the bare bundle id earns `DeviceTokenNotForTopic`, Apple forum 712499), `apns-priority`
/// from the job: `normal` ⇒ 5, which Apple does not count against the app's hourly ActivityKit
/// budget, `high` ⇒ 10, which it does. `apns-expiration` as for notifications; no
/// `apns-collapse-id`, not even the replace key (docs/payloads.md "Replace key"): Apple's ActivityKit push article
/// [A1] names no such header for these pushes (it describes coalescing shown notifications), and
/// ActivityKit keeps the state with the newest `timestamp` ("If this is older than a previous
/// update or push payload, the system ignores this update"): a resent copy carries the first's
/// `content-state` and, dated by the job (`timestamp` or `createdAt`), its `timestamp`, so it
/// shows nothing new.
///
/// Body: `aps` holds `timestamp`, `event`, `content-state` (verbatim, never cut),
/// `stale-date`, `dismissal-date` (end), `relevance-score`, `alert` (`title`, `body`, `sound`:
/// the Live Activity alert has no subtitle, its sound sits inside it), `attributes-type` +
/// `attributes` and `input-push-token` (start); `custom` carries the msgId, campaign and
/// language as for notifications. Only the alert texts may be truncated to fit 4096 bytes.
extension APNSPayloadBuilder {
    static func buildLiveActivity(_ content: NotificationContent, activity: LiveActivity, deviceToken: String,
                                  apns: AppProfile.APNS, issuedAtUnix: Int) -> Result<ProviderRequest, PayloadError> {
        let budgets = [PayloadBudget(limit: maxPayloadBytes, measure: .jsonEscaped)]
        // The Live Activity alert shows a title and a body only.
        var text = NotificationText(title: NotificationText(content).title, subtitle: nil, body: NotificationText(content).body)
        var body = liveActivityPayload(content, activity: activity, text: text, issuedAtUnix: issuedAtUnix)
        if body.count > maxPayloadBytes {
            guard let fitted = NotificationTextFitter.fit(text, budgets: budgets, sizes: {
                [liveActivityPayload(content, activity: activity, text: $0, issuedAtUnix: issuedAtUnix).count]
            }) else { return .failure(.payloadTooLarge) }
            text = fitted
            body = liveActivityPayload(content, activity: activity, text: text, issuedAtUnix: issuedAtUnix)
            guard body.count <= maxPayloadBytes else { return .failure(.payloadTooLarge) }
        }
        return .success(ProviderRequest(
            platform: .ios,
            url: "\(apns.endpoint.withoutTrailingSlash)/3/device/\(deviceToken)",
            headers: liveActivityHeaders(content, topic: apns.topic, issuedAtUnix: issuedAtUnix),
            body: body))
    }

    /// The Live Activity request headers, lower case, in this order.
    public static func liveActivityHeaders(_ content: NotificationContent, topic: String, issuedAtUnix: Int) -> [KeyValue] {
        var headers = [
            KeyValue("apns-topic", topic + LiveActivity.topicSuffix),
            KeyValue("apns-push-type", LiveActivity.pushType),
            KeyValue("apns-priority", content.priority == .normal ? "5" : "10"),
        ]
        if let expiration = expiration(content, issuedAtUnix: issuedAtUnix) {
            headers.append(KeyValue("apns-expiration", String(expiration)))
        }
        return headers
    }

    /// Whether the alert has anything to show: text, loc keys or a sound.
    static func hasLiveActivityAlert(_ content: NotificationContent, text: NotificationText) -> Bool {
        text.title != nil || text.body != nil || content.ios.titleLocKey != nil || content.ios.locKey != nil || content.ios.sound != nil
    }

    static func liveActivityPayload(_ content: NotificationContent, activity: LiveActivity, text: NotificationText,
                                    issuedAtUnix: Int) -> [UInt8] {
        let ios = content.ios
        var json = JSONWriter(capacity: 1024)
        json.beginObject()
        json.key(.aps)
        json.beginObject()
        json.member(.timestamp, activity.timestamp ?? issuedAtUnix)
        json.member(.event, activity.event.rawValue)
        json.key(.contentState)
        json.value(.object(activity.contentState))
        if let stale = activity.staleDate { json.member(.staleDate, stale) }
        if activity.event == .end, let dismissal = activity.dismissalDate { json.member(.dismissalDate, dismissal) }
        if let score = activity.relevanceScore {
            // Apple's examples use whole numbers (100, 50): write them without a fraction.
            if score.rounded() == score && score < 1e15 { json.member(.relevanceScore, Int(score)) } else { json.member(.relevanceScore, score) }
        }
        if activity.event == .start || hasLiveActivityAlert(content, text: text) {
            json.key(.alert)
            json.beginObject()
            // A loc key replaces the text of its field: ActivityKit's alert title and body are
            // each a string or a {"loc-key","loc-args"} object (Apple [A1], "alert").
            Self.liveActivityAlertField(.title, text: text.title, locKey: ios.titleLocKey, locArgs: ios.titleLocArgs, into: &json)
            Self.liveActivityAlertField(.body, text: text.body, locKey: ios.locKey, locArgs: ios.locArgs, into: &json)
            json.member(.sound, ifPresent: ios.sound)
            json.endObject()
        }
        if activity.event == .start {
            json.member(.attributesType, ifPresent: activity.attributesType)
            if let attributes = activity.attributes {
                json.key(.attributes)
                json.value(.object(attributes))
            }
            // iOS 18+: ask for the new activity's update token (Apple [A1], "input-push-token").
            if activity.inputPushToken { json.member(.inputPushToken, 1) }
        }
        json.endObject()

        json.key(.custom)
        json.beginObject()
        writeCustomIdentity(content, into: &json)
        json.endObject()
        json.endObject()
        return json.bytes
    }

    /// An ActivityKit alert field: its text, or a `{"loc-key","loc-args"}` object when a loc key
    /// replaces the text (Apple [A1], "alert").
    private static func liveActivityAlertField(_ name: JSONKey, text: String?, locKey: String?, locArgs: [String],
                                               into json: inout JSONWriter) {
        guard let locKey else { return json.member(name, ifPresent: text) }
        json.key(name)
        json.beginObject()
        json.member(.locKey, locKey)
        if !locArgs.isEmpty { json.member(.locArgs, strings: locArgs) }
        json.endObject()
    }
}
