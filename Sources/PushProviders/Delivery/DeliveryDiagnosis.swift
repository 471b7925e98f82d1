import PushCore

/// What a failed delivery most likely means and what to change, for people (`pushworker send`
/// on stderr, `config check --connect`). Pure: from the classified outcome (reason, HTTP
/// status) and the transport's detail text (libcurl's error buffer, the OAuth answer). Never
/// sees a secret: details come from libcurl and provider error bodies.
public enum DeliveryDiagnosis {
    /// The hint for one failed recipient, or nil when the outcome explains itself (a dead
    /// token, a payload problem) or is not a failure.
    /// Why nothing was sent to an `expired` recipient, and what to change.
    static func expiryHint(_ reason: String?) -> String? {
        switch reason.flatMap(ExpiryReason.init(rawValue:)) {
        case .expiresAtPassed?:
            return "the job's expiresAt had passed when it was planned: nothing was sent; give a later expiresAt (the CLI accepts \"+4h\")"
        case .whileHeld?:
            return "the recipient waited for its app × provider (a backoff, an open circuit breaker) past the job's expiresAt, createdAt + ttlSeconds or the de-duplication retention: nothing was sent"
        case .sendByPassed?:
            return "the campaign's sendBy deadline (the job's, or one set by `pushworker campaign deadline`) passed before it was sent: nothing was sent"
        case .inQuietHours?:
            return "the recipient's quiet hours end after the job's expiresAt or sendBy: nothing was sent; give a later deadline or no quietHours (docs/local-time.md)"
        case .beforeSendAtLocal?:
            return "the recipient's next local send time (sendAtLocal) is after the job's expiresAt or sendBy: nothing was sent (docs/local-time.md)"
        case nil:
            return nil
        }
    }

    public static func hint(platform: Platform, status: DeliveryStatus, reason: String?, httpStatus: Int?, detail: String?) -> String? {
        if status == .expired { return expiryHint(reason) }
        if status == .cancelled { return "its campaign was cancelled (`pushworker campaign status` shows who and why): nothing was sent" }
        if status == .capped { return "its user reached a frequency cap of the job's capCategory (PUSHWORKER_CAPS, docs/caps.md): nothing was sent" }
        guard status != .sent, status != .duplicate, status != .invalidToken else { return nil }
        let detailText = detail ?? ""
        let lowered = detailText.lowercased()
        if platform == .huawei, let hint = hmsHint(reason, detail: detailText) { return hint }
        switch reason {
        case "tls_error"?: return tlsHint(lowered, detail: detailText, platform: platform)
        case "connect_error"?:
            return "cannot connect to the provider (\(shortened(detailText))): check the endpoint in \(file(platform)) (or the subscription's endpoint) and that this host can reach it"
        case "dns_error"?: return "the endpoint's host name does not resolve: check the URL and DNS"
        case "timeout"?: return "no answer within PUSHWORKER_REQUEST_TIMEOUT_MS: the provider or the network is slow or unreachable (firewall, proxy)"
        case "protocol_error"?: return "the connection broke mid-request (\(shortened(detailText))): transient unless it repeats; is the endpoint an HTTP/2 server?"
        case "no_credentials"?:
            return "no usable \(file(platform)) in PUSHWORKER_CREDENTIALS_DIR/<appId>/ (`pushworker config check` names the unusable files)"
        case "endpoint_not_allowed"?:
            return "the subscription's host is not a known push service: add it to PUSHWORKER_WEBPUSH_ALLOWED_HOSTS (hosts resolving to private addresses must be listed exactly)"
        case "bad_token"?: return "the token is not in the platform's format (APNs: 64+ hex characters; FCM: [A-Za-z0-9_:-])"
        case "missing_subscription_id"?: return "the recipient has no subscriptionId: the msgId, its result and de-duplication are keyed by it; give every recipient its own"
        case "bad_subscription"?: return "the subscription's endpoint or keys (p256dh, auth) are unusable: store the browser's PushSubscription.toJSON() as it is"
        // APNs (developer.apple.com "Handling notification responses from APNs").
        case "InvalidProviderToken"?:
            return "APNs refused the provider token: keyId, teamId and the private key in apns.json must be one key of one team (the .p8 file's key id, the team that created it); also check the clock"
        case "ExpiredProviderToken"?:
            return "APNs says the provider token is too old even after a fresh one: the system clock is off (APNs checks iat); sync it (NTP)"
        case "MissingProviderToken"?: return "no provider token reached APNs: apns.json has no usable key, or a proxy strips the authorization header"
        case "TooManyProviderTokenUpdates"?: return "provider tokens were minted too often (more than every 20 min): several processes with the same key? wait and retry"
        case "BadTopic"?, "TopicDisallowed"?, "DeviceTokenNotForTopic"?:
            return "apns-topic (apns.json topic) must be the app's bundle id, which this team's key may send to; a token of another app is DeviceTokenNotForTopic"
        case "BadDeviceToken"?: return "the token is not valid for this endpoint: a development token sent to production (or the reverse)? check the endpoint in apns.json"
        case "BadCertificate"?, "BadCertificateEnvironment"?: return "APNs refused the client certificate, or it belongs to the other environment (sandbox/production)"
        case "Forbidden"?: return "APNs refused the request (403 Forbidden): check the key's team and topic"
        // FCM (firebase.google.com/docs/reference/fcm/rest/v1/ErrorCode) and its OAuth grant.
        case "auth_error"?:
            return "the OAuth grant at token_uri was refused (\(shortened(detailText))): fcm.json's client_email and private_key must be one service account key that is not revoked; the clock must be right (the grant's iat/exp)"
        case "auth_unavailable"?: return "cannot reach the OAuth token_uri of fcm.json (\(shortened(detailText))): check the network"
        case "UNAUTHENTICATED"?: return "FCM did not accept the access token: the service account key was revoked or belongs to another project"
        case "PERMISSION_DENIED"?:
            return "the service account may not send for this project: give it the Firebase Cloud Messaging API Admin role, and check project_id in fcm.json"
        case "SENDER_ID_MISMATCH"?: return "the token was registered for another Firebase project than fcm.json's project_id"
        case "THIRD_PARTY_AUTH_ERROR"?: return "FCM could not reach APNs/Web Push for this token: the APNs key or certificate uploaded to the Firebase console is missing or wrong"
        case "INVALID_ARGUMENT"?: return "FCM refused the message as built (INVALID_ARGUMENT): often a malformed token"
        default: break
        }
        if platform == .web, let httpStatus, httpStatus == 401 || httpStatus == 403 {
            return "the push service refused the VAPID signature (\(httpStatus)): webpush.json's key pair must be the application server key the browser subscribed with; check subject and the clock"
        }
        if let httpStatus, httpStatus == 401 || httpStatus == 403 {
            return "the provider refused the credentials (\(httpStatus)): check \(file(platform))"
        }
        return nil
    }

    /// Huawei Push Kit result codes (docs/providers.md) and its OAuth grant.
    private static func hmsHint(_ reason: String?, detail: String) -> String? {
        switch reason {
        case "auth_error"?:
            return "the Huawei OAuth grant at tokenEndpoint was refused (\(shortened(detail))): hms.json's clientId and clientSecret must be the app's OAuth 2.0 client in AppGallery Connect"
        case "auth_unavailable"?: return "cannot reach hms.json's tokenEndpoint (\(shortened(detail))): check the network"
        case "80200001"?, "80200003"?:
            return "Huawei did not accept a fresh access token either: the token belongs to another client id (hms.json appId/clientId of another app?)"
        case "80300002"?: return "the app may not push: enable Push Kit for the app in AppGallery Connect"
        case "80300011"?: return "the app has no permission for high-priority notifications: apply for it in AppGallery Connect, or send with priority normal"
        case "80100001"?, "80100003"?: return "Huawei refused the message as built (\(reason ?? "")): check android.category and android.collapseKey"
        case "80100004"?: return "Huawei says the TTL lies in the past: check expiresAt and the clock"
        case "80100016"?: return "Huawei refused the text as sensitive content"
        case "80600003"?: return "Huawei's OAuth service refused the request: check hms.json's clientId and clientSecret"
        default: return nil
        }
    }

    private static func tlsHint(_ lowered: String, detail: String, platform: Platform) -> String {
        let reason = detail.isEmpty ? "" : " (\(shortened(detail)))"
        if lowered.contains("local issuer") || lowered.contains("self-signed") || lowered.contains("self signed")
            || lowered.contains("unknown ca") || lowered.contains("unable to get issuer") {
            return "TLS: the provider's certificate is not trusted\(reason): set PUSHWORKER_CA_FILE to the CA that signed it (the sandbox: its --cert-out file); verification is never turned off"
        }
        if lowered.contains("expired") || lowered.contains("not yet valid") {
            return "TLS: the certificate is expired or not yet valid\(reason): check this machine's clock, then the server's certificate"
        }
        if lowered.contains("subject name") || lowered.contains("does not match") || lowered.contains("hostname") || lowered.contains("alternative") {
            return "TLS: the certificate does not name the endpoint's host\(reason): check the endpoint URL in \(file(platform))"
        }
        if lowered.contains("cafile") || lowered.contains("ca file") || lowered.contains("certificate file") || lowered.contains("cacert") {
            return "TLS: cannot use PUSHWORKER_CA_FILE\(reason): it must be a readable PEM bundle"
        }
        return "TLS handshake failed\(reason): check PUSHWORKER_CA_FILE and that the endpoint speaks TLS with HTTP/2"
    }

    /// The credentials file of `platform`.
    public static func file(_ platform: Platform) -> String {
        switch platform {
        case .ios: "apns.json"
        case .android: "fcm.json"
        case .web: "webpush.json"
        case .huawei: "hms.json"
        }
    }

    private static func shortened(_ text: String) -> String {
        let line = text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).first.map(String.init) ?? ""
        return line.count > 160 ? String(line.prefix(160)) + "…" : line
    }
}
