import Foundation
import Testing
import PushCore
import PushEncoding

@Suite("Prepared jobs")
struct PreparedJobTests {
    static let createdAt = RFC3339Timestamp.parse("2026-11-30T10:00:00Z") ?? Date()
    static let policy = WebPushPolicy(extraAllowedHosts: ["127.0.0.1"])

    static func prepare(_ text: String, now: Date = createdAt) throws -> PreparedJob {
        PreparedJob(job: try JobFixtures.decode(text), context: RenderContext(now: now, keyring: JobFixtures.keyring, webPushPolicy: policy))
    }

    static func ready(_ resolution: RecipientResolution) -> (NotificationContent, DeliveryTarget)? {
        if case .ready(let content, let target) = resolution { return (content, target) }
        return nil
    }

    @Test("the docs/reference/job.md example resolves per recipient: language, templates, fallbacks, msgID, TTL")
    func designExample() throws {
        let prepared = try Self.prepare(SampleJobs.designExample)
        let job = prepared.job
        #expect(!prepared.isExpired)
        #expect(prepared.ttlSeconds == 14_400)

        let (turkish, iosTarget) = try #require(Self.ready(prepared.resolve(job.recipients[0])))
        #expect(iosTarget == .apns(deviceToken: "5f2b8c4e1a9d7e3f6b0c2a4d8e1f3b5c7a9e0d2f4b6c8a1e3d5f7b9c0a2e4d6f"))
        #expect(turkish.language == "tr")
        #expect(turkish.title == "Merhaba Ayşe")
        #expect(turkish.subtitle == "Today only")
        #expect(turkish.body == "Her şeyde %20 indirim")
        #expect(turkish.url == "https://shop.example/sale")
        #expect(turkish.imageURL == "https://cdn.example/sale.jpg")
        #expect(turkish.actions == [NotificationAction(id: "buy", title: "Buy", url: "https://shop.example/cart"),
                                    NotificationAction(id: "later", title: "Later")])
        #expect(turkish.jobID == "cmp_42:0007" && turkish.appID == "app_demo" && turkish.campaignID == "cmp_42")
        #expect(turkish.variant == "A" && turkish.userID == "u1" && turkish.subscriptionID == "s1")
        #expect(turkish.data == [KeyValue("screen", "sale"), KeyValue("promo", "SPRING20")])
        #expect(turkish.priority == .high && turkish.collapseID == "sale")
        #expect(turkish.ttlSeconds == 14_400)
        #expect(turkish.expiresAtUnix == 1_796_047_200)
        #expect(turkish.ios == job.ios && turkish.android == job.android && turkish.web == job.web)
        #expect(MsgID.verify(turkish.msgID, keyring: JobFixtures.keyring)
                == MsgIDFields(appID: "app_demo", campaignID: "cmp_42", userID: "u1", subscriptionID: "s1", platform: "ios", variant: "A"))

        let (portuguese, androidTarget) = try #require(Self.ready(prepared.resolve(job.recipients[1])))
        #expect(portuguese.language == "en")
        #expect(portuguese.title == "Hi there")
        #expect(portuguese.body == "20% off everything")
        guard case .fcm(let token) = androidTarget else { Issue.record("not FCM"); return }
        #expect(token.hasPrefix("fG7kQ2xRtY0:APA91b"))

        let (korean, webTarget) = try #require(Self.ready(prepared.resolve(job.recipients[2])))
        #expect(korean.language == "en")
        guard case .webPush(let subscription) = webTarget else { Issue.record("not Web Push"); return }
        #expect(subscription.browser == .chrome && subscription.p256dh.count == 65 && subscription.auth.count == 16)
        #expect(Set([turkish.msgID, portuguese.msgID, korean.msgID]).count == 3)
    }

    @Test("resolution is deterministic: the same recipient gets the same msgID")
    func deterministic() throws {
        let first = try Self.prepare(SampleJobs.designExample)
        let second = try Self.prepare(SampleJobs.designExample, now: Self.createdAt.addingTimeInterval(60))
        let recipient = first.job.recipients[0]
        #expect(first.resolve(recipient).msgID == second.resolve(recipient).msgID)
        #expect(first.msgID(for: recipient) == first.resolve(recipient).msgID)
    }

    @Test("after expiresAt every recipient is expired, with a msgID", arguments: [0.0, 1, 3600])
    func expired(secondsLate: Double) throws {
        let expiry = try #require(RFC3339Timestamp.parse("2026-11-30T14:00:00Z"))
        let prepared = try Self.prepare(SampleJobs.designExample, now: expiry.addingTimeInterval(secondsLate))
        #expect(prepared.isExpired)
        for recipient in prepared.job.recipients {
            guard case .expired(let msgID?) = prepared.resolve(recipient) else { Issue.record("not expired"); continue }
            #expect(MsgID.verify(msgID, keyring: JobFixtures.keyring)?.subscriptionID == recipient.subscriptionID)
        }
    }

    @Test("TTL is min(ttlSeconds, expiresAt − now)", arguments: [
        (nil, nil, nil),
        (60, nil, 60),
        (0, nil, 0),
        (nil, 3600.0, 3600),
        (86_400, 3600.0, 3600),
        (600, 3600.0, 600),
        (0, 3600.0, 0),
        (60, 0.5, 0),
        (nil, 90.9, 90),
    ] as [(Int?, Double?, Int?)])
    func ttl(ttlSeconds: Int?, expiresIn: Double?, expected: Int?) throws {
        var text = JobFixtures.minimal
        if let ttlSeconds { text = String(decoding: JobFixtures.edit(["ttlSeconds"], String(ttlSeconds), in: text), as: UTF8.self) }
        if let expiresIn {
            let expiresAt = RFC3339Timestamp.format(JobFixtures.now.addingTimeInterval(expiresIn), milliseconds: true)
            text = String(decoding: JobFixtures.edit(["expiresAt"], "\"\(expiresAt)\"", in: text), as: UTF8.self)
        }
        let prepared = try Self.prepare(text, now: JobFixtures.now)
        #expect(prepared.ttlSeconds == expected)
        let (content, _) = try #require(Self.ready(prepared.resolve(prepared.job.recipients[0])))
        #expect(content.ttlSeconds == expected)
        #expect((content.expiresAtUnix != nil) == (expiresIn != nil))
    }

    @Test("rejected recipients keep their language and a msgID", arguments: [
        (#"{"subscriptionId": "s9", "platform": "ios", "token": "nope", "language": "tr"}"#, "bad_token", "tr"),
        (#"{"subscriptionId": "s9", "platform": "android", "language": "pt-BR"}"#, "bad_token", "en"),
        (#"{"subscriptionId": "s9", "platform": "web", "subscription": {"endpoint": "https://evil.example/x"}}"#, "endpoint_not_allowed", "en"),
        (#"{"subscriptionId": "s9", "platform": "web"}"#, "bad_subscription", "en"),
        (#"{"subscriptionId": "s9", "platform": "pager", "language": "TR-tr"}"#, "unknown_platform", "tr"),
    ])
    func rejected(recipientJSON: String, reason: String, language: String) throws {
        let bytes = JobFixtures.edit(["recipients"], "[\(recipientJSON)]", in: SampleJobs.designExample)
        let prepared = PreparedJob(job: try JobDecoder.decode(bytes),
                                   context: RenderContext(now: Self.createdAt, keyring: JobFixtures.keyring))
        let recipient = prepared.job.recipients[0]
        guard case .rejected(let actualReason, let actualLanguage, let msgID?) = prepared.resolve(recipient) else {
            Issue.record("not rejected")
            return
        }
        #expect(actualReason == reason)
        #expect(actualLanguage == language)
        #expect(MsgID.verify(msgID, keyring: JobFixtures.keyring)?.platform == recipient.platformLabel)
    }

    static let multilingual = """
    {"schemaVersion": 1, "jobId": "j", "appId": "a", "campaignId": "c", "priority": "normal",
     "content": {"defaultLanguage": "en", "languages": {
       "en": {"title": "Hi {{ name | default: 'friend' }}", "body": "Hello {{ name }} from {{ city }}",
              "url": "https://x.example/{{ name }}",
              "actions": [{"id": "open", "title": "Open, {{ name }}"}]},
       "tr": {"title": "Merhaba {{ name | default: \\"dostum\\" }}", "body": "{{ city }}'dan selamlar",
              "actions": [{"id": "ac", "title": "Aç {{ name }}"}]},
       "ko": {"title": "{{ name }}님 안녕하세요"},
       "pt": {"subtitle": "Só hoje"}
     }},
     "recipients": []}
    """

    @Test("templates render per recipient in every script; urls are never templated", arguments: [
        ("tr", ["name": "İlkay", "city": "Iğdır"], "Merhaba İlkay", "Iğdır'dan selamlar", "Aç İlkay", "tr"),
        ("tr-TR", [:], "Merhaba dostum", "'dan selamlar", "Aç ", "tr"),
        ("ko", ["name": "민수"], "민수님 안녕하세요", "Hello 민수 from ", "Open, 민수", "ko"),
        ("pt-BR", ["name": "José"], "Hi José", "Hello José from ", "Open, José", "pt"),
        ("en", ["name": "👩‍💻 Zoë", "city": "e\u{301}"], "Hi 👩‍💻 Zoë", "Hello 👩‍💻 Zoë from e\u{301}", "Open, 👩‍💻 Zoë", "en"),
        (nil, ["name": ""], "Hi friend", "Hello  from ", "Open, ", "en"),
    ] as [(String?, [String: String], String, String, String, String)])
    func templates(language: String?, properties: [String: String], title: String, body: String, action: String, chosen: String) throws {
        let prepared = try Self.prepare(Self.multilingual)
        let recipient = Recipient(subscriptionID: "s", platformName: "ios", token: JobFixtures.apnsToken,
                                  language: language, properties: properties)
        let (content, _) = try #require(Self.ready(prepared.resolve(recipient)))
        #expect(content.title == title)
        #expect(content.body == body)
        #expect(content.actions.first?.title == action)
        #expect(content.language == chosen)
        #expect(content.url == "https://x.example/{{ name }}")
        #expect(content.priority == .normal)
        #expect(prepared.language(for: recipient) == chosen)
    }

    @Test("recipients' languages looked up once per job choose what the selector chooses for a recipient outside the job")
    func languagePerJob() throws {
        let tags: [String?] = ["tr", "TR", "tr-TR", "tr_TR", "pt-BR", "pt_br", "ko-Kore-KR", "zh-Hant-TW", "en-GB", "EN", "", nil, "x", "de"]
        let expected = ["tr", "tr", "tr", "tr", "pt", "pt", "ko", "en", "en", "en", "en", "en", "en", "en"]
        let recipients = tags.enumerated().map { index, tag in
            let language = tag.map { #", "language": "\#($0)""# } ?? ""
            return #"{"subscriptionId": "s\#(index)", "platform": "ios", "token": "\#(JobFixtures.apnsToken)"\#(language)}"#
        }
        let inJob = try Self.prepare(Self.multilingual.replacingOccurrences(
            of: #""recipients": []"#, with: #""recipients": ["# + recipients.joined(separator: ", ") + "]"))
        let outside = try Self.prepare(Self.multilingual)
        #expect(inJob.job.recipients.count == tags.count)
        for (position, recipient) in inJob.job.recipients.enumerated() {
            #expect(inJob.language(for: recipient) == expected[position], "\(String(describing: tags[position]))")
            #expect(outside.language(for: recipient) == expected[position])
            let (content, _) = try #require(Self.ready(inJob.resolve(recipient)))
            #expect(content.language == expected[position])
        }
    }

    @Test("a language's own actions replace the default's; subtitle falls back field by field")
    func fieldFallback() throws {
        let prepared = try Self.prepare(Self.multilingual)
        let portuguese = Recipient(subscriptionID: "s", platformName: "ios", token: JobFixtures.apnsToken, language: "pt")
        let (content, _) = try #require(Self.ready(prepared.resolve(portuguese)))
        #expect(content.subtitle == "Só hoje")
        #expect(content.title == "Hi friend")
        #expect(content.actions.map(\.id) == ["open"])
        let turkish = Recipient(subscriptionID: "s", platformName: "ios", token: JobFixtures.apnsToken, language: "tr")
        let (turkishContent, _) = try #require(Self.ready(prepared.resolve(turkish)))
        #expect(turkishContent.actions.map(\.id) == ["ac"])
        #expect(turkishContent.subtitle == nil)
    }

    @Test("a silent push without text resolves with no title or body")
    func silentPush() throws {
        var bytes = JobFixtures.edit(["content", "languages", "en"], "{}")
        bytes = JobFixtures.edit(["ios"], #"{"contentAvailable": true}"#, in: String(decoding: bytes, as: UTF8.self))
        let prepared = PreparedJob(job: try JobDecoder.decode(bytes), context: RenderContext(now: JobFixtures.now, keyring: JobFixtures.keyring))
        let (content, _) = try #require(Self.ready(prepared.resolve(prepared.job.recipients[0])))
        #expect(content.title == nil && content.body == nil && content.ios.contentAvailable)
    }

    @Test("resolving many recipients is fast enough for the hot path")
    func throughput() throws {
        let prepared = try Self.prepare(SampleJobs.designExample)
        let recipients = prepared.job.recipients
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            for index in 0..<3000 { _ = prepared.resolve(recipients[index % recipients.count]) }
        }
        #expect(elapsed < .seconds(5))
    }
}
