import PushEncoding
import PushCore
/// Builds the Huawei Push Kit request (`POST <endpoint>/v1/<clientId>/messages:send`, docs/providers.md "Huawei Push Kit",
/// documented key by key in docs/payloads.md).
///
/// One request carries up to 1000 tokens that share one payload, so the body built here is the
/// request **without** `message.token`: every recipient of a batch has the same bytes (same
/// language, same rendered texts, the batch msgId), and ``HMSBatching`` groups recipients by
/// those bytes and writes the batch's tokens in.
///
/// ```json
/// {"validate_only":false,"message":{"data":"{…SDK keys…}","android":{"collapse_key":-1,
///  "urgency":"HIGH","category":"MARKETING","ttl":"86400s","bi_tag":"<jobId>","notification":{
///  "title","body","image","channel_id","tag","default_sound":true,"click_action":{"type":3},
///  "badge":{"add_num":1,"class":"…"},"buttons":[…]}}}}
/// ```
/// Sources: [H1] Huawei's downlink message API reference, [H4] Huawei's Go server demo
/// (docs/providers.md "Huawei Push Kit").
public enum HMSPayloadBuilder {
    /// Huawei's limit on the body without the tokens ([H1]: 80300008 "body (excluding tokens)
    /// > 4096 bytes"). Bytes.
    public static let maxPayloadBytes = 4096
    /// `android.ttl` may not exceed 15 days ([H1]: max `"1296000s"`).
    public static let maxTTLSeconds = 1_296_000
    /// `android.notification.buttons` ≤ 3 ([H1]).
    public static let maxButtons = 3
    /// `badge.add_num` 1…99, `badge.set_num` 0…99 ([H1] BadgeNotification).
    static let addNumRange = 1...99
    static let setNumRange = 0...99

    /// The shared request for `token`'s recipient (its `body` has no `message.token`; `hmsToken`
    /// is `token`), or `.payloadTooLarge` when even every text cut to "…" exceeds 4096 bytes.
    public static func build(_ content: NotificationContent, token: String, hms: AppProfile.HMS) -> Result<ProviderRequest, PayloadError> {
        let original = NotificationText(content)
        let actions = FCMPayloadBuilder.actionsJSON(content.actions)
        var body = payload(content, text: original, actionsJSON: actions, hms: hms)
        var text = original
        if body.count > maxPayloadBytes {
            guard let fitted = fitByRendering(original, fits: {
                payload(content, text: $0, actionsJSON: actions, hms: hms).count <= maxPayloadBytes
            }) else { return .failure(.payloadTooLarge) }
            text = fitted
            body = payload(content, text: text, actionsJSON: actions, hms: hms)
            guard body.count <= maxPayloadBytes else { return .failure(.payloadTooLarge) }
        }
        var request = ProviderRequest(platform: .huawei,
                                      url: "\(hms.endpoint.withoutTrailingSlash)/v1/\(hms.pathID)/messages:send",
                                      headers: [KeyValue("content-type", "application/json;charset=UTF-8")], body: body)
        request.hmsToken = token
        request.truncatedFields = text.changedFields(from: original)
        return .success(request)
    }

    /// The body without `message.token`.
    static func payload(_ content: NotificationContent, text: NotificationText, actionsJSON: String?, hms: AppProfile.HMS) -> [UInt8] {
        // The SDK keys are FCM's (docs/payloads.md), with the batch's msgId: one payload serves
        // every token of the request.
        var shared = content
        if let batchMsgID = content.batchMsgID { shared.msgID = batchMsgID }
        var data = JSONWriter(capacity: 1024)
        data.beginObject()
        FCMPayloadBuilder.forEachDataPair(shared, text: text, actionsJSON: actionsJSON,
                                          job: { data.member($0, $1) }, sdk: { data.member($0, $1) })
        data.endObject()

        let android = content.android
        var json = JSONWriter(capacity: 2048)
        json.beginObject()
        json.member(.validateOnly, false)
        json.key(.message)
        json.beginObject()
        // `message.data` is a string ([H1]): the SDK keys as a JSON object's text.
        json.member(.data, String(decoding: data.bytes, as: UTF8.self))
        json.key(.android)
        json.beginObject()
        if let collapseKey = android.collapseKey { json.member(.collapseKey, collapseKey) }
        json.member(.urgency, content.priority == .high ? "HIGH" : "NORMAL")
        if let category = android.category, !category.isEmpty { json.member(.category, category) }
        if let ttl = content.ttlSeconds { json.member(.ttl, "\(min(max(ttl, 0), maxTTLSeconds))s") }
        // Echoed in Huawei's delivery receipts: which job a receipt belongs to.
        json.member(.biTag, content.jobID)
        if text.title != nil || text.body != nil {
            json.key(.notification)
            writeNotification(content, text: text, hms: hms, to: &json)
        }
        json.endObject()
        json.endObject()
        json.endObject()
        return json.bytes
    }

    /// `android.notification`. A job without text is a data message: no notification block, the
    /// app receives `message.data` (Huawei's "透传消息").
    private static func writeNotification(_ content: NotificationContent, text: NotificationText, hms: AppProfile.HMS,
                                          to json: inout JSONWriter) {
        json.beginObject()
        json.member(.title, ifPresent: text.title)
        json.member(.body, ifPresent: text.body)
        // Huawei shows HTTPS images only ([H1] `image`: HTTPS, < 512 KB); another URL stays in the
        // SDK keys (`on.imageURL`).
        if let image = content.imageURL, isHTTPS(image) { json.member(.image, image) }
        json.member(.channelID, ifPresent: content.android.channelID)
        // The replace key (docs/payloads.md "Replace key"): a notification with the same tag replaces a shown one. The
        // batch's, so every token of the request shares it.
        json.member(.tag, content.resolvedReplaceKey)
        // The Go server demo's default notification ([H4] GetDefaultAndroidNotification).
        json.member(.defaultSound, true)
        // `click_action` is required ([H1]): type 2 opens an HTTPS URL in the browser, type 3 the
        // app (which reads `on.url` from the SDK keys: deep links and other schemes land there).
        json.key(.clickAction)
        json.beginObject()
        if let url = content.url, isHTTPS(url) {
            json.member(.type, 2)
            json.member(.url, url)
        } else {
            json.member(.type, 3)
        }
        json.endObject()
        // Huawei needs the entry activity's class with a badge ([H1] BadgeNotification.class).
        if let badge = content.ios.badge, let badgeClass = hms.badgeClass, !badgeClass.isEmpty {
            json.key(.badge)
            json.beginObject()
            switch badge.mode {
            case .increase: json.member(.addNum, min(max(badge.value, addNumRange.lowerBound), addNumRange.upperBound))
            case .set: json.member(.setNum, min(max(badge.value, setNumRange.lowerBound), setNumRange.upperBound))
            }
            json.member(.`class`, badgeClass)
            json.endObject()
        }
        if !content.actions.isEmpty {
            json.key(.buttons)
            json.beginArray()
            for action in content.actions.prefix(maxButtons) {
                json.beginObject()
                json.member(.name, action.title)
                // [H1] Button.action_type: 0 opens the app, 2 a web page (`intent` = its HTTPS URL).
                // Huawei's Java server demo spells the members actionType/intentType; the REST
                // reference writes them in snake case like every other member.
                if let url = action.url, isHTTPS(url) {
                    json.member(.actionType, 2)
                    json.member(.intent, url)
                } else {
                    json.member(.actionType, 0)
                    // `data` reaches the app when the button is tapped: which button it was (the
                    // SDK finds its URL, if any, in `on.actions`).
                    json.member(.data, JSONWriter.object { w in w.member(.sdkActionID, action.id) }.text)
                }
                json.endObject()
            }
            json.endArray()
        }
        json.endObject()
    }

    static func isHTTPS(_ url: String) -> Bool {
        url.utf8.count > 8 && url.prefix(8).lowercased() == "https://"
    }

    /// Cuts the body, then the subtitle, then the title (at a `Character` boundary, with "…") until
    /// `fits`, as ``NotificationTextFitter`` does, but measuring by rendering: a text appears twice
    /// here (in `android.notification` and among the SDK keys inside the `data` string, escaped
    /// twice), so its cost is not its length. A binary search: about a dozen renders per cut.
    static func fitByRendering(_ text: NotificationText, fits: (NotificationText) -> Bool) -> NotificationText? {
        if fits(text) { return text }
        var current = text
        for field in [\NotificationText.body, \.subtitle, \.title] {
            guard let value = current[keyPath: field], value.utf8.count > 3 else { continue }
            var probe = current
            probe[keyPath: field] = NotificationTextFitter.ellipsis
            guard fits(probe) else {
                current = probe
                continue
            }
            // Only a prefix shorter than the budget can fit: never segment more than that.
            var ends = [value.startIndex]
            var index = value.startIndex
            while index < value.endIndex && ends.count <= maxPayloadBytes {
                index = value.index(after: index)
                ends.append(index)
            }
            // Invariant: `low` characters + "…" fit; `high` do not (the whole text did not fit).
            var low = 0
            var high = ends.count - 1
            while high - low > 1 {
                let middle = low + (high - low) / 2
                probe[keyPath: field] = String(value[..<ends[middle]]) + NotificationTextFitter.ellipsis
                if fits(probe) { low = middle } else { high = middle }
            }
            current[keyPath: field] = String(value[..<ends[low]]) + NotificationTextFitter.ellipsis
            return current
        }
        return nil
    }
}

extension FCMDataKey {
    /// Huawei buttons without an HTTPS URL: the pressed button's id, in the `data` Huawei hands the
    /// app when it is tapped (docs/payloads.md Huawei).
    public static let actionID = "on.actionId"
}
