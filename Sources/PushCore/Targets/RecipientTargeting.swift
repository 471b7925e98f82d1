import PushEncoding
/// Why a recipient cannot be addressed (docs/reference/records.md). It rejects only that recipient.
public enum RecipientRejection: String, Error, Sendable, Equatable, CaseIterable {
    /// APNs token not ≥ 64 even-length hex; FCM token not 20…4096 of `[A-Za-z0-9_:-]`; Huawei
    /// token not 20…4096 of `[A-Za-z0-9_:.+/=-]`; or missing.
    case badToken = "bad_token"
    /// Web Push subscription missing, endpoint unreadable, or keys not base64url of the right size.
    case badSubscription = "bad_subscription"
    /// Web Push endpoint not `https`, or its host not on the allow-list (``WebPushPolicy``).
    case endpointNotAllowed = "endpoint_not_allowed"
    /// `platform` missing or not `ios`, `android`, `web`, `huawei`.
    case unknownPlatform = "unknown_platform"
    /// `subscriptionId` missing or empty: the msgId, the result and the fleet's de-duplication
    /// are keyed by it, so two such recipients could not be told apart.
    case missingSubscriptionID = "missing_subscription_id"

    /// The `reason` string of the result (contract).
    public var reason: String { rawValue }
}

/// Turns a recipient's token or subscription into a validated ``DeliveryTarget`` (docs/reference/job.md).
public enum RecipientTargeting {
    /// APNs device tokens: 32 bytes today (64 hex characters); longer even-length hex is accepted.
    public static let apnsTokenLengths = 64...200
    /// FCM registration tokens are ~100–300 characters in practice; bounds are kept lenient.
    public static let fcmTokenLengths = 20...4096
    /// Huawei Push Kit tokens are opaque (~130 characters of base64-like text); bounds are lenient.
    public static let hmsTokenLengths = 20...4096
    /// Longer endpoints are refused.
    public static let maximumEndpointLength = 4096

    public static func target(for recipient: Recipient, policy: WebPushPolicy) -> Result<DeliveryTarget, RecipientRejection> {
        guard !recipient.subscriptionID.isEmpty else { return .failure(.missingSubscriptionID) }
        switch recipient.platform {
        case nil:
            return .failure(.unknownPlatform)
        case .ios?:
            guard let token = recipient.token, let normalized = apnsToken(token) else { return .failure(.badToken) }
            return .success(.apns(deviceToken: normalized))
        case .android?:
            guard let token = recipient.token, isFCMToken(token) else { return .failure(.badToken) }
            return .success(.fcm(registrationToken: token))
        case .web?:
            guard let subscription = recipient.subscription else { return .failure(.badSubscription) }
            return webPush(subscription, browser: recipient.browser, policy: policy).map(DeliveryTarget.webPush)
        case .huawei?:
            guard let token = recipient.token, isHMSToken(token) else { return .failure(.badToken) }
            return .success(.huawei(token: token))
        }
    }

    /// 20…4096 of `[A-Za-z0-9_:.+/=-]`: nothing a JSON string or a log line would need to escape.
    public static func isHMSToken(_ token: String) -> Bool {
        // The bytes read in place (`utf8.span`): iterating `String.UTF8View` pays its index
        // bookkeeping on every byte, and every recipient's token is checked.
        let bytes = token.utf8.span
        guard hmsTokenLengths.contains(bytes.count) else { return false }
        for index in bytes.indices {
            switch bytes[index] {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "+"), UInt8(ascii: "/"),
                 UInt8(ascii: "="): continue
            default: return false
            }
        }
        return true
    }

    /// The token in lower case when it is valid APNs hex, else nil.
    public static func apnsToken(_ token: String) -> String? {
        let bytes = token.utf8.span
        guard apnsTokenLengths.contains(bytes.count), bytes.count % 2 == 0 else { return nil }
        var hasUpper = false
        for index in bytes.indices {
            switch bytes[index] {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): continue
            case UInt8(ascii: "A")...UInt8(ascii: "F"): hasUpper = true
            default: return nil
            }
        }
        return hasUpper ? token.lowercased() : token
    }

    public static func isFCMToken(_ token: String) -> Bool {
        let bytes = token.utf8.span
        guard fcmTokenLengths.contains(bytes.count) else { return false }
        for index in bytes.indices {
            switch bytes[index] {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "-"): continue
            default: return false
            }
        }
        return true
    }

    /// Validates a Web Push subscription: endpoint `https` on an allowed host, `p256dh` an
    /// uncompressed P-256 point (65 bytes, 0x04 first), `auth` 16 bytes (RFC 8291 §3).
    public static func webPush(_ subscription: Recipient.Subscription, browser: String?,
                               policy: WebPushPolicy) -> Result<WebPushSubscription, RecipientRejection> {
        guard let endpoint = subscription.endpoint, let parsed = EndpointURL(endpoint) else {
            return .failure(.badSubscription)
        }
        guard parsed.scheme == "https", policy.allows(host: parsed.host) else { return .failure(.endpointNotAllowed) }
        guard let p256dhText = subscription.p256dh, let p256dh = Base64URL.decode(p256dhText, .lenient),
              p256dh.count == 65, p256dh[0] == 0x04,
              let authText = subscription.auth, let auth = Base64URL.decode(authText, .lenient),
              auth.count == 16 else {
            return .failure(.badSubscription)
        }
        let chosen = browser.flatMap { Browser(rawValue: $0.lowercased()) } ?? inferBrowser(host: parsed.host)
        return .success(WebPushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth, browser: chosen))
    }

    /// The browser behind a push service host; unknown hosts count as Chrome (docs/payloads.md).
    public static func inferBrowser(host: String) -> Browser {
        let name = WebPushPolicy.normalizeHost(host)
        if name == "fcm.googleapis.com" { return .chrome }
        if name.hasSuffix(".notify.windows.com") { return .edge }
        if name == "mozilla.com" || name.hasSuffix(".mozilla.com") { return .firefox }
        if name.hasSuffix(".push.apple.com") { return .safari }
        return .chrome
    }
}
