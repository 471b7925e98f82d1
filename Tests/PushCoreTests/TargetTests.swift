import Testing
import PushCore
import PushEncoding

@Suite("Recipient targeting")
struct TargetTests {
    static let policy = WebPushPolicy(extraAllowedHosts: ["127.0.0.1", "push.example.com", ".corp.example", "[::1]"])

    static func webRecipient(endpoint: String?, p256dh: String? = JobFixtures.p256dh, auth: String? = JobFixtures.auth,
                             browser: String? = nil) -> Recipient {
        Recipient(subscriptionID: "s", platformName: "web", browser: browser,
                  subscription: .init(endpoint: endpoint, p256dh: p256dh, auth: auth))
    }

    static func reason(_ recipient: Recipient, policy: WebPushPolicy = policy) -> String? {
        switch RecipientTargeting.target(for: recipient, policy: policy) {
        case .success: nil
        case .failure(let rejection): rejection.reason
        }
    }

    @Test("APNs tokens: 64+ even-length hex, normalised to lower case", arguments: [
        (String(repeating: "a1", count: 32), String(repeating: "a1", count: 32)),
        (String(repeating: "AB", count: 32), String(repeating: "ab", count: 32)),
        (String(repeating: "0f", count: 50), String(repeating: "0f", count: 50)),
    ])
    func apnsValid(token: String, normalized: String) {
        let recipient = Recipient(subscriptionID: "s", platformName: "ios", token: token)
        #expect(RecipientTargeting.target(for: recipient, policy: .standard) == .success(.apns(deviceToken: normalized)))
    }

    @Test("bad APNs tokens are bad_token", arguments: [
        nil, "", String(repeating: "a", count: 63), String(repeating: "a", count: 65), String(repeating: "g", count: 64),
        " " + String(repeating: "a", count: 64), "<" + String(repeating: "a", count: 64) + ">",
        String(repeating: "a", count: 202), String(repeating: "ı", count: 32),
    ] as [String?])
    func apnsInvalid(token: String?) {
        #expect(Self.reason(Recipient(subscriptionID: "s", platformName: "ios", token: token)) == "bad_token")
    }

    @Test("FCM tokens: [A-Za-z0-9_:-], 20…4096 characters", arguments: [
        (JobFixtures.fcmToken, true),
        (String(repeating: "a", count: 20), true),
        (String(repeating: "a", count: 4096), true),
        (String(repeating: "a", count: 19), false),
        (String(repeating: "a", count: 4097), false),
        ("abc:APA91b/abcdefghijklmnop", false),
        ("abc:APA91b abcdefghijklmnop", false),
        ("abc:APA91b.abcdefghijklmnop", false),
        ("", false),
    ])
    func fcm(token: String, isValid: Bool) {
        let recipient = Recipient(subscriptionID: "s", platformName: "android", token: token)
        #expect(Self.reason(recipient) == (isValid ? nil : "bad_token"))
        if isValid {
            #expect(RecipientTargeting.target(for: recipient, policy: .standard) == .success(.fcm(registrationToken: token)))
        }
    }

    @Test("each token check accepts exactly its alphabet: every ASCII character and a non-ASCII one, at the start, middle and end")
    func tokenAlphabets() {
        func inRanges(_ scalar: UInt8, _ extra: String) -> Bool {
            (0x41...0x5A).contains(scalar) || (0x61...0x7A).contains(scalar) || (0x30...0x39).contains(scalar)
                || extra.utf8.contains(scalar)
        }
        let base = String(repeating: "ab", count: 32) // valid for all three
        for scalar in UInt8(0)...0x7F {
            let character = String(UnicodeScalar(scalar))
            let tokens = [character + String(base.dropFirst()), String(base.prefix(31)) + character + String(base.dropFirst(32)),
                          String(base.dropLast()) + character]
            for token in tokens {
                #expect(RecipientTargeting.isFCMToken(token) == inRanges(scalar, "_:-"), "FCM \(scalar)")
                #expect(RecipientTargeting.isHMSToken(token) == inRanges(scalar, "_:-.+/="), "HMS \(scalar)")
                let isHex = (0x30...0x39).contains(scalar) || (0x61...0x66).contains(scalar) || (0x41...0x46).contains(scalar)
                #expect(RecipientTargeting.apnsToken(token) == (isHex ? token.lowercased() : nil), "APNs \(scalar)")
            }
        }
        for token in ["é" + String(base.dropFirst(2)), String(base.dropLast(3)) + "€"] {
            #expect(!RecipientTargeting.isFCMToken(token))
            #expect(!RecipientTargeting.isHMSToken(token))
            #expect(RecipientTargeting.apnsToken(token) == nil)
        }
    }

    @Test("unknown or missing platforms are unknown_platform", arguments: [nil, "", "blackberry", "i os", "apns"] as [String?])
    func unknownPlatform(name: String?) {
        #expect(Self.reason(Recipient(subscriptionID: "s", platformName: name, token: JobFixtures.apnsToken)) == "unknown_platform")
    }

    @Test("a recipient without a subscriptionId is missing_subscription_id, whatever its token", arguments: ["ios", "android", "web", nil] as [String?])
    func missingSubscriptionID(platform: String?) {
        #expect(Self.reason(Recipient(subscriptionID: "", platformName: platform, token: JobFixtures.apnsToken)) == "missing_subscription_id")
    }

    @Test("platform names match case-insensitively", arguments: ["iOS", "IOS", "ios"])
    func platformCase(name: String) {
        #expect(Self.reason(Recipient(subscriptionID: "s", platformName: name, token: JobFixtures.apnsToken)) == nil)
    }

    @Test("Web Push endpoints: https on an allowed host", arguments: [
        ("https://fcm.googleapis.com/fcm/send/abc:def", nil),
        ("https://FCM.googleapis.com./fcm/send/x", nil),
        ("https://updates.push.services.mozilla.com/wpush/v2/gAAA", nil),
        ("https://push.services.mozilla.com/x", nil),
        ("https://web.push.apple.com/QGuQ", nil),
        ("https://wns2-par02p.notify.windows.com/w/?token=BQYAAA", nil),
        ("https://api.push.apple.com/x", nil),
        ("https://push.example.com:8443/x", nil),
        ("https://a.b.corp.example/x", nil),
        ("https://127.0.0.1:9443/wp/1", nil),
        ("https://[::1]:9443/wp/1", nil),
        ("http://fcm.googleapis.com/fcm/send/x", "endpoint_not_allowed"),
        ("ftp://fcm.googleapis.com/x", "endpoint_not_allowed"),
        ("https://evil.example/x", "endpoint_not_allowed"),
        ("https://fcm.googleapis.com.evil.example/x", "endpoint_not_allowed"),
        ("https://notify.windows.com/x", "endpoint_not_allowed"),
        ("https://corp.example/x", "endpoint_not_allowed"),
        ("https://evilpush.example.com/x", "endpoint_not_allowed"),
        ("https://127.0.0.2/x", "endpoint_not_allowed"),
        ("https://10.0.0.1/x", "endpoint_not_allowed"),
        ("https://192.168.1.10/x", "endpoint_not_allowed"),
        ("https://[fe80::1]/x", "endpoint_not_allowed"),
        ("https://169.254.169.254/latest/meta-data", "endpoint_not_allowed"),
        ("https://user@fcm.googleapis.com/x", "bad_subscription"),
        ("https://fcm.googleapis.com@evil.example/x", "bad_subscription"),
        ("https://fcm.googleapis.com:99999/x", "bad_subscription"),
        ("https://fcm.googleapis.com:/x", "bad_subscription"),
        ("https:///x", "bad_subscription"),
        ("https://fcm.googleapis.com/x y", "bad_subscription"),
        ("https://fcm.googleapis.com%2eevil/x", "bad_subscription"),
        ("https://[::1/x", "bad_subscription"),
        ("https://[fe80::1%25eth0]/x", "bad_subscription"),
        ("https://2130706433/x", "bad_subscription"),
        ("https://0x7f000001/x", "bad_subscription"),
        ("https://127.1/x", "bad_subscription"),
        ("https://010.0.0.1/x", "bad_subscription"),
        ("https://push.example.com.1/x", "bad_subscription"),
        ("https://fcm.googleapis.com\\@evil.example/x", "bad_subscription"),
        ("https://[0:0::1]:9443/wp/1", nil),
        ("fcm.googleapis.com/x", "bad_subscription"),
        ("", "bad_subscription"),
    ] as [(String, String?)])
    func endpoints(endpoint: String, reason: String?) {
        #expect(Self.reason(Self.webRecipient(endpoint: endpoint)) == reason)
    }

    @Test("Web Push keys must be base64url of the right sizes", arguments: [
        (JobFixtures.p256dh, JobFixtures.auth, nil),
        (JobFixtures.p256dh + "=", JobFixtures.auth + "==", nil),
        (nil, JobFixtures.auth, "bad_subscription"),
        (JobFixtures.p256dh, nil, "bad_subscription"),
        (String(JobFixtures.p256dh.dropLast(2)), JobFixtures.auth, "bad_subscription"),
        ("A" + JobFixtures.p256dh.dropFirst(), JobFixtures.auth, "bad_subscription"),
        (JobFixtures.p256dh, "AAAA", "bad_subscription"),
        (JobFixtures.p256dh, "!!!!!!!!!!!!!!!!!!!!!!", "bad_subscription"),
    ] as [(String?, String?, String?)])
    func keys(p256dh: String?, auth: String?, reason: String?) {
        let recipient = Self.webRecipient(endpoint: "https://fcm.googleapis.com/fcm/send/x", p256dh: p256dh, auth: auth)
        #expect(Self.reason(recipient) == reason)
    }

    @Test("a web recipient without a subscription is bad_subscription")
    func missingSubscription() {
        #expect(Self.reason(Recipient(subscriptionID: "s", platformName: "web")) == "bad_subscription")
    }

    @Test("the decoded subscription carries key bytes and the browser", arguments: [
        ("https://fcm.googleapis.com/fcm/send/x", nil, Browser.chrome),
        ("https://wns2-par02p.notify.windows.com/w/?token=x", nil, .edge),
        ("https://updates.push.services.mozilla.com/wpush/v2/x", nil, .firefox),
        ("https://web.push.apple.com/x", nil, .safari),
        ("https://push.example.com/x", nil, .chrome),
        ("https://fcm.googleapis.com/fcm/send/x", "Edge", .edge),
        ("https://updates.push.services.mozilla.com/x", "opera", .firefox),
    ] as [(String, String?, Browser)])
    func browsers(endpoint: String, browser: String?, expected: Browser) throws {
        let result = RecipientTargeting.target(for: Self.webRecipient(endpoint: endpoint, browser: browser), policy: Self.policy)
        guard case .success(.webPush(let subscription)) = result else {
            Issue.record("not accepted: \(result)")
            return
        }
        #expect(subscription.browser == expected)
        #expect(subscription.endpoint == endpoint)
        #expect(subscription.p256dh.count == 65 && subscription.p256dh[0] == 0x04)
        #expect(subscription.auth == Base64URL.decode(JobFixtures.auth, .strict))
    }

    @Test("allow-list entries are normalised and explicit entries are reported")
    func policyEntries() {
        let policy = WebPushPolicy(extraAllowedHosts: [" Push.Example.COM ", "127.0.0.1", ".Corp.Example", "", "127.0.0.1:9443", "[0::1]"])
        #expect(policy.extraAllowedHosts == ["push.example.com", "127.0.0.1", ".corp.example", "::1"], "refused entries are left out")
        #expect(policy.isListedExplicitly(host: "PUSH.example.com"))
        #expect(policy.isListedExplicitly(host: "127.0.0.1"))
        #expect(!policy.isListedExplicitly(host: "a.corp.example"))
        #expect(!policy.isListedExplicitly(host: "fcm.googleapis.com"))
        #expect(policy.allows(host: "a.corp.example") && !policy.allows(host: "corp.example"))
        #expect(!WebPushPolicy(extraAllowedHosts: [".0.0.1"]).allows(host: "127.0.0.1"))
        #expect(!WebPushPolicy.standard.allows(host: "127.0.0.1"))
        #expect(!WebPushPolicy.standard.allows(host: ""))
    }
}
