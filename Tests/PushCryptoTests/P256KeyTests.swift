import Testing
@testable import PushCrypto

/// RFC 7515 Appendix A.3 (ES256) key and compact JWS.
enum RFC7515A3 {
    static let x = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"
    static let y = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"
    static let d = "jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"
    static let token = "eyJhbGciOiJFUzI1NiJ9"
        + ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
        + ".DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"
}

@Suite("P-256 keys and ES256")
struct P256KeyTests {
    @Test("a raw scalar yields the RFC 7515 A.3 public key and round-trips")
    func rawScalar() throws {
        let key = try P256PrivateKey(rawScalar: b64(RFC7515A3.d))
        #expect(key.rawScalar == b64(RFC7515A3.d))
        #expect(key.publicKey.uncompressed == [0x04] + b64(RFC7515A3.x) + b64(RFC7515A3.y))
    }

    @Test("verifies the RFC 7515 A.3 ES256 JWS")
    func verifiesRFCVector() throws {
        let publicKey = try P256PublicKey(uncompressed: [0x04] + b64(RFC7515A3.x) + b64(RFC7515A3.y))
        #expect(JWT.verifyES256(RFC7515A3.token, key: publicKey))
        let tampered = RFC7515A3.token.replacingOccurrences(of: "eyJpc3MiOiJqb2", with: "eyJpc3MiOiJqb3")
        #expect(!JWT.verifyES256(tampered, key: publicKey))
    }

    @Test("verifies an ES256 JWT signed by the openssl CLI, with SEC 1, PKCS#8 and SPKI PEMs")
    func verifiesOpenSSLToken() throws {
        let sec1 = try P256PrivateKey(pem: OpenSSLCLIFixtures.ecSEC1PEM)
        let pkcs8 = try P256PrivateKey(pem: OpenSSLCLIFixtures.ecPKCS8PEM)
        let spki = try P256PublicKey(pem: OpenSSLCLIFixtures.ecPublicPEM)
        #expect(sec1.rawScalar == pkcs8.rawScalar)
        #expect(sec1.publicKey.uncompressed == spki.uncompressed)
        #expect(try sec1.publicKey.pem() == OpenSSLCLIFixtures.ecPublicPEM + "\n")
        #expect(JWT.verifyES256(OpenSSLCLIFixtures.es256Token, key: spki))
        #expect(JWT.verifyES256(OpenSSLCLIFixtures.es256Token, key: pkcs8.publicKey))
        let parts = try #require(JWT.parse(OpenSSLCLIFixtures.es256Token))
        #expect(String(decoding: parts.header, as: UTF8.self) == #"{"alg":"ES256","kid":"ABC123DEFG"}"#)
        #expect(String(decoding: parts.claims, as: UTF8.self) == #"{"iss":"DEF123GHIJ","iat":1700000000}"#)
    }

    @Test("sign then verify; a signature is 64 bytes; tampering fails")
    func signVerify() throws {
        let key = try P256PrivateKey.generate()
        let message = Array("header.claims".utf8)
        let signature = try key.signES256(message)
        #expect(signature.count == 64)
        #expect(key.publicKey.verifyES256(signature: signature, message: message))
        #expect(!key.publicKey.verifyES256(signature: signature, message: Array("header.claimz".utf8)))
        var flipped = signature
        flipped[10] ^= 0x01
        #expect(!key.publicKey.verifyES256(signature: flipped, message: message))
        #expect(!key.publicKey.verifyES256(signature: Array(signature.prefix(63)), message: message))
        #expect(!key.publicKey.verifyES256(signature: [UInt8](repeating: 0, count: 64), message: message))
        #expect(!key.publicKey.verifyES256(signature: [UInt8](repeating: 0xFF, count: 64), message: message))
        let other = try P256PrivateKey.generate()
        #expect(!other.publicKey.verifyES256(signature: signature, message: message))
    }

    @Test("signs an empty message")
    func signEmpty() throws {
        let key = try P256PrivateKey.generate()
        let signature = try key.signES256([])
        #expect(key.publicKey.verifyES256(signature: signature, message: []))
    }

    @Test("PKCS#8 PEM export round-trips")
    func pemRoundTrip() throws {
        let key = try P256PrivateKey.generate()
        let pem = try key.pkcs8PEM()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let parsed = try P256PrivateKey(pem: pem)
        #expect(parsed.rawScalar == key.rawScalar)
        #expect(parsed.publicKey.uncompressed == key.publicKey.uncompressed)
        let signature = try parsed.signES256([1, 2, 3])
        #expect(key.publicKey.verifyES256(signature: signature, message: [1, 2, 3]))
    }

    @Test("parses an APNs-style .p8 (PKCS#8 with surrounding whitespace and CRLF)")
    func parsesP8() throws {
        let crlf = "\n\n" + OpenSSLCLIFixtures.ecPKCS8PEM.replacingOccurrences(of: "\n", with: "\r\n") + "\r\n"
        let key = try P256PrivateKey(pem: crlf)
        #expect(key.publicKey.uncompressed.count == 65)
    }

    @Test("a PKCS#8 key without the optional public key still yields its public key")
    func pkcs8WithoutPublicKey() throws {
        let key = try P256PrivateKey(pem: OpenSSLCLIFixtures.ecPKCS8NoPublicPEM)
        let full = try P256PrivateKey(pem: OpenSSLCLIFixtures.ecSEC1PEM)
        #expect(key.publicKey.uncompressed == full.publicKey.uncompressed)
        #expect(JWT.verifyES256(OpenSSLCLIFixtures.es256Token, key: key.publicKey))
    }

    @Test("ECDH agrees from both sides")
    func ecdh() throws {
        let a = try P256PrivateKey.generate()
        let b = try P256PrivateKey.generate()
        let ab = try a.sharedSecret(with: b.publicKey)
        #expect(ab.count == 32)
        #expect(ab == (try b.sharedSecret(with: a.publicKey)))
    }

    @Test("refuses wrong-length or out-of-range scalars", arguments: [
        [UInt8](), [UInt8](repeating: 1, count: 31), [UInt8](repeating: 1, count: 33),
        [UInt8](repeating: 0, count: 32), [UInt8](repeating: 0xFF, count: 32),
    ])
    func refusesBadScalar(scalar: [UInt8]) {
        #expect(throws: CryptoError.self) { try P256PrivateKey(rawScalar: scalar) }
    }

    @Test("refuses malformed public points")
    func refusesBadPoints() throws {
        let good = try P256PrivateKey.generate().publicKey.uncompressed
        var offCurve = good
        offCurve[64] ^= 0x01
        var compressedTag = good
        compressedTag[0] = 0x02
        for bad in [[], Array(good.prefix(64)), good + [0], offCurve, compressedTag, [UInt8](repeating: 0, count: 65)] {
            #expect(throws: CryptoError.self) { try P256PublicKey(uncompressed: bad) }
        }
    }

    struct BadPEM: CustomTestStringConvertible, Sendable {
        let label: String
        let text: String
        var testDescription: String { label }
    }

    @Test("refuses garbage, RSA and public-key PEMs as a P-256 private key", arguments: [
        BadPEM(label: "empty", text: ""),
        BadPEM(label: "no PEM", text: "garbage"),
        BadPEM(label: "truncated DER", text: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
        BadPEM(label: "bad base64", text: "-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n"),
        BadPEM(label: "RSA key", text: OpenSSLCLIFixtures.rsaTraditionalPEM),
        BadPEM(label: "public key", text: OpenSSLCLIFixtures.ecPublicPEM),
        BadPEM(label: "encrypted PKCS#8", text: OpenSSLCLIFixtures.ecEncryptedPKCS8PEM),
        BadPEM(label: "encrypted traditional", text: OpenSSLCLIFixtures.ecEncryptedTraditionalPEM),
        BadPEM(label: "PEM armour around garbage", text: "-----BEGIN EC PRIVATE KEY-----\nq1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI\n-----END EC PRIVATE KEY-----\n"),
    ])
    func refusesBadPEM(pem: BadPEM) {
        #expect(throws: CryptoError.self) { try P256PrivateKey(pem: pem.text) }
    }

    @Test("refuses an RSA or garbage PEM as a P-256 public key")
    func refusesBadPublicPEM() {
        #expect(throws: CryptoError.self) { try P256PublicKey(pem: OpenSSLCLIFixtures.rsaPublicPEM) }
        #expect(throws: CryptoError.self) { try P256PublicKey(pem: "-----BEGIN PUBLIC KEY-----\nzz\n-----END PUBLIC KEY-----") }
    }

    @Test("signs concurrently from many tasks with one key")
    func concurrentSigning() async throws {
        let key = try P256PrivateKey.generate()
        let publicKey = key.publicKey
        let results = await withTaskGroup(of: Bool.self) { group in
            for i in 0..<32 {
                group.addTask {
                    let message = Array("message \(i)".utf8)
                    guard let signature = try? key.signES256(message) else { return false }
                    return publicKey.verifyES256(signature: signature, message: message)
                }
            }
            var all: [Bool] = []
            for await result in group { all.append(result) }
            return all
        }
        #expect(results.count == 32 && results.allSatisfy { $0 })
    }
}
