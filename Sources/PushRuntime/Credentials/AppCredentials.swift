import Foundation
import PushCore
import PushCrypto
import PushHTTP
import Synchronization
import PushEncoding

/// One app's provider credentials, parsed from `<dir>/<appId>/` (docs/reference/configuration.md). Keys live only
/// here, in memory; nothing in this type is ever logged.
public struct AppCredentials: Sendable {
    public struct APNS: Sendable {
        public var teamID: String
        public var keyID: String
        public var key: P256PrivateKey
        public var topic: String
        public var endpoint: String

        package init(teamID: String, keyID: String, key: P256PrivateKey, topic: String, endpoint: String) {
            self.teamID = teamID; self.keyID = keyID; self.key = key; self.topic = topic; self.endpoint = endpoint
        }
    }
    /// `apns.json` with a TLS client certificate instead of a signing key (docs/providers.md).
    public struct APNSCertificate: Sendable {
        public var identity: TLSClientIdentity
        /// The bundle id: `topic`, else the certificate's subject `UID` (APNs' default topic).
        public var topic: String
        public var endpoint: String
        /// `production` (default) or `development`: picks the default endpoint.
        public var environment: String
        /// What the HTTP client connects with (one connection pool per certificate).
        public var clientCertificate: ClientCertificate

        package init(identity: TLSClientIdentity, topic: String, endpoint: String, environment: String) {
            self.identity = identity; self.topic = topic; self.endpoint = endpoint; self.environment = environment
            clientCertificate = ClientCertificate(id: identity.fingerprint, certificatePEM: Array(identity.certificatePEM.utf8),
                                                  privateKeyPEM: Array(identity.privateKeyPEM.utf8))
        }
    }
    public struct FCM: Sendable {
        public var projectID: String
        public var clientEmail: String
        public var privateKeyID: String?
        public var key: RSAPrivateKey
        public var tokenURI: String
        public var endpoint: String
    }
    public struct WebPush: Sendable {
        public var subject: String
        public var key: P256PrivateKey
        public var publicKey: String
    }
    /// `hms.json` `{clientId, clientSecret, appId?, endpoint?, tokenEndpoint?, badgeClass?}`:
    /// Huawei Push Kit (docs/providers.md).
    public struct HMS: Sendable {
        public var clientID: String
        public var clientSecret: String
        /// The send path's id (`appId`, else `clientId`).
        public var pathID: String
        public var endpoint: String
        public var tokenEndpoint: String
        public var badgeClass: String?

        package init(clientID: String, clientSecret: String, pathID: String, endpoint: String, tokenEndpoint: String, badgeClass: String?) {
            self.clientID = clientID; self.clientSecret = clientSecret; self.pathID = pathID
            self.endpoint = endpoint; self.tokenEndpoint = tokenEndpoint; self.badgeClass = badgeClass
        }
    }
    /// `app.json` `webhook`: where `pushworker events` posts the app's tracking events
    /// (an `https` URL) and the HMAC secret that signs them (docs/events.md).
    public struct Webhook: Sendable {
        public var url: String
        public var secret: [UInt8]
    }
    public var appID: String
    /// APNs token auth (a `.p8` key); at most one of `apns` and `apnsCertificate` is set.
    public var apns: APNS?
    /// APNs certificate auth (docs/providers.md).
    public var apnsCertificate: APNSCertificate? = nil
    public var fcm: FCM?
    public var webPush: WebPush?
    /// Huawei Push Kit (`hms.json`).
    public var hms: HMS? = nil
    public var additionalDataAtRoot: Bool
    /// `app.json` `ratePerSecond`: the app's fleet-wide send budget per provider.
    public var ratePerSecond: Double?
    /// Files that exist but could not be used, with the reason (never the content).
    public var problems: [String]
    /// Usable, but soon not (an APNs certificate expiring within 30 days).
    public var warnings: [String] = []
    /// Extra files read besides the four JSON files (an APNs `privateKeyFile`), relative to the
    /// app's folder: the store watches them for changes too.
    var extraFiles: [String] = []
    /// `app.json` `webhook` `{url, secret}` (tracking events), when configured and valid.
    public var webhook: Webhook? = nil

    package init(appID: String, apns: APNS?, fcm: FCM?, webPush: WebPush?, additionalDataAtRoot: Bool, ratePerSecond: Double?,
                 problems: [String]) {
        self.appID = appID; self.apns = apns; self.fcm = fcm; self.webPush = webPush
        self.additionalDataAtRoot = additionalDataAtRoot; self.ratePerSecond = ratePerSecond; self.problems = problems
    }

    /// What payload builders need (no secrets).
    public var profile: AppProfile {
        var profile = AppProfile(apns: apns.map { AppProfile.APNS(topic: $0.topic, endpoint: $0.endpoint) }
                       ?? apnsCertificate.map { AppProfile.APNS(topic: $0.topic, endpoint: $0.endpoint, authentication: .certificate) },
                   fcm: fcm.map { AppProfile.FCM(projectID: $0.projectID, endpoint: $0.endpoint) },
                   hasWebPush: webPush != nil, additionalDataAtRoot: additionalDataAtRoot)
        profile.hms = hms.map { AppProfile.HMS(pathID: $0.pathID, endpoint: $0.endpoint, badgeClass: $0.badgeClass) }
        return profile
    }

    /// Loads `folder` (one app). Missing files mean "no credentials for that platform".
    /// `now` (Unix seconds) judges certificate validity.
    public static func load(appID: String, folder: URL, now: Double = Date().timeIntervalSince1970) -> AppCredentials {
        load(appID: appID, now: now) { name in
            let path = folder.appendingPathComponent(name).path
            guard FileManager.default.fileExists(atPath: path) else { return .absent }
            return FileManager.default.contents(atPath: path).map { .bytes([UInt8]($0)) } ?? .unreadable
        }
    }

    /// A file of an app's folder as ``load(appID:now:read:)`` sees it.
    package enum FolderFile {
        case absent, unreadable
        case bytes([UInt8])
    }

    /// Parses one app's credentials from `read`, which gives a file of the app's folder by its
    /// path relative to the folder (the four provider files, `app.json`, and the files they name).
    package static func load(appID: String, now: Double, read: (String) -> FolderFile) -> AppCredentials {
        var credentials = AppCredentials(appID: appID, apns: nil, fcm: nil, webPush: nil, additionalDataAtRoot: false,
                                         ratePerSecond: nil, problems: [])
        /// The file `name` as a JSON object; nil when it is absent, or unreadable or not an
        /// object (a problem is recorded then).
        func object(_ name: String) -> JSONObject? {
            let file = read(name)
            if case .absent = file { return nil }
            guard case .bytes(let data) = file,
                  let value = (try? JSONParser.parse(data, maxDepth: 16, maxBytes: fileSizeLimit))?.objectValue else {
                credentials.problems.append("\(appID)/\(name): not a JSON object")
                return nil
            }
            return value
        }
        /// Builds a platform's credentials from its file; a thrown problem is recorded
        /// (`<app>/<file>: why`) and leaves the platform without credentials.
        func parsed<T>(_ name: String, _ value: JSONObject?, _ build: (JSONObject) throws -> T) -> T? {
            guard let value else { return nil }
            do {
                return try build(value)
            } catch {
                credentials.problems.append("\(appID)/\(name): \(error)")
                return nil
            }
        }
        let apnsFile = object("apns.json")
        if let apns = apnsFile, apns["certificate"] != nil || apns["certificateFile"] != nil {
            // Certificate auth (docs/providers.md); expired or not yet valid ⇒ a problem, no APNs credentials.
            var extraFiles: [String] = [], warnings: [String] = []
            credentials.apnsCertificate = parsed("apns.json", apns) { apns in
                try Self.loadCertificate(apns, now: now, read: read, extraFiles: &extraFiles, warnings: &warnings)
            }
            credentials.extraFiles += extraFiles
            credentials.warnings += warnings.map { "\(appID)/\($0)" }
        } else {
            var extraFiles: [String] = []
            credentials.apns = parsed("apns.json", apnsFile) { try Self.loadAPNS($0, read: read, extraFiles: &extraFiles) }
            credentials.extraFiles += extraFiles
        }
        credentials.fcm = parsed("fcm.json", object("fcm.json"), Self.loadFCM)
        credentials.webPush = parsed("webpush.json", object("webpush.json"), Self.loadWebPush)
        credentials.hms = parsed("hms.json", object("hms.json"), Self.loadHMS)
        if let app = object("app.json") { credentials.apply(app: app) }
        return credentials
    }

    /// The largest credentials file read: 1 MiB (a PEM chain or a `.p12` is a few KiB).
    static let fileSizeLimit = 1 << 20

    /// `apns.json` with a signing key: `{teamId, keyId, topic, privateKey | privateKeyFile, endpoint?}`.
    static func loadAPNS(_ apns: JSONObject, read: (String) -> FolderFile, extraFiles: inout [String]) throws -> APNS {
        guard let teamID = apns["teamId"]?.stringValue, let keyID = apns["keyId"]?.stringValue,
              let topic = apns["topic"]?.stringValue else {
            throw CredentialsError("needs teamId, keyId and topic")
        }
        var pem = apns["privateKey"]?.stringValue
        if pem == nil, let file = apns["privateKeyFile"]?.stringValue {
            try checkInsideFolder(file, field: "privateKeyFile")
            extraFiles.append(file)
            if case .bytes(let bytes) = read(file) { pem = String(validating: bytes, as: UTF8.self) }
        }
        guard let pem else { throw CredentialsError("needs privateKey or a readable privateKeyFile") }
        let endpoint = try origin(apns["endpoint"], field: "endpoint", default: "https://api.push.apple.com")
        let key = try P256PrivateKey(pem: pem)
        return APNS(teamID: teamID, keyID: keyID, key: key, topic: topic, endpoint: endpoint)
    }

    /// `fcm.json`: a Google service-account file (`project_id`, `client_email`, `private_key`,
    /// `private_key_id?`, `token_uri?`) and an optional `endpoint`.
    static func loadFCM(_ fcm: JSONObject) throws -> FCM {
        guard let projectID = fcm["project_id"]?.stringValue, let email = fcm["client_email"]?.stringValue,
              let pem = fcm["private_key"]?.stringValue else {
            throw CredentialsError("needs project_id, client_email and private_key (a Google service-account file)")
        }
        let tokenURI = try httpsURL(fcm["token_uri"], field: "token_uri", default: "https://oauth2.googleapis.com/token")
        let endpoint = try origin(fcm["endpoint"], field: "endpoint", default: "https://fcm.googleapis.com")
        let key = try RSAPrivateKey(pem: pem)
        return FCM(projectID: projectID, clientEmail: email, privateKeyID: fcm["private_key_id"]?.stringValue,
                   key: key, tokenURI: tokenURI, endpoint: endpoint)
    }

    /// `webpush.json` `{subject, publicKey, privateKey}`: the VAPID key pair (RFC 8292).
    static func loadWebPush(_ web: JSONObject) throws -> WebPush {
        guard let subject = web["subject"]?.stringValue, let publicKey = web["publicKey"]?.stringValue,
              let privateKey = web["privateKey"]?.stringValue else {
            throw CredentialsError("needs subject, publicKey and privateKey")
        }
        guard subject.hasPrefix("mailto:") || subject.hasPrefix("https://") else {
            throw CredentialsError("subject must be a mailto: or https: URL (RFC 8292 §2.1)")
        }
        guard let scalar = Base64URL.decode(privateKey, .lenient) else { throw CredentialsError("privateKey is not base64url") }
        let key = try P256PrivateKey(rawScalar: scalar)
        guard Base64URL.encode(key.publicKey.uncompressed) == publicKey.replacingOccurrences(of: "=", with: "") else {
            throw CredentialsError("publicKey does not match privateKey")
        }
        return WebPush(subject: subject, key: key, publicKey: publicKey)
    }

    /// `hms.json`: Huawei's client-credentials grant takes the OAuth 2.0 client id and secret of
    /// the app (AppGallery Connect); the send path takes the app id, the same number
    /// (docs/providers.md).
    static func loadHMS(_ hms: JSONObject) throws -> HMS {
        guard let clientID = idText(hms["clientId"]), !clientID.isEmpty,
              let secret = hms["clientSecret"]?.stringValue, !secret.isEmpty else {
            throw CredentialsError("needs clientId and clientSecret (the app's OAuth 2.0 client in AppGallery Connect)")
        }
        let pathID = idText(hms["appId"]) ?? clientID
        guard isPathSegment(clientID), isPathSegment(pathID) else {
            throw CredentialsError("clientId and appId must be letters, digits, '.', '_' or '-' (not . or ..)")
        }
        let endpoint = trimSlash(hms["endpoint"]?.stringValue ?? "https://push-api.cloud.huawei.com")
        let tokenEndpoint = hms["tokenEndpoint"]?.stringValue ?? "https://oauth-login.cloud.huawei.com/oauth2/v3/token"
        guard endpoint.hasPrefix("https://"), tokenEndpoint.hasPrefix("https://") else {
            throw CredentialsError("endpoint and tokenEndpoint must be https URLs")
        }
        return HMS(clientID: clientID, clientSecret: secret, pathID: pathID, endpoint: endpoint, tokenEndpoint: tokenEndpoint,
                   badgeClass: hms["badgeClass"]?.stringValue)
    }

    /// `app.json` `{additionalDataAtRoot?, ratePerSecond?, webhook?}`; a bad value is a problem.
    mutating func apply(app: JSONObject) {
        additionalDataAtRoot = app["additionalDataAtRoot"]?.boolValue ?? false
        if let rate = app["ratePerSecond"] {
            if let number = rate.numberValue, number.isFinite, number > 0 {
                ratePerSecond = number
            } else {
                problems.append("\(appID)/app.json: ratePerSecond must be a number > 0")
            }
        }
        if let webhook = app["webhook"] {
            if let url = webhook["url"]?.stringValue, (try? Self.httpsURL(.string(url), field: "url", default: "")) != nil,
               let secret = webhook["secret"]?.stringValue, !secret.isEmpty {
                self.webhook = Webhook(url: url, secret: Array(secret.utf8))
            } else {
                problems.append("\(appID)/app.json: webhook needs an https url and a non-empty secret")
            }
        }
    }

    static func trimSlash(_ url: String) -> String { url.hasSuffix("/") ? String(url.dropLast()) : url }

    /// An id written as a string or a number (AppGallery Connect shows them as numbers).
    static func idText(_ value: JSONValue?) -> String? {
        if let text = value?.stringValue { return text }
        if let number = value?.numberValue, number >= 0, number < 1e15, number == number.rounded() { return String(Int64(number)) }
        return nil
    }

    /// Safe as one URL path segment (never `.` or `..`, which a URL resolves away).
    static func isPathSegment(_ text: String) -> Bool {
        !text.isEmpty && text != "." && text != ".." && text.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    /// A file named in a credentials file is relative to the app's folder
    /// (docs/reference/configuration.md); no escaping it.
    static func checkInsideFolder(_ file: String, field: String) throws {
        guard !file.hasPrefix("/"), !file.split(separator: "/").contains("..") else {
            throw CredentialsError("\(field) must be a path inside the app's folder")
        }
    }

    /// Certificates warn this long before they expire. Seconds (30 days).
    public static let certificateWarningSeconds: Double = 30 * 86400
    static let apnsEndpoints = ["production": "https://api.push.apple.com", "development": "https://api.sandbox.push.apple.com"]

    /// `apns.json` `{certificate: PEM | certificateFile: x.p12 | x.pem, password?, topic?, environment?, endpoint?}`.
    static func loadCertificate(_ apns: JSONObject, now: Double, read: (String) -> FolderFile, extraFiles: inout [String],
                                warnings: inout [String]) throws -> APNSCertificate {
        if apns["teamId"] != nil || apns["keyId"] != nil || apns["privateKey"] != nil || apns["privateKeyFile"] != nil {
            throw CredentialsError("holds both a signing key (teamId/keyId/privateKey) and a certificate: keep one")
        }
        let identity = try certificateIdentity(apns, read: read, extraFiles: &extraFiles)
        let environment = apns["environment"]?.stringValue ?? "production"
        guard let defaultEndpoint = apnsEndpoints[environment] else {
            throw CredentialsError("environment must be production or development, got \(environment)")
        }
        // Apple marks a push certificate with the environments it serves (node-apn checks the same).
        if !identity.appleEnvironments.isEmpty && !identity.appleEnvironments.contains(environment) {
            throw CredentialsError("the certificate is for \(identity.appleEnvironments.sorted().joined(separator: " and ")), not \(environment)")
        }
        let until = RFC3339Timestamp.format(Date(timeIntervalSince1970: identity.notAfter))
        guard now < identity.notAfter else { throw CredentialsError("the certificate expired at \(until)") }
        guard now >= identity.notBefore else {
            throw CredentialsError("the certificate is not valid before \(RFC3339Timestamp.format(Date(timeIntervalSince1970: identity.notBefore)))")
        }
        if identity.notAfter - now < certificateWarningSeconds {
            warnings.append("apns.json: the certificate expires at \(until), in \(Int((identity.notAfter - now) / 86400)) days: renew it")
        }
        guard let topic = apns["topic"]?.stringValue ?? identity.subjectUID, !topic.isEmpty else {
            throw CredentialsError("needs topic (the certificate names no bundle id in its subject UID)")
        }
        return APNSCertificate(identity: identity, topic: topic,
                               endpoint: try origin(apns["endpoint"], field: "endpoint", default: defaultEndpoint),
                               environment: environment)
    }

    /// The client identity of `apns.json`: `certificate` (PEM text) or `certificateFile` (a
    /// `.p12`/`.pfx` or a PEM file in the app's folder), unlocked with `password`.
    static func certificateIdentity(_ apns: JSONObject, read: (String) -> FolderFile, extraFiles: inout [String]) throws -> TLSClientIdentity {
        let password = apns["password"]?.stringValue
        if let pem = apns["certificate"]?.stringValue {
            return try TLSClientIdentity(pem: pem, password: password)
        }
        guard let file = apns["certificateFile"]?.stringValue else { throw CredentialsError("certificate must be a PEM string") }
        try checkInsideFolder(file, field: "certificateFile")
        extraFiles.append(file)
        guard case .bytes(let data) = read(file) else { throw CredentialsError("certificateFile \(file) is not readable") }
        let lower = file.lowercased()
        if lower.hasSuffix(".p12") || lower.hasSuffix(".pfx") {
            return try TLSClientIdentity(pkcs12: data, password: password)
        }
        return try TLSClientIdentity(pem: String(decoding: data, as: UTF8.self), password: password)
    }

    /// A provider endpoint: an `https` origin (`https://host[:port]`, a trailing `/` allowed),
    /// parsed by ``EndpointURL`` (the parser every request URL goes through).
    static func origin(_ value: JSONValue?, field: String, default fallback: String) throws -> String {
        guard let value else { return fallback }
        guard let text = value.stringValue, let url = EndpointURL(text), url.scheme == "https",
              url.origin.lowercased() == trimSlash(text).lowercased() else {
            throw CredentialsError("\(field) must be an https origin such as \(fallback), got '\(shown(value))'")
        }
        return trimSlash(text)
    }

    /// An `https` URL (a path allowed), parsed by ``EndpointURL``.
    static func httpsURL(_ value: JSONValue?, field: String, default fallback: String) throws -> String {
        guard let value else { return fallback }
        guard let text = value.stringValue, let url = EndpointURL(text), url.scheme == "https" else {
            throw CredentialsError("\(field) must be an https URL, got '\(shown(value))'")
        }
        return text
    }

    /// A value as a problem quotes it: a string as it is, anything else as JSON.
    static func shown(_ value: JSONValue) -> String { value.stringValue ?? value.jsonString() }
}

struct CredentialsError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

