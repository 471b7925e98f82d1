import Foundation
import PushCore
import Testing
@testable import PushCrypto
import PushEncoding

@Suite("JWT and VAPID")
struct JWTTests {
    @Test("sign ES256 then parse gives back header and claims")
    func signParse() throws {
        let key = try P256PrivateKey.generate()
        let token = try JWT.signES256(headerJSON: #"{"alg":"ES256","kid":"K"}"#, claimsJSON: #"{"iss":"T","iat":1}"#, key: key)
        let parts = try #require(JWT.parse(token))
        #expect(String(decoding: parts.header, as: UTF8.self) == #"{"alg":"ES256","kid":"K"}"#)
        #expect(String(decoding: parts.claims, as: UTF8.self) == #"{"iss":"T","iat":1}"#)
        #expect(parts.signature.count == 64)
        #expect(String(decoding: parts.signingInput, as: UTF8.self) == token.split(separator: ".").prefix(2).joined(separator: "."))
        #expect(JWT.verifyES256(token, key: key.publicKey))
    }

    @Test("parse refuses malformed tokens", arguments: [
        "", "a", "a.b", "a.b.c.d", ".eyJ9.c2ln", "eyJ9..c2ln", "eyJ9.eyJ9.c2ln=", "eyJ9.ey+9.c2ln", "eyJ9.eyJ9.c2 ln", "e.eyJ9.c2ln",
    ])
    func parseRefuses(token: String) {
        #expect(JWT.parse(token) == nil)
    }

    @Test("verify refuses a token with a swapped signature part")
    func swappedSignature() throws {
        let key = try P256PrivateKey.generate()
        let a = try JWT.signES256(headerJSON: "{}", claimsJSON: #"{"n":1}"#, key: key)
        let b = try JWT.signES256(headerJSON: "{}", claimsJSON: #"{"n":2}"#, key: key)
        let mixed = a.split(separator: ".").prefix(2).joined(separator: ".") + "." + (b.split(separator: ".").last ?? "")
        #expect(!JWT.verifyES256(mixed, key: key.publicKey))
        #expect(!JWT.verifyES256("garbage", key: key.publicKey))
    }

    @Test("VAPID header is 'vapid t=<JWT>, k=<key>' with aud, exp and sub claims (RFC 8292)")
    func vapidShape() throws {
        let key = try P256PrivateKey.generate()
        let header = try VAPID.authorization(audience: "https://fcm.googleapis.com", subject: "mailto:ops@example.com", expiresAt: 1_800_000_000, key: key)
        #expect(header.hasPrefix("vapid t="))
        let fields = header.dropFirst("vapid ".count).components(separatedBy: ", ")
        #expect(fields.count == 2)
        let token = String(try #require(fields.first).dropFirst(2))
        let k = try #require(fields.last)
        #expect(k == "k=" + Base64URL.encode(key.publicKey.uncompressed))
        #expect(JWT.verifyES256(token, key: key.publicKey))
        let parts = try #require(JWT.parse(token))
        let headerObject = try #require(try JSONSerialization.jsonObject(with: Data(parts.header)) as? [String: Any])
        #expect(headerObject["alg"] as? String == "ES256")
        #expect(headerObject["typ"] as? String == "JWT")
        let claims = try #require(try JSONSerialization.jsonObject(with: Data(parts.claims)) as? [String: Any])
        #expect(claims["aud"] as? String == "https://fcm.googleapis.com")
        #expect(claims["exp"] as? Int == 1_800_000_000)
        #expect(claims["sub"] as? String == "mailto:ops@example.com")
    }

    @Test("VAPID authorization parses back into token and key, in either order")
    func vapidParse() throws {
        let key = try P256PrivateKey.generate()
        let header = try VAPID.authorization(audience: "https://push.example", subject: "mailto:a@b.example", expiresAt: 2, key: key)
        let parsed = try #require(VAPID.parseAuthorization(header))
        #expect(parsed.publicKey == key.publicKey.uncompressed)
        #expect(JWT.verifyES256(parsed.token, key: try P256PublicKey(uncompressed: parsed.publicKey)))
        let k = Base64URL.encode(key.publicKey.uncompressed)
        let swapped = try #require(VAPID.parseAuthorization("Vapid k=\(k) ,t=\(parsed.token)"))
        #expect(swapped.token == parsed.token)
        for bad in ["", "vapid", "Bearer \(parsed.token)", "vapid t=\(parsed.token)", "vapid k=\(k)", "vapid t=, k=\(k)",
                    "vapid t=\(parsed.token), k=AAAA", "vapid t=\(parsed.token), k=\(k)!"] {
            #expect(VAPID.parseAuthorization(bad) == nil, "\(bad)")
        }
    }

    @Test("VAPID claims escape JSON specials in subject and audience")
    func vapidEscapes() throws {
        let key = try P256PrivateKey.generate()
        let header = try VAPID.authorization(audience: "https://a.example", subject: "mailto:\"x\"\\y\n@example.com", expiresAt: 1, key: key)
        let token = String(header.dropFirst("vapid t=".count).prefix { $0 != "," })
        let parts = try #require(JWT.parse(token))
        let claims = try #require(try JSONSerialization.jsonObject(with: Data(parts.claims)) as? [String: Any])
        #expect(claims["sub"] as? String == "mailto:\"x\"\\y\n@example.com")
    }
}
