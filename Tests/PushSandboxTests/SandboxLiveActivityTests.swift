import Foundation
import PushCore
import PushCrypto
import Testing
@testable import PushInbox
@testable import PushSandbox
import PushEncoding
import PushProviders

/// The APNs emulator's Live Activity rules (docs/providers.md "Live Activities") and certificate connections (§18), and
/// the inbox's Live Activity card. No I/O: requests in, responses out.
@Suite("Sandbox Live Activities and certificates")
struct SandboxLiveActivityTests {
    static let token = String(repeating: "ab", count: 32)
    static let fingerprint = String(repeating: "c3", count: 32)
    static let start = #"""
    {"aps":{"timestamp":1796036400,"event":"start","content-state":{"status":"preparing","etaMin":25},
     "attributes-type":"DeliveryAttributes","attributes":{"orderId":"A-1001"},"stale-date":1796040000,"input-push-token":1,
     "alert":{"title":"Order A-1001","body":"Being prepared","sound":"default"}},"custom":{"i":"m1","c":"cmp_la"}}
    """#

    static func router(faults: SandboxFaults = SandboxFaults(), certificate: Bool = false) -> SandboxRouter {
        var trust = SandboxTrust()
        if certificate {
            trust.apnsCertificates[fingerprint] = APNSTrustedCertificate(appID: "app_cert", topic: "com.example.app_cert")
            trust.certificateTopics.insert("com.example.app_cert")
        }
        return SandboxRouter(configuration: SandboxConfiguration(origin: "https://127.0.0.1:8443", isAuthDisabled: true),
                             state: SandboxState(faults: faults), trust: trust, clock: { 1_796_036_400 }, randomSeed: 3)
    }

    static func request(topic: String = "com.example.app.push-type.liveactivity", pushType: String? = "liveactivity",
                        priority: String? = "10", body: String = start, clientCertificate: String? = nil) -> SandboxRequest {
        var request = SandboxRequest()
        request.method = "POST"
        request.path = "/3/device/\(token)"
        request.headers = [(name: "apns-topic", value: topic)]
        if let pushType { request.headers.append((name: "apns-push-type", value: pushType)) }
        if let priority { request.headers.append((name: "apns-priority", value: priority)) }
        request.body = Array(body.utf8)
        request.bodyLength = request.body.count
        request.clientCertificate = clientCertificate
        return request
    }

    static func answer(_ response: SandboxResponse) -> String {
        let reason = JSONValue.parse(response.body)?["reason"]?.stringValue
        return reason.map { "\(response.status) \($0)" } ?? "\(response.status)"
    }

    @Test("a Live Activity start with the suffixed topic is accepted")
    func accepted() {
        #expect(Self.answer(Self.router().handle(Self.request())) == "200")
        #expect(Self.answer(Self.router().handle(Self.request(priority: "5"))) == "200")
    }

    @Test("Live Activity rules: topic suffix ⇔ push type, priorities, the ActivityKit keys", arguments: [
        (request(topic: "com.example.app"), "400 DeviceTokenNotForTopic"),
        (request(pushType: "alert"), "400 DeviceTokenNotForTopic"),
        (request(pushType: nil), "400 DeviceTokenNotForTopic"),
        (request(priority: "1"), "400 BadPriority"),
        (request(topic: "com.example.app", pushType: "background", priority: "10", body: #"{"aps":{"content-available":1}}"#), "400 BadPriority"),
        (request(body: #"{"aps":{"event":"pause","timestamp":1,"content-state":{}}}"#), "400 BadPayload"),
        (request(body: #"{"aps":{"event":"update","content-state":{}}}"#), "400 BadPayload"),
        (request(body: #"{"aps":{"event":"update","timestamp":1}}"#), "400 BadPayload"),
        (request(body: #"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes":{},"alert":{}}}"#), "400 BadPayload"),
        (request(body: #"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes-type":"A","attributes":{}}}"#), "400 BadPayload"),
        (request(body: #"{"aps":{"event":"update","timestamp":1,"content-state":{},"dismissal-date":5}}"#), "400 BadPayload"),
        (request(body: #"{"aps":{"event":"end","timestamp":1,"content-state":{},"stale-date":"soon"}}"#), "400 BadPayload"),
    ] as [(SandboxRequest, String)])
    func refused(request: SandboxRequest, expected: String) {
        #expect(Self.answer(Self.router().handle(request)) == expected)
    }

    @Test("a refused ActivityKit payload says what is missing")
    func detail() {
        let response = Self.router().handle(Self.request(body: #"{"aps":{"event":"start","timestamp":1,"content-state":{},"attributes":{},"alert":{}}}"#))
        #expect(JSONValue.parse(response.body)?["detail"]?.stringValue == "aps.attributes-type is required for start")
    }

    @Test("certificate connections: the certificate's topic only, no Live Activities, authorization ignored, refusals by fault")
    func certificateConnections() {
        let router = Self.router(certificate: true)
        let alert = #"{"aps":{"alert":"hi"},"custom":{"i":"m2"}}"#
        var plain = Self.request(topic: "com.example.app_cert", pushType: "alert", body: alert, clientCertificate: Self.fingerprint)
        plain.headers.append((name: "authorization", value: "bearer not-a-jwt"))
        #expect(Self.answer(router.handle(plain)) == "200")
        #expect(Self.answer(router.handle(Self.request(topic: "com.example.other", pushType: "alert", body: alert,
                                                       clientCertificate: Self.fingerprint))) == "400 DeviceTokenNotForTopic")
        #expect(Self.answer(router.handle(Self.request(topic: "com.example.app_cert.push-type.liveactivity",
                                                       clientCertificate: Self.fingerprint))) == "400 InvalidPushType")
        // The certificate app's topic without the certificate; an unknown certificate of the CA.
        #expect(Self.answer(router.handle(Self.request(topic: "com.example.app_cert", pushType: "alert", body: alert))) == "403 BadCertificate")
        #expect(Self.answer(router.handle(Self.request(topic: "com.example.app_cert", pushType: "alert", body: alert,
                                                       clientCertificate: String(repeating: "00", count: 32)))) == "403 BadCertificate")
        let refusing = Self.router(faults: SandboxFaults(refuseCertificates: "BadCertificateEnvironment"), certificate: true)
        #expect(Self.answer(refusing.handle(plain)) == "403 BadCertificateEnvironment")
    }

    @Test("the faults endpoint sets and clears refuseCertificates, and refuses other values")
    func faultsEndpoint() {
        let faults = SandboxFaults()
        #expect(faults.updated(with: JSONValue.parse(#"{"refuseCertificates":"BadCertificate"}"#) ?? .null)?.refuseCertificates == "BadCertificate")
        #expect(faults.updated(with: JSONValue.parse(#"{"refuseCertificates":null}"#) ?? .null)?.refuseCertificates == nil)
        #expect(faults.updated(with: JSONValue.parse(#"{"refuseCertificates":"Nope"}"#) ?? .null) == nil)
    }

    @Test("the inbox draws a Live Activity card: event, content-state as key/values, dates, the alert")
    func inboxCard() throws {
        let headers = [(name: "apns-topic", value: "com.example.app.push-type.liveactivity"), (name: "apns-push-type", value: "liveactivity")]
        let message = InboxDrawing.draw(InboxRecord(platform: "ios", path: "/3/device/\(Self.token)", headers: headers,
                                                    body: Array(Self.start.utf8)), keyring: nil)
        let display = try #require(message.displays.first)
        let activity = try #require(display.liveActivity)
        #expect(display.label == "iOS Live Activity" && display.appName == "com.example.app")
        #expect(activity.event == "start" && activity.attributesType == "DeliveryAttributes")
        #expect(activity.contentState == [KeyValue("status", "preparing"), KeyValue("etaMin", "25")])
        #expect(activity.attributes == [KeyValue("orderId", "A-1001")])
        #expect(activity.timestamp == "2026-11-30T11:00:00Z" && activity.staleDate == "2026-11-30T12:00:00Z")
        #expect(activity.dismissalDate == nil && activity.requestsPushToken)
        #expect(display.title == "Order A-1001" && display.body == "Being prepared" && display.sound == "default")
        #expect(display.notes.contains("push-to-start: a new DeliveryAttributes starts (iOS 17.2+)"))
        #expect(message.msgID == "m1" && message.campaign == "cmp_la" && message.app == "com.example.app")
        let json = try #require(JSONValue.parse(message.json())?["displays"]?.arrayValue?.first?["liveActivity"])
        #expect(json["contentState"] == JSONValue.parse(#"[["status","preparing"],["etaMin","25"]]"#))
        #expect(json["event"]?.stringValue == "start")

        let end = #"{"aps":{"timestamp":1796036400,"event":"end","content-state":{"status":"delivered","eta":{"min":0}},"dismissal-date":1796037300},"custom":{"i":"m3"}}"#
        let ended = InboxDrawing.draw(InboxRecord(platform: "ios", path: "/3/device/\(Self.token)", headers: headers, body: Array(end.utf8)), keyring: nil)
        let endedDisplay = try #require(ended.displays.first)
        #expect(endedDisplay.liveActivity?.dismissalDate == "2026-11-30T11:15:00Z")
        #expect(endedDisplay.liveActivity?.contentState == [KeyValue("status", "delivered"), KeyValue("eta", #"{"min":0}"#)])
        #expect(endedDisplay.notes.contains("ended: leaves the Lock Screen at 2026-11-30T11:15:00Z"))
        #expect(endedDisplay.title == nil && !endedDisplay.notes.contains { $0.hasPrefix("alert") })
    }

    @Test("the payloads PushCore builds for start, update and end pass the emulator")
    func builtPayloads() throws {
        let profile = AppProfile(apns: .init(topic: "com.example.app", endpoint: "https://127.0.0.1:8443"), fcm: nil, hasWebPush: false)
        let router = Self.router()
        for activity in [
            LiveActivity(event: .start, contentState: JSONObject([(key: "s", value: .string("x"))]), attributesType: "A",
                         attributes: JSONObject(), inputPushToken: true),
            LiveActivity(event: .update, contentState: JSONObject(), staleDate: 1_796_040_000, relevanceScore: 50),
            LiveActivity(event: .end, contentState: JSONObject(), dismissalDate: 1_796_037_000),
        ] {
            let content = NotificationContent(jobID: "j", appID: "app", campaignID: "c", subscriptionID: "s", msgID: "m", language: "en",
                                              title: "T", body: "B", priority: activity.event == .update ? .normal : .high,
                                              ios: IOSOptions(liveActivity: activity))
            guard case .success(let built) = PayloadBuilder.build(content, target: .apns(deviceToken: Self.token), profile: profile,
                                                                  issuedAtUnix: 1_796_036_400) else {
                Issue.record("not built"); continue
            }
            var request = SandboxRequest()
            request.method = built.method
            request.path = String(built.url.dropFirst("https://127.0.0.1:8443".count))
            request.headers = built.headers.map { (name: $0.key, value: $0.value) }
            request.body = built.body
            request.bodyLength = built.body.count
            #expect(Self.answer(router.handle(request)) == "200", "\(activity.event)")
        }
    }
}
