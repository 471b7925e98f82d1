import Testing
import PushCore
import PushProviders

private func headers(_ pairs: [String: String]) -> (String) -> String? { { pairs[$0] } }
private let now = 1_764_496_800.0  // 2025-11-30T10:00:00Z

@Suite("APNs response classification")
struct APNSClassificationTests {
    struct Row: Sendable, CustomStringConvertible {
        var status: Int
        var body: String
        var retryAfter: String?
        var expected: ProviderOutcome
        var description: String { "\(status) \(body)" }
    }

    static let rows: [Row] = [
        Row(status: 200, body: "", expected: .sent(providerMessageID: "A-1")),
        Row(status: 410, body: #"{"reason":"Unregistered","timestamp":1764400000000}"#,
            expected: .invalidToken(reason: "Unregistered", invalidSinceMs: 1_764_400_000_000)),
        Row(status: 400, body: #"{"reason":"BadDeviceToken"}"#, expected: .invalidToken(reason: "BadDeviceToken", invalidSinceMs: Int64(now * 1000))),
        Row(status: 400, body: #"{"reason":"DeviceTokenNotForTopic"}"#, expected: .invalidToken(reason: "DeviceTokenNotForTopic", invalidSinceMs: Int64(now * 1000))),
        Row(status: 400, body: #"{"reason":"BadTopic"}"#, expected: .rejected(reason: "BadTopic")),
        Row(status: 400, body: #"{"reason":"BadCollapseId"}"#, expected: .rejected(reason: "BadCollapseId")),
        Row(status: 413, body: #"{"reason":"PayloadTooLarge"}"#, expected: .rejected(reason: "PayloadTooLarge")),
        Row(status: 403, body: #"{"reason":"ExpiredProviderToken"}"#, expected: .authExpired(reason: "ExpiredProviderToken")),
        Row(status: 403, body: #"{"reason":"InvalidProviderToken"}"#, expected: .rejected(reason: "InvalidProviderToken")),
        // Certificate apps (docs/providers.md): final for the message; the Deliverer stops the app.
        Row(status: 403, body: #"{"reason":"BadCertificate"}"#, expected: .rejected(reason: "BadCertificate")),
        Row(status: 403, body: #"{"reason":"BadCertificateEnvironment"}"#, expected: .rejected(reason: "BadCertificateEnvironment")),
        Row(status: 429, body: #"{"reason":"TooManyRequests"}"#, retryAfter: "7",
            expected: .retry(reason: "TooManyRequests", retryAfterSeconds: 7, scope: .recipient)),
        Row(status: 429, body: #"{"reason":"TooManyProviderTokenUpdates"}"#,
            expected: .retry(reason: "TooManyProviderTokenUpdates", retryAfterSeconds: nil, scope: .provider)),
        Row(status: 500, body: #"{"reason":"InternalServerError"}"#,
            expected: .retry(reason: "InternalServerError", retryAfterSeconds: nil, scope: .provider)),
        Row(status: 503, body: #"{"reason":"ServiceUnavailable"}"#, retryAfter: "Sun, 30 Nov 2025 10:00:30 GMT",
            expected: .retry(reason: "ServiceUnavailable", retryAfterSeconds: 30, scope: .provider)),
        Row(status: 400, body: #"{"reason":"SomethingNewFromApple"}"#, expected: .rejected(reason: "SomethingNewFromApple")),
        Row(status: 404, body: "not json", expected: .rejected(reason: "http_404")),
    ]

    @Test("each APNs status and reason maps to its outcome, reasons verbatim", arguments: rows)
    func classify(_ row: Row) {
        var pairs = ["apns-id": "A-1"]
        if let retryAfter = row.retryAfter { pairs["retry-after"] = retryAfter }
        let outcome = ResponseClassifier.classify(platform: .ios, status: row.status, header: headers(pairs),
                                                  body: Array(row.body.utf8), nowUnix: now)
        #expect(outcome == row.expected)
        let isCertificate = row.body.contains("BadCertificate")
        #expect(APNSResponseClassifier.isCertificateRefusal(outcome) == isCertificate)
    }
}

@Suite("FCM response classification")
struct FCMClassificationTests {
    static func error(_ code: Int, _ status: String, _ errorCode: String?) -> String {
        let details = errorCode.map { #","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#($0)"}]"# } ?? ""
        return #"{"error":{"code":\#(code),"message":"m","status":"\#(status)"\#(details)}}"#
    }

    static let rows: [(Int, String, ProviderOutcome)] = [
        (200, #"{"name":"projects/p/messages/0:1"}"#, .sent(providerMessageID: "projects/p/messages/0:1")),
        (404, error(404, "NOT_FOUND", "UNREGISTERED"), .invalidToken(reason: "UNREGISTERED", invalidSinceMs: Int64(now * 1000))),
        (400, error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"), .rejected(reason: "INVALID_ARGUMENT")),
        (403, error(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH"), .rejected(reason: "SENDER_ID_MISMATCH")),
        (401, error(401, "UNAUTHENTICATED", nil), .authExpired(reason: "UNAUTHENTICATED")),
        (429, error(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"), .retry(reason: "QUOTA_EXCEEDED", retryAfterSeconds: nil, scope: .provider)),
        (503, error(503, "UNAVAILABLE", "UNAVAILABLE"), .retry(reason: "UNAVAILABLE", retryAfterSeconds: nil, scope: .provider)),
        (500, error(500, "INTERNAL", "INTERNAL"), .retry(reason: "INTERNAL", retryAfterSeconds: nil, scope: .provider)),
        (502, "<html>bad gateway</html>", .retry(reason: "INTERNAL", retryAfterSeconds: nil, scope: .provider)),
    ]

    @Test("each FCM status and errorCode maps to its outcome", arguments: rows.indices)
    func classify(_ index: Int) {
        let (status, body, expected) = Self.rows[index]
        let outcome = ResponseClassifier.classify(platform: .android, status: status, header: headers([:]), body: Array(body.utf8), nowUnix: now)
        #expect(outcome == expected)
    }
}

@Suite("Web Push response classification")
struct WebPushClassificationTests {
    static let rows: [(Int, String?, ProviderOutcome)] = [
        (201, nil, .sent(providerMessageID: "https://push.example/m/1")),
        (404, nil, .invalidToken(reason: nil, invalidSinceMs: Int64(now * 1000))),
        (410, nil, .invalidToken(reason: nil, invalidSinceMs: Int64(now * 1000))),
        (413, nil, .rejected(reason: "payload_too_large")),
        (400, nil, .rejected(reason: nil)),
        (403, nil, .rejected(reason: nil)),
        (429, "12", .retry(reason: nil, retryAfterSeconds: 12, scope: .provider)),
        (503, nil, .retry(reason: nil, retryAfterSeconds: nil, scope: .provider)),
    ]

    @Test("404/410 invalidate with a null reason; 429 and 5xx retry", arguments: rows.indices)
    func classify(_ index: Int) {
        let (status, retryAfter, expected) = Self.rows[index]
        var pairs = ["location": "https://push.example/m/1"]
        if let retryAfter { pairs["retry-after"] = retryAfter }
        #expect(ResponseClassifier.classify(platform: .web, status: status, header: headers(pairs), body: [], nowUnix: now) == expected)
    }

    @Test("transport failures are retryable, never final")
    func transport() {
        for failure in [TransportFailure.timeout, .connect, .tls, .protocolError, .other] {
            guard case .retry = ResponseClassifier.classify(transport: failure) else {
                Issue.record("\(failure) should retry")
                continue
            }
        }
    }

    @Test("a request that cannot be sent as built is rejected, not retried")
    func invalidRequest() {
        #expect(ResponseClassifier.classify(transport: .invalidRequest) == .rejected(reason: "invalid_request"))
    }

    @Test("final statuses of outcomes")
    func finalStatus() {
        #expect(ProviderOutcome.sent(providerMessageID: nil).finalStatus == .sent)
        #expect(ProviderOutcome.invalidToken(reason: nil, invalidSinceMs: nil).finalStatus == .invalidToken)
        #expect(ProviderOutcome.retry(reason: "x", retryAfterSeconds: nil, scope: .provider).finalStatus == .failed)
        #expect(ProviderOutcome.rejected(reason: "y").reason == "y")
    }
}

@Suite("Retry-After and backoff")
struct RetryTests {
    @Test("delay-seconds and IMF-fixdate forms; garbage is ignored",
          arguments: [("120", 120.0), ("0", 0.0), ("Sun, 30 Nov 2025 10:01:00 GMT", 60.0), ("Sun, 30 Nov 2025 09:00:00 GMT", 0.0)])
    func parses(_ text: String, _ seconds: Double) {
        #expect(RetryAfter.seconds(text, nowUnix: now) == seconds)
    }

    @Test("unparseable Retry-After values give nil", arguments: ["", "soon", "-5", "1.5", "Sun, 99 Nov 2025 10:00:00 GMT", "99999999999"])
    func rejects(_ text: String) {
        #expect(RetryAfter.seconds(text, nowUnix: now) == nil)
    }

    @Test("backoff doubles within jitter bounds, honours Retry-After, is capped")
    func backoff() {
        let policy = RetryPolicy(maxAttempts: 5, baseDelaySeconds: 1, maxDelaySeconds: 30)
        #expect(policy.delay(afterAttempts: 1, retryAfterSeconds: nil, jitter: 0) == 0.5)
        #expect(policy.delay(afterAttempts: 1, retryAfterSeconds: nil, jitter: 1) == 1)
        #expect(policy.delay(afterAttempts: 3, retryAfterSeconds: nil, jitter: 1) == 4)
        #expect(policy.delay(afterAttempts: 3, retryAfterSeconds: 10, jitter: 0) == 10)
        #expect(policy.delay(afterAttempts: 20, retryAfterSeconds: nil, jitter: 1) == 30)
        #expect(policy.delay(afterAttempts: 1, retryAfterSeconds: 3600, jitter: 0) == 30)
        #expect(policy.allowsRetry(afterAttempts: 4))
        #expect(!policy.allowsRetry(afterAttempts: 5))
    }
}

@Suite("Response header names the classifiers read")
struct ResponseHeaderNamesTests {
    @Test("every header a classifier asks for, whatever the status and body, is in its platform's list", arguments: Platform.allCases)
    func namesCoverClassification(platform: Platform) {
        let bodies = ["", #"{"reason":"TooManyRequests"}"#, #"{"reason":"Unregistered","timestamp":1}"#,
                      #"{"error":{"status":"UNAVAILABLE","details":[{"errorCode":"QUOTA_EXCEEDED"}]}}"#,
                      #"{"code":"80000000","msg":"Success","requestId":"r"}"#, #"{"code":"80300008"}"#, "not json"]
        var asked: Set<String> = []
        for status in [200, 201, 202, 204, 400, 401, 403, 404, 410, 413, 429, 500, 502, 503, 504] {
            for body in bodies {
                _ = ResponseClassifier.classify(platform: platform, status: status, header: { name in asked.insert(name); return "1" },
                                                body: Array(body.utf8), nowUnix: now)
            }
        }
        let listed = Set(ResponseClassifier.headerNames(platform: platform))
        #expect(!asked.isEmpty)
        #expect(asked.isSubset(of: listed), "\(platform): asked \(asked.sorted()), listed \(listed.sorted())")
        #expect(listed.allSatisfy { $0 == $0.lowercased() })
    }
}
