import Foundation
import PushCore
import PushCrypto
import Testing
@testable import PushSandbox
import PushEncoding

/// Provider authentication against trusted keys: APNs provider tokens, the FCM JWT grant, VAPID,
/// and Web Push decryption with the seed-derived subscription keys.
@Suite("Sandbox authentication")
struct SandboxAuthTests {
    static let now = 1_800_000_000.0
    static let origin = "https://127.0.0.1:8443"
    static let token = String(repeating: "0a", count: 32)

    struct Fixture {
        let router: SandboxRouter
        let state: SandboxState
        let apnsKey: P256PrivateKey
        let rsaKey: RSAPrivateKey
        let account: FCMTrustedAccount
    }

    static func fixture(seed: String = "test-seed") throws -> Fixture {
        let apnsKey = try P256PrivateKey.generate()
        let rsaKey = try RSAPrivateKey.generate(bits: 2048)
        var trust = SandboxTrust()
        trust.add(APNSTrustedKey(appID: "app1", teamID: "TEAM000001", keyID: "KEY0000001", topic: "com.example.app1", publicKey: apnsKey.publicKey))
        let account = FCMTrustedAccount(appID: "app1", projectID: "proj-1", clientEmail: "pw@proj-1.iam.gserviceaccount.com",
                                        privateKeyID: "kid1", tokenURI: origin + "/token", publicKey: rsaKey.publicKey)
        trust.add(account)
        let state = SandboxState(faults: SandboxFaults())
        let router = SandboxRouter(configuration: SandboxConfiguration(origin: origin, isAuthDisabled: false, seed: seed),
                                   state: state, trust: trust, clock: { now }, randomSeed: 1)
        return Fixture(router: router, state: state, apnsKey: apnsKey, rsaKey: rsaKey, account: account)
    }

    static func providerToken(key: P256PrivateKey, keyID: String = "KEY0000001", team: String = "TEAM000001", issuedAt: Double = now) throws -> String {
        try JWT.signES256(headerJSON: #"{"alg":"ES256","kid":"\#(keyID)"}"#, claimsJSON: #"{"iss":"\#(team)","iat":\#(Int(issuedAt))}"#, key: key)
    }

    static func apns(_ jwt: String, topic: String = "com.example.app1") -> SandboxRequest {
        var request = SandboxRequest()
        request.method = "POST"
        request.path = "/3/device/\(token)"
        request.headers = [(name: "authorization", value: "bearer \(jwt)"), (name: "apns-topic", value: topic), (name: "apns-push-type", value: "alert")]
        request.body = Array(#"{"aps":{"alert":"x"},"custom":{"i":"m"}}"#.utf8)
        request.bodyLength = request.body.count
        return request
    }

    static func reason(_ response: SandboxResponse) -> String? { JSONValue.parse(response.body)?["reason"]?.stringValue }

    @Test("a provider token signed by a trusted key is accepted")
    func apnsValidToken() throws {
        let fixture = try Self.fixture()
        let response = fixture.router.handle(Self.apns(try Self.providerToken(key: fixture.apnsKey)))
        #expect(response.status == 200)
    }

    @Test("provider token problems are 403 with Apple's reasons")
    func apnsTokenErrors() throws {
        let fixture = try Self.fixture()
        let other = try P256PrivateKey.generate()
        let cases: [(String, String)] = [
            (try Self.providerToken(key: fixture.apnsKey, issuedAt: Self.now - 3601), "ExpiredProviderToken"),
            (try Self.providerToken(key: other), "InvalidProviderToken"),
            (try Self.providerToken(key: fixture.apnsKey, keyID: "UNKNOWN123"), "InvalidProviderToken"),
            (try Self.providerToken(key: fixture.apnsKey, team: "OTHERTEAM1"), "InvalidProviderToken"),
            ("abc.def.ghi", "InvalidProviderToken"),
        ]
        for (jwt, reason) in cases {
            let response = fixture.router.handle(Self.apns(jwt))
            #expect(response.status == 403)
            #expect(Self.reason(response) == reason)
        }
    }

    @Test("a topic that is not the key's app topic is DeviceTokenNotForTopic")
    func apnsWrongTopic() throws {
        let fixture = try Self.fixture()
        let response = fixture.router.handle(Self.apns(try Self.providerToken(key: fixture.apnsKey), topic: "com.example.other"))
        #expect(response.status == 400)
        #expect(Self.reason(response) == "DeviceTokenNotForTopic")
    }

    static func grant(_ fixture: Fixture, claims: String? = nil, key: RSAPrivateKey? = nil) throws -> SandboxRequest {
        let claimsJSON = claims ?? #"{"iss":"\#(fixture.account.clientEmail)","scope":"https://www.googleapis.com/auth/firebase.messaging","aud":"\#(origin)/token","iat":\#(Int(now)),"exp":\#(Int(now) + 3600)}"#
        let assertion = try JWT.signRS256(headerJSON: #"{"alg":"RS256","typ":"JWT","kid":"kid1"}"#, claimsJSON: claimsJSON, key: key ?? fixture.rsaKey)
        var request = SandboxRequest()
        request.method = "POST"
        request.path = "/token"
        request.headers = [(name: "content-type", value: "application/x-www-form-urlencoded")]
        request.body = Array("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)".utf8)
        request.bodyLength = request.body.count
        return request
    }

    static func send(project: String, accessToken: String?) -> SandboxRequest {
        var request = SandboxRequest()
        request.method = "POST"
        request.path = "/v1/projects/\(project)/messages:send"
        if let accessToken { request.headers = [(name: "authorization", value: "Bearer \(accessToken)")] }
        request.body = Array(#"{"message":{"token":"abc:def","data":{"on.msgId":"f1"}}}"#.utf8)
        request.bodyLength = request.body.count
        return request
    }

    @Test("the JWT grant issues an access token that authorizes sends to its project only")
    func fcmGrantAndSend() throws {
        let fixture = try Self.fixture()
        let response = fixture.router.handle(try Self.grant(fixture))
        #expect(response.status == 200)
        let body = try #require(JSONValue.parse(response.body))
        #expect(body["expires_in"]?.numberValue == 3599)
        #expect(body["token_type"]?.stringValue == "Bearer")
        let accessToken = try #require(body["access_token"]?.stringValue)
        #expect(fixture.router.handle(Self.send(project: "proj-1", accessToken: accessToken)).status == 200)
        #expect(fixture.router.handle(Self.send(project: "proj-2", accessToken: accessToken)).status == 403)
        #expect(fixture.router.handle(Self.send(project: "proj-1", accessToken: "ya29.forged")).status == 401)
        #expect(fixture.router.handle(Self.send(project: "proj-1", accessToken: nil)).status == 401)
        #expect(JSONValue.parse(fixture.state.statsJSON())?["tokenRequests"]?.numberValue == 1)
    }

    @Test("bad JWT grants are 400 invalid_grant or invalid_scope")
    func fcmBadGrants() throws {
        let fixture = try Self.fixture()
        let email = fixture.account.clientEmail
        let scope = "https://www.googleapis.com/auth/firebase.messaging"
        let t = Int(Self.now)
        let cases: [(SandboxRequest, String)] = [
            (try Self.grant(fixture, key: try RSAPrivateKey.generate(bits: 2048)), "invalid_grant"),
            (try Self.grant(fixture, claims: #"{"iss":"\#(email)","scope":"\#(scope)","aud":"https://oauth2.googleapis.com/token","iat":\#(t),"exp":\#(t + 3600)}"#), "invalid_grant"),
            (try Self.grant(fixture, claims: #"{"iss":"\#(email)","scope":"\#(scope)","aud":"\#(Self.origin)/token","iat":\#(t),"exp":\#(t + 7200)}"#), "invalid_grant"),
            (try Self.grant(fixture, claims: #"{"iss":"\#(email)","scope":"\#(scope)","aud":"\#(Self.origin)/token","iat":\#(t - 7200),"exp":\#(t - 3600)}"#), "invalid_grant"),
            (try Self.grant(fixture, claims: #"{"iss":"nobody@x","scope":"\#(scope)","aud":"\#(Self.origin)/token","iat":\#(t),"exp":\#(t + 3600)}"#), "invalid_grant"),
            (try Self.grant(fixture, claims: #"{"iss":"\#(email)","scope":"email","aud":"\#(Self.origin)/token","iat":\#(t),"exp":\#(t + 3600)}"#), "invalid_scope"),
        ]
        for (request, error) in cases {
            let response = fixture.router.handle(request)
            #expect(response.status == 400)
            #expect(JSONValue.parse(response.body)?["error"]?.stringValue == error)
        }
    }

    static func webPush(id: String, authorization: String, body: [UInt8], ttl: String = "60") -> SandboxRequest {
        var request = SandboxRequest()
        request.method = "POST"
        request.path = "/wp/\(id)"
        request.headers = [(name: "authorization", value: authorization), (name: "ttl", value: ttl),
                           (name: "content-encoding", value: "aes128gcm"), (name: "urgency", value: "normal")]
        request.body = body
        request.bodyLength = body.count
        return request
    }

    @Test("a Web Push message encrypted to a seed-derived subscription is decrypted and recorded")
    func webPushDecrypts() throws {
        let fixture = try Self.fixture(seed: "s1")
        let vapidKey = try P256PrivateKey.generate()
        let authorization = try VAPID.authorization(audience: Self.origin, subject: "mailto:ops@example.com", expiresAt: Int(Self.now) + 3600, key: vapidKey)
        let keys = try SandboxSubscriptions.keys(seed: "s1", id: "sub7")
        let plaintext = Array(#"{"title":"Hi","msgId":"w1","data":{"url":"https://x"}}"#.utf8)
        let body = try WebPushEncryption.encrypt(plaintext: plaintext, userAgentPublicKey: keys.privateKey.publicKey.uncompressed, authSecret: keys.auth)
        let response = fixture.router.handle(Self.webPush(id: "sub7", authorization: authorization, body: body))
        #expect(response.status == 201)
        #expect(fixture.state.acceptedCount(msgID: "w1") == 1)
        let line = try #require(JSONValue.parse(String(fixture.state.messagesText(platform: "web").split(separator: "\n").first ?? "")))
        #expect(line["body"]?["title"]?.stringValue == "Hi")
        #expect(line["body"]?["data"]?["url"]?.stringValue == "https://x")
        // Encrypted for another subscription's keys: the sandbox cannot decrypt it.
        let other = try SandboxSubscriptions.keys(seed: "s1", id: "sub8")
        let wrong = try WebPushEncryption.encrypt(plaintext: plaintext, userAgentPublicKey: other.privateKey.publicKey.uncompressed, authSecret: other.auth)
        #expect(fixture.router.handle(Self.webPush(id: "sub7", authorization: authorization, body: wrong)).status == 400)
    }

    @Test("VAPID problems are refused: wrong audience, expired, over 24 h, no subject, bad signature")
    func vapidErrors() throws {
        let fixture = try Self.fixture()
        let key = try P256PrivateKey.generate()
        let t = Int(Self.now)
        let keyText = Base64URL.encode(key.publicKey.uncompressed)
        func signed(_ claims: String) throws -> String {
            "vapid t=\(try JWT.signES256(headerJSON: #"{"typ":"JWT","alg":"ES256"}"#, claimsJSON: claims, key: key)), k=\(keyText)"
        }
        let cases: [(String, Int)] = [
            (try VAPID.authorization(audience: "https://fcm.googleapis.com", subject: "mailto:a@b", expiresAt: t + 60, key: key), 403),
            (try VAPID.authorization(audience: Self.origin, subject: "mailto:a@b", expiresAt: t - 1, key: key), 403),
            (try VAPID.authorization(audience: Self.origin, subject: "mailto:a@b", expiresAt: t + 90000, key: key), 403),
            (try signed(#"{"aud":"\#(Self.origin)","exp":\#(t + 60)}"#), 403),
            (try VAPID.authorization(audience: Self.origin, subject: "mailto:a@b", expiresAt: t + 60, key: key)
                .replacingOccurrences(of: keyText, with: Base64URL.encode(try P256PrivateKey.generate().publicKey.uncompressed)), 403),
            ("vapid t=x.y.z", 401),
            ("Bearer abc", 401),
        ]
        for (authorization, status) in cases {
            #expect(fixture.router.handle(Self.webPush(id: "sub1", authorization: authorization, body: [])).status == status)
        }
        let good = try VAPID.authorization(audience: Self.origin, subject: "https://example.com", expiresAt: t + 86400, key: key)
        #expect(fixture.router.handle(Self.webPush(id: "sub1", authorization: good, body: [])).status == 201)
    }

    @Test("subscription keys are deterministic per (seed, id) and differ across ids and seeds")
    func deterministicKeys() throws {
        let a = try SandboxSubscriptions.keys(seed: "s", id: "x")
        let b = try SandboxSubscriptions.keys(seed: "s", id: "x")
        let c = try SandboxSubscriptions.keys(seed: "s", id: "y")
        let d = try SandboxSubscriptions.keys(seed: "t", id: "x")
        #expect(a.privateKey.rawScalar == b.privateKey.rawScalar && a.auth == b.auth)
        #expect(a.auth.count == 16)
        #expect(a.privateKey.rawScalar != c.privateKey.rawScalar && a.auth != c.auth)
        #expect(a.privateKey.rawScalar != d.privateKey.rawScalar)
        #expect(a.privateKey.rawScalar == Digest.hmacSHA256(key: Array("s".utf8), message: Array("p256:x".utf8)))
    }
}
