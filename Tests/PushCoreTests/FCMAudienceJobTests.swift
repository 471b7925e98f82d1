import Foundation
import Testing
@testable import PushCore
import PushEncoding
@testable import PushProviders

/// Jobs with an `audience` (docs/reference/job.md): decoding and its refusals, the one rendering, the FCM
/// HTTP v1 request with `topic`/`condition` and its 2048-byte data budget, retry jobs, lint.
@Suite("FCM audience jobs")
struct FCMAudienceJobTests {
    /// The minimal job with `recipients` replaced by `audience`.
    static func audienceJob(_ audience: String, in base: String = JobFixtures.minimal) -> String {
        let withoutRecipients = String(decoding: JobFixtures.edit(["recipients"], nil, in: base), as: UTF8.self)
        return String(decoding: JobFixtures.edit(["audience"], audience, in: withoutRecipients), as: UTF8.self)
    }

    static let context = RenderContext(now: JobFixtures.now, keyring: JobFixtures.keyring,
                                       webPushPolicy: WebPushPolicy(extraAllowedHosts: []))

    // MARK: - Decoding

    @Test("a topic or a condition replaces recipients", arguments: [
        (#"{"topic": "news"}"#, FCMAudience.topic("news")),
        (#"{"topic": "/topics/news"}"#, .topic("news")),
        (#"{"topic": "Breaking-News_2026.v1~%41"}"#, .topic("Breaking-News_2026.v1~%41")),
        (#"{"condition": "'a' in topics && 'b' in topics"}"#, .condition("'a' in topics && 'b' in topics")),
        (#"{"topic": "news", "condition": null}"#, .topic("news")),
    ])
    func decodes(audience: String, expected: FCMAudience) throws {
        let job = try JobFixtures.decode(Self.audienceJob(audience))
        #expect(job.audience == expected)
        #expect(job.recipients.isEmpty)
    }

    @Test("an invalid audience is a whole-job problem with its reason", arguments: [
        (#"{}"#, "$.audience", "needs a topic or a condition"),
        (#"{"topic": "a", "condition": "'a' in topics"}"#, "$.audience", "has both topic and condition: give one"),
        (#"{"topic": ""}"#, "$.audience.topic", "empty topic name"),
        (#"{"topic": "/topics/"}"#, "$.audience.topic", "empty topic name"),
        (#"{"topic": "news sport"}"#, "$.audience.topic", #"character " " not allowed in a topic name"#),
        (#"{"topic": "/topics//topics/x"}"#, "$.audience.topic", #"character "/" not allowed"#),
        (#"{"topic": 5}"#, "$.audience.topic", "expected a string, got number"),
        (#"{"condition": ""}"#, "$.audience.condition", "empty condition"),
        (#"{"condition": "'a' in topics & 'b' in topics"}"#, "$.audience.condition", "a single & is not an operator"),
        (#"{"condition": "'a' in topics || 'b' in topics || 'c' in topics || 'd' in topics || 'e' in topics || 'f' in topics"}"#,
         "$.audience.condition", "names 6 topics; FCM allows at most 5"),
        (#"{"condition": "'bad name' in topics"}"#, "$.audience.condition", "not allowed in a topic name"),
        (#""news""#, "$.audience", "expected an object"),
        (#"[]"#, "$.audience", "expected an object"),
    ])
    func refuses(audience: String, path: String, reason: String) {
        do throws(JobValidationError) {
            let job = try JobDecoder.decode(Array(Self.audienceJob(audience).utf8))
            Issue.record("decoded although invalid: \(String(describing: job.audience))")
        } catch {
            #expect(error.path == path, "\(error.description)")
            #expect(error.reason.contains(reason), "reason was: \(error.reason)")
        }
    }

    @Test("recipients and an audience together are refused; neither is refused as before")
    func exactlyOne() {
        let both = String(decoding: JobFixtures.edit(["audience"], #"{"topic": "news"}"#), as: UTF8.self)
        #expect(throws: JobValidationError(path: "$.recipients", reason: "a job has recipients or an audience, not both")) {
            try JobFixtures.decode(both)
        }
        do throws(JobValidationError) {
            _ = try JobDecoder.decode(JobFixtures.edit(["recipients"], nil))
            Issue.record("a job without recipients and audience decoded")
        } catch {
            #expect(error.path == "$.recipients")
        }
        // `audience: null` is no audience: recipients are required again.
        do throws(JobValidationError) {
            _ = try JobDecoder.decode(Array(Self.audienceJob("null").utf8))
            Issue.record("audience null without recipients decoded")
        } catch {
            #expect(error.path == "$.recipients")
        }
    }

    // MARK: - Rendering and the request

    @Test("the audience is rendered once in defaultLanguage with template defaults, msgId over the audience")
    func preparedOnce() throws {
        let base = """
        {"schemaVersion": 1, "jobId": "j1", "appId": "app_demo", "campaignId": "c1",
         "content": {"defaultLanguage": "tr", "languages": {
            "en": {"title": "Hello {{ name | default: \\"you\\" }}", "body": "World"},
            "tr": {"title": "Merhaba {{ name | default: \\"sen\\" }}", "body": "{{ city }} dünya"}}},
         "recipients": []}
        """
        let job = try JobFixtures.decode(Self.audienceJob(#"{"condition": "'a' in topics || 'b' in topics"}"#, in: base))
        let audience = try #require(job.audience)
        let prepared = PreparedJob(job: job, context: Self.context)
        guard case .ready(let content, let target) = prepared.resolve(audience) else {
            Issue.record("not ready")
            return
        }
        #expect(target == .fcmAudience(.condition("'a' in topics || 'b' in topics")))
        #expect(content.language == "tr")
        #expect(content.title == "Merhaba sen" && content.body == " dünya")
        #expect(content.subscriptionID == "'a' in topics || 'b' in topics" && content.userID == nil)
        let fields = try #require(MsgID.verify(content.msgID, keyring: JobFixtures.keyring))
        #expect(fields.subscriptionID == "'a' in topics || 'b' in topics" && fields.platform == "android" && fields.userID == nil)
        // The same job always signs the same msgId: a redelivered copy claims the same key.
        #expect(PreparedJob(job: job, context: Self.context).msgID(for: audience.recipient) == content.msgID)
    }

    @Test("an expired audience job is expired, not sent")
    func expired() throws {
        let text = Self.audienceJob(#"{"topic": "news"}"#,
                                    in: String(decoding: JobFixtures.edit(["expiresAt"], "\"2026-01-01T00:00:00Z\""), as: UTF8.self))
        let job = try JobFixtures.decode(text)
        let prepared = PreparedJob(job: job, context: Self.context)
        guard case .expired = prepared.resolve(try #require(job.audience)) else {
            Issue.record("an expired audience job resolved as not expired")
            return
        }
    }

    @Test("the FCM request names the topic or the condition, never a token", arguments: [
        (FCMAudience.topic("news"), "topic"),
        (.condition("'a' in topics && !('b' in topics)"), "condition"),
    ])
    func request(audience: FCMAudience, member: String) throws {
        let request = try requirePayload(buildPayload(payloadSimpleContent(), .fcmAudience(audience)))
        #expect(request.platform == .android)
        #expect(request.url == "https://fcm.test/v1/projects/shop-prod/messages:send")
        let json = try parsePayloadJSON(request.body)
        #expect(json == PayloadJSON(["message": [
            member: audience.identity,
            // The replace key derived from msgId "m.sig" (docs/payloads.md "Replace key"): FCM fans the message out with it.
            "data": ["on.msgId": "m.sig", "on.campaignId": "cmp_42", "on.language": "en", "on.title": "Hi", "on.body": "Sale",
                     "on.tag": "7mVmqR5oD4HbReCtXytlvw"],
            "android": ["priority": "HIGH", "collapse_key": "7mVmqR5oD4HbReCtXytlvw"],
        ] as [String: Any]]))
    }

    @Test("an audience without FCM credentials is no_credentials")
    func noCredentials() {
        let profile = AppProfile(apns: payloadProfile.apns, fcm: nil, hasWebPush: true)
        #expect(buildPayload(payloadSimpleContent(), .fcmAudience(.topic("news")), profile: profile) == .failure(.noCredentials))
    }

    /// message.data's keys + values, FCM's measure.
    static func dataBytes(_ request: ProviderRequest) throws -> Int {
        guard case .object(let data)? = try parsePayloadJSON(request.body)["message"]?["data"] else { return -1 }
        return data.reduce(0) { $0 + $1.key.utf8.count + ($1.value.stringValue?.utf8.count ?? 0) }
    }

    @Test("topic data is cut to 2048 bytes where a token's fits in 4096")
    func topicBudget() throws {
        var content = payloadSimpleContent()
        content.body = String(repeating: "long body ", count: 300)   // 3000 bytes
        let token = try requirePayload(buildPayload(content, .fcm(registrationToken: payloadFCMToken)))
        #expect(try Self.dataBytes(token) > 3000)
        #expect(token.truncatedFields.isEmpty)
        let topic = try requirePayload(buildPayload(content, .fcmAudience(.topic("news"))))
        let bytes = try Self.dataBytes(topic)
        #expect(bytes <= FCMPayloadBuilder.maxTopicDataBytes && bytes > FCMPayloadBuilder.maxTopicDataBytes - 64)
        #expect(topic.truncatedFields == ["body"])
    }

    @Test("data that alone exceeds 2048 bytes is payload_too_large for an audience, fine for a token")
    func topicTooLarge() throws {
        var content = payloadSimpleContent()
        content.data = [KeyValue("big", String(repeating: "x", count: 2100))]
        #expect(throws: Never.self) { try requirePayload(buildPayload(content, .fcm(registrationToken: payloadFCMToken))) }
        #expect(buildPayload(content, .fcmAudience(.topic("news"))) == .failure(.payloadTooLarge))
        #expect(PayloadError.payloadTooLarge.reason == "payload_too_large")
    }

    // MARK: - Retry jobs, lint

    @Test("a retry job of an audience job keeps the audience and gets no recipients")
    func retryEncoding() throws {
        let job = try JobFixtures.decode(Self.audienceJob(#"{"topic": "/topics/news"}"#))
        let audience = try #require(job.audience)
        let notBefore = try #require(RFC3339Timestamp.parse("2026-11-30T10:05:30Z"))
        let bytes = job.encoded(recipients: [audience.recipient], attempt: 1, notBefore: notBefore)
        let retry = try JobDecoder.decode(bytes)
        #expect(retry.audience == .topic("news"))
        #expect(retry.recipients.isEmpty && retry.document["recipients"] == nil)
        #expect(retry.attempt == 1 && retry.notBefore == notBefore)
    }

    @Test("lint: other languages are unused, variables without a default render empty, unknown audience fields")
    func lint() throws {
        let base = """
        {"schemaVersion": 1, "jobId": "j1", "appId": "app_demo", "campaignId": "c1",
         "content": {"defaultLanguage": "en", "languages": {
            "en": {"title": "Hi {{ name }}", "body": "B {{ name }} {{ city | default: \\"x\\" }}"},
            "de": {"title": "Hallo", "body": "B"}, "fr": {"title": "Salut", "body": "B"}}},
         "recipients": []}
        """
        let text = Self.audienceJob(#"{"topic": "news", "topc": 1}"#, in: base)
        let document = try JSONParser.parse(text)
        let warnings = JobLint.warnings(document: document, job: try JobFixtures.decode(text))
        let kinds = warnings.map(\.kind)
        #expect(kinds.contains(.unknownField))
        #expect(warnings.contains { $0.kind == .unknownField && $0.path == "$.audience.topc" })
        let unused = try #require(warnings.first { $0.kind == .unusedByAudience })
        #expect(unused.moreCount == 1 && unused.message.contains("defaultLanguage en"))
        let variables = warnings.filter { $0.kind == .templateVariable && $0.message.contains("audience") }
        #expect(variables.count == 1 && variables[0].message.contains("name"))
        // A job with recipients gets none of these.
        #expect(JobLint.audienceWarnings(in: try JobFixtures.decode(JobFixtures.minimal)).isEmpty)
    }
}
