import Foundation
import PushCore
import PushCrypto
import PushEncoding

/// An APNs signing key the sandbox accepts provider tokens from.
struct APNSTrustedKey: Sendable {
    let appID: String
    let teamID: String
    let keyID: String
    let topic: String
    let publicKey: P256PublicKey
}

/// A Google service account the sandbox accepts JWT grants from.
struct FCMTrustedAccount: Sendable {
    let appID: String
    let projectID: String
    let clientEmail: String
    let privateKeyID: String
    let tokenURI: String
    let publicKey: RSAPublicKey
}

/// A Huawei Push Kit OAuth 2.0 client the sandbox accepts client-credentials grants from (docs/providers.md "Huawei Push Kit").
struct HMSTrustedClient: Sendable {
    let appID: String
    let clientID: String
    let clientSecret: String
    /// The send path's id (`appId`, else `clientId`).
    let pathID: String
}

/// An APNs client certificate the sandbox issued (`--require-client-cert`, docs/providers.md "APNs certificate authentication").
struct APNSTrustedCertificate: Sendable {
    let appID: String
    /// The bundle id the certificate is for (its subject `UID`).
    let topic: String
}

/// The credentials the sandbox verifies against, keyed the way requests name them.
struct SandboxTrust: Sendable {
    var apnsKeys: [String: [APNSTrustedKey]] = [:]
    var fcmAccounts: [String: FCMTrustedAccount] = [:]
    /// Huawei clients by client id.
    var hmsClients: [String: HMSTrustedClient] = [:]
    /// Issued client certificates by SHA-256 fingerprint (hex).
    var apnsCertificates: [String: APNSTrustedCertificate] = [:]
    /// Topics of the apps that authenticate with a certificate: a request for one of them on a
    /// connection without its certificate is 403 `BadCertificate`.
    var certificateTopics: Set<String> = []
    var appIDs: [String] = []

    mutating func add(_ key: APNSTrustedKey) { apnsKeys[key.keyID, default: []].append(key) }
    mutating func add(_ account: FCMTrustedAccount) { fcmAccounts[account.clientEmail] = account }
    mutating func add(_ client: HMSTrustedClient) { hmsClients[client.clientID] = client }
}

/// A failure generating or reading credential folders.
public struct SandboxCredentialsError: Error, Sendable, CustomStringConvertible {
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Credential folders in the worker's format (docs/configuration.md "Provider credentials"), generated or read.
enum SandboxCredentials {
    /// Writes `<directory>/<appID>/{apns,fcm,webpush,hms,app}.json` with fresh keys whose endpoints point at `origin`.
    ///
    /// Apps in `certificateApps` get APNs certificate credentials instead of a signing key
    /// (docs/providers.md "APNs certificate authentication"): a client certificate issued by `authority` (subject
    /// `UID=<topic>, CN=Apple Push Services: <topic>`, marked for the development environment,
    /// valid 90 days: past the worker's 30-day expiry warning), written as `apns.json` `{certificate: PEM cert + key, topic, endpoint,
    /// environment: "development"}`.
    static func generate(appIDs: [String], directory: String, origin: String, certificateApps: Set<String> = [],
                         authority: CertificateAuthority? = nil) throws -> SandboxTrust {
        var trust = SandboxTrust()
        for appID in appIDs {
            guard isValidAppID(appID) else { throw SandboxCredentialsError("invalid app id '\(appID)'") }
            let folder = (directory as NSString).appendingPathComponent(appID)
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)

            let topic = "com.example.\(appID)"
            let apns: String
            if certificateApps.contains(appID), let authority {
                let now = Date().timeIntervalSince1970
                let issued = try authority.issueClientCertificate(commonName: "Apple Push Services: \(topic)", uid: topic,
                                                                   notBefore: now - 3600, notAfter: now + 90 * 86400,
                                                                   appleEnvironments: ["development"])
                apns = JSONWriter.object { w in
                    w.member("certificate", issued.combinedPEM); w.member("topic", topic); w.member("endpoint", origin)
                    w.member("environment", "development")
                }.text
                trust.apnsCertificates[issued.fingerprint] = APNSTrustedCertificate(appID: appID, topic: topic)
                trust.certificateTopics.insert(topic)
            } else {
                let apnsKey = try P256PrivateKey.generate()
                let teamID = randomID(10)
                let keyID = randomID(10)
                let apnsPEM = try apnsKey.pkcs8PEM()
                apns = JSONWriter.object { w in
                    w.member("teamId", teamID); w.member("keyId", keyID); w.member("privateKey", apnsPEM)
                    w.member("topic", topic); w.member("endpoint", origin)
                }.text
                trust.add(APNSTrustedKey(appID: appID, teamID: teamID, keyID: keyID, topic: topic, publicKey: apnsKey.publicKey))
            }

            let rsaKey = try RSAPrivateKey.generate(bits: 2048)
            let projectID = "sandbox-\(appID.lowercased().filter { $0.isLetter || $0.isNumber || $0 == "-" })"
            let clientEmail = "pushworker@\(projectID).iam.gserviceaccount.com"
            let privateKeyID = randomHex(20)
            let tokenURI = origin + "/token"
            let rsaPEM = try rsaKey.pkcs8PEM()
            let fcm = JSONWriter.object { w in
                w.member("type", "service_account"); w.member("project_id", projectID)
                w.member("private_key_id", privateKeyID); w.member("private_key", rsaPEM)
                w.member("client_email", clientEmail); w.member("client_id", String(UInt64.random(in: 100_000_000_000...999_999_999_999)))
                w.member("auth_uri", "https://accounts.google.com/o/oauth2/auth")
                w.member("token_uri", tokenURI); w.member("endpoint", origin)
            }.text
            trust.add(FCMTrustedAccount(appID: appID, projectID: projectID, clientEmail: clientEmail,
                                        privateKeyID: privateKeyID, tokenURI: tokenURI, publicKey: rsaKey.publicKey))

            // Huawei (docs/providers.md "Huawei Push Kit"): a numeric client id as AppGallery Connect shows it, a random
            // secret, both endpoints at the sandbox.
            let hmsClientID = String(UInt64.random(in: 100_000_000...999_999_999))
            let hmsSecret = randomHex(32)
            let hms = JSONWriter.object { w in
                w.member("clientId", hmsClientID); w.member("clientSecret", hmsSecret)
                w.member("endpoint", origin); w.member("tokenEndpoint", origin + SandboxRouter.hmsTokenPath)
            }.text
            trust.add(HMSTrustedClient(appID: appID, clientID: hmsClientID, clientSecret: hmsSecret, pathID: hmsClientID))

            let vapidKey = try P256PrivateKey.generate()
            let webpush = JSONWriter.object { w in
                w.member("subject", "mailto:ops@example.com")
                w.member("publicKey", Base64URL.encode(vapidKey.publicKey.uncompressed))
                w.member("privateKey", Base64URL.encode(vapidKey.rawScalar))
            }.text
            try writeAtomically(apns, to: (folder as NSString).appendingPathComponent("apns.json"))
            try writeAtomically(fcm, to: (folder as NSString).appendingPathComponent("fcm.json"))
            try writeAtomically(webpush, to: (folder as NSString).appendingPathComponent("webpush.json"))
            try writeAtomically(hms, to: (folder as NSString).appendingPathComponent("hms.json"))
            try writeAtomically("{}", to: (folder as NSString).appendingPathComponent("app.json"))
            trust.appIDs.append(appID)
        }
        return trust
    }

    /// Reads every app folder under `directory` (those with an `apns.json`, `fcm.json` or `hms.json`).
    static func load(directory: String, into trust: inout SandboxTrust) throws {
        let entries = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        for appID in entries where isValidAppID(appID) {
            let folder = (directory as NSString).appendingPathComponent(appID)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else { continue }
            var found = false
            let apnsPath = (folder as NSString).appendingPathComponent("apns.json")
            if let apns = readJSON(apnsPath), apns["certificate"] != nil || apns["certificateFile"] != nil {
                // A certificate app: its certificate verifies only against the CA of the run
                // that issued it; its topic still refuses requests without one.
                if let topic = apns["topic"]?.stringValue { trust.certificateTopics.insert(topic) }
                found = true
            } else if let apns = readJSON(apnsPath) {
                guard let teamID = apns["teamId"]?.stringValue, let keyID = apns["keyId"]?.stringValue,
                      let topic = apns["topic"]?.stringValue else { throw SandboxCredentialsError("\(apnsPath): teamId, keyId and topic are required") }
                var pem = apns["privateKey"]?.stringValue
                if pem == nil, let file = apns["privateKeyFile"]?.stringValue {
                    pem = try String(contentsOfFile: (folder as NSString).appendingPathComponent(file), encoding: .utf8)
                }
                guard let pem else { throw SandboxCredentialsError("\(apnsPath): privateKey or privateKeyFile is required") }
                let key = try P256PrivateKey(pem: pem)
                trust.add(APNSTrustedKey(appID: appID, teamID: teamID, keyID: keyID, topic: topic, publicKey: key.publicKey))
                found = true
            }
            let fcmPath = (folder as NSString).appendingPathComponent("fcm.json")
            if let fcm = readJSON(fcmPath) {
                guard let projectID = fcm["project_id"]?.stringValue, let clientEmail = fcm["client_email"]?.stringValue,
                      let pem = fcm["private_key"]?.stringValue, let tokenURI = fcm["token_uri"]?.stringValue
                else { throw SandboxCredentialsError("\(fcmPath): project_id, client_email, private_key and token_uri are required") }
                let key = try RSAPrivateKey(pem: pem)
                trust.add(FCMTrustedAccount(appID: appID, projectID: projectID, clientEmail: clientEmail,
                                            privateKeyID: fcm["private_key_id"]?.stringValue ?? "", tokenURI: tokenURI,
                                            publicKey: key.publicKey))
                found = true
            }
            let hmsPath = (folder as NSString).appendingPathComponent("hms.json")
            if let hms = readJSON(hmsPath) {
                guard let clientID = idText(hms["clientId"]), let secret = hms["clientSecret"]?.stringValue
                else { throw SandboxCredentialsError("\(hmsPath): clientId and clientSecret are required") }
                trust.add(HMSTrustedClient(appID: appID, clientID: clientID, clientSecret: secret, pathID: idText(hms["appId"]) ?? clientID))
                found = true
            }
            if found { trust.appIDs.append(appID) }
        }
    }

    static func isValidAppID(_ appID: String) -> Bool {
        !appID.isEmpty && appID != "." && appID != ".." && appID.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    /// An id written as a string or a whole number.
    private static func idText(_ value: JSONValue?) -> String? {
        if let text = value?.stringValue, !text.isEmpty { return text }
        if case .number(let number)? = value, let integer = number.intValue, integer >= 0 { return String(integer) }
        return nil
    }

    private static func readJSON(_ path: String) -> JSONValue? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return JSONValue.parse([UInt8](data))
    }

    /// Writes `text` to a temporary file beside `path`, then renames it into place.
    static func writeAtomically(_ text: String, to path: String) throws {
        let temporary = path + ".tmp-\(getpid())"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw SandboxCredentialsError("cannot write \(temporary)")
        }
        guard rename(temporary, path) == 0 else { throw SandboxCredentialsError("cannot rename \(temporary) to \(path)") }
    }

    private static func randomID(_ count: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return String((0..<count).map { _ in alphabet[Int.random(in: 0..<alphabet.count)] })
    }

    private static func randomHex(_ bytes: Int) -> String {
        SecureRandom.bytes(bytes).map { String(format: "%02x", $0) }.joined()
    }
}
