import PushCore
import PushProviders
import Testing

@Suite("Delivery diagnosis: the likely fix for a failure")
struct DeliveryDiagnosisTests {
    @Test("each kind of failure gets the fix people need", arguments: [
        (Platform.ios, DeliveryStatus.failed, "tls_error", nil, "SSL certificate problem: unable to get local issuer certificate", "set PUSHWORKER_CA_FILE"),
        (.ios, .failed, "tls_error", nil, "SSL certificate problem: self-signed certificate", "not trusted"),
        (.android, .failed, "tls_error", nil, "SSL certificate problem: certificate has expired", "check this machine's clock"),
        (.ios, .failed, "tls_error", nil, "SSL: no alternative certificate subject name matches target host name 'x'", "check the endpoint URL in apns.json"),
        (.web, .failed, "tls_error", nil, "error setting certificate file: /nope", "cannot use PUSHWORKER_CA_FILE"),
        (.ios, .failed, "tls_error", nil, nil, "TLS handshake failed"),
        (.ios, .failed, "connect_error", nil, "Failed to connect to 127.0.0.1 port 1", "check the endpoint in apns.json"),
        (.ios, .failed, "timeout", nil, "timed out", "PUSHWORKER_REQUEST_TIMEOUT_MS"),
        (.ios, .rejected, "InvalidProviderToken", 403, nil, "keyId, teamId and the private key"),
        (.ios, .failed, "ExpiredProviderToken", 403, nil, "system clock"),
        (.ios, .rejected, "BadTopic", 400, nil, "bundle id"),
        (.ios, .rejected, "BadDeviceToken", 400, nil, "development token sent to production"),
        (.android, .rejected, "auth_error", nil, "token endpoint answered 400", "client_email and private_key"),
        (.android, .failed, "auth_unavailable", nil, "token endpoint unreachable", "token_uri"),
        (.android, .rejected, "PERMISSION_DENIED", 403, nil, "Firebase Cloud Messaging API Admin"),
        (.android, .rejected, "SENDER_ID_MISMATCH", 403, nil, "another Firebase project"),
        (.web, .rejected, nil, 403, nil, "VAPID"),
        (.web, .rejected, "endpoint_not_allowed", nil, nil, "PUSHWORKER_WEBPUSH_ALLOWED_HOSTS"),
        (.ios, .rejected, "no_credentials", nil, nil, "apns.json in PUSHWORKER_CREDENTIALS_DIR"),
        (.android, .rejected, "SomethingNew", 401, nil, "check fcm.json"),
    ] as [(Platform, DeliveryStatus, String?, Int?, String?, String)])
    func hints(platform: Platform, status: DeliveryStatus, reason: String?, http: Int?, detail: String?, expected: String) {
        let hint = DeliveryDiagnosis.hint(platform: platform, status: status, reason: reason, httpStatus: http, detail: detail)
        #expect(hint?.contains(expected) == true, "\(hint ?? "nil")")
    }

    @Test("an expired recipient's hint says why nothing was sent", arguments: [
        ("expires_at_passed", "expiresAt had passed when it was planned"), ("expired_while_held", "waited for its app × provider"),
    ])
    func expiryHints(reason: String, expected: String) {
        for platform in Platform.allCases {
            let hint = DeliveryDiagnosis.hint(platform: platform, status: .expired, reason: reason, httpStatus: nil, detail: nil)
            #expect(hint?.contains(expected) == true, "\(platform): \(hint ?? "nil")")
        }
        #expect(DeliveryDiagnosis.hint(platform: .ios, status: .expired, reason: nil, httpStatus: nil, detail: nil) == nil)
    }

    @Test("a capped recipient's hint names the frequency cap; the results summary lists capped with the other statuses")
    func cappedHint() {
        let hint = DeliveryDiagnosis.hint(platform: .ios, status: .capped, reason: nil, httpStatus: nil, detail: nil)
        #expect(hint?.contains("frequency cap") == true && hint?.contains("nothing was sent") == true, "\(hint ?? "nil")")
        #expect(ResultSummary(filter: ResultFilter()).byStatus.map(\.status).contains("capped"))
    }

    @Test("outcomes that explain themselves get no hint", arguments: [
        (DeliveryStatus.sent, nil as String?, 200 as Int?), (.duplicate, nil, nil), (.invalidToken, "Unregistered", 410),
        (.rejected, "payload_too_large", nil), (.failed, "TooManyRequests", 429),
    ])
    func noHint(status: DeliveryStatus, reason: String?, http: Int?) {
        #expect(DeliveryDiagnosis.hint(platform: .ios, status: status, reason: reason, httpStatus: http, detail: nil) == nil)
    }
}
