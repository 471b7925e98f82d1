import PushEncoding
/// The replace key every request carries in its provider's replace mechanism, so that two
/// copies of one notification (a resend after the provider did not answer, docs/reliability.md)
/// show once on the device (docs/payloads.md "Replace key"): APNs `apns-collapse-id`, FCM `android.collapse_key` and `on.tag`, Web Push
/// `Topic` and the notification `tag`, Huawei `android.notification.tag`.
///
/// The key is the job's `collapseId` when it has one; otherwise ``derive(msgID:engine:)`` of the
/// msgId the payload carries (the recipient's, or a Huawei batch's shared one), so every resend
/// of a recipient's notification carries the same key and two recipients' keys differ.
public enum ReplaceKey {
    /// Hashed in front of the msgId, so the key is no other hash of the msgId used elsewhere.
    public static let domainPrefix = "pushworker-replace-key:"
    /// ``domainPrefix``'s bytes, read in place.
    private static let domainPrefixBytes: StaticString = "pushworker-replace-key:"
    /// Characters of a derived key: base64url of 16 bytes, unpadded.
    public static let derivedLength = 22
    /// RFC 8030 §5.4: a `Topic` is at most 32 characters of the base64url alphabet.
    public static let maxWebPushTopicLength = 32

    /// base64url (RFC 4648 §5, no padding) of the first 16 bytes of
    /// SHA-256(``domainPrefix`` + `msgID`): 22 characters of `[A-Za-z0-9_-]`. Deterministic; a
    /// valid APNs collapse id (≤ 64 bytes), FCM collapse key and Web Push `Topic` as it is.
    /// `engine` compresses the blocks (the worker passes libcrypto's); every engine gives the
    /// same key.
    public static func derive(msgID: String, engine: (any SHA256BlockEngine)? = nil) -> String {
        var msgID = msgID
        let digest = domainPrefixBytes.withUTF8Buffer { prefix in
            msgID.withUTF8 { SHA256.inlineHash(prefix.span, $0.span, engine: engine) }
        }
        return Base64URL.encode(count: 16) { digest[$0] }
    }

    /// The key for a payload: `collapseID` when non-empty, else ``derive(msgID:engine:)`` of
    /// `msgID`.
    public static func key(collapseID: String?, msgID: String, engine: (any SHA256BlockEngine)? = nil) -> String {
        if let collapseID, !collapseID.isEmpty { return collapseID }
        return derive(msgID: msgID, engine: engine)
    }

    /// Whether `value` may be sent as a Web Push `Topic` (RFC 8030 §5.4): 1…32 characters of
    /// the base64url alphabet.
    public static func isWebPushTopic(_ value: String) -> Bool {
        let utf8 = value.utf8
        guard !utf8.isEmpty, utf8.count <= maxWebPushTopicLength else { return false }
        return utf8.allSatisfy { byte in
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == 0x2D || byte == 0x5F
        }
    }

    /// The Web Push `Topic` for replace key `key`: the key itself when it is a valid Topic,
    /// else ``derive(msgID:engine:)`` of it (a `collapseId` longer than 32 characters or
    /// outside the alphabet; the same `collapseId` always gives the same Topic).
    public static func webPushTopic(for key: String, engine: (any SHA256BlockEngine)? = nil) -> String {
        isWebPushTopic(key) ? key : derive(msgID: key, engine: engine)
    }
}
