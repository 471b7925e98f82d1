import Foundation
@testable import PushRuntime
import PushCore
@testable import PushDelivery
import PushCrypto
import PushHTTP
import PushTestSupport
@testable import PushWorker
import Synchronization
import Testing

/// APNs certificate credentials (docs/providers.md): loading, expiry, environments.
@Suite("APNs certificate credentials")
struct CertificateCredentialsTests {
    static let now = 1_796_032_800.0 // 2026-11-30T10:00:00Z
    static let authority: Result<CertificateAuthority, CryptoError> = Result { () throws(CryptoError) in
        try CertificateAuthority.generate(commonName: "credentials test CA", now: now, lifetime: 10 * 365 * 86400)
    }

    static func issue(notBefore: Double = now - 86400, notAfter: Double = now + 365 * 86400,
                      environments: [String] = ["production"], uid: String? = "com.example.cert") throws -> IssuedCertificate {
        try authority.get().issueClientCertificate(commonName: "Apple Push Services: com.example.cert", uid: uid,
                                                   notBefore: notBefore, notAfter: notAfter, appleEnvironments: environments)
    }

    /// A folder `<tmp>/app_cert/` holding `apns.json` = `object` (and `files`).
    static func folder(_ object: [String: Any], files: [String: Data] = [:]) throws -> URL {
        let root = try TemporaryFolder.make(prefix: "certcred")
        let folder = root.appendingPathComponent("app_cert")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try JSONSerialization.data(withJSONObject: object).write(to: folder.appendingPathComponent("apns.json"))
        for (name, data) in files { try data.write(to: folder.appendingPathComponent(name)) }
        return folder
    }

    static func load(_ folder: URL, now: Double = now) -> AppCredentials {
        AppCredentials.load(appID: "app_cert", folder: folder, now: now)
    }

    @Test("an inline PEM loads: certificate auth, topic from the subject UID, the production endpoint")
    func inlinePEM() throws {
        let issued = try Self.issue()
        let credentials = Self.load(try Self.folder(["certificate": issued.combinedPEM]))
        #expect(credentials.problems.isEmpty, "\(credentials.problems)")
        #expect(credentials.warnings.isEmpty && credentials.apns == nil)
        let certificate = try #require(credentials.apnsCertificate)
        #expect(certificate.topic == "com.example.cert")
        #expect(certificate.environment == "production" && certificate.endpoint == "https://api.push.apple.com")
        #expect(certificate.identity.fingerprint == issued.fingerprint && certificate.clientCertificate.id == issued.fingerprint)
        #expect(credentials.profile.apns == AppProfile.APNS(topic: "com.example.cert", endpoint: "https://api.push.apple.com",
                                                            authentication: .certificate))
    }

    @Test("certificateFile: a .p12 with its password, a .pem; development picks the sandbox endpoint; the file is watched")
    func files() throws {
        let issued = try Self.issue(environments: ["development"])
        let p12 = Self.load(try Self.folder(["certificateFile": "push.p12", "password": "pw", "topic": "com.example.cert",
                                                 "environment": "development"], files: ["push.p12": Data(try issued.pkcs12(password: "pw"))]))
        #expect(p12.problems.isEmpty, "\(p12.problems)")
        #expect(p12.apnsCertificate?.endpoint == "https://api.sandbox.push.apple.com")
        #expect(p12.extraFiles == ["push.p12"])
        let pem = Self.load(try Self.folder(["certificateFile": "push.pem", "environment": "development"],
                                            files: ["push.pem": Data(issued.combinedPEM.utf8)]))
        #expect(pem.apnsCertificate?.identity.fingerprint == issued.fingerprint)
    }

    @Test("unusable certificates are problems, never credentials", arguments: [
        ("expired", "the certificate expired at 2026-11-30T09:00:00Z"),
        ("not yet valid", "the certificate is not valid before 2026-12-01T10:00:00Z"),
        ("wrong environment", "the certificate is for development, not production"),
        ("wrong password", "cannot read the PKCS#12 file"),
        ("key and certificate", "holds both a signing key"),
        ("no topic", "needs topic"),
        ("escaping path", "certificateFile must be a path inside the app's folder"),
        ("bad environment", "environment must be production or development"),
    ])
    func refused(_ name: String, _ message: String) throws {
        var object: [String: Any] = ["certificate": try Self.issue().combinedPEM]
        var files: [String: Data] = [:]
        switch name {
        case "expired": object["certificate"] = try Self.issue(notBefore: Self.now - 86400, notAfter: Self.now - 3600).combinedPEM
        case "not yet valid": object["certificate"] = try Self.issue(notBefore: Self.now + 86400, notAfter: Self.now + 2 * 86400).combinedPEM
        case "wrong environment": object["certificate"] = try Self.issue(environments: ["development"]).combinedPEM
        case "wrong password":
            object = ["certificateFile": "push.p12", "password": "nope"]
            files["push.p12"] = Data(try Self.issue().pkcs12(password: "pw"))
        case "key and certificate": object["teamId"] = "T"; object["keyId"] = "K"
        case "no topic": object["certificate"] = try Self.issue(uid: nil).combinedPEM
        case "escaping path": object = ["certificateFile": "../push.p12"]
        case "bad environment": object["environment"] = "staging"
        default: Issue.record("unknown case \(name)")
        }
        let credentials = Self.load(try Self.folder(object, files: files))
        #expect(credentials.apnsCertificate == nil && credentials.apns == nil)
        #expect(credentials.problems.count == 1)
        #expect(credentials.problems.first?.hasPrefix("app_cert/apns.json: ") == true)
        #expect(credentials.problems.first?.contains(message) == true, "\(credentials.problems)")
        #expect(credentials.profile.apns == nil)
    }

    @Test("a certificate expiring within 30 days loads with a warning")
    func expiringSoon() throws {
        let credentials = Self.load(try Self.folder(["certificate": try Self.issue(notAfter: Self.now + 10 * 86400 + 60).combinedPEM]))
        #expect(credentials.apnsCertificate != nil)
        #expect(credentials.warnings == ["app_cert/apns.json: the certificate expires at 2026-12-10T10:01:00Z, in 10 days: renew it"])
    }

    @Test("the store loads an expired certificate again, and refuses it, even while its files are unchanged")
    func expiresWhileCached() throws {
        let folder = try Self.folder(["certificate": try Self.issue(notAfter: Self.now + 100).combinedPEM])
        let store = CredentialsStore(directory: folder.deletingLastPathComponent().path, recheckSeconds: 3600)
        #expect(store.credentials(for: "app_cert", now: Self.now)?.apnsCertificate != nil)
        let later = try #require(store.credentials(for: "app_cert", now: Self.now + 101))
        #expect(later.apnsCertificate == nil)
        #expect(later.problems.first?.contains("expired") == true)
    }
}

/// The Deliverer over a TLS client certificate against the sandbox (`--require-client-cert`).
@Suite("APNs certificate delivery", .serialized)
struct CertificateDeliveryTests {
    struct Fixture {
        let sandbox: SandboxServer
        let http: HTTP2Client
        let deliverer: Deliverer
        let metrics = Metrics()
        let clock: TestClock
        let planner: JobPlanner

        init() throws {
            sandbox = try SandboxServer(apps: ["app_tok"], arguments: ["--require-client-cert", "app_cert"])
            var configuration = HTTPClientConfiguration()
            configuration.caFile = sandbox.certificatePath
            http = try HTTP2Client(configuration: configuration)
            let clock = TestClock(Date().timeIntervalSince1970)
            self.clock = clock
            deliverer = Deliverer(http: http, metrics: metrics, logger: Logger(level: .critical), requestTimeout: .seconds(10),
                                  certificateHoldSeconds: 60, clock: { clock.now })
            planner = JobPlanner(keyring: try MsgIDKeyring(parsing: CLITest.keys), webPushPolicy: WebPushPolicy(extraAllowedHosts: []))
        }

        func credentials(_ app: String) -> AppCredentials {
            AppCredentials.load(appID: app, folder: URL(fileURLWithPath: sandbox.credentialsPath + "/" + app))
        }

        func request(_ credentials: AppCredentials) throws -> ProviderRequest {
            let recipient = #"{"subscriptionId":"i1","platform":"ios","token":"\#(CLITest.iosToken)"}"#
            let job = try JobDecoder.decode(Array(CLITest.job(appID: credentials.appID, recipients: [recipient]).utf8))
            guard case .ready(let request) = planner.plan(job, profile: credentials.profile, now: Date())[0].state else {
                throw TestSupportError("recipient not ready")
            }
            return request
        }

        func deliver(_ request: ProviderRequest, _ credentials: AppCredentials) -> Deliverer.Attempt? {
            return deliverer.deliverWaiting(request, credentials: credentials)
        }

        func fault(_ json: String) throws {
            try sandbox.setFaults(json)
        }
    }

    @Test("a certificate app and a token app, one client: each authenticates its own way")
    func bothModes() throws {
        let fixture = try Fixture()
        defer { fixture.http.shutdown(drainTimeout: .seconds(1)) }
        let certificate = fixture.credentials("app_cert"), token = fixture.credentials("app_tok")
        #expect(certificate.apnsCertificate != nil && certificate.problems.isEmpty, "\(certificate.problems)")
        #expect(token.apns != nil)
        for credentials in [certificate, token, certificate] {
            let attempt = try #require(fixture.deliver(try fixture.request(credentials), credentials))
            #expect(attempt.outcome.finalStatus == .sent, "\(credentials.appID): \(attempt.outcome)")
        }
        let records = try fixture.sandbox.messages()
        #expect(records.count == 3)
        let byTopic = Dictionary(grouping: records) { ($0["headers"] as? [String: Any])?["apns-topic"] as? String ?? "" }
        let certificateRecords = try #require(byTopic["com.example.app_cert"])
        #expect(certificateRecords.count == 2)
        #expect(certificateRecords.allSatisfy { $0["authorization"] is NSNull && $0["clientCertificate"] as? String == certificate.apnsCertificate?.identity.fingerprint })
        let tokenRecord = try #require(byTopic["com.example.app_tok"]?.first)
        #expect(tokenRecord["authorization"] as? String == "bearer" && tokenRecord["clientCertificate"] is NSNull)
    }

    @Test("403 BadCertificate: rejected, the app held back without requests, a probe after the hold, sent once it is fixed")
    func badCertificate() throws {
        let fixture = try Fixture()
        defer { fixture.http.shutdown(drainTimeout: .seconds(1)) }
        let credentials = fixture.credentials("app_cert")
        let request = try fixture.request(credentials)
        try fixture.fault(#"{"refuseCertificates":"BadCertificate"}"#)
        let first = try #require(fixture.deliver(request, credentials))
        #expect(first.outcome == .rejected(reason: "BadCertificate") && first.httpStatus == 403 && first.attempts == 1)
        let held = try #require(fixture.deliver(request, credentials))
        #expect(held.outcome == .rejected(reason: "BadCertificate") && held.httpStatus == nil && held.attempts == 0)
        #expect(fixture.metrics.counter("pushworker_apns_certificate_held_total", []) == 1)
        #expect(((try fixture.sandbox.stats())["responses"] as? [String: Any])?["403"] as? Int == 1)
        // The token app on the same client is not affected.
        let token = fixture.credentials("app_tok")
        #expect(try #require(fixture.deliver(try fixture.request(token), token)).outcome.finalStatus == .sent)
        // Fixed at Apple's end; after the hold one probe goes through and the app sends again.
        try fixture.fault(#"{"refuseCertificates":null}"#)
        fixture.clock.set(fixture.clock.now + 61)
        #expect(try #require(fixture.deliver(request, credentials)).outcome.finalStatus == .sent)
        #expect(try #require(fixture.deliver(request, credentials)).outcome.finalStatus == .sent)
    }

    @Test("a certificate of another CA: the handshake is refused, certificate_refused, then held; BadCertificateEnvironment too")
    func foreignCertificate() throws {
        let fixture = try Fixture()
        defer { fixture.http.shutdown(drainTimeout: .seconds(1)) }
        let foreignCA = try CertificateAuthority.generate(commonName: "someone else")
        let now = Date().timeIntervalSince1970
        let foreign = try foreignCA.issueClientCertificate(commonName: "Apple Push Services: com.example.app_cert", uid: "com.example.app_cert",
                                                           notBefore: now - 60, notAfter: now + 86400)
        var credentials = fixture.credentials("app_cert")
        let genuine = try #require(credentials.apnsCertificate)
        credentials.apnsCertificate = AppCredentials.APNSCertificate(identity: try TLSClientIdentity(pem: foreign.combinedPEM),
                                                                     topic: genuine.topic, endpoint: genuine.endpoint, environment: "production")
        let request = try fixture.request(credentials)
        // The refusal is a TLS alert; should the connection break before libcurl reads it (TLS
        // 1.3 sends the alert after the client's first flight), the attempt is a transient
        // failure and the next one sees the alert. Never more than one such retry here.
        var refused = try #require(fixture.deliver(request, credentials))
        if case .retry = refused.outcome { refused = try #require(fixture.deliver(request, credentials)) }
        #expect(refused.outcome == .rejected(reason: "certificate_refused"), "\(refused.outcome)")
        #expect(refused.outcome.finalStatus == .rejected)
        let held = try #require(fixture.deliver(request, credentials))
        #expect(held.outcome == .rejected(reason: "certificate_refused") && held.attempts == 0)
        // The genuine certificate is another fingerprint: not held back.
        let real = fixture.credentials("app_cert")
        try fixture.fault(#"{"refuseCertificates":"BadCertificateEnvironment"}"#)
        let environment = try #require(fixture.deliver(request, real))
        #expect(environment.outcome == .rejected(reason: "BadCertificateEnvironment") && environment.httpStatus == 403)
    }
}
