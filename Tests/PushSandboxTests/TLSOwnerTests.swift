import Testing
@testable import PushSandbox

/// The failure paths of the sandbox's OpenSSL owner: `TLSServerContext.make` builds the
/// `SSL_CTX` first, wraps it, then loads the certificate; a refused certificate only throws
/// and `deinit` frees the context once.
@Suite("TLSServerContext: failure paths")
struct TLSOwnerTests {
    @Test("an unreadable certificate, an unreadable key and a key of another certificate throw SandboxTLSError")
    func refusedCertificates() throws {
        let good = try SandboxCertificate.selfSigned()
        let other = try SandboxCertificate.selfSigned()
        let cases: [(SandboxCertificate, String)] = [
            (SandboxCertificate(certificatePEM: "not a certificate", privateKeyPEM: good.privateKeyPEM), "cannot read certificate PEM"),
            (SandboxCertificate(certificatePEM: "", privateKeyPEM: good.privateKeyPEM), "cannot read certificate PEM"),
            (SandboxCertificate(certificatePEM: good.certificatePEM, privateKeyPEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), "cannot read private key PEM"),
            (SandboxCertificate(certificatePEM: good.certificatePEM, privateKeyPEM: other.privateKeyPEM), "SSL_CTX_use_PrivateKey failed"),
        ]
        for (certificate, expected) in cases {
            for _ in 0..<20 {
                let error = #expect(throws: SandboxTLSError.self) { _ = try TLSServerContext.make(certificate: certificate) }
                #expect(error?.message.hasPrefix(expected) == true, "\(error?.message ?? "no error")")
            }
        }
        _ = try TLSServerContext.make(certificate: good)
    }
}
