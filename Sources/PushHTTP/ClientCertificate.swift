/// A TLS client certificate and its private key, both PEM, for ``HTTPRequest/clientCertificate``
/// (APNs certificate authentication, docs/providers.md "APNs certificate authentication").
///
/// libcurl keys connection reuse on the TLS configuration, client certificate included
/// (`match_ssl_primary_config` compares `CURLOPT_SSLCERT_BLOB`), and its TLS session cache
/// too: requests with different certificates get separate connections, so each certificate has
/// its own pool within the one multi handle. Because libcurl's per-host and total connection
/// limits count all of them, the client raises both by the per-host limit for every new
/// certificate it sees (``HTTPClientConfiguration/maxConnectionsPerHost`` connections per
/// certificate and origin).
public struct ClientCertificate: Sendable, Equatable {
    /// Names the certificate (e.g. its SHA-256 fingerprint): requests carrying the same id
    /// must carry the same bytes. A handle re-sets the certificate only when the id changes.
    public var id: String
    /// The certificate, then any chain certificates.
    public var certificatePEM: [UInt8]
    /// The unencrypted private key (PKCS#8 or traditional).
    public var privateKeyPEM: [UInt8]

    public init(id: String, certificatePEM: [UInt8], privateKeyPEM: [UInt8]) {
        self.id = id
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
    }

    /// Equal ids: the same certificate.
    public static func == (lhs: ClientCertificate, rhs: ClientCertificate) -> Bool { lhs.id == rhs.id }
}
