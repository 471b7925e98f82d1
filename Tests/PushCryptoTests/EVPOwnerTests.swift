import Testing
@testable import PushCrypto

/// The failure paths of the libcrypto owners (`EVPKey`, `SigningTemplate`): the object is
/// built first and wrapped at once; what fails afterwards only throws, and `deinit` frees it.
@Suite("libcrypto owners: failure paths")
struct EVPOwnerTests {
    static let truncated = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n"

    @Test("PEM text that does not parse throws a CryptoError, as a private and as a public key", arguments: [
        "", "not a pem", "-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n", truncated,
        "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
    ])
    func unreadablePEM(pem: String) {
        for _ in 0..<20 {
            #expect(throws: CryptoError.self) { _ = try EVPKey.readPrivateKey(pem: pem) }
            #expect(throws: CryptoError.self) { _ = try EVPKey.readPublicKey(pem: pem) }
            #expect(throws: CryptoError.self) { _ = try P256PrivateKey(pem: pem) }
        }
    }

    /// An X25519 key (`openssl genpkey -algorithm X25519`, test only): a key-agreement key
    /// that cannot sign.
    static let x25519 = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VuBCIEIDDNd3PNy4LlmrkK5beX9QnZK1FCDM/fUHG9/l7I7Ed1\n-----END PRIVATE KEY-----\n"

    @Test("a signing context for a key that cannot sign (X25519) throws at initialisation")
    func keyCannotSign() throws {
        let agreementOnly = try EVPKey.readPrivateKey(pem: Self.x25519)
        for _ in 0..<20 {
            let error = #expect(throws: CryptoError.self) {
                _ = try SigningTemplate.make(key: agreementOnly, maximumSignatureLength: 80)
            }
            #expect(error?.message.hasPrefix("signature initialisation") == true)
        }
        #expect(throws: CryptoError.self) { _ = try P256PrivateKey(pem: Self.x25519) }
        // With the private half the same factory works, and the public half verifies.
        let privateKey = try P256PrivateKey.generate()
        let signer = try SigningTemplate.make(key: privateKey.key, maximumSignatureLength: 80)
        let message = Array("owner".utf8)
        let verifier = try EVPKey.readPublicKey(pem: try privateKey.key.publicKeyPEM())
        #expect(verifier.verifySHA256(signature: try signer.sign(message), message: message))
    }
}
