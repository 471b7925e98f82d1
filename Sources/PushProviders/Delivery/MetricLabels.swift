import PushCore
/// The `platform` and `reason` labels of `pushworker_notifications_total` (docs/reference/metrics.md: labels from small fixed sets): every value comes from a fixed set, so no job and no
/// provider can make the series count grow. A provider that answers ten thousand distinct
/// strings adds one series (`other`), not ten thousand. Results keep the provider's reason
/// verbatim (docs/reference/records.md); only the label is bounded.
public enum MetricLabels {
    /// `ios`, `android`, `web`, `huawei`, or `other` (a recipient's platform string comes from the job).
    public static func platform(_ name: String) -> String {
        Platform(rawValue: name)?.rawValue ?? "other"
    }

    /// The `provider` label (and the provider's name in Redis bucket keys): `apns`, `fcm`,
    /// `webpush`, `hms`.
    public static func provider(_ platform: Platform) -> String {
        switch platform {
        case .ios: "apns"
        case .android: "fcm"
        case .web: "webpush"
        case .huawei: "hms"
        }
    }

    /// The label for `reason` on `platform` (nil: unknown platform): the reason itself when it
    /// is one of ours or in the provider's documented list, `""` for none, `other` for the rest.
    public static func reason(_ reason: String?, platform: Platform?) -> String {
        guard let reason, !reason.isEmpty else { return "" }
        if ours.contains(reason) || httpStatusReasons.contains(reason) { return reason }
        switch platform {
        case .ios?: return apns.contains(reason) ? reason : "other"
        case .android?: return fcm.contains(reason) ? reason : "other"
        case .huawei?: return hms.contains(reason) ? reason : "other"
        case .web?, nil: return "other"
        }
    }

    /// Our own reasons (docs/reference/records.md, and the transport and credential failures that end
    /// as `failed`/`rejected`).
    public static let ours: Set<String> = Set(RecipientRejection.allCases.map(\.reason))
        .union([PayloadError.noCredentials.reason, PayloadError.payloadTooLarge.reason])
        .union(["known_invalid", "timeout", "connect_error", "tls_error", "protocol_error", "shutdown", "invalid_request",
                "transport_error", "dns_error", "auth_unavailable", "auth_error", "internal_error", "unanswered",
                "withheld", "bad_timezone"])
        .union(ExpiryReason.allCases.map(\.rawValue))

    /// `http_<status>` (a provider answer without a reason string) for the statuses providers
    /// document; any other status is `other`.
    public static let httpStatusReasons: Set<String> = Set([400, 401, 403, 404, 405, 406, 408, 409, 410, 411, 412, 413, 414, 415,
                                                            422, 429, 500, 501, 502, 503, 504].map { "http_\($0)" })

    /// APNs `reason` values (Apple, "Handling notification responses from APNs", token and
    /// broadcast pushes).
    public static let apns: Set<String> = [
        // 400
        "BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic",
        "DeviceTokenNotForTopic", "DuplicateHeaders", "IdleTimeout", "InvalidPushType", "MissingDeviceToken", "MissingTopic",
        "PayloadEmpty", "TopicDisallowed", "BadChannelId", "CannotCreateChannelConfig", "ChannelNotRegistered",
        "FeatureNotEnabled", "MissingChannelId", "MissingPushType",
        // 403
        "BadCertificate", "BadCertificateEnvironment", "ExpiredProviderToken", "Forbidden", "InvalidProviderToken",
        "MissingProviderToken", "UnrelatedKeyIdInToken", "BadEnvironmentKeyInToken", "TopicMismatch",
        // 404, 405, 410, 413, 429, 5xx
        "BadPath", "MethodNotAllowed", "ExpiredToken", "Unregistered", "PayloadTooLarge", "TooManyProviderTokenUpdates",
        "TooManyRequests", "InternalServerError", "ServiceUnavailable", "Shutdown",
    ]

    /// FCM HTTP v1 `ErrorCode` values (firebase.google.com/docs/reference/fcm/rest/v1/ErrorCode)
    /// and the `google.rpc.Code` names FCM puts in `error.status`.
    public static let fcm: Set<String> = [
        "UNSPECIFIED_ERROR", "INVALID_ARGUMENT", "UNREGISTERED", "SENDER_ID_MISMATCH", "QUOTA_EXCEEDED", "UNAVAILABLE",
        "INTERNAL", "THIRD_PARTY_AUTH_ERROR",
        "CANCELLED", "UNKNOWN", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "DATA_LOSS", "UNAUTHENTICATED",
    ]

    /// Huawei Push Kit result codes (docs/providers.md); the code is the
    /// reason of every answer but success.
    public static let hms: Set<String> = [
        "80000000", "80100000", "80100001", "80100003", "80100004", "80100013", "80100016", "80100017",
        "80200001", "80200003", "80200005", "80300002", "80300007", "80300008", "80300010", "80300011",
        "80300013", "80600003", "81000001",
    ]

    /// Every label value `reason(_:platform:)` can return for `platform`.
    public static func possibleReasons(platform: Platform?) -> Set<String> {
        var labels = ours.union(httpStatusReasons).union(["", "other"])
        switch platform {
        case .ios?: labels.formUnion(apns)
        case .android?: labels.formUnion(fcm)
        case .huawei?: labels.formUnion(hms)
        case .web?, nil: break
        }
        return labels
    }
}
