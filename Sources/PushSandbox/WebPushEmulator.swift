import PushCore
import PushCrypto
import PushEncoding

/// Web Push service emulation (`POST /wp/<id>`): RFC 8030 delivery, RFC 8292 VAPID, RFC 8291/8188 aes128gcm.
/// Error bodies follow Mozilla autopush's `{"code","errno","error","message"}`.
extension SandboxRouter {
    /// Largest request body accepted: 4096 bytes (RFC 8291 §4 ⇒ 3993 bytes of plaintext).
    static let webPushMaximumBody = 4096
    /// VAPID tokens may not expire more than 24 hours ahead (RFC 8292 §2).
    static let vapidMaximumLifetime = 86400.0

    func handleWebPush(_ request: SandboxRequest) -> SandboxResponse {
        func reply(_ status: Int, _ error: String, _ message: String) -> SandboxResponse {
            let body = JSONWriter.object { w in
                w.member("code", status); w.member("errno", status == 410 ? 106 : 0)
                w.member("error", error); w.member("message", message)
            }.text
            return finish(.json(status, body), platform: "web", request: request, msgID: nil, bodyJSON: nil)
        }
        let id = request.pathWithoutQuery.dropFirst("/wp/".count)
        guard SandboxSubscriptions.isValidID(id) else { return reply(404, "Not Found", "No such subscription") }
        guard request.method == "POST" else { return reply(405, "Method Not Allowed", "POST required") }
        if !configuration.isAuthDisabled {
            guard let authorization = request.header("authorization") else { return reply(401, "Unauthorized", "Missing VAPID authorization") }
            switch checkVAPID(authorization) {
            case .malformed: return reply(401, "Unauthorized", "Invalid authorization header: expected vapid t=<JWT>, k=<key>")
            case .rejected(let reason): return reply(403, "Forbidden", reason)
            case .valid: break
            }
        }
        // RFC 8030 §5.2: TTL is required.
        guard let ttl = request.header("ttl") else { return reply(400, "Bad Request", "Missing TTL header") }
        guard !ttl.isEmpty, ttl.utf8.count <= 10, ttl.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return reply(400, "Bad Request", "Invalid TTL header") }
        if let urgency = request.header("urgency"), !["very-low", "low", "normal", "high"].contains(urgency) {
            return reply(400, "Bad Request", "Invalid Urgency header")
        }
        if let topic = request.header("topic"), topic.utf8.count > 32 || !SandboxSubscriptions.isValidID(topic[...]) {
            return reply(400, "Bad Request", "Invalid Topic header")
        }
        guard request.bodyLength <= Self.webPushMaximumBody else { return reply(413, "Payload Too Large", "Body is too large") }
        var plaintext: [UInt8]?
        if request.bodyLength > 0 {
            guard request.header("content-encoding")?.lowercased() == "aes128gcm" else {
                return reply(400, "Bad Request", "Unknown Content-Encoding (expected aes128gcm)")
            }
        }
        if isUnregistered(id) { return reply(410, "Gone", "Request did not validate No such subscription") }
        if request.bodyLength > 0 {
            guard let keys = subscriptionKeys(id: String(id)) else { return reply(500, "Internal Server Error", "Key derivation failed") }
            guard let decrypted = try? WebPushEncryption.decrypt(request.body, userAgentPrivateKey: keys.privateKey, authSecret: keys.auth) else {
                return reply(400, "Bad Request", "Decryption failed (aes128gcm with the subscription keys)")
            }
            plaintext = decrypted
        }
        switch drawFault() {
        case .throttled:
            let body = #"{"code":429,"errno":0,"error":"Too Many Requests","message":"Slow down"}"#
            return finish(.json(429, body, headers: [retryAfterHeader()]), platform: "web", request: request, msgID: nil, bodyJSON: nil)
        case .internalError: return reply(500, "Internal Server Error", "Injected error")
        case .unavailable: return reply(503, "Service Unavailable", "Injected error")
        case nil: break
        }
        var msgID: String?
        var bodyJSON: [UInt8]?
        if let plaintext {
            let parsed = JSONValue.parse(plaintext)
            msgID = parsed?["msgId"]?.stringValue
            bodyJSON = Self.recordBody(plaintext, parsed: parsed)
        }
        let location = "\(configuration.origin)/m/\(makeUUID().lowercased())"
        return finish(SandboxResponse(status: 201, headers: [(name: "location", value: location), (name: "ttl", value: ttl)]),
                      platform: "web", request: request, msgID: msgID, bodyJSON: bodyJSON)
    }

    enum VAPIDCheck { case valid, malformed, rejected(String) }

    /// Checks `Authorization: vapid t=<JWT>, k=<base64url P-256 key>` (RFC 8292 §3).
    func checkVAPID(_ authorization: String) -> VAPIDCheck {
        let now = clock()
        if let expiresAt = vapidCache[authorization] {
            return expiresAt > now ? .valid : .rejected("VAPID token expired")
        }
        let scheme = authorization.prefix { $0 != " " }
        guard scheme.lowercased() == "vapid" else { return .malformed }
        var token: String?, key: String?
        for part in authorization.dropFirst(scheme.count).split(separator: ",") {
            let trimmed = part.trimmingSpaces
            if trimmed.hasPrefix("t=") { token = String(trimmed.dropFirst(2)) }
            if trimmed.hasPrefix("k=") { key = String(trimmed.dropFirst(2)) }
        }
        guard let token, let key, let keyBytes = Base64URL.decode(key, .lenient), let publicKey = try? P256PublicKey(uncompressed: keyBytes) else { return .malformed }
        guard let parts = JWT.parse(token), let header = JSONValue.parse(parts.header), let claims = JSONValue.parse(parts.claims) else { return .malformed }
        guard header["alg"]?.stringValue == "ES256", JWT.verifyES256(token, key: publicKey) else { return .rejected("VAPID signature does not verify with k") }
        guard let audience = claims["aud"]?.stringValue, audience == configuration.origin else {
            return .rejected("VAPID aud must be \(configuration.origin)")
        }
        guard let expiresAt = claims["exp"]?.numberValue, expiresAt > now else { return .rejected("VAPID token expired") }
        guard expiresAt <= now + Self.vapidMaximumLifetime else { return .rejected("VAPID exp is more than 24 hours ahead") }
        guard let subject = claims["sub"]?.stringValue, subject.hasPrefix("mailto:") || subject.hasPrefix("https:") else {
            return .rejected("VAPID sub must be a mailto: or https: URL")
        }
        if vapidCache.count >= Self.cacheLimit { vapidCache.removeAll() }
        vapidCache[authorization] = expiresAt
        return .valid
    }

    func subscriptionKeys(id: String) -> (privateKey: P256PrivateKey, auth: [UInt8])? {
        if let keys = subscriptionKeys[id] { return keys }
        guard let keys = try? SandboxSubscriptions.keys(seed: configuration.seed, id: id) else { return nil }
        if subscriptionKeys.count >= Self.cacheLimit * 16 { subscriptionKeys.removeAll() }
        subscriptionKeys[id] = keys
        return keys
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return text
    }
}
