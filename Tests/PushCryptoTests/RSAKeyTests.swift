import Testing
@testable import PushCrypto

@Suite("RSA keys and RS256")
struct RSAKeyTests {
    static let header = #"{"alg":"RS256","typ":"JWT"}"#
    static let claims = #"{"iss":"sa@proj.iam.gserviceaccount.com","scope":"https://www.googleapis.com/auth/firebase.messaging","aud":"https://oauth2.googleapis.com/token","iat":1700000000,"exp":1700003600}"#

    @Test("signs exactly like the openssl CLI (PKCS#1 v1.5 is deterministic) and verifies its token")
    func matchesOpenSSLCLI() throws {
        let key = try RSAPrivateKey(pem: OpenSSLCLIFixtures.rsaTraditionalPEM)
        let token = try JWT.signRS256(headerJSON: Self.header, claimsJSON: Self.claims, key: key)
        #expect(token == OpenSSLCLIFixtures.rs256Token)
        let publicKey = try RSAPublicKey(pem: OpenSSLCLIFixtures.rsaPublicPEM)
        #expect(JWT.verifyRS256(OpenSSLCLIFixtures.rs256Token, key: publicKey))
    }

    @Test("PKCS#8 and public PEM round trips")
    func pemRoundTrips() throws {
        let key = try RSAPrivateKey(pem: OpenSSLCLIFixtures.rsaTraditionalPEM)
        let pkcs8 = try key.pkcs8PEM()
        #expect(pkcs8.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let reparsed = try RSAPrivateKey(pem: pkcs8)
        let publicPEM = try reparsed.publicKey.pem()
        #expect(publicPEM == OpenSSLCLIFixtures.rsaPublicPEM + "\n")
        let publicKey = try RSAPublicKey(pem: publicPEM)
        let signature = try reparsed.signRS256([1, 2, 3])
        #expect(signature.count == 256)
        #expect(publicKey.verifyRS256(signature: signature, message: [1, 2, 3]))
    }

    @Test("a generated key signs and verifies; tampering fails")
    func generated() throws {
        let key = try RSAPrivateKey.generate()
        let token = try JWT.signRS256(headerJSON: Self.header, claimsJSON: Self.claims, key: key)
        #expect(JWT.verifyRS256(token, key: key.publicKey))
        let parts = try #require(JWT.parse(token))
        var signature = parts.signature
        signature[0] ^= 0x80
        #expect(!key.publicKey.verifyRS256(signature: signature, message: parts.signingInput))
        #expect(!key.publicKey.verifyRS256(signature: parts.signature, message: parts.signingInput + [0x20]))
        #expect(!key.publicKey.verifyRS256(signature: [], message: parts.signingInput))
        let fixed = try RSAPublicKey(pem: OpenSSLCLIFixtures.rsaPublicPEM)
        #expect(!JWT.verifyRS256(token, key: fixed))
    }

    @Test("signs concurrently from many tasks with one key")
    func concurrentSigning() async throws {
        let key = try RSAPrivateKey(pem: OpenSSLCLIFixtures.rsaTraditionalPEM)
        let expected = try key.signRS256([42])
        let results = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<16 {
                group.addTask { (try? key.signRS256([42])) == expected }
            }
            var all: [Bool] = []
            for await result in group { all.append(result) }
            return all
        }
        #expect(results.count == 16 && results.allSatisfy { $0 })
    }

    @Test("refuses garbage and EC PEMs, and keys below 2048 bits")
    func refusesBadInput() {
        #expect(throws: CryptoError.self) { try RSAPrivateKey(pem: "nonsense") }
        #expect(throws: CryptoError.self) { try RSAPrivateKey(pem: OpenSSLCLIFixtures.ecPKCS8PEM) }
        #expect(throws: CryptoError.self) { try RSAPublicKey(pem: OpenSSLCLIFixtures.ecPublicPEM) }
        #expect(throws: CryptoError.self) { try RSAPublicKey(pem: "") }
        #expect(throws: CryptoError.self) { try RSAPrivateKey.generate(bits: 1024) }
    }
}
