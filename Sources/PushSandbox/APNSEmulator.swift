import PushCore
import PushCrypto
import PushEncoding
import PushInbox

/// APNs provider API emulation (`POST /3/device/<token>`), with Apple's status codes and reason strings
/// ("Handling notification responses from APNs", developer.apple.com).
extension SandboxRouter {
    /// Maximum APNs payload for regular pushes: 4 KB.
    static let apnsMaximumPayload = 4096
    /// A provider token older than this is `ExpiredProviderToken` (Apple: one hour).
    static let apnsTokenLifetime = 3600.0
    static let apnsPushTypes: Set<String> = [
        "alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity", "pushtotalk", "widgets", "controls",
    ]

    enum APNSTokenCheck { case valid(APNSTrustedKey), invalid, expired }

    func handleAPNS(_ request: SandboxRequest) -> SandboxResponse {
        let apnsID = request.header("apns-id").flatMap { Self.isUUID($0) ? $0.uppercased() : nil } ?? makeUUID()
        func reject(_ status: Int, _ reason: String) -> SandboxResponse {
            finish(.json(status, "{\"reason\":\"\(reason)\"}", headers: [(name: "apns-id", value: apnsID)]),
                   platform: "ios", request: request, msgID: nil, bodyJSON: nil)
        }
        let path = request.pathWithoutQuery
        guard path.hasPrefix("/3/device/") || path == "/3/device" else { return reject(404, "BadPath") }
        guard request.method == "POST" else { return reject(405, "MethodNotAllowed") }
        let token = path.dropFirst("/3/device/".count)

        var allowedTopics: [String]?
        var isCertificateConnection = false
        if let fingerprint = request.clientCertificate {
            // Certificate connection: trust comes from the TLS handshake and APNs ignores any
            // authorization header (Apple, "Establishing a certificate-based connection to APNs").
            guard let certificate = trust.apnsCertificates[fingerprint] else { return reject(403, "BadCertificate") }
            if let reason = faults.refuseCertificates { return reject(403, reason) }
            allowedTopics = [certificate.topic]
            isCertificateConnection = true
        } else if let topic = request.header("apns-topic"), trust.certificateTopics.contains(Self.bundleID(ofTopic: topic)) {
            // A certificate app's topic on a connection without its certificate.
            return reject(403, "BadCertificate")
        } else if !configuration.isAuthDisabled {
            guard let authorization = request.header("authorization") else { return reject(403, "MissingProviderToken") }
            let parts = authorization.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else { return reject(403, "InvalidProviderToken") }
            switch checkProviderToken(String(parts[1])) {
            case .invalid: return reject(403, "InvalidProviderToken")
            case .expired: return reject(403, "ExpiredProviderToken")
            case .valid(let key): allowedTopics = trust.apnsKeys[key.keyID]?.filter { $0.teamID == key.teamID }.map(\.topic)
            }
        }
        for name in ["apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id", "apns-id", "authorization"]
        where request.headerCount(name) > 1 {
            return reject(400, "DuplicateHeaders")
        }
        guard let topic = request.header("apns-topic") else { return reject(400, "MissingTopic") }
        guard !topic.isEmpty, topic.utf8.count <= 255, topic.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else { return reject(400, "BadTopic") }
        if let allowedTopics, !allowedTopics.contains(Self.bundleID(ofTopic: topic)) { return reject(400, "DeviceTokenNotForTopic") }
        guard !token.isEmpty else { return reject(400, "MissingDeviceToken") }
        guard Self.isDeviceToken(token) else { return reject(400, "BadDeviceToken") }
        // A token APNs never issues (`config check --connect` sends its dry request there).
        guard !token.utf8.allSatisfy({ $0 == UInt8(ascii: "0") }) else { return reject(400, "BadDeviceToken") }
        if let id = request.header("apns-id"), !Self.isUUID(id) { return reject(400, "BadMessageId") }
        let pushType = request.header("apns-push-type")
        if let pushType, !Self.apnsPushTypes.contains(pushType) { return reject(400, "InvalidPushType") }
        let priority = request.header("apns-priority")
        if let priority, !["10", "5", "1"].contains(priority) { return reject(400, "BadPriority") }
        // Live Activities (docs/providers.md "Live Activities"): the topic is `<bundle id>.push-type.liveactivity` exactly
        // when the push type is liveactivity (Apple answers a bare bundle id with
        // DeviceTokenNotForTopic, forum 712499); token connections only (Apple: certificate
        // authentication is not supported for these pushes); priority 5 or 10.
        let isLiveActivity = pushType == LiveActivity.pushType
        if isLiveActivity != topic.hasSuffix(LiveActivity.topicSuffix) { return reject(400, "DeviceTokenNotForTopic") }
        if isLiveActivity && isCertificateConnection { return reject(400, "InvalidPushType") }
        if isLiveActivity && priority == "1" { return reject(400, "BadPriority") }
        // Apple: a background notification must be sent with priority 5; 10 is an error.
        if pushType == "background" && priority == "10" { return reject(400, "BadPriority") }
        if let expiration = request.header("apns-expiration"), expiration.isEmpty || !expiration.utf8.allSatisfy({ (0x30...0x39).contains($0) }) || expiration.utf8.count > 12 {
            return reject(400, "BadExpirationDate")
        }
        if let collapseID = request.header("apns-collapse-id"), collapseID.utf8.count > 64 { return reject(400, "BadCollapseId") }
        guard request.bodyLength > 0 else { return reject(400, "PayloadEmpty") }
        guard request.bodyLength <= Self.apnsMaximumPayload else { return reject(413, "PayloadTooLarge") }
        // Apple documents no reason for a body that is not a JSON object; the sandbox says BadPayload.
        guard let payload = JSONValue.parse(request.body), payload.objectValue != nil else { return reject(400, "BadPayload") }
        if isLiveActivity, let problem = Self.liveActivityProblem(payload) {
            return finish(.json(400, JSONWriter.object { w in w.member("reason", "BadPayload"); w.member("detail", problem) }.text,
                                headers: [(name: "apns-id", value: apnsID)]),
                          platform: "ios", request: request, msgID: nil, bodyJSON: nil)
        }

        if isUnregistered(token) {
            let timestamp = Int(clock() * 1000)
            return finish(.json(410, "{\"reason\":\"Unregistered\",\"timestamp\":\(timestamp)}", headers: [(name: "apns-id", value: apnsID)]),
                          platform: "ios", request: request, msgID: nil, bodyJSON: nil)
        }
        switch drawFault() {
        case .throttled:
            return finish(.json(429, #"{"reason":"TooManyRequests"}"#, headers: [(name: "apns-id", value: apnsID), retryAfterHeader()]),
                          platform: "ios", request: request, msgID: nil, bodyJSON: nil)
        case .internalError: return reject(500, "InternalServerError")
        case .unavailable: return reject(503, "ServiceUnavailable")
        case nil: break
        }
        let msgID = payload["custom"]?["i"]?.stringValue
        return finish(SandboxResponse(status: 200, headers: [(name: "apns-id", value: apnsID)]),
                      platform: "ios", request: request, msgID: msgID, bodyJSON: Self.recordBody(request.body, parsed: payload))
    }

    /// The bundle id a topic names: `com.example.app.push-type.liveactivity` → `com.example.app`.
    static func bundleID(ofTopic topic: String) -> String { APNSTopic.bundleID(topic) }

    /// What is wrong with an ActivityKit payload, if anything (Apple [A1]: `timestamp`, `event`
    /// and `content-state` always; `attributes-type`, `attributes` and `alert` on start;
    /// `dismissal-date` only on end). APNs itself accepts such a payload and the device drops
    /// it: the sandbox says so at once, as 400 `BadPayload` with a `detail`.
    static func liveActivityProblem(_ payload: JSONValue) -> String? {
        guard let aps = payload["aps"]?.objectValue else { return "aps must be an object" }
        guard let event = aps["event"]?.stringValue, ["start", "update", "end"].contains(event) else {
            return "aps.event must be start, update or end"
        }
        guard aps["timestamp"]?.numberValue != nil else { return "aps.timestamp (Unix seconds) is required" }
        guard aps["content-state"]?.objectValue != nil else { return "aps.content-state (an object) is required" }
        if event == "start" {
            guard aps["attributes-type"]?.stringValue?.isEmpty == false else { return "aps.attributes-type is required for start" }
            guard aps["attributes"]?.objectValue != nil else { return "aps.attributes (an object) is required for start" }
            guard aps["alert"] != nil else { return "aps.alert is required for start" }
        }
        if aps["dismissal-date"] != nil && event != "end" { return "aps.dismissal-date is only for end" }
        for key in ["stale-date", "dismissal-date", "relevance-score"] where aps[key] != nil && aps[key]?.numberValue == nil {
            return "aps.\(key) must be a number"
        }
        return nil
    }

    /// Checks an APNs provider token (ES256 JWT, header `kid`, claims `iss` = team and numeric `iat`).
    func checkProviderToken(_ token: String) -> APNSTokenCheck {
        if let cached = apnsTokenCache[token] {
            return isExpired(issuedAt: cached.issuedAt) ? .expired : .valid(cached.key)
        }
        guard let parts = JWT.parse(token), let header = JSONValue.parse(parts.header), let claims = JSONValue.parse(parts.claims),
              header["alg"]?.stringValue == "ES256", let keyID = header["kid"]?.stringValue,
              let issuer = claims["iss"]?.stringValue, let issuedAt = claims["iat"]?.numberValue,
              let candidates = trust.apnsKeys[keyID]
        else { return .invalid }
        guard let key = candidates.first(where: { $0.teamID == issuer }), JWT.verifyES256(token, key: key.publicKey) else { return .invalid }
        // A token dated in the future is not valid (allow one minute of clock skew).
        guard issuedAt <= clock() + 60 else { return .invalid }
        if apnsTokenCache.count >= Self.cacheLimit { apnsTokenCache.removeAll() }
        apnsTokenCache[token] = (key, issuedAt)
        return isExpired(issuedAt: issuedAt) ? .expired : .valid(key)
    }

    /// Older than an hour, or issued before the `expireProviderTokensIssuedBefore` fault.
    private func isExpired(issuedAt: Double) -> Bool {
        clock() - issuedAt > Self.apnsTokenLifetime || issuedAt < faults.expireProviderTokensIssuedBefore
    }

    /// A device token: hex, even length, at least 64 characters (32 bytes).
    static func isDeviceToken(_ token: Substring) -> Bool {
        token.utf8.count >= 64 && token.utf8.count % 2 == 0 && token.utf8.count <= 400 && token.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
        }
    }

    /// The canonical 8-4-4-4-12 hexadecimal form.
    static func isUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                if byte != UInt8(ascii: "-") { return false }
            } else if !((0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)) {
                return false
            }
        }
        return true
    }
}
