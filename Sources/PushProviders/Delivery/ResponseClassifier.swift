import PushEncoding
import PushCore
/// Turns a provider's HTTP answer into a ``ProviderOutcome`` (docs/providers.md). Pure
/// and table-tested; unknown reason strings are preserved verbatim, never fatal.
public enum ResponseClassifier {
    /// Classifies an HTTP response. `header` looks up a response header by lower-case name.
    public static func classify(platform: Platform, status: Int, header: (String) -> String?, body: [UInt8],
                                nowUnix: Double) -> ProviderOutcome {
        switch platform {
        case .ios: APNSResponseClassifier.classify(status: status, header: header, body: body, nowUnix: nowUnix)
        case .android: FCMResponseClassifier.classify(status: status, header: header, body: body, nowUnix: nowUnix)
        case .web: WebPushResponseClassifier.classify(status: status, header: header, nowUnix: nowUnix)
        case .huawei: HMSResponseClassifier.classify(status: status, header: header, body: body, nowUnix: nowUnix)
        }
    }

    /// The response header fields ``classify(platform:status:header:body:nowUnix:)`` reads for
    /// `platform` (lower case): the transport copies only these out of a response
    /// (`HTTPRequest.responseHeaders`). `ResponseClassifierTests` checks the list against what
    /// each classifier asks for.
    public static func headerNames(platform: Platform) -> [String] {
        switch platform {
        case .ios: apnsHeaderNames
        case .android, .huawei: retryAfterOnly
        case .web: webPushHeaderNames
        }
    }

    private static let apnsHeaderNames = ["apns-id", "retry-after"]
    private static let retryAfterOnly = ["retry-after"]
    private static let webPushHeaderNames = ["retry-after", "location"]

    /// Classifies a failure before any status arrived: transient, except a request that cannot
    /// be sent as built.
    public static func classify(transport failure: TransportFailure) -> ProviderOutcome {
        switch failure {
        case .timeout: .retry(reason: "timeout", retryAfterSeconds: nil, scope: .recipient)
        case .connect: .retry(reason: "connect_error", retryAfterSeconds: nil, scope: .provider)
        case .tls: .retry(reason: "tls_error", retryAfterSeconds: nil, scope: .provider)
        case .protocolError: .retry(reason: "protocol_error", retryAfterSeconds: nil, scope: .recipient)
        case .shutdown: .retry(reason: "shutdown", retryAfterSeconds: nil, scope: .recipient)
        case .invalidRequest: .rejected(reason: "invalid_request")
        case .addressRefused: .rejected(reason: "endpoint_not_allowed")
        case .other: .retry(reason: "transport_error", retryAfterSeconds: nil, scope: .recipient)
        case .unanswered: .retry(reason: "unanswered", retryAfterSeconds: nil, scope: .recipient)
        }
    }
}

/// APNs (Apple: "Handling notification responses from APNs").
public enum APNSResponseClassifier {
    /// 400 reasons that mean the token itself is dead or belongs elsewhere.
    static let invalidTokenReasons: Set<String> = ["BadDeviceToken", "DeviceTokenNotForTopic"]
    /// 403 reasons that condemn the app's TLS client certificate, not the message (docs/providers.md;
    /// Apple: "The certificate is invalid" / "for the wrong environment"): `rejected`, never
    /// retried, and every later request of the app would get the same answer.
    public static let certificateReasons: Set<String> = ["BadCertificate", "BadCertificateEnvironment"]

    /// Whether `outcome` is a refusal of the app's certificate (see ``certificateReasons``).
    public static func isCertificateRefusal(_ outcome: ProviderOutcome) -> Bool {
        guard case .rejected(let reason?) = outcome else { return false }
        return certificateReasons.contains(reason)
    }

    public static func classify(status: Int, header: (String) -> String?, body: [UInt8], nowUnix: Double) -> ProviderOutcome {
        if status == 200 { return .sent(providerMessageID: header("apns-id")) }
        let object = ProviderJSON.object(body)
        let reason = object?["reason"]?.stringValue
        let retryAfter = RetryAfter.seconds(header("retry-after"), nowUnix: nowUnix)
        switch status {
        case 410:
            // `timestamp`: ms since epoch when APNs learned the token was invalid; a token
            // re-registered later is valid again (docs/reference/records.md).
            let timestamp = object?["timestamp"].flatMap(ProviderJSON.integer)
            return .invalidToken(reason: reason ?? "Unregistered", invalidSinceMs: timestamp ?? Int64(nowUnix * 1000))
        case 400 where reason.map(invalidTokenReasons.contains) == true:
            return .invalidToken(reason: reason, invalidSinceMs: Int64(nowUnix * 1000))
        case 403 where reason == "ExpiredProviderToken":
            return .authExpired(reason: "ExpiredProviderToken")
        case 403 where reason.map(certificateReasons.contains) == true:
            return .rejected(reason: reason)
        case 429 where reason == "TooManyRequests":
            // Too many pushes to one device: only this recipient waits.
            return .retry(reason: reason, retryAfterSeconds: retryAfter, scope: .recipient)
        case 429:
            return .retry(reason: reason, retryAfterSeconds: retryAfter, scope: .provider)
        case 500...599:
            return .retry(reason: reason, retryAfterSeconds: retryAfter, scope: .provider)
        default:
            return .rejected(reason: reason ?? "http_\(status)")
        }
    }
}

/// FCM HTTP v1 (firebase.google.com/docs/reference/fcm/rest/v1/ErrorCode).
public enum FCMResponseClassifier {
    public static func classify(status: Int, header: (String) -> String?, body: [UInt8], nowUnix: Double) -> ProviderOutcome {
        let object = ProviderJSON.object(body)
        if status == 200 { return .sent(providerMessageID: object?["name"]?.stringValue) }
        let error = object?["error"]
        let statusText = error?["status"]?.stringValue
        var errorCode: String?
        for detail in error?["details"]?.arrayValue ?? [] {
            if let code = detail["errorCode"]?.stringValue { errorCode = code; break }
        }
        let reason = errorCode ?? statusText
        let retryAfter = RetryAfter.seconds(header("retry-after"), nowUnix: nowUnix)
        switch (status, reason) {
        case (404, _) where reason == "UNREGISTERED" || reason == "NOT_FOUND":
            return .invalidToken(reason: "UNREGISTERED", invalidSinceMs: Int64(nowUnix * 1000))
        case (400, "UNREGISTERED"):
            return .invalidToken(reason: "UNREGISTERED", invalidSinceMs: Int64(nowUnix * 1000))
        case (401, _):
            return .authExpired(reason: reason ?? "UNAUTHENTICATED")
        case (429, _):
            // QUOTA_EXCEEDED and any 429 naming no device: the app+provider pair waits, fleet-wide.
            return .retry(reason: reason ?? "QUOTA_EXCEEDED", retryAfterSeconds: retryAfter, scope: .provider)
        case (500...599, _):
            return .retry(reason: reason ?? (status == 503 ? "UNAVAILABLE" : "INTERNAL"), retryAfterSeconds: retryAfter, scope: .provider)
        default:
            return .rejected(reason: reason ?? "http_\(status)")
        }
    }
}

/// Web Push (RFC 8030 §5, §6.2; push services answer 201 Created).
public enum WebPushResponseClassifier {
    public static func classify(status: Int, header: (String) -> String?, nowUnix: Double) -> ProviderOutcome {
        let retryAfter = RetryAfter.seconds(header("retry-after"), nowUnix: nowUnix)
        switch status {
        case 200...299: return .sent(providerMessageID: header("location"))
        // 404/410: the subscription is gone; docs/reference/records.md keeps reason null, status in httpStatus.
        case 404, 410: return .invalidToken(reason: nil, invalidSinceMs: Int64(nowUnix * 1000))
        case 413: return .rejected(reason: "payload_too_large")
        case 429: return .retry(reason: nil, retryAfterSeconds: retryAfter, scope: .provider)
        case 500...599: return .retry(reason: nil, retryAfterSeconds: retryAfter, scope: .provider)
        default: return .rejected(reason: nil)
        }
    }
}

/// Small provider bodies only (reasons, error objects); never payloads.
enum ProviderJSON {
    static func object(_ body: [UInt8]) -> JSONValue? {
        guard !body.isEmpty, body.count <= 65_536, body.first == UInt8(ascii: "{") else { return nil }
        return try? JSONParser.parse(body, maxDepth: 16, maxBytes: 65_536)
    }

    static func integer(_ value: JSONValue) -> Int64? {
        guard case .number(let number) = value, let int = number.intValue else { return nil }
        return Int64(int)
    }
}
