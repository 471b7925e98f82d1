import PushCore
import PushEncoding

/// Compact JWS (RFC 7515 §7.1) with ES256 or RS256 (RFC 7518 §3.3–3.4). Header and claims
/// are passed as already-serialized JSON object text; verification checks the signature
/// with the algorithm the caller names, never the token's own `alg`.
public enum JWT {
    public static func signES256(headerJSON: String, claimsJSON: String, key: P256PrivateKey) throws(CryptoError) -> String {
        let input = signingInput(headerJSON: headerJSON, claimsJSON: claimsJSON)
        let signature = try key.signES256(Array(input.utf8))
        return input + "." + Base64URL.encode(signature)
    }

    public static func signRS256(headerJSON: String, claimsJSON: String, key: RSAPrivateKey) throws(CryptoError) -> String {
        let input = signingInput(headerJSON: headerJSON, claimsJSON: claimsJSON)
        let signature = try key.signRS256(Array(input.utf8))
        return input + "." + Base64URL.encode(signature)
    }

    /// Splits and base64url-decodes; nil if malformed (not three parts, padding, characters
    /// outside the URL-safe alphabet, empty header or claims). `signingInput` is the ASCII "<h>.<c>".
    public static func parse(_ token: String) -> (header: [UInt8], claims: [UInt8], signingInput: [UInt8], signature: [UInt8])? {
        let bytes = Array(token.utf8)
        guard let firstDot = bytes.firstIndex(of: UInt8(ascii: ".")) else { return nil }
        guard let secondDot = bytes[(firstDot + 1)...].firstIndex(of: UInt8(ascii: ".")) else { return nil }
        guard bytes[(secondDot + 1)...].firstIndex(of: UInt8(ascii: ".")) == nil else { return nil }
        guard firstDot > 0, secondDot > firstDot + 1,
              let header = Base64URL.decode(utf8: bytes[..<firstDot], .strict),
              let claims = Base64URL.decode(utf8: bytes[(firstDot + 1)..<secondDot], .strict),
              let signature = Base64URL.decode(utf8: bytes[(secondDot + 1)...], .strict)
        else { return nil }
        return (header, claims, Array(bytes[..<secondDot]), signature)
    }

    public static func verifyES256(_ token: String, key: P256PublicKey) -> Bool {
        guard let parts = parse(token) else { return false }
        return key.verifyES256(signature: parts.signature, message: parts.signingInput)
    }

    public static func verifyRS256(_ token: String, key: RSAPublicKey) -> Bool {
        guard let parts = parse(token) else { return false }
        return key.verifyRS256(signature: parts.signature, message: parts.signingInput)
    }

    private static func signingInput(headerJSON: String, claimsJSON: String) -> String {
        Base64URL.encode(headerJSON.utf8) + "." + Base64URL.encode(claimsJSON.utf8)
    }
}
