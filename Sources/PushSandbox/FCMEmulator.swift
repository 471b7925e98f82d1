import PushCore
import PushCrypto
import PushEncoding

/// FCM HTTP v1 emulation: the OAuth 2.0 JWT-bearer grant at `token_uri` (RFC 7523) and
/// `POST /v1/projects/<project>/messages:send` to a token, a topic or a condition (docs/providers.md "FCM topics and conditions"), with
/// Google's error format (google.rpc.Status + FcmError).
extension SandboxRouter {
    static let fcmScope = "https://www.googleapis.com/auth/firebase.messaging"
    /// Lifetime of issued access tokens, as Google reports it: 3599 s.
    static let fcmAccessTokenLifetime = 3599
    /// FCM's message size limit (data keys + values, and here the whole body): 4096 bytes.
    static let fcmMaximumMessage = 4096
    /// FCM's limit on the data keys + values of a topic or condition message: 2048 bytes.
    static let fcmMaximumTopicData = 2048
    static let fcmReservedDataKeys: Set<String> = ["from", "message_type", "collapse_key"]

    func handleFCMToken(_ request: SandboxRequest) -> SandboxResponse {
        state.countTokenRequest()
        func grantError(_ error: String, _ description: String) -> SandboxResponse {
            .json(400, JSONWriter.object { w in w.member("error", error); w.member("error_description", description) }.text, isProviderResponse: false)
        }
        guard request.method == "POST" else { return .json(405, #"{"error":"invalid_request","error_description":"POST required"}"#, isProviderResponse: false) }
        let form = Self.parseForm(request.body)
        guard let grantType = form["grant_type"] else { return grantError("invalid_request", "Missing required parameter: grant_type") }
        guard grantType == "urn:ietf:params:oauth:grant-type:jwt-bearer" else { return grantError("unsupported_grant_type", "Invalid grant_type: \(grantType)") }
        guard let assertion = form["assertion"] else { return grantError("invalid_request", "Missing required parameter: assertion") }
        guard let parts = JWT.parse(assertion), let header = JSONValue.parse(parts.header), let claims = JSONValue.parse(parts.claims),
              header["alg"]?.stringValue == "RS256" else { return grantError("invalid_grant", "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe") }
        guard let issuer = claims["iss"]?.stringValue, let account = trust.fcmAccounts[issuer] else {
            return grantError("invalid_grant", "Invalid grant: account not found")
        }
        guard JWT.verifyRS256(assertion, key: account.publicKey) else { return grantError("invalid_grant", "Invalid JWT Signature.") }
        if let keyID = header["kid"]?.stringValue, !account.privateKeyID.isEmpty, keyID != account.privateKeyID {
            return grantError("invalid_grant", "Invalid JWT Signature.")
        }
        guard claims["aud"]?.stringValue == account.tokenURI else { return grantError("invalid_grant", "Invalid JWT: Failed audience check.") }
        let scopes = claims["scope"]?.stringValue?.split(separator: " ").map(String.init) ?? []
        guard scopes.contains(Self.fcmScope) || scopes.contains("https://www.googleapis.com/auth/cloud-platform") else {
            return grantError("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        }
        let now = clock()
        guard let issuedAt = claims["iat"]?.numberValue, let expiresAt = claims["exp"]?.numberValue,
              expiresAt > issuedAt, expiresAt - issuedAt <= 3600, issuedAt <= now + 60, expiresAt > now else {
            return grantError("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
        }
        let accessToken = "ya29.sandbox." + Base64URL.encode(SecureRandom.bytes(24))
        state.issueAccessToken(accessToken, project: account.projectID, expiresAt: Int(now) + Self.fcmAccessTokenLifetime)
        return .json(200, "{\"access_token\":\"\(accessToken)\",\"expires_in\":\(Self.fcmAccessTokenLifetime),\"token_type\":\"Bearer\"}", isProviderResponse: false)
    }

    /// Google's error body: `{"error":{"code","message","status","details":[FcmError]}}`.
    static func fcmError(_ code: Int, _ status: String, _ message: String, errorCode: String?) -> String {
        JSONWriter.object { w in
            w.member("error") { e in
                e.member("code", code)
                e.member("message", message)
                e.member("status", status)
                if let errorCode {
                    e.key("details")
                    e.beginArray()
                    e.beginObject()
                    e.member("@type", "type.googleapis.com/google.firebase.fcm.v1.FcmError")
                    e.member("errorCode", errorCode)
                    e.endObject()
                    e.endArray()
                }
            }
        }.text
    }

    func handleFCMSend(_ request: SandboxRequest) -> SandboxResponse {
        func reply(_ code: Int, _ status: String, _ message: String, errorCode: String?, headers: [(name: String, value: String)] = []) -> SandboxResponse {
            finish(.json(code, Self.fcmError(code, status, message, errorCode: errorCode), headers: headers),
                   platform: "android", request: request, msgID: nil, bodyJSON: nil)
        }
        let path = request.pathWithoutQuery
        let rest = path.dropFirst("/v1/projects/".count)
        guard rest.hasSuffix("/messages:send") else { return reply(404, "NOT_FOUND", "Requested entity was not found.", errorCode: nil) }
        let project = String(rest.dropLast("/messages:send".count))
        guard !project.isEmpty, !project.contains("/") else { return reply(404, "NOT_FOUND", "Requested entity was not found.", errorCode: nil) }
        guard request.method == "POST" else { return reply(405, "METHOD_NOT_ALLOWED", "Method not allowed.", errorCode: nil) }

        if !configuration.isAuthDisabled {
            let unauthenticated = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
            guard let authorization = request.header("authorization") else { return reply(401, "UNAUTHENTICATED", unauthenticated, errorCode: nil) }
            let parts = authorization.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer", let issued = state.accessToken(String(parts[1])),
                  Double(issued.expiresAt) > clock() else {
                return reply(401, "UNAUTHENTICATED", unauthenticated, errorCode: nil)
            }
            if state.takeFCMUnauthenticatedOnce(scope: faultScope) {
                state.revokeAccessToken(String(parts[1]))
                return reply(401, "UNAUTHENTICATED", unauthenticated, errorCode: nil)
            }
            guard issued.project == project else {
                return reply(403, "PERMISSION_DENIED", "Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist).", errorCode: "SENDER_ID_MISMATCH")
            }
        }
        func invalid(_ message: String) -> SandboxResponse { reply(400, "INVALID_ARGUMENT", message, errorCode: "INVALID_ARGUMENT") }
        guard request.bodyLength <= Self.fcmMaximumMessage else { return invalid("Message is too big") }
        guard let body = JSONValue.parse(request.body), let message = body["message"], message.objectValue != nil else {
            return invalid("Invalid JSON payload received. Unknown name or missing \"message\".")
        }
        // `token`, `topic`, `condition`: FCM v1 Message's union field `target`, exactly one.
        let targets = ["token", "topic", "condition"].filter { message[$0] != nil && message[$0] != .null }
        guard targets.count <= 1 else {
            return invalid("Invalid value at 'message' (oneof field 'target' is already set. Cannot set '\(targets[1])')")
        }
        guard let target = targets.first, let targetValue = message[target]?.stringValue, !targetValue.isEmpty else {
            return invalid("Recipient of the message is not set.")
        }
        var token: String?
        switch target {
        case "token":
            guard Self.isRegistrationToken(targetValue) else { return invalid("The registration token is not a valid FCM registration token") }
            token = targetValue
        case "topic":
            // The REST reference: the "/topics/" prefix "should not be provided"; the sandbox refuses it.
            guard FCMTopicName.problem(targetValue) == nil else { return invalid("Invalid topic name: \(targetValue)") }
        default:
            if case .failure(let error) = FCMCondition.topics(in: targetValue) {
                return invalid("Invalid condition expression provided: \(error.reason)")
            }
        }
        // Topic and condition messages carry at most 2048 bytes of data (FCM ErrorCode reference).
        let dataLimit = token == nil ? Self.fcmMaximumTopicData : Self.fcmMaximumMessage
        var msgID: String?
        if let data = message["data"] {
            guard let members = data.objectValue?.members else { return invalid("Invalid value at 'message.data' (type.googleapis.com/google.firebase.fcm.v1.Message.DataEntry), expected a map of strings") }
            var size = 0
            for (key, value) in members {
                guard let text = value.stringValue else {
                    return invalid("Invalid value at 'message.data[\(key)].value' (TYPE_STRING), expected a string")
                }
                if Self.fcmReservedDataKeys.contains(key) || key.hasPrefix("google.") || key.hasPrefix("gcm.") {
                    return invalid("Invalid data payload key: \(key)")
                }
                size += key.utf8.count + text.utf8.count
                if key == "on.msgId" { msgID = text }
            }
            guard size <= dataLimit else { return invalid("Message is too big") }
        }
        if let android = message["android"] {
            if let priority = android["priority"], !["NORMAL", "HIGH", "normal", "high"].contains(priority.stringValue ?? "") {
                return invalid("Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority)")
            }
            if let ttl = android["ttl"], !Self.isDuration(ttl.stringValue ?? "") {
                return invalid("Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration)")
            }
        }
        if let token, isUnregistered(token[...]) { return reply(404, "NOT_FOUND", "Requested entity was not found.", errorCode: "UNREGISTERED") }
        switch drawFault() {
        case .throttled:
            return reply(429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Send requests' of service 'fcm.googleapis.com'.", errorCode: "QUOTA_EXCEEDED", headers: [retryAfterHeader()])
        case .internalError: return reply(500, "INTERNAL", "Internal error encountered.", errorCode: "INTERNAL")
        case .unavailable: return reply(503, "UNAVAILABLE", "The service is currently unavailable.", errorCode: "UNAVAILABLE")
        case nil: break
        }
        // `validate_only` (FCM v1 Message): checked like a send, never delivered nor recorded.
        if body["validate_only"] == .bool(true) {
            return .json(200, JSONWriter.object { w in w.member("name", "projects/\(project)/messages/fake_message_id") }.text)
        }
        let name = "projects/\(project)/messages/0:\(Int(clock() * 1000))\(String(random.next() % 1_000_000))"
        return finish(.json(200, JSONWriter.object { w in w.member("name", name) }.text), platform: "android", request: request, msgID: msgID,
                      bodyJSON: Self.recordBody(request.body, parsed: body))
    }

    /// FCM registration tokens use `[A-Za-z0-9_:-]`, at most 4 KiB here.
    static func isRegistrationToken(_ token: String) -> Bool {
        token.utf8.count <= 4096 && token.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "-")
        }
    }

    /// A protobuf JSON Duration: seconds with up to nine fractional digits and an `s` suffix ("3.5s").
    static func isDuration(_ text: String) -> Bool {
        guard text.hasSuffix("s") else { return false }
        let number = text.dropLast()
        let parts = number.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, let whole = parts.first, !whole.isEmpty, whole.allSatisfy(\.isASCII), whole.allSatisfy(\.isNumber) else { return false }
        if parts.count == 2 { return !parts[1].isEmpty && parts[1].count <= 9 && parts[1].allSatisfy { $0.isASCII && $0.isNumber } }
        return true
    }

    /// `application/x-www-form-urlencoded` pairs (later duplicates ignored).
    static func parseForm(_ body: [UInt8]) -> [String: String] {
        var result: [String: String] = [:]
        for pair in body.split(separator: UInt8(ascii: "&")) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = percentDecode(parts[0]) else { continue }
            let value = parts.count > 1 ? percentDecode(parts[1]) : ""
            if result[name] == nil, let value { result[name] = value }
        }
        return result
    }

    private static func percentDecode(_ bytes: ArraySlice<UInt8>) -> String? {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "+") {
                output.append(0x20)
            } else if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) else { return nil }
                output.append(high << 4 | low)
                index += 2
            } else {
                output.append(byte)
            }
            index += 1
        }
        return String(validating: output, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x41...0x46: return byte - 0x41 + 10
        case 0x61...0x66: return byte - 0x61 + 10
        default: return nil
        }
    }
}
