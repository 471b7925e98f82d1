import Foundation
import Testing
@testable import PushCore

// MARK: - Shared helpers for the Payload*Tests files (Foundation is used in tests only).

/// Parsed JSON in a comparable form (JSONSerialization output or a Swift literal).
indirect enum JSON: Equatable, CustomStringConvertible {
    case string(String), number(Double), bool(Bool), null
    case array([JSON]), object([String: JSON])
    case unsupported(String)

    init(_ value: Any) {
        switch value {
        case let string as String: self = .string(string)
        case let object as [String: Any]: self = .object(object.mapValues(JSON.init))
        case let array as [Any]: self = .array(array.map(JSON.init))
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

    subscript(_ key: String) -> JSON? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}

func parseJSON(_ bytes: [UInt8]) throws -> JSON {
    JSON(try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]))
}

func requireSuccess(_ result: Result<ProviderRequest, PayloadError>,
                    sourceLocation: SourceLocation = #_sourceLocation) throws -> ProviderRequest {
    switch result {
    case .success(let request): return request
    case .failure(let error):
        Issue.record("expected a request, got \(error)", sourceLocation: sourceLocation)
        throw error
    }
}

let testIssuedAt = 1_796_036_400 // 2026-11-30T10:20:00Z
let apnsToken = String(repeating: "ab", count: 32)
let fcmToken = "fcm:APA91b-token_1"
let testProfile = AppProfile(apns: .init(topic: "com.example.shop", endpoint: "https://apns.test/"),
                             fcm: .init(projectID: "shop-prod", endpoint: "https://fcm.test"),
                             hasWebPush: true)

func webSubscription(_ browser: Browser) -> WebPushSubscription {
    WebPushSubscription(endpoint: "https://push.test/wp/abc", p256dh: Array(repeating: 4, count: 65),
                        auth: Array(repeating: 7, count: 16), browser: browser)
}

/// A minimal alert: title + body, no options.
func simpleContent() -> NotificationContent {
    NotificationContent(jobID: "cmp_42:0007", appID: "app_demo", campaignID: "cmp_42", subscriptionID: "s1",
                        msgID: "m.sig", language: "en", title: "Hi", body: "Sale")
}

func build(_ content: NotificationContent, _ target: DeliveryTarget,
           profile: AppProfile = testProfile) -> Result<ProviderRequest, PayloadError> {
    PayloadBuilder.build(content, target: target, profile: profile, issuedAtUnix: testIssuedAt)
}

// MARK: - Dispatch

@Suite("PayloadBuilder dispatch")
struct PayloadBuilderTests {
    @Test("each target goes to its provider's URL and platform")
    func dispatch() throws {
        let apns = try requireSuccess(build(simpleContent(), .apns(deviceToken: apnsToken)))
        #expect(apns.platform == .ios)
        #expect(apns.method == "POST")
        #expect(apns.url == "https://apns.test/3/device/\(apnsToken)")
        #expect(apns.webPush == nil)

        let fcm = try requireSuccess(build(simpleContent(), .fcm(registrationToken: fcmToken)))
        #expect(fcm.platform == .android)
        #expect(fcm.url == "https://fcm.test/v1/projects/shop-prod/messages:send")

        let web = try requireSuccess(build(simpleContent(), .webPush(webSubscription(.chrome))))
        #expect(web.platform == .web)
        #expect(web.url == "https://push.test/wp/abc")
        #expect(web.webPush == webSubscription(.chrome))
    }

    @Test("a profile without the platform's credentials gives no_credentials", arguments: [
        DeliveryTarget.apns(deviceToken: String(repeating: "ab", count: 32)),
        .fcm(registrationToken: "fcm:APA91b-token_1"),
        .webPush(WebPushSubscription(endpoint: "https://push.test/wp/abc", p256dh: [], auth: [], browser: .firefox)),
    ])
    func noCredentials(target: DeliveryTarget) {
        let empty = AppProfile(apns: nil, fcm: nil, hasWebPush: false)
        #expect(build(simpleContent(), target, profile: empty) == .failure(.noCredentials))
    }

    @Test("the placeholder profile builds for every platform")
    func placeholderProfile() throws {
        let apns = try requireSuccess(build(simpleContent(), .apns(deviceToken: apnsToken), profile: .placeholder))
        #expect(apns.url.hasPrefix("https://api.push.apple.com/3/device/"))
        #expect(apns.header("apns-topic") == "<unknown>")
        let fcm = try requireSuccess(build(simpleContent(), .fcm(registrationToken: fcmToken), profile: .placeholder))
        #expect(fcm.url == "https://fcm.googleapis.com/v1/projects/<unknown>/messages:send")
    }

    @Test("error reasons are the contract strings")
    func reasons() {
        #expect(PayloadError.noCredentials.reason == "no_credentials")
        #expect(PayloadError.payloadTooLarge.reason == "payload_too_large")
    }

    @Test("no request carries an authorization header (the transport adds it)")
    func noAuthorization() throws {
        for target in [DeliveryTarget.apns(deviceToken: apnsToken), .fcm(registrationToken: fcmToken),
                       .webPush(webSubscription(.edge))] {
            let request = try requireSuccess(build(simpleContent(), target))
            #expect(request.header("authorization") == nil)
            #expect(request.headers.allSatisfy { $0.key == $0.key.lowercased() })
        }
    }
}
