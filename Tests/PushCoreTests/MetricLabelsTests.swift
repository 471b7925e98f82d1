import PushCore
import Testing
import PushProviders

/// The fixed label sets of `pushworker_notifications_total` (docs/reference/metrics.md).
@Suite("Metric labels: platform and reason from fixed sets")
struct MetricLabelsTests {
    @Test("reasons: ours on every platform, the provider's documented ones on theirs, other for the rest", arguments: [
        (String?.none, Platform?.some(.ios), ""), ("", .ios, ""),
        ("bad_token", .ios, "bad_token"), ("endpoint_not_allowed", .web, "endpoint_not_allowed"), ("no_credentials", .android, "no_credentials"),
        ("payload_too_large", .web, "payload_too_large"), ("known_invalid", .ios, "known_invalid"), ("timeout", .web, "timeout"),
        ("unknown_platform", nil, "unknown_platform"), ("expires_at_passed", .web, "expires_at_passed"),
        ("expired_while_held", .huawei, "expired_while_held"), ("dns_error", .web, "dns_error"), ("auth_error", .android, "auth_error"),
        ("BadDeviceToken", .ios, "BadDeviceToken"), ("Unregistered", .ios, "Unregistered"), ("TooManyRequests", .ios, "TooManyRequests"),
        ("ExpiredProviderToken", .ios, "ExpiredProviderToken"), ("InternalServerError", .ios, "InternalServerError"),
        ("UNREGISTERED", .android, "UNREGISTERED"), ("QUOTA_EXCEEDED", .android, "QUOTA_EXCEEDED"),
        ("SENDER_ID_MISMATCH", .android, "SENDER_ID_MISMATCH"), ("UNAUTHENTICATED", .android, "UNAUTHENTICATED"),
        ("http_400", .ios, "http_400"), ("http_503", .web, "http_503"), ("http_418", .ios, "other"), ("http_99999", .android, "other"),
        ("BadDeviceToken", .android, "other"), ("UNREGISTERED", .ios, "other"), ("BadDeviceToken", .web, "other"),
        ("baddevicetoken", .ios, "other"), ("BadDeviceToken ", .ios, "other"), ("token 0123abcd", .ios, "other"),
        (String(repeating: "x", count: 10_000), .android, "other"), ("a{b}", .web, "other"), ("Unregistered\n", .ios, "other"),
    ] as [(String?, Platform?, String)])
    func reasons(reason: String?, platform: Platform?, label: String) {
        #expect(MetricLabels.reason(reason, platform: platform) == label)
        #expect(MetricLabels.possibleReasons(platform: platform).contains(label))
    }

    @Test("platforms: ios, android, web, huawei, or other", arguments: [
        ("ios", "ios"), ("android", "android"), ("web", "web"), ("huawei", "huawei"), ("", "other"), ("IOS", "other"), ("pager", "other"), ("x\"y", "other"),
    ])
    func platforms(name: String, label: String) {
        #expect(MetricLabels.platform(name) == label)
    }

    @Test("the label sets are small and every value is a plain token")
    func small() {
        for platform in [Platform.ios, .android, .web, .huawei] as [Platform?] + [nil] {
            let labels = MetricLabels.possibleReasons(platform: platform)
            #expect(labels.count < 120)
            for label in labels { #expect(label.utf8.allSatisfy { $0 == 0x5F || ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) }) }
        }
    }
}
