import PushCore
/// Why a recipient's payload could not be built (docs/reference/records.md). The recipient is
/// `rejected` with ``reason``.
public enum PayloadError: Error, Sendable, Equatable {
    /// The app has no credentials for the recipient's platform (`apns.json`, `fcm.json`,
    /// `webpush.json`, `hms.json` missing).
    case noCredentials
    /// Even with the texts cut to "…" the payload exceeds the provider's budget (huge `data`,
    /// URL, action titles …). docs/payloads.md "Budgets and truncation".
    case payloadTooLarge
    /// The request needs an authentication the app's credential cannot give: a Live Activity
    /// for an app whose APNs credential is a certificate (Apple: token-based connections only;
    /// docs/providers.md "Live Activities").
    case unsupportedAuth

    /// The `reason` of the `rejected` result (docs/reference/records.md, §15).
    public var reason: String {
        switch self {
        case .noCredentials: "no_credentials"
        case .payloadTooLarge: "payload_too_large"
        case .unsupportedAuth: "unsupported_auth"
        }
    }
}

/// Turns one resolved ``NotificationContent`` into the HTTP request for its provider
/// (docs/payloads.md, documented key by key in docs/payloads.md).
///
/// Dispatches on the target to ``APNSPayloadBuilder``, ``FCMPayloadBuilder``,
/// ``WebPushPayloadBuilder`` or ``HMSPayloadBuilder``. Pure: no I/O, no clock (the caller passes `issuedAtUnix`).
public enum PayloadBuilder {
    /// Builds the request for `target`.
    ///
    /// - Parameters:
    ///   - issuedAtUnix: now, in Unix seconds. Only APNs uses it: `apns-expiration` is an
    ///     absolute time, `issuedAtUnix + ttlSeconds` (0 when `ttlSeconds` is 0).
    /// - Returns: the request, or `.noCredentials` when `profile` lacks the platform's
    ///   credentials, or `.payloadTooLarge` when the payload cannot fit even truncated.
    public static func build(_ content: NotificationContent, target: DeliveryTarget, profile: AppProfile,
                             issuedAtUnix: Int) -> Result<ProviderRequest, PayloadError> {
        switch target {
        case .apns(let deviceToken):
            guard let apns = profile.apns else { return .failure(.noCredentials) }
            if content.ios.liveActivity != nil && apns.authentication == .certificate { return .failure(.unsupportedAuth) }
            return APNSPayloadBuilder.build(content, deviceToken: deviceToken, apns: apns,
                                            additionalDataAtRoot: profile.additionalDataAtRoot,
                                            issuedAtUnix: issuedAtUnix)
        case .fcm(let registrationToken):
            guard let fcm = profile.fcm else { return .failure(.noCredentials) }
            return FCMPayloadBuilder.build(content, registrationToken: registrationToken, fcm: fcm)
        case .fcmAudience(let audience):
            guard let fcm = profile.fcm else { return .failure(.noCredentials) }
            return FCMPayloadBuilder.build(content, target: audience.messageTarget, fcm: fcm)
        case .webPush(let subscription):
            guard profile.hasWebPush else { return .failure(.noCredentials) }
            return WebPushPayloadBuilder.build(content, subscription: subscription)
        case .huawei(let token):
            guard let hms = profile.hms else { return .failure(.noCredentials) }
            return HMSPayloadBuilder.build(content, token: token, hms: hms)
        }
    }
}

extension String {
    /// `self` without trailing slashes (so `endpoint + "/3/device/…"` never doubles them).
    var withoutTrailingSlash: Substring {
        var end = endIndex
        while end > startIndex, self[index(before: end)] == "/" { end = index(before: end) }
        return self[startIndex..<end]
    }
}
