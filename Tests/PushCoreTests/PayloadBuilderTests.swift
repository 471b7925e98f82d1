import Foundation
import Testing
@testable import PushCore
@testable import PushProviders

// MARK: - Shared helpers for the Payload*Tests files (Foundation is used in tests only).

/// Parsed JSON in a comparable form (JSONSerialization output or a Swift literal).
indirect enum PayloadJSON: Equatable, CustomStringConvertible {
    case string(String), number(Double), bool(Bool), null
    case array([PayloadJSON]), object([String: PayloadJSON])
    case unsupported(String)

    init(_ value: Any) {
        switch value {
        case let string as String: self = .string(string)
        case let object as [String: Any]: self = .object(object.mapValues(PayloadJSON.init))
        case let array as [Any]: self = .array(array.map(PayloadJSON.init))
        case is NSNull: self = .null
        default:
            let typeName = String(describing: type(of: value))
            if typeName == "Bool" || typeName.contains("Boolean"), let bool = value as? Bool {
                self = .bool(bool)
            } else if let number = value as? Int {
                self = .number(Double(number))
            } else if let number = value as? Double {
                self = .number(number)
            } else {
                self = .unsupported(typeName)
            }
        }
    }

    var description: String {
        switch self {
        case .string(let s): "\"\(s)\""
        case .number(let n): "\(n)"
        case .bool(let b): "\(b)"
        case .null: "null"
        case .array(let a): "[" + a.map(\.description).joined(separator: ",") + "]"
        case .object(let o): "{" + o.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
        case .unsupported(let t): "<\(t)>"
        }
    }

    subscript(_ key: String) -> PayloadJSON? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}

func parsePayloadJSON(_ bytes: [UInt8]) throws -> PayloadJSON {
    PayloadJSON(try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]))
}

func requirePayload(_ result: Result<ProviderRequest, PayloadError>,
                    sourceLocation: SourceLocation = #_sourceLocation) throws -> ProviderRequest {
    switch result {
    case .success(let request): return request
    case .failure(let error):
        Issue.record("expected a request, got \(error)", sourceLocation: sourceLocation)
        throw error
    }
}

let payloadIssuedAt = 1_796_036_400 // 2026-11-30T10:20:00Z
let payloadAPNSToken = String(repeating: "ab", count: 32)
let payloadFCMToken = "fcm:APA91b-token_1"
let payloadProfile = AppProfile(apns: .init(topic: "com.example.shop", endpoint: "https://apns.test/"),
                             fcm: .init(projectID: "shop-prod", endpoint: "https://fcm.test"),
                             hasWebPush: true)

func payloadWebSubscription(_ browser: Browser) -> WebPushSubscription {
    WebPushSubscription(endpoint: "https://push.test/wp/abc", p256dh: Array(repeating: 4, count: 65),
                        auth: Array(repeating: 7, count: 16), browser: browser)
}

/// A minimal alert: title + body, no options.
func payloadSimpleContent() -> NotificationContent {
    NotificationContent(jobID: "cmp_42:0007", appID: "app_demo", campaignID: "cmp_42", subscriptionID: "s1",
                        msgID: "m.sig", language: "en", title: "Hi", body: "Sale")
}

func buildPayload(_ content: NotificationContent, _ target: DeliveryTarget,
           profile: AppProfile = payloadProfile) -> Result<ProviderRequest, PayloadError> {
    PayloadBuilder.build(content, target: target, profile: profile, issuedAtUnix: payloadIssuedAt)
}

// MARK: - Dispatch

@Suite("PayloadBuilder dispatch")
struct PayloadBuilderTests {
    @Test("each target goes to its provider's URL and platform")
    func dispatch() throws {
        let apns = try requirePayload(buildPayload(payloadSimpleContent(), .apns(deviceToken: payloadAPNSToken)))
        #expect(apns.platform == .ios)
        #expect(apns.method == "POST")
        #expect(apns.url == "https://apns.test/3/device/\(payloadAPNSToken)")
        #expect(apns.webPush == nil)

        let fcm = try requirePayload(buildPayload(payloadSimpleContent(), .fcm(registrationToken: payloadFCMToken)))
        #expect(fcm.platform == .android)
        #expect(fcm.url == "https://fcm.test/v1/projects/shop-prod/messages:send")

        let web = try requirePayload(buildPayload(payloadSimpleContent(), .webPush(payloadWebSubscription(.chrome))))
        #expect(web.platform == .web)
        #expect(web.url == "https://push.test/wp/abc")
        #expect(web.webPush == payloadWebSubscription(.chrome))
    }

    @Test("a profile without the platform's credentials gives no_credentials", arguments: [
        DeliveryTarget.apns(deviceToken: String(repeating: "ab", count: 32)),
        .fcm(registrationToken: "fcm:APA91b-token_1"),
        .webPush(WebPushSubscription(endpoint: "https://push.test/wp/abc", p256dh: [], auth: [], browser: .firefox)),
    ])
    func noCredentials(target: DeliveryTarget) {
        let empty = AppProfile(apns: nil, fcm: nil, hasWebPush: false)
        #expect(buildPayload(payloadSimpleContent(), target, profile: empty) == .failure(.noCredentials))
    }

    @Test("the placeholder profile builds for every platform")
    func placeholderProfile() throws {
        let apns = try requirePayload(buildPayload(payloadSimpleContent(), .apns(deviceToken: payloadAPNSToken), profile: .placeholder))
        #expect(apns.url.hasPrefix("https://api.push.apple.com/3/device/"))
        #expect(apns.header("apns-topic") == "<unknown>")
        let fcm = try requirePayload(buildPayload(payloadSimpleContent(), .fcm(registrationToken: payloadFCMToken), profile: .placeholder))
        #expect(fcm.url == "https://fcm.googleapis.com/v1/projects/<unknown>/messages:send")
    }

    @Test("error reasons are the contract strings")
    func reasons() {
        #expect(PayloadError.noCredentials.reason == "no_credentials")
        #expect(PayloadError.payloadTooLarge.reason == "payload_too_large")
    }

    @Test("no request carries an authorization header (the transport adds it)")
    func noAuthorization() throws {
        for target in [DeliveryTarget.apns(deviceToken: payloadAPNSToken), .fcm(registrationToken: payloadFCMToken),
                       .webPush(payloadWebSubscription(.edge))] {
            let request = try requirePayload(buildPayload(payloadSimpleContent(), target))
            #expect(request.header("authorization") == nil)
            #expect(request.headers.allSatisfy { $0.key == $0.key.lowercased() })
        }
    }
}
