/// VAPID (RFC 8292): `Authorization: vapid t=<JWT>, k=<base64url public key>`.
public enum VAPID {
    /// JWT header {"typ":"JWT","alg":"ES256"}, claims {"aud": audience origin, "exp": unix seconds, "sub": subject}.
    ///
    /// `audience` is the push service's origin (`https://fcm.googleapis.com`, no path);
    /// `expiresAt` must be < 24 h ahead (RFC 8292 §2); `subject` a `mailto:` or `https:` URL.
    public static func authorization(audience: String, subject: String, expiresAt: Int, key: P256PrivateKey) throws(CryptoError) -> String {
        let claims = "{\"aud\":\(jsonString(audience)),\"exp\":\(expiresAt),\"sub\":\(jsonString(subject))}"
        let token = try JWT.signES256(headerJSON: #"{"typ":"JWT","alg":"ES256"}"#, claimsJSON: claims, key: key)
        return "vapid t=\(token), k=\(Base64URL.encode(key.publicKey.uncompressed))"
    }

    /// A JSON string literal (RFC 8259 §7).
    static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
