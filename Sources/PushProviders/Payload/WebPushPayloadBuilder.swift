import PushEncoding
import PushCore
/// Builds the Web Push request (`POST <subscription endpoint>`, RFC 8030; docs/payloads.md "Web Push"
/// and "Where each SDK field travels").
///
/// The body is the plaintext JSON the service worker reads; the transport encrypts it
/// (RFC 8291 aes128gcm, using ``ProviderRequest/webPush``) and adds `content-encoding` and the
/// VAPID `authorization` (RFC 8292). Headers: `ttl`, `urgency`, `topic`, `content-type`; the
/// replace key (docs/payloads.md "Replace key") is the `topic` unless the job gives `web.topic`, and always the
/// notification `tag`.
public enum WebPushPayloadBuilder {
    /// 4096 bytes of record minus the aes128gcm overhead (``WebPushSizing``). Bytes.
    public static let maxPlaintextBytes = 3993
    /// RFC 8030 §5.2 requires `TTL`; without a job TTL we ask for 28 days. Seconds.
    public static let defaultTTLSeconds = 2_419_200

    public static func build(_ content: NotificationContent,
                             subscription: WebPushSubscription) -> Result<ProviderRequest, PayloadError> {
        let budgets = [PayloadBudget(limit: maxPlaintextBytes, measure: .jsonEscaped)]
        var text = NotificationText(content)
        var body = payload(content, browser: subscription.browser, text: text)
        if body.count > maxPlaintextBytes {
            guard let fitted = NotificationTextFitter.fit(text, budgets: budgets, sizes: {
                [payload(content, browser: subscription.browser, text: $0).count]
            }) else { return .failure(.payloadTooLarge) }
            text = fitted
            body = payload(content, browser: subscription.browser, text: text)
            guard body.count <= maxPlaintextBytes else { return .failure(.payloadTooLarge) }
        }
        var request = ProviderRequest(platform: .web, url: subscription.endpoint,
                                      headers: headers(content), body: body, webPush: subscription)
        request.recipientHeaders = recipientHeaders(content)
        request.truncatedFields = text.changedFields(from: NotificationText(content))
        return .success(request)
    }

    /// How many action buttons `browser` shows (docs/payloads.md): Chrome/Edge 2, Firefox/Safari 0.
    public static func maxActions(for browser: Browser) -> Int {
        switch browser {
        case .chrome, .edge: 2
        case .firefox, .safari: 0
        }
    }

    /// `ttl` (RFC 8030 §5.2, 0 allowed), `urgency` (§5.3: `web.urgency`, else `high`/`normal`
    /// from the priority), `topic` (§5.4) when the job fixes one for all its recipients
    /// (`web.topic`, else the `collapseId` as a valid Topic: ``ReplaceKey/webPushTopic(for:engine:)``),
    /// `content-type`.
    public static func headers(_ content: NotificationContent) -> [KeyValue] {
        var headers = [
            KeyValue("ttl", String(max(content.ttlSeconds ?? defaultTTLSeconds, 0))),
            KeyValue("urgency", content.web.urgency ?? content.priority.rawValue),
        ]
        if let topic = content.web.topic, !topic.isEmpty {
            headers.append(KeyValue("topic", topic))
        } else if let collapseID = content.collapseID, !collapseID.isEmpty {
            headers.append(KeyValue("topic", ReplaceKey.webPushTopic(for: collapseID)))
        }
        headers.append(KeyValue("content-type", "application/octet-stream"))
        return headers
    }

    /// `topic` with the recipient's own replace key (docs/payloads.md "Replace key") when the job has neither
    /// `web.topic` nor `collapseId`: a derived key, 22 base64url characters, is a valid Topic
    /// (RFC 8030 §5.4).
    public static func recipientHeaders(_ content: NotificationContent) -> [KeyValue] {
        if let topic = content.web.topic, !topic.isEmpty { return [] }
        if let collapseID = content.collapseID, !collapseID.isEmpty { return [] }
        return [KeyValue("topic", content.resolvedReplaceKey)]
    }

    /// The plaintext JSON with `text` in place of the content's texts. Web notifications have
    /// no subtitle line: it is not sent.
    static func payload(_ content: NotificationContent, browser: Browser, text: NotificationText) -> [UInt8] {
        let shown = content.actions.prefix(maxActions(for: browser))
        var json = JSONWriter(capacity: 2048)
        json.beginObject()
        json.member(.title, ifPresent: text.title)
        json.member(.body, ifPresent: text.body)
        json.member(.icon, ifPresent: content.web.iconURL)
        json.member(.image, ifPresent: content.imageURL)
        json.member(.badge, ifPresent: content.web.badgeURL)
        // The replace key: the service worker passes it to showNotification, which replaces a
        // shown notification with the same tag (docs/payloads.md "Replace key").
        json.member(.tag, content.resolvedReplaceKey)
        json.member(.msgId, content.msgID)
        json.member(.campaignId, content.campaignID)
        // NotificationOptions.lang: the service worker passes it to showNotification.
        if !content.language.isEmpty { json.member(.lang, content.language) }
        if content.web.requireInteraction { json.member(.requireInteraction, true) }
        if !shown.isEmpty {
            json.key(.actions)
            json.beginArray()
            for action in shown {
                json.beginObject()
                json.member(.action, action.id)
                json.member(.title, action.title)
                json.endObject()
            }
            json.endArray()
        }
        json.key(.data)
        json.beginObject()
        for pair in content.data { json.member(pair.key, pair.value) }
        json.member(.url, ifPresent: content.url)
        for action in shown {
            if let url = action.url { json.member("a:" + action.id, url) }
        }
        json.endObject()
        json.endObject()
        return json.bytes
    }
}

/// The size of a Web Push message after RFC 8291 encryption.
public enum WebPushSizing {
    /// aes128gcm header (RFC 8188 §2.1: salt 16 + rs 4 + idlen 1 + keyid 65, the sender's
    /// uncompressed P-256 key) + the padding delimiter (1) + the AEAD tag (16), one record.
    public static let overheadBytes = 86 + 1 + 16

    /// Bytes of the encrypted body for `plaintextCount` plaintext bytes.
    public static func encryptedLength(plaintextCount: Int) -> Int {
        plaintextCount + overheadBytes
    }
}
