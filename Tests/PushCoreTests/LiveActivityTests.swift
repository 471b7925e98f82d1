import Foundation
import Testing
@testable import PushCore
import PushEncoding
@testable import PushProviders

/// `ios.liveActivity` (docs/reference/job.md): decoding, validation and the ActivityKit request.
@Suite("Live Activities")
struct LiveActivityTests {
    static let start = #"""
    {"event": "start", "contentState": {"status": "preparing", "etaMin": 25},
     "attributesType": "DeliveryAttributes", "attributes": {"orderId": "A-1001"},
     "staleDate": "2026-11-30T11:00:00Z", "inputPushToken": true, "relevanceScore": 100}
    """#

    static func job(_ liveActivity: String, priority: String? = nil, language: String = #"{"title": "Order A-1001", "body": "Being prepared"}"#,
                    ios extra: [String: String] = [:]) -> [UInt8] {
        var text = String(decoding: JobFixtures.edit(["ios", "liveActivity"], liveActivity), as: UTF8.self)
        text = String(decoding: JobFixtures.edit(["content", "languages", "en"], language, in: text), as: UTF8.self)
        if let priority { text = String(decoding: JobFixtures.edit(["priority"], "\"\(priority)\"", in: text), as: UTF8.self) }
        for (key, value) in extra { text = String(decoding: JobFixtures.edit(["ios", key], value, in: text), as: UTF8.self) }
        return Array(text.utf8)
    }

    static func request(_ bytes: [UInt8], profile: AppProfile = payloadProfile) throws -> Result<ProviderRequest, PayloadError> {
        let job = try JobDecoder.decode(bytes)
        let prepared = PreparedJob(job: job, context: RenderContext(now: Date(timeIntervalSince1970: Double(payloadIssuedAt)),
                                                                    keyring: JobFixtures.keyring))
        guard case .ready(let content, let target) = prepared.resolve(job.recipients[0]) else {
            Issue.record("recipient not ready")
            return .failure(.noCredentials)
        }
        return PayloadBuilder.build(content, target: target, profile: profile, issuedAtUnix: payloadIssuedAt)
    }

    @Test("a start decodes every field; dates as RFC 3339 or Unix seconds")
    func decodesStart() throws {
        let job = try JobDecoder.decode(Self.job(Self.start))
        let activity = try #require(job.ios.liveActivity)
        #expect(activity.event == .start)
        #expect(activity.contentState == JSONFixture.object(#"{"status": "preparing", "etaMin": 25}"#))
        #expect(activity.attributesType == "DeliveryAttributes")
        #expect(activity.attributes == JSONFixture.object(#"{"orderId": "A-1001"}"#))
        #expect(activity.staleDate == 1_796_036_400)
        #expect(activity.inputPushToken && activity.relevanceScore == 100)
        #expect(activity.dismissalDate == nil && activity.timestamp == nil)
        let end = try JobDecoder.decode(Self.job(#"{"event": "end", "contentState": {}, "dismissalDate": 1796040000, "timestamp": 1796036000.9}"#))
        #expect(end.ios.liveActivity?.dismissalDate == 1_796_040_000)
        #expect(end.ios.liveActivity?.timestamp == 1_796_036_000)
    }

    @Test("a bad Live Activity section fails the whole job", arguments: [
        (#"{"contentState": {}}"#, "$.ios.liveActivity.event", "required"),
        (#"{"event": "pause", "contentState": {}}"#, "$.ios.liveActivity.event", "start, update or end"),
        (#"{"event": "update"}"#, "$.ios.liveActivity.contentState", "required"),
        (#"{"event": "update", "contentState": "on_the_way"}"#, "$.ios.liveActivity.contentState", "expected an object"),
        (#"{"event": "start", "contentState": {}, "attributes": {}}"#, "$.ios.liveActivity.attributesType", "required for start"),
        (#"{"event": "start", "contentState": {}, "attributesType": "A"}"#, "$.ios.liveActivity.attributes", "required for start"),
        (#"{"event": "update", "contentState": {}, "dismissalDate": 1796040000}"#, "$.ios.liveActivity.dismissalDate", "only for end"),
        (#"{"event": "update", "contentState": {}, "inputPushToken": true}"#, "$.ios.liveActivity.inputPushToken", "only for start"),
        (#"{"event": "update", "contentState": {}, "staleDate": "tomorrow"}"#, "$.ios.liveActivity.staleDate", "RFC 3339"),
        (#"{"event": "update", "contentState": {}, "staleDate": -5}"#, "$.ios.liveActivity.staleDate", "between 1970 and 9999"),
        (#"{"event": "update", "contentState": {}, "staleDate": 1e300}"#, "$.ios.liveActivity.staleDate", "between 1970 and 9999"),
        (#"{"event": "update", "contentState": {}, "timestamp": true}"#, "$.ios.liveActivity.timestamp", "got boolean"),
        (#"{"event": "update", "contentState": {}, "relevanceScore": -1}"#, "$.ios.liveActivity.relevanceScore", "≥ 0"),
        (#""start""#, "$.ios.liveActivity", "expected an object"),
    ])
    func invalidSections(section: String, path: String, reason: String) {
        do throws(JobValidationError) {
            _ = try JobDecoder.decode(Self.job(section))
            Issue.record("decoded although invalid")
        } catch {
            #expect(error.path == path)
            #expect(error.reason.contains(reason), "reason was: \(error.reason)")
        }
    }

    @Test("a start without alert text fails the job; an update without text is valid")
    func alertRules() throws {
        let silentLanguage = #"{"url": "https://shop.example/orders"}"#
        #expect(throws: JobValidationError(path: "$.ios.liveActivity.event",
                                           reason: "start needs alert text: a title or body in the default language, or ios.locKey/titleLocKey")) {
            try JobDecoder.decode(Self.job(Self.start, language: silentLanguage))
        }
        #expect(throws: Never.self) { try JobDecoder.decode(Self.job(Self.start, language: silentLanguage, ios: ["locKey": #""ORDER_PREPARING""#])) }
        let update = try JobDecoder.decode(Self.job(#"{"event": "update", "contentState": {"etaMin": 10}}"#, language: silentLanguage))
        #expect(update.ios.liveActivity?.event == .update)
    }

    @Test("a start is sent to the push-to-start token with the ActivityKit headers and aps keys")
    func startRequest() throws {
        let request = try requirePayload(Self.request(Self.job(Self.start, ios: ["sound": #""default""#])))
        #expect(request.url == "https://apns.test/3/device/\(JobFixtures.apnsToken)")
        #expect(request.header("apns-push-type") == "liveactivity")
        #expect(request.header("apns-topic") == "com.example.shop.push-type.liveactivity")
        #expect(request.header("apns-priority") == "10")
        #expect(request.header("apns-collapse-id") == nil)
        let body = try parsePayloadJSON(request.body)
        let aps = try #require(body["aps"])
        #expect(aps["timestamp"] == .number(Double(payloadIssuedAt)))
        #expect(aps["event"] == .string("start"))
        #expect(aps["content-state"] == .object(["status": .string("preparing"), "etaMin": .number(25)]))
        #expect(aps["attributes-type"] == .string("DeliveryAttributes"))
        #expect(aps["attributes"] == .object(["orderId": .string("A-1001")]))
        #expect(aps["stale-date"] == .number(1_796_036_400))
        #expect(aps["input-push-token"] == .number(1))
        #expect(aps["relevance-score"] == .number(100))
        #expect(aps["alert"] == .object(["title": .string("Order A-1001"), "body": .string("Being prepared"), "sound": .string("default")]))
        #expect(aps["dismissal-date"] == nil && aps["sound"] == nil && aps["mutable-content"] == nil)
        #expect(body["custom"]?["i"]?.stringValue?.isEmpty == false)
        #expect(body["custom"]?["c"] == .string("c1"))
        #expect(String(decoding: request.body, as: UTF8.self).contains(#""relevance-score":100,"#))
    }

    @Test("update and end: priority from the job, the given timestamp, dismissal-date only on end, no alert without text")
    func updateAndEnd() throws {
        let silent = #"{"url": "https://shop.example/orders"}"#
        let update = try requirePayload(Self.request(Self.job(#"{"event": "update", "contentState": {"etaMin": 10}, "timestamp": 1796036000}"#,
                                                              priority: "normal", language: silent)))
        #expect(update.header("apns-priority") == "5")
        let updateAPS = try #require(try parsePayloadJSON(update.body)["aps"])
        #expect(updateAPS["timestamp"] == .number(1_796_036_000))
        #expect(updateAPS["alert"] == nil && updateAPS["attributes"] == nil && updateAPS["input-push-token"] == nil)
        let end = try requirePayload(Self.request(Self.job(#"{"event": "end", "contentState": {"etaMin": 0}, "dismissalDate": 1796040000}"#)))
        let endAPS = try #require(try parsePayloadJSON(end.body)["aps"])
        #expect(endAPS["event"] == .string("end") && endAPS["dismissal-date"] == .number(1_796_040_000))
        #expect(endAPS["alert"] == .object(["title": .string("Order A-1001"), "body": .string("Being prepared")]))
    }

    @Test("without its own timestamp the state is dated by the job's createdAt, else by the time of sending")
    func timestampFromCreatedAt() throws {
        var text = String(decoding: Self.job(#"{"event": "update", "contentState": {}}"#), as: UTF8.self)
        text = String(decoding: JobFixtures.edit(["createdAt"], #""2026-11-30T10:30:00Z""#, in: text), as: UTF8.self)
        let dated = try requirePayload(Self.request(Array(text.utf8)))
        #expect(try parsePayloadJSON(dated.body)["aps"]?["timestamp"] == .number(1_796_034_600))
        let undated = try requirePayload(Self.request(Self.job(#"{"event": "update", "contentState": {}}"#)))
        #expect(try parsePayloadJSON(undated.body)["aps"]?["timestamp"] == .number(Double(payloadIssuedAt)))
    }

    @Test("loc keys become the alert's title and body objects")
    func localizedAlert() throws {
        let request = try requirePayload(Self.request(Self.job(Self.start, language: "{}", ios: [
            "titleLocKey": #""ORDER_TITLE""#, "locKey": #""ORDER_BODY""#, "locArgs": #"["A-1001"]"#,
        ])))
        let alert = try #require(try parsePayloadJSON(request.body)["aps"]?["alert"])
        #expect(alert["title"] == .object(["loc-key": .string("ORDER_TITLE")]))
        #expect(alert["body"] == .object(["loc-key": .string("ORDER_BODY"), "loc-args": .array([.string("A-1001")])]))
    }

    @Test("the alert text is cut to fit 4096 bytes, content-state never: too big ⇒ payload_too_large")
    func budget() throws {
        let longBody = String(repeating: "ü", count: 3000)
        let fitted = try requirePayload(Self.request(Self.job(Self.start, language: #"{"title": "Order", "body": "\#(longBody)"}"#)))
        #expect(fitted.body.count <= APNSPayloadBuilder.maxPayloadBytes)
        #expect(try parsePayloadJSON(fitted.body)["aps"]?["alert"]?["body"]?.stringValue?.hasSuffix("…") == true)
        #expect(try parsePayloadJSON(fitted.body)["aps"]?["content-state"] == .object(["status": .string("preparing"), "etaMin": .number(25)]))
        let hugeState = #"{"event": "update", "contentState": {"log": "\#(String(repeating: "x", count: 4100))"}}"#
        #expect(try Self.request(Self.job(hugeState)) == .failure(.payloadTooLarge))
    }

    @Test("an app with a certificate credential rejects Live Activity recipients: unsupported_auth")
    func certificateApps() throws {
        let certificateProfile = AppProfile(apns: .init(topic: "com.example.shop", endpoint: "https://apns.test", authentication: .certificate),
                                            fcm: nil, hasWebPush: false)
        #expect(try Self.request(Self.job(Self.start), profile: certificateProfile) == .failure(.unsupportedAuth))
        #expect(PayloadError.unsupportedAuth.reason == "unsupported_auth")
        // Ordinary notifications still go out over the certificate.
        let plain = try JobFixtures.decode(JobFixtures.minimal)
        let prepared = PreparedJob(job: plain, context: RenderContext(now: JobFixtures.now, keyring: JobFixtures.keyring))
        guard case .ready(let content, let target) = prepared.resolve(plain.recipients[0]) else { Issue.record("not ready"); return }
        let request = try requirePayload(PayloadBuilder.build(content, target: target, profile: certificateProfile, issuedAtUnix: payloadIssuedAt))
        #expect(request.header("apns-push-type") == "alert" && request.header("apns-topic") == "com.example.shop")
    }

    @Test("the decoder's known Live Activity fields are the ones it reads")
    func knownFields() throws {
        let every = #"""
        {"event": "end", "contentState": {}, "attributesType": "A", "attributes": {}, "staleDate": 1, "dismissalDate": 2,
         "relevanceScore": 3, "inputPushToken": false, "timestamp": 4}
        """#
        let keys = try #require(JSONFixture.object(every)).keys
        #expect(Set(keys) == Set(LiveActivityField.allCases.map(\.rawValue)))
        #expect(throws: Never.self) { try JobDecoder.decode(Self.job(every)) }
    }
}

enum JSONFixture {
    static func object(_ text: String) -> JSONObject? { (try? JSONParser.parse(text))?.objectValue }
}
