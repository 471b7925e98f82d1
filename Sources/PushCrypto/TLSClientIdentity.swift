import Foundation

/// A TLS client certificate with its private key: how an app holding an APNs certificate
/// (`.p12` or PEM, instead of a `.p8` signing key) authenticates its connections (docs/providers.md;
/// Apple: "Establishing a certificate-based connection to APNs").
///
/// Loading checks that the key belongs to the certificate. The key is kept as unencrypted
/// PKCS#8 PEM in memory only (handed to libcurl per connection); nothing here is ever logged.
public struct TLSClientIdentity: Sendable {
    /// The leaf certificate followed by the chain certificates the file held, PEM.
    public let certificatePEM: String
    /// The private key, unencrypted PKCS#8 PEM.
    public let privateKeyPEM: String
    /// Validity, Unix seconds.
    public let notBefore: Double
    public let notAfter: Double
    /// RFC 2253 (`UID=com.example.app,CN=Apple Push Services: com.example.app,…`).
    public let subject: String
    public let issuer: String
    /// The subject's `UID`: Apple puts the app's bundle id there, the default topic.
    public let subjectUID: String?
    /// SHA-256 of the leaf certificate (DER), lower-case hex: names the identity (one
    /// connection pool per certificate) without revealing anything.
    public let fingerprint: String
    /// The APNs environments the certificate is marked for (Apple's extensions
    /// 1.2.840.113635.100.6.3.1 development, .2 production; node-apn reads the same); empty
    /// when it carries neither (then it is not checked).
    public let appleEnvironments: Set<String>

    /// Apple's push-certificate extension OIDs by environment.
    public static let appleEnvironmentOIDs = ["development": "1.2.840.113635.100.6.3.1", "production": "1.2.840.113635.100.6.3.2"]

    /// Reads a PEM text holding the certificate (and any chain) and its private key, in any
    /// order; the key may be encrypted (`password`) and PKCS#8 or traditional (PKCS#1, SEC 1).
    public init(pem: String, password: String? = nil) throws(CryptoError) {
        let certificates = X509Certificate.readAll(pem: pem)
        guard let leaf = certificates.first else { throw CryptoError("no CERTIFICATE block in the PEM") }
        guard let key = X509Certificate.readPrivateKey(pem: pem, password: password) else {
            throw CryptoError(pem.contains("ENCRYPTED") ? "cannot decrypt the private key (wrong or missing password)"
                                                        : "no readable PRIVATE KEY block in the PEM")
        }
        try self.init(leaf: leaf, key: key, chain: Array(certificates.dropFirst()))
    }

    /// Reads a PKCS#12 (`.p12`) file; `password` nil or "" for one without a password.
    public init(pkcs12 bytes: [UInt8], password: String? = nil) throws(CryptoError) {
        let (leaf, key, chain) = try X509Certificate.parsePKCS12(bytes, password: password)
        try self.init(leaf: leaf, key: key, chain: chain)
    }

    init(leaf: X509Certificate, key: EVPKey, chain: [X509Certificate]) throws(CryptoError) {
        guard leaf.matches(key) else { throw CryptoError("the private key does not belong to the certificate") }
        guard let validity = leaf.validity else { throw CryptoError("unreadable certificate validity") }
        var pem = try leaf.pem()
        for member in chain { pem += try member.pem() }
        certificatePEM = pem
        privateKeyPEM = try key.pkcs8PEM()
        notBefore = validity.notBefore
        notAfter = validity.notAfter
        subject = leaf.name(subject: true)
        issuer = leaf.name(subject: false)
        subjectUID = leaf.subjectEntry(NIDs.userID)
        fingerprint = try leaf.sha256Fingerprint()
        appleEnvironments = Set(Self.appleEnvironmentOIDs.filter { leaf.hasExtension(oid: $0.value) }.map(\.key))
    }
}

/// A small certificate authority issuing TLS client certificates: the sandbox's
/// `--require-client-cert` (it trusts only what it issued) and the tests (a foreign CA, an
/// expired certificate). Development use; the worker only loads certificates.
///
/// Thread safety: immutable after `generate`.
public final class CertificateAuthority: Sendable {
    let certificate: X509Certificate
    let key: EVPKey
    /// The CA certificate, PEM (what a verifier trusts).
    public let certificatePEM: String

    private init(certificate: X509Certificate, key: EVPKey) throws(CryptoError) {
        self.certificate = certificate
        self.key = key
        certificatePEM = try certificate.pem()
    }

    /// A fresh P-256 CA, valid from an hour before `now` for `lifetime` seconds (default 1 year).
    public static func generate(commonName: String, now: Double = Date().timeIntervalSince1970,
                                lifetime: Double = 365 * 86400) throws(CryptoError) -> CertificateAuthority {
        let key = try EVPKey.generateP256()
        let certificate = try X509Certificate.issue(
            key: key, subject: [("CN", commonName)], issuer: nil, issuerKey: key,
            notBefore: now - 3600, notAfter: now + lifetime,
            extensions: [(NIDs.basicConstraints, "critical,CA:TRUE"), (NIDs.keyUsage, "critical,keyCertSign,cRLSign"),
                         (NIDs.subjectKeyIdentifier, "hash")],
            markerOIDs: [])
        return try CertificateAuthority(certificate: certificate, key: key)
    }

    /// A client certificate (extended key usage `clientAuth`) for a fresh P-256 key, shaped
    /// like an APNs one: subject `UID=<uid>, CN=<commonName>`, marked for `appleEnvironments`.
    public func issueClientCertificate(commonName: String, uid: String?, notBefore: Double, notAfter: Double,
                                       appleEnvironments: [String] = []) throws(CryptoError) -> IssuedCertificate {
        let leafKey = try EVPKey.generateP256()
        var subject: [(field: String, value: String)] = []
        if let uid { subject.append(("UID", uid)) }
        subject.append(("CN", commonName))
        let oids = appleEnvironments.compactMap { TLSClientIdentity.appleEnvironmentOIDs[$0] }
        let leaf = try X509Certificate.issue(
            key: leafKey, subject: subject, issuer: certificate, issuerKey: key, notBefore: notBefore, notAfter: notAfter,
            extensions: [(NIDs.basicConstraints, "critical,CA:FALSE"), (NIDs.keyUsage, "critical,digitalSignature"),
                         (NIDs.extendedKeyUsage, "clientAuth")],
            markerOIDs: oids)
        return try IssuedCertificate(certificate: leaf, key: leafKey)
    }
}

/// A certificate ``CertificateAuthority`` issued, with its key.
public struct IssuedCertificate: Sendable {
    let certificate: X509Certificate
    let key: EVPKey
    public let certificatePEM: String
    /// Unencrypted PKCS#8 PEM.
    public let privateKeyPEM: String
    /// SHA-256 of the certificate (DER), lower-case hex (as ``TLSClientIdentity/fingerprint``).
    public let fingerprint: String

    init(certificate: X509Certificate, key: EVPKey) throws(CryptoError) {
        self.certificate = certificate
        self.key = key
        certificatePEM = try certificate.pem()
        privateKeyPEM = try key.pkcs8PEM()
        fingerprint = try certificate.sha256Fingerprint()
    }

    /// Certificate then key: what `apns.json` `certificate` (or a `.pem` file) holds.
    public var combinedPEM: String { certificatePEM + privateKeyPEM }

    /// The certificate and key as a PKCS#12 (`.p12`) protected by `password`.
    public func pkcs12(password: String, friendlyName: String = "pushworker") throws(CryptoError) -> [UInt8] {
        try certificate.pkcs12(key: key, chain: [], password: password, friendlyName: friendlyName)
    }
}
