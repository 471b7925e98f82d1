import PushCore
import PushEncoding

/// VAPID (RFC 8292): `Authorization: vapid t=<JWT>, k=<base64url public key>`.
public enum VAPID {
    /// JWT header {"typ":"JWT","alg":"ES256"}, claims {"aud": audience origin, "exp": unix seconds, "sub": subject}.
    ///
    /// `audience` is the push service's origin (`https://fcm.googleapis.com`, no path);
    /// `expiresAt` must be < 24 h ahead (RFC 8292 §2); `subject` a `mailto:` or `https:` URL.
    public static func authorization(audience: String, subject: String, expiresAt: Int, key: P256PrivateKey) throws(CryptoError) -> String {
        let claims = JSONWriter.object { w in
            w.member("aud", audience)
            w.member("exp", expiresAt)
            w.member("sub", subject)
        }.text
        let token = try JWT.signES256(headerJSON: #"{"typ":"JWT","alg":"ES256"}"#, claimsJSON: claims, key: key)
        return "vapid t=\(token), k=\(Base64URL.encode(key.publicKey.uncompressed))"
    }

    /// Splits an `Authorization: vapid t=<JWT>, k=<key>` value (RFC 8292 §3; parameters in
    /// any order, scheme case-insensitive). nil unless both are present and `k` is a valid
    /// base64url 65-byte uncompressed P-256 point. The JWT is not verified here: use
    /// `JWT.verifyES256(token, key: P256PublicKey(uncompressed: publicKey))`.
    public static func parseAuthorization(_ value: String) -> (token: String, publicKey: [UInt8])? {
        let trimmed = value.drop { $0 == " " }
        guard trimmed.count > 6, trimmed.prefix(6).lowercased() == "vapid " else { return nil }
        var token: String?
        var key: [UInt8]?
        for parameter in trimmed.dropFirst(6).split(separator: ",") {
            let field = parameter.trimmingSpaces()
            guard let equals = field.firstIndex(of: "=") else { return nil }
            let name = field[..<equals].lowercased()
            let content = String(field[field.index(after: equals)...])
            switch name {
            case "t": token = content
            case "k": key = Base64URL.decode(content, .lenient)
            default: continue
            }
        }
        guard let token, !token.isEmpty, let key, key.count == 65, key.first == 0x04 else { return nil }
        return (token, key)
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
