import Foundation
import Testing
import PushCore
import PushCrypto
import PushEncoding
import PushProviders
import PushTestSupport
@testable import PushWorker

/// The planner's template path (``PayloadTemplate``: one build per language and target kind)
/// against the full build: every recipient's plan must equal what ``PreparedJob/resolve(_:)``
/// and ``PayloadBuilder/build(_:target:profile:issuedAtUnix:)`` give it alone.
@Suite("JobPlanner templates")
struct JobPlannerTemplateTests {
    static let p256dh = Base64URL.encode([4] + Array(repeating: UInt8(9), count: 64))
    static let auth = Base64URL.encode(Array(repeating: UInt8(7), count: 16))

    static func web(_ id: String, browser: String?, language: String? = nil, extra: String = "") -> String {
        let browserMember = browser.map { #","browser":"\#($0)""# } ?? ""
        let languageMember = language.map { #","language":"\#($0)""# } ?? ""
        return #"{"userId":"u-\#(id)","subscriptionId":"\#(id)","platform":"web"\#(browserMember)\#(languageMember)\#(extra),"subscription":{"endpoint":"https://fcm.googleapis.com/fcm/send/ep-\#(id)","keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}}"#
    }

    static func device(_ id: String, _ platform: String, language: String? = nil, extra: String = "") -> String {
        let token: String
        switch platform {
        case "ios": token = id.hasSuffix("U") ? CLITest.iosToken.uppercased() : CLITest.iosToken
        case "huawei": token = "IQAAAACy0kYzAACcTw9fkQ3sXo3T_tok" + id
        default: token = CLITest.fcmToken + id
        }
        let languageMember = language.map { #","language":"\#($0)""# } ?? ""
        return #"{"userId":"u-\#(id)","subscriptionId":"\#(id)","platform":"\#(platform)","token":"\#(token)"\#(languageMember)\#(extra)}"#
    }

    /// Every platform, in every language case: exact, prefix fallback (`pt-BR` → `pt`), unknown
    /// (→ default), none; some personalized, one bad token, one unknown platform.
    static func mixedRecipients() -> [String] {
        var recipients: [String] = []
        for (index, language) in [nil, "en", "pt", "pt-BR", "fr", "de-AT", "FR"].enumerated() {
            let name = index % 3 == 0 ? #","properties":{"name":"Ana \#(index)"}"# : ""
            recipients.append(device("i\(index)", "ios", language: language, extra: name))
            recipients.append(device("i\(index)U", "ios", language: language))
            recipients.append(device("a\(index)", "android", language: language, extra: name))
            recipients.append(device("h\(index)", "huawei", language: language, extra: name))
            recipients.append(web("wc\(index)", browser: "chrome", language: language, extra: name))
            recipients.append(web("wf\(index)", browser: "firefox", language: language))
            recipients.append(web("we\(index)", browser: nil, language: language))
        }
        recipients.append(device("bad", "ios").replacingOccurrences(of: CLITest.iosToken, with: "zz"))
        recipients.append(#"{"userId":"u-x","subscriptionId":"x","platform":"pager","token":"t"}"#)
        return recipients
    }

    static let languages = #""en":{"title":"Hi {{ name | default: \"there\" }}","body":"Hello","url":"https://shop.example/x","actions":[{"id":"buy","title":"Buy","url":"https://shop.example/b"},{"id":"later","title":"Later"}]},"pt":{"title":"Olá","body":"Oi \"já\"\n"},"fr":{"title":"Salut","subtitle":"Soldes","body":"Bonjour","actions":[{"id":"go","title":"Aller {{ name }}"}]}"#

    static let profile: AppProfile = {
        var profile = AppProfile(apns: .init(topic: "com.example.shop", endpoint: "https://apns.test/"),
                                 fcm: .init(projectID: "shop-prod", endpoint: "https://fcm.test"), hasWebPush: true)
        profile.hms = AppProfile.HMS(pathID: "1")
        return profile
    }()

    /// Plans `job` and checks each plan against the recipient's own full build; returns the plans.
    @discardableResult
    static func expectSameAsFullBuild(_ jobText: String, profile: AppProfile? = profile,
                                      sourceLocation: SourceLocation = #_sourceLocation) throws -> [PlannedRecipient] {
        let job = try JobDecoder.decode(Array(jobText.utf8))
        let keyring = try MsgIDKeyring(parsing: CLITest.keys)
        let policy = WebPushPolicy(extraAllowedHosts: [])
        let now = Date()
        let plans = JobPlanner(keyring: keyring, webPushPolicy: policy).plan(job, profile: profile, now: now)
        let prepared = PreparedJob(job: job, context: RenderContext(now: now, keyring: keyring, webPushPolicy: policy))
        #expect(plans.count == job.recipients.count, sourceLocation: sourceLocation)
        for (plan, recipient) in zip(plans, job.recipients) {
            let resolution = prepared.resolve(recipient)
            #expect(plan.msgID == resolution.msgID, sourceLocation: sourceLocation)
            #expect(plan.tokenHash == TokenHash.of(recipient), sourceLocation: sourceLocation)
            switch (resolution, plan.state) {
            case (.expired, .expired):
                #expect(plan.language == nil, sourceLocation: sourceLocation)
            case (.rejected(let reason, let language, _), .rejected(let planned)):
                #expect(planned == reason && plan.language == language, sourceLocation: sourceLocation)
            case (.ready(let content, let target), let state):
                #expect(plan.language == content.language, sourceLocation: sourceLocation)
                let expected: PlannedRecipient.State
                if let profile {
                    switch PayloadBuilder.build(content, target: target, profile: profile, issuedAtUnix: Int(now.timeIntervalSince1970)) {
                    case .success(let request): expected = .ready(request)
                    case .failure(let error): expected = .rejected(reason: error.reason)
                    }
                } else {
                    expected = .rejected(reason: "no_credentials")
                }
                switch (expected, state) {
                case (.ready(let want), .ready(let got)):
                    #expect(got == want, "\(recipient.subscriptionID)", sourceLocation: sourceLocation)
                case (.rejected(let want), .rejected(let got)):
                    #expect(got == want, sourceLocation: sourceLocation)
                default:
                    Issue.record("\(recipient.subscriptionID): \(expected) planned as \(state)", sourceLocation: sourceLocation)
                }
            default:
                Issue.record("\(recipient.subscriptionID): \(resolution) planned as \(plan.state)", sourceLocation: sourceLocation)
            }
        }
        return plans
    }

    @Test("every platform and language case, personalized or not, plans exactly as the full build")
    func mixed() throws {
        let plans = try Self.expectSameAsFullBuild(CLITest.job(languages: Self.languages, recipients: Self.mixedRecipients()))
        let ready = plans.filter { if case .ready = $0.state { true } else { false } }
        #expect(ready.count == plans.count - 2)
        #expect(Set(plans.compactMap(\.language)) == ["en", "pt", "fr"])
    }

    @Test("personalized texts: plain, non-ASCII, with a quote or newline, rendered empty, on every platform")
    func personalized() throws {
        let languages = #""en":{"title":"Hi {{ name | default: \"there\" }}","subtitle":"{{ city }}","body":"Deal for {{ name }} in {{ city }}"}"#
        var recipients: [String] = []
        for (index, properties) in [#"{"name":"Ana"}"#, #"{"name":"Ayşe 🇹🇷","city":"İzmir"}"#, #"{"name":"Q \"x\"","city":"a\\b"}"#,
                                     #"{"name":"line\nbreak","city":"c"}"#, #"{}"#, #"{"city":"Rio"}"#].enumerated() {
            let extra = #","properties":\#(properties)"#
            for platform in ["ios", "android", "huawei"] { recipients.append(Self.device("p\(index)\(platform)", platform, extra: extra)) }
            recipients.append(Self.web("pw\(index)", browser: "chrome", extra: extra))
            recipients.append(Self.web("pf\(index)", browser: "firefox", extra: extra))
        }
        let plans = try Self.expectSameAsFullBuild(CLITest.job(languages: languages, recipients: recipients))
        guard case .ready(let request) = plans[5].state else { Issue.record("not ready"); return }
        #expect(String(decoding: request.body, as: UTF8.self).contains("Deal for Ayşe 🇹🇷 in İzmir"))
    }

    @Test("the cache builds one template per language and target kind, on first use, and splices the others")
    func cacheBuildsOnce() throws {
        var cache = TemplateCache(languageCount: 2)
        var made = 0
        let content = PayloadTemplateTests.content
        for index in 0..<4 {
            let target = DeliveryTarget.apns(deviceToken: String(repeating: index % 2 == 0 ? "ab" : "cd", count: 32))
            let request = cache.request(msgID: "m\(index)", target: target, texts: NotificationText(title: nil, subtitle: nil, body: nil),
                                        languageIndex: index / 2) {
                made += 1
                return PayloadTemplate.make(content, target: target, profile: Self.profile, issuedAtUnix: 0)
            }
            var expected = content
            expected.msgID = "m\(index)"
            #expect(request == (try PayloadBuilder.build(expected, target: target, profile: Self.profile, issuedAtUnix: 0).get()))
        }
        #expect(made == 2, "one per language")
    }

    @Test("job data, collapse id, badge, sound, platform options and data at the root plan as the full build")
    func options() throws {
        let extra = #","collapseId":"c-1","data":{"k":"v \"q\"","n":"1"},"ios":{"sound":"ping.caf","badge":{"mode":"increase","value":2},"threadId":"t"},"android":{"channelId":"sales","smallIcon":"ic"},"web":{"iconUrl":"https://shop.example/i.png","requireInteraction":true,"topic":"tp"}"#
        try Self.expectSameAsFullBuild(CLITest.job(languages: Self.languages, extra: extra, recipients: Self.mixedRecipients()))
        var profile = Self.profile
        profile.additionalDataAtRoot = true
        try Self.expectSameAsFullBuild(CLITest.job(languages: Self.languages, extra: extra, recipients: Self.mixedRecipients()),
                                       profile: profile)
    }

    @Test("no credentials, missing platforms' credentials and an expired job plan as the full build")
    func rejections() throws {
        let recipients = Self.mixedRecipients()
        try Self.expectSameAsFullBuild(CLITest.job(languages: Self.languages, recipients: recipients), profile: nil)
        var profile = Self.profile
        profile.fcm = nil
        profile.hms = nil
        try Self.expectSameAsFullBuild(CLITest.job(languages: Self.languages, recipients: recipients), profile: profile)
        let expired = try Self.expectSameAsFullBuild(CLITest.job(expiresAt: CLITest.future(-60), languages: Self.languages,
                                                                 recipients: recipients))
        #expect(expired.allSatisfy { if case .expired = $0.state { true } else { false } })
    }

    /// Bodies around each budget: recipients whose msgId (longer ids) pushes the payload over get
    /// truncated texts, as in the full build, and those that fit are spliced.
    @Test("near the size limits the template's recipients are truncated exactly where the full build truncates")
    func truncationAtTheLimit() throws {
        var truncated = 0, whole = 0
        for length in stride(from: 3700, through: 3900, by: 9) {
            let body = String(repeating: "é", count: length / 2) + String(repeating: "x", count: length % 2)
            let languages = #""en":{"title":"T","body":"\#(body)"}"#
            var recipients: [String] = []
            for size in [1, 8, 24, 60] {
                let id = String(repeating: "s", count: size)
                for platform in ["ios", "android"] { recipients.append(Self.device(id + platform, platform)) }
                recipients.append(Self.web(id + "w", browser: "chrome"))
            }
            let plans = try Self.expectSameAsFullBuild(CLITest.job(languages: languages, recipients: recipients))
            for plan in plans {
                guard case .ready(let request) = plan.state else { continue }
                if request.truncatedFields.isEmpty { whole += 1 } else { truncated += 1 }
            }
        }
        #expect(truncated > 0 && whole > 0, "the range crosses the limit: \(truncated) truncated, \(whole) whole")
    }

    @Test("a job whose data holds the template's marker is built in full, unchanged")
    func markerInData() throws {
        let extra = #","data":{"k":"\u007fm\u007f","t":"\u007ft\u007f"}"#
        let plans = try Self.expectSameAsFullBuild(CLITest.job(languages: Self.languages, extra: extra, recipients: Self.mixedRecipients()))
        guard case .ready(let request) = plans[1].state else { Issue.record("not ready"); return }
        #expect(String(decoding: request.body, as: UTF8.self).contains("\u{7F}m\u{7F}"))
    }
}

/// ``PayloadTemplate`` on its own: what it accepts, splices and refuses.
@Suite("PayloadTemplate")
struct PayloadTemplateTests {
    static let content = NotificationContent(jobID: "j", appID: "app", campaignID: "cmp", subscriptionID: "s1", msgID: "ignored",
                                             language: "en", title: "Hi", body: "Sale")
    static let web = WebPushSubscription(endpoint: "https://push.test/wp/abc", p256dh: Array(repeating: 4, count: 65),
                                         auth: Array(repeating: 7, count: 16), browser: .chrome)

    @Test("for each kind of target, the spliced request equals the full build for that msgId and token")
    func splices() throws {
        let targets: [DeliveryTarget] = [.apns(deviceToken: String(repeating: "ab", count: 32)), .fcm(registrationToken: CLITest.fcmToken),
                                         .huawei(token: "IQAAAACy0kYzAACcTw9fkQ3sXo3T_tok1"), .webPush(Self.web)]
        for target in targets {
            var shared = Self.content
            // The planner's Huawei contents carry the batch msgId (the shared body has no other).
            if case .huawei = target { shared.batchMsgID = "batch" }
            #expect(PayloadTemplate.make(Self.content, target: .huawei(token: "IQAAAACy0kYzAACcTw9fkQ3sXo3T_tok1"),
                                         profile: JobPlannerTemplateTests.profile, issuedAtUnix: 0) == nil,
                    "a Huawei body holding the recipient's msgId is not shared")
            let template = try #require(PayloadTemplate.make(shared, target: target, profile: JobPlannerTemplateTests.profile,
                                                             issuedAtUnix: 1_796_036_400))
            var content = Self.content
            content.msgID = "AQJrMQdhcHBfY2xp"
            if case .huawei = target { content.batchMsgID = "batch" }
            let built = try PayloadBuilder.build(content, target: target, profile: JobPlannerTemplateTests.profile,
                                                 issuedAtUnix: 1_796_036_400).get()
            #expect(template.request(msgID: content.msgID, target: target) == built, "\(target)")
            // Another kind of target is not spliced into this template.
            #expect(template.request(msgID: content.msgID, target: .fcmAudience(FCMAudience.topic("news"))) == nil)
        }
    }

    @Test("personalized texts are spliced where the build writes them, and refused when empty or needing escapes")
    func splicesTexts() throws {
        var content = Self.content
        content.subtitle = "placeholder"
        let profile = JobPlannerTemplateTests.profile
        for target in [DeliveryTarget.apns(deviceToken: String(repeating: "ab", count: 32)), .fcm(registrationToken: CLITest.fcmToken),
                       .webPush(Self.web)] {
            let template = try #require(PayloadTemplate.make(content, personalized: [.title, .body], target: target, profile: profile,
                                                             issuedAtUnix: 0))
            var recipient = content
            recipient.msgID = "AQJrMQdh"
            recipient.title = "Olá Ayşe"
            recipient.body = "20% ✓"
            let texts = NotificationText(title: recipient.title, subtitle: nil, body: recipient.body)
            let built = try PayloadBuilder.build(recipient, target: target, profile: profile, issuedAtUnix: 0).get()
            #expect(template.request(msgID: recipient.msgID, target: target, texts: texts) == built, "\(target)")
            #expect(template.request(msgID: "m", target: target, texts: NotificationText(title: "", subtitle: nil, body: "b")) == nil)
            #expect(template.request(msgID: "m", target: target, texts: NotificationText(title: "a\"b", subtitle: nil, body: "b")) == nil)
            #expect(template.request(msgID: "m", target: target, texts: NotificationText(title: nil, subtitle: nil, body: "b")) == nil)
        }
    }

    @Test("a msgId that pushes the body over the budget gets nil (the caller builds and truncates)")
    func overBudget() throws {
        var content = Self.content
        content.body = String(repeating: "b", count: 4000)
        let target = DeliveryTarget.apns(deviceToken: String(repeating: "ab", count: 32))
        let template = try #require(PayloadTemplate.make(content, target: target, profile: JobPlannerTemplateTests.profile,
                                                         issuedAtUnix: 0))
        #expect(template.request(msgID: "short", target: target) != nil)
        #expect(template.request(msgID: String(repeating: "m", count: 200), target: target) == nil)
    }

    @Test("no template for an audience, missing credentials or a content that needs truncation")
    func refuses() {
        let profile = JobPlannerTemplateTests.profile
        let apns = DeliveryTarget.apns(deviceToken: String(repeating: "ab", count: 32))
        #expect(PayloadTemplate.make(Self.content, target: .fcmAudience(FCMAudience.topic("news")), profile: profile,
                                     issuedAtUnix: 0) == nil)
        var noAPNS = profile
        noAPNS.apns = nil
        #expect(PayloadTemplate.make(Self.content, target: apns, profile: noAPNS, issuedAtUnix: 0) == nil)
        var long = Self.content
        long.body = String(repeating: "b", count: 5000)
        #expect(PayloadTemplate.make(long, target: apns, profile: profile, issuedAtUnix: 0) == nil)
    }
}
