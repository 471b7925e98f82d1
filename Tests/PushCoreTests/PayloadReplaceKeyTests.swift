import Foundation
import Testing
@testable import PushCore
@testable import PushProviders
import PushEncoding

/// The replace key on the wire (docs/payloads.md "Replace key"): each provider's replace mechanism,
/// and the payload templates (``PayloadTemplate``) splicing the recipient's key exactly where the
/// full build writes it, headers included.
@Suite("Replace keys in payloads")
struct PayloadReplaceKeyTests {
    static let p256dh = Base64URL.encode([4] + Array(repeating: UInt8(9), count: 64))
    static let auth = Base64URL.encode(Array(repeating: UInt8(7), count: 16))
    static let profile: AppProfile = {
        var profile = payloadProfile
        profile.hms = AppProfile.HMS(pathID: "1")
        return profile
    }()
    static let now = Date(timeIntervalSince1970: TimeInterval(payloadIssuedAt))

    static func recipients(_ count: Int, personalized: Bool = true) -> String {
        var recipients: [String] = []
        for index in 0..<count {
            let properties = personalized && index % 2 == 0 ? #","properties":{"name":"Ana \#(index)"}"# : ""
            let language = [#","language":"en""#, #","language":"pt-BR""#, ""][index % 3]
            recipients.append(#"{"userId":"u\#(index)","subscriptionId":"i\#(index)","platform":"ios","token":"\#(JobFixtures.apnsToken)"\#(language)\#(properties)}"#)
            recipients.append(#"{"userId":"u\#(index)","subscriptionId":"a\#(index)","platform":"android","token":"\#(JobFixtures.fcmToken)\#(index)"\#(language)\#(properties)}"#)
            recipients.append(#"{"userId":"u\#(index)","subscriptionId":"h\#(index)","platform":"huawei","token":"IQAAAACy0kYzAACcTw9fkQ3sXo3T_tok\#(index)"\#(language)\#(properties)}"#)
            for browser in ["chrome", "firefox"] {
                recipients.append(#"{"userId":"u\#(index)","subscriptionId":"w\#(browser.prefix(1))\#(index)","platform":"web","browser":"\#(browser)"\#(language)\#(properties),"subscription":{"endpoint":"https://fcm.googleapis.com/fcm/send/ep-\#(index)","keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}}"#)
            }
        }
        return "[" + recipients.joined(separator: ",") + "]"
    }

    static func job(extra: String = "", languages: String? = nil, recipients: String = recipients(12)) -> String {
        let content = languages ?? #""en":{"title":"Hi {{ name | default: \"there\" }}","body":"Hello","url":"https://shop.example/x","actions":[{"id":"buy","title":"Buy","url":"https://shop.example/b"}]},"pt":{"title":"Olá","body":"Oi"}"#
        return #"{"schemaVersion":1,"jobId":"j1","appId":"app_demo","campaignId":"cmp_42","variant":"A","priority":"high","ttlSeconds":600\#(extra),"content":{"defaultLanguage":"en","languages":{\#(content)}},"recipients":\#(recipients)}"#
    }

    static func prepare(_ text: String) throws -> PreparedJob {
        PreparedJob(job: try JobDecoder.decode(Array(text.utf8)),
                    context: RenderContext(now: now, keyring: JobFixtures.keyring, webPushPolicy: WebPushPolicy(extraAllowedHosts: [])))
    }

    /// Each ready recipient's full build, and what its language's and target kind's template
    /// splices for it (as the planner does: the template built from the first such recipient).
    static func plans(_ prepared: PreparedJob) -> [(content: NotificationContent, target: DeliveryTarget, built: ProviderRequest?,
                                                  spliced: ProviderRequest?)] {
        var templates: [String: PayloadTemplate?] = [:]
        var plans: [(NotificationContent, DeliveryTarget, ProviderRequest?, ProviderRequest?)] = []
        for recipient in prepared.job.recipients {
            guard case .ready(let content, let target) = prepared.resolve(recipient) else { continue }
            let built = try? PayloadBuilder.build(content, target: target, profile: profile, issuedAtUnix: payloadIssuedAt).get()
            let languageIndex = prepared.languageIndex(for: recipient)
            guard let fields = prepared.personalizedTexts(languageIndex: languageIndex),
                  let kind = PayloadTemplate.kind(of: target) else {
                plans.append((content, target, built, nil))
                continue
            }
            var personalized: PayloadTemplate.Texts = []
            if fields.title { personalized.insert(.title) }
            if fields.subtitle { personalized.insert(.subtitle) }
            if fields.body { personalized.insert(.body) }
            let slot = "\(languageIndex) \(kind)"
            if templates[slot] == nil {
                templates[slot] = .some(PayloadTemplate.make(prepared.content(for: recipient, msgID: content.msgID, languageIndex: languageIndex,
                                                                              target: target),
                                                             personalized: personalized, target: target, profile: profile,
                                                             issuedAtUnix: payloadIssuedAt))
            }
            let rendered = prepared.render(fields, for: recipient, languageIndex: languageIndex)
            let texts = NotificationText(title: rendered.title, subtitle: rendered.subtitle, body: rendered.body)
            let spliced = templates[slot]??.request(msgID: content.msgID, target: target, texts: texts,
                                                   replaceKey: prepared.replaceKey(msgID: content.msgID, target: target))
            plans.append((content, target, built, spliced))
        }
        return plans
    }

    /// Every spliced request equals the full build, byte for byte, headers included; returns how
    /// many were spliced.
    @discardableResult
    static func expectSplicesAsBuilt(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        var spliced = 0
        for plan in plans(try prepare(text)) {
            guard let request = plan.spliced else { continue }
            spliced += 1
            #expect(request == plan.built, "\(plan.content.subscriptionID)", sourceLocation: sourceLocation)
            #expect(request.body == plan.built?.body && request.allHeaders == plan.built?.allHeaders, sourceLocation: sourceLocation)
        }
        return spliced
    }

    static func json(_ request: ProviderRequest) throws -> PayloadJSON { try parsePayloadJSON(request.body) }

    // MARK: - The wire format, provider by provider

    @Test("without a collapseId every request carries the recipient's derived key")
    func derivedKeys() throws {
        let prepared = try Self.prepare(Self.job())
        var huaweiTags: Set<String> = []
        var keys: Set<String> = []
        for plan in Self.plans(prepared) {
            let request = try #require(plan.built)
            let key = ReplaceKey.derive(msgID: plan.content.msgID)
            switch plan.target {
            case .apns:
                #expect(request.recipientHeaders == [KeyValue("apns-collapse-id", key)])
                #expect(!request.headers.contains { $0.key == "apns-collapse-id" })
                keys.insert(key)
            case .fcm:
                let message = try #require(Self.json(request)["message"])
                #expect(message["android"]?["collapse_key"]?.stringValue == key)
                #expect(message["data"]?["on.tag"]?.stringValue == key)
                #expect(message["data"]?["on.collapseId"] == nil)
                #expect(request.recipientHeaders.isEmpty)
            case .webPush:
                #expect(request.recipientHeaders == [KeyValue("topic", key)])
                #expect(!request.headers.contains { $0.key == "topic" })
                #expect(try Self.json(request)["tag"]?.stringValue == key)
            case .huawei:
                let batchKey = ReplaceKey.derive(msgID: try #require(plan.content.batchMsgID))
                let message = try #require(Self.json(request)["message"])
                #expect(message["android"]?["notification"]?["tag"]?.stringValue == batchKey)
                let data = try parsePayloadJSON(Array(try #require(message["data"]?.stringValue).utf8))
                #expect(data["on.tag"]?.stringValue == batchKey)
                #expect(request.recipientHeaders.isEmpty)
                huaweiTags.insert(batchKey)
            case .fcmAudience:
                Issue.record("no audience here")
            }
        }
        #expect(huaweiTags.count == 1, "every member of a Huawei batch shares the batch's key")
        #expect(keys.count == 12)
        // Huawei's bodies stay byte-identical, so they still form one batch.
        let huaweiBodies = Self.plans(prepared).filter { if case .huawei = $0.target { true } else { false } }.compactMap { $0.built?.body }
        #expect(HMSBatching.group(huaweiBodies).count == Set(huaweiBodies).count)
    }

    @Test("with a collapseId it is the key everywhere, and APNs and Web Push carry it among the shared headers as before")
    func collapseID() throws {
        let prepared = try Self.prepare(Self.job(extra: #","collapseId":"sale""#))
        for plan in Self.plans(prepared) {
            let request = try #require(plan.built)
            #expect(request.recipientHeaders.isEmpty, "\(plan.content.subscriptionID)")
            switch plan.target {
            case .apns:
                #expect(request.headers.last == KeyValue("apns-collapse-id", "sale"))
                #expect(request.headers.filter { $0.key == "apns-collapse-id" }.count == 1)
            case .fcm:
                let message = try #require(Self.json(request)["message"])
                #expect(message["android"]?["collapse_key"]?.stringValue == "sale")
                #expect(message["data"]?["on.collapseId"]?.stringValue == "sale")
                #expect(message["data"]?["on.tag"]?.stringValue == "sale")
            case .webPush:
                #expect(request.headers == [KeyValue("ttl", "600"), KeyValue("urgency", "high"), KeyValue("topic", "sale"),
                                            KeyValue("content-type", "application/octet-stream")])
                #expect(try Self.json(request)["tag"]?.stringValue == "sale")
            case .huawei:
                #expect(try Self.json(request)["message"]?["android"]?["notification"]?["tag"]?.stringValue == "sale")
            case .fcmAudience:
                Issue.record("no audience here")
            }
        }
    }

    @Test("the APNs request of a job with a collapseId is exactly what it was: the same headers, nothing of the recipient's")
    func apnsCollapseUnchanged() throws {
        var content = payloadSimpleContent()
        content.collapseID = "sale-2026"
        content.ttlSeconds = 3600
        let request = try requirePayload(buildPayload(content, .apns(deviceToken: payloadAPNSToken)))
        #expect(request.headers == [
            KeyValue("apns-topic", "com.example.shop"), KeyValue("apns-push-type", "alert"), KeyValue("apns-priority", "10"),
            KeyValue("apns-expiration", String(payloadIssuedAt + 3600)), KeyValue("apns-collapse-id", "sale-2026"),
        ])
        #expect(request.recipientHeaders.isEmpty)
        #expect(try parsePayloadJSON(request.body) == PayloadJSON([
            "aps": ["alert": ["title": "Hi", "body": "Sale"]], "custom": ["i": "m.sig", "c": "cmp_42", "l": "en"],
        ]))
    }

    @Test("Web Push: web.topic is the Topic; a collapseId that is no valid Topic is replaced by its derived key")
    func webPushTopic() throws {
        let subscription = payloadWebSubscription(.chrome)
        var content = payloadSimpleContent()
        content.web.topic = "tp"
        var request = try requirePayload(buildPayload(content, .webPush(subscription)))
        #expect(request.header("topic") == "tp" && request.recipientHeaders.isEmpty)
        #expect(try parsePayloadJSON(request.body)["tag"]?.stringValue == "7mVmqR5oD4HbReCtXytlvw")

        content.web.topic = nil
        content.collapseID = "sale!"
        request = try requirePayload(buildPayload(content, .webPush(subscription)))
        #expect(request.headers.contains(KeyValue("topic", "CHCeYstAumWEItUjozwb1A")) && request.recipientHeaders.isEmpty)
        #expect(try parsePayloadJSON(request.body)["tag"]?.stringValue == "sale!")

        content.collapseID = String(repeating: "c", count: 40)
        request = try requirePayload(buildPayload(content, .webPush(subscription)))
        #expect(request.header("topic") == ReplaceKey.derive(msgID: String(repeating: "c", count: 40)))
    }

    @Test("an FCM topic send carries the audience msgId's derived key")
    func fcmAudience() throws {
        let text = #"{"schemaVersion":1,"jobId":"j1","appId":"app_demo","campaignId":"news","content":{"defaultLanguage":"en","languages":{"en":{"title":"Storm","body":"Gusts"}}},"audience":{"topic":"news"}}"#
        let prepared = try Self.prepare(text)
        guard case .ready(let content, let target) = prepared.resolve(try #require(prepared.job.audience)) else {
            Issue.record("not ready")
            return
        }
        let request = try requirePayload(PayloadBuilder.build(content, target: target, profile: Self.profile, issuedAtUnix: payloadIssuedAt))
        let message = try #require(try parsePayloadJSON(request.body)["message"])
        let key = ReplaceKey.derive(msgID: content.msgID)
        #expect(message["topic"]?.stringValue == "news")
        #expect(message["android"]?["collapse_key"]?.stringValue == key)
        #expect(message["data"]?["on.tag"]?.stringValue == key)
    }

    @Test("a Live Activity carries no apns-collapse-id (ActivityKit keeps the newest timestamp)")
    func liveActivity() throws {
        let text = Self.job(extra: #","createdAt":"2026-11-30T10:00:00Z","ios":{"liveActivity":{"event":"update","contentState":{"eta":5}}}"#,
                            recipients: #"[{"userId":"u1","subscriptionId":"s1","platform":"ios","token":"\#(JobFixtures.apnsToken)"}]"#)
        let plans = Self.plans(try Self.prepare(text))
        let request = try #require(plans.first?.built)
        #expect(request.header("apns-push-type") == "liveactivity")
        #expect(request.header("apns-collapse-id") == nil && request.recipientHeaders.isEmpty)
        #expect(plans.first?.spliced == nil, "no template for Live Activities")
    }

    // MARK: - Templates

    @Test("templates splice each recipient's key exactly as the full build writes it, on every platform", arguments: [
        "", #","collapseId":"sale""#, #","collapseId":"sale!""#, #","web":{"topic":"tp"}"#,
        #","collapseId":"c-1","data":{"k":"v","n":"1"},"android":{"channelId":"sales"},"ios":{"sound":"ping.caf"}"#,
    ])
    func templatesSplice(extra: String) throws {
        let text = Self.job(extra: extra, recipients: Self.recipients(40))
        let spliced = try Self.expectSplicesAsBuilt(text)
        // Every recipient takes the template path, except Huawei's with personalized texts (a
        // Huawei body is shared by a batch: it has no template when its texts differ).
        let plans = Self.plans(try Self.prepare(text))
        let unspliced = plans.filter { $0.spliced == nil }
        #expect(spliced > 0 && spliced + unspliced.count == plans.count)
        #expect(unspliced.allSatisfy { if case .huawei = $0.target { $0.content.language == "en" } else { false } },
                "\(unspliced.map { "\($0.content.subscriptionID) \($0.content.language)" })")
    }

    @Test("a per-recipient key is spliced, not built: the template holds it as a part, and no shared header varies")
    func templateParts() throws {
        let prepared = try Self.prepare(Self.job(languages: #""en":{"title":"T","body":"B"}"#, recipients: Self.recipients(2, personalized: false)))
        let recipient = prepared.job.recipients[0]
        guard case .ready(let content, let target) = prepared.resolve(recipient) else { Issue.record("not ready"); return }
        let template = try #require(PayloadTemplate.make(content, target: target, profile: Self.profile, issuedAtUnix: payloadIssuedAt))
        #expect(template.hasReplaceKey)
        #expect(template.recipientHeaders == [PayloadTemplate.HeaderTemplate(name: "apns-collapse-id", value: [.replaceKey])])
        #expect(!template.base.headers.contains { $0.key == "apns-collapse-id" })
        // Without the caller's key the template derives it from the msgId, as the builder does.
        let derived = try #require(template.request(msgID: content.msgID, target: target))
        #expect(derived.recipientHeaders == [KeyValue("apns-collapse-id", ReplaceKey.derive(msgID: content.msgID))])
    }

    /// Bodies around each budget: the derived key (22 bytes in the body for Web Push, twice in
    /// FCM's of which once in `message.data`) counts, so a recipient is spliced only where the
    /// full build would not truncate.
    @Test("near the budgets the template truncates nowhere the full build does not, with the key counted")
    func budgets() throws {
        var truncated = 0, whole = 0, spliced = 0
        for length in stride(from: 3780, through: 3990, by: 7) {
            let body = String(repeating: "é", count: length / 2) + String(repeating: "x", count: length % 2)
            let text = Self.job(languages: #""en":{"title":"T","body":"\#(body)"}"#, recipients: Self.recipients(3, personalized: false))
            spliced += try Self.expectSplicesAsBuilt(text)
            for plan in Self.plans(try Self.prepare(text)) {
                guard let request = plan.built else { continue }
                if request.truncatedFields.isEmpty { whole += 1 } else { truncated += 1 }
            }
        }
        #expect(truncated > 0 && whole > 0 && spliced > 0, "\(truncated) truncated, \(whole) whole, \(spliced) spliced")
    }

    @Test("FCM's data arithmetic counts a spliced key once (on.tag), a collapseId among the fixed bytes")
    func fcmDataBudget() throws {
        let target = DeliveryTarget.fcm(registrationToken: payloadFCMToken)
        for collapseID in [nil, "sale"] {
            var content = payloadSimpleContent()
            content.collapseID = collapseID
            let template = try #require(PayloadTemplate.make(content, target: target, profile: Self.profile, issuedAtUnix: payloadIssuedAt))
            guard case .fcm(let dataFixed, let dataLimit, let keys) = template.budget else {
                Issue.record("not an FCM budget")
                return
            }
            #expect(dataLimit == FCMPayloadBuilder.maxPayloadBytes)
            #expect(keys == (collapseID == nil ? 1 : 0))
            for msgID in ["m", "m.sig", String(repeating: "q", count: 140)] {
                var recipient = content
                recipient.msgID = msgID
                let data = FCMPayloadBuilder.payload(recipient, target: .token(payloadFCMToken), text: NotificationText(recipient),
                                                     actionsJSON: nil).dataBytes
                #expect(dataFixed + msgID.utf8.count + keys * ReplaceKey.derivedLength == data)
            }
        }
    }
}
