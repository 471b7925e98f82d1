import Foundation
import Testing
@testable import PushCrypto

@Suite("TLS client identities (APNs certificates)")
struct TLSClientIdentityTests {
    static let now = 1_796_032_800.0 // 2026-11-30T10:00:00Z

    @Test("a PEM with the certificate and an encrypted key loads with its password")
    func encryptedPEM() throws {
        let pem = ClientCertificateFixtures.certificatePEM + "\n" + ClientCertificateFixtures.encryptedKeyPEM
        let identity = try TLSClientIdentity(pem: pem, password: "pem-pass")
        #expect(identity.fingerprint == ClientCertificateFixtures.sha256Fingerprint)
        #expect(identity.notAfter == ClientCertificateFixtures.notAfter)
        #expect(identity.subjectUID == "com.example.legacy")
        #expect(identity.subject.contains("CN=Apple Push Services: com.example.legacy"))
        #expect(identity.privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(identity.certificatePEM.hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(identity.appleEnvironments.isEmpty)
        // The key order does not matter; a wrong or missing password is a clear error.
        #expect(try TLSClientIdentity(pem: ClientCertificateFixtures.encryptedKeyPEM + "\n" + ClientCertificateFixtures.certificatePEM,
                                      password: "pem-pass").fingerprint == identity.fingerprint)
        #expect(failure { _ = try TLSClientIdentity(pem: pem, password: "wrong") } == "cannot decrypt the private key (wrong or missing password)")
        #expect(failure { _ = try TLSClientIdentity(pem: pem) } == "cannot decrypt the private key (wrong or missing password)")
    }

    @Test("a legacy PKCS#12 (RC2-40, as old Keychain exports) loads through OpenSSL's legacy provider")
    func legacyPKCS12() throws {
        let bytes = try #require(Data(base64Encoded: ClientCertificateFixtures.legacyPKCS12Base64, options: .ignoreUnknownCharacters))
        let identity = try TLSClientIdentity(pkcs12: Array(bytes), password: "s3cret")
        #expect(identity.fingerprint == ClientCertificateFixtures.sha256Fingerprint)
        #expect(identity.subjectUID == "com.example.legacy")
        #expect(throws: CryptoError.self) { try TLSClientIdentity(pkcs12: Array(bytes), password: "nope") }
        #expect(throws: CryptoError.self) { try TLSClientIdentity(pkcs12: Array("not a p12".utf8), password: nil) }
    }

    @Test("an issued certificate round-trips through PEM and PKCS#12 with its Apple environment marks")
    func issued() throws {
        let authority = try CertificateAuthority.generate(commonName: "test CA", now: Self.now)
        let issued = try authority.issueClientCertificate(commonName: "Apple Push Services: com.example.app", uid: "com.example.app",
                                                           notBefore: Self.now - 60, notAfter: Self.now + 86400,
                                                           appleEnvironments: ["development"])
        let fromPEM = try TLSClientIdentity(pem: issued.combinedPEM)
        #expect(fromPEM.fingerprint == issued.fingerprint)
        #expect(fromPEM.notBefore == Self.now - 60 && fromPEM.notAfter == Self.now + 86400)
        #expect(fromPEM.appleEnvironments == ["development"])
        #expect(fromPEM.issuer == "CN=test CA")
        let p12 = try issued.pkcs12(password: "pw")
        let fromP12 = try TLSClientIdentity(pkcs12: p12, password: "pw")
        #expect(fromP12.fingerprint == issued.fingerprint && fromP12.subjectUID == "com.example.app")
        let both = try authority.issueClientCertificate(commonName: "x", uid: nil, notBefore: Self.now, notAfter: Self.now + 1,
                                                         appleEnvironments: ["development", "production"])
        #expect(try TLSClientIdentity(pem: both.combinedPEM).appleEnvironments == ["development", "production"])
    }

    @Test("a key of another certificate, or no certificate at all, is refused")
    func mismatches() throws {
        let authority = try CertificateAuthority.generate(commonName: "test CA", now: Self.now)
        let one = try authority.issueClientCertificate(commonName: "one", uid: nil, notBefore: Self.now, notAfter: Self.now + 60)
        let two = try authority.issueClientCertificate(commonName: "two", uid: nil, notBefore: Self.now, notAfter: Self.now + 60)
        #expect(failure { _ = try TLSClientIdentity(pem: one.certificatePEM + two.privateKeyPEM) } == "the private key does not belong to the certificate")
        #expect(failure { _ = try TLSClientIdentity(pem: one.privateKeyPEM) } == "no CERTIFICATE block in the PEM")
        #expect(failure { _ = try TLSClientIdentity(pem: one.certificatePEM) } == "no readable PRIVATE KEY block in the PEM")
        #expect(throws: CryptoError.self) { try TLSClientIdentity(pem: "") }
    }
}

/// The message of the ``CryptoError`` `body` throws, nil when it succeeds.
private func failure(_ body: () throws -> Void) -> String? {
    do { try body(); return nil } catch { return (error as? CryptoError)?.message ?? "\(error)" }
}
