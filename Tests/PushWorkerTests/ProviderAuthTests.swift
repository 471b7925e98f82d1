import Foundation
@testable import PushRuntime
import PushCore
@testable import PushDelivery
import PushCrypto
import PushHTTP
@testable import PushWorker
import PushTestSupport
import Synchronization
import Testing
import PushEncoding

/// Provider authorization caches (docs/providers.md) with an injected clock.
@Suite("Provider auth caches")
struct ProviderAuthCacheTests {
    static func apns() throws -> AppCredentials.APNS {
        AppCredentials.APNS(teamID: "TEAM123456", keyID: "KEY1234567", key: try P256PrivateKey.generate(), topic: "com.example.app",
                            endpoint: "https://api.push.apple.com")
    }

    static func issuedAt(_ jwt: String) -> Int? {
        let parts = jwt.split(separator: ".")
        guard parts.count == 3, let claims = Base64URL.decode(String(parts[1]), .strict),
              let object = try? JSONSerialization.jsonObject(with: Data(claims)) as? [String: Any] else { return nil }
        return object["iat"] as? Int
    }

    @Test("an APNs token is reused for 50 minutes, then re-minted")
    func apnsReuse() throws {
        let metrics = Metrics()
        let cache = APNSTokenCache(metrics: metrics)
        let apns = try Self.apns()
        let start = 1_800_000_000.0
        let first = try cache.token(for: apns, now: start)
        #expect(Self.issuedAt(first) == Int(start))
        #expect(try cache.token(for: apns, now: start + 49 * 60) == first)
        let later = try cache.token(for: apns, now: start + 50 * 60)
        #expect(later != first)
        #expect(Self.issuedAt(later) == Int(start + 50 * 60))
        #expect(metrics.counter("pushworker_token_refreshes_total", [("provider", "apns")]) == 2)
    }

    @Test("ExpiredProviderToken on a token ≥ 20 min old re-mints; on a younger one it does not (TooManyProviderTokenUpdates)",
          arguments: [(25.0, true), (20.0, true), (5.0, false), (19.9, false)])
    func apnsRefresh(ageMinutes: Double, refreshes: Bool) throws {
        let cache = APNSTokenCache(metrics: Metrics())
        let apns = try Self.apns()
        let start = 1_800_000_000.0
        let rejected = try cache.token(for: apns, now: start)
        let now = start + ageMinutes * 60
        #expect(cache.refresh(after: rejected, for: apns, now: now) == refreshes)
        let current = try cache.token(for: apns, now: now)
        #expect((current != rejected) == refreshes)
        if refreshes { #expect(Self.issuedAt(current) == Int(now)) }
    }

    @Test("each APNs key has its own token, also when two keys alternate; the authorization value carries it")
    func apnsKeysAlternate() throws {
        let metrics = Metrics()
        let cache = APNSTokenCache(metrics: metrics)
        let first = try Self.apns()
        let second = AppCredentials.APNS(teamID: "TEAM123456", keyID: "KEY7654321", key: try P256PrivateKey.generate(),
                                         topic: "com.example.app", endpoint: "https://api.push.apple.com")
        let now = 1_800_000_000.0
        let a = try cache.current(for: first, now: now)
        let b = try cache.current(for: second, now: now + 1)
        #expect(a.jwt != b.jwt)
        #expect(a.authorization == "bearer " + a.jwt && b.authorization == "bearer " + b.jwt)
        #expect(try cache.current(for: first, now: now + 2).jwt == a.jwt)
        #expect(try cache.current(for: second, now: now + 3).jwt == b.jwt)
        #expect(try cache.token(for: first, now: now + 4) == a.jwt)
        #expect(metrics.counter("pushworker_token_refreshes_total", [("provider", "apns")]) == 2)
    }

    @Test("a token another request already replaced counts as refreshed, without minting again")
    func apnsRefreshedElsewhere() throws {
        let metrics = Metrics()
        let cache = APNSTokenCache(metrics: metrics)
        let apns = try Self.apns()
        let old = try cache.token(for: apns, now: 1_800_000_000)
        #expect(cache.refresh(after: old, for: apns, now: 1_800_000_000 + 30 * 60))
        #expect(cache.refresh(after: old, for: apns, now: 1_800_000_000 + 30 * 60 + 1))
        #expect(metrics.counter("pushworker_token_refreshes_total", [("provider", "apns")]) == 2)
    }

    @Test("VAPID: one header per app and audience, reused for less than 24 h")
    func vapidReuse() throws {
        let metrics = Metrics()
        let cache = VAPIDCache(metrics: metrics)
        let key = try P256PrivateKey.generate()
        let web = AppCredentials.WebPush(subject: "mailto:ops@example.com", key: key, publicKey: Base64URL.encode(key.publicKey.uncompressed))
        let start = 1_800_000_000.0
        let first = try cache.authorization(appID: "a", audience: "https://fcm.googleapis.com", web: web, now: start)
        #expect(try cache.authorization(appID: "a", audience: "https://fcm.googleapis.com", web: web, now: start + 11 * 3600) == first)
        let mozilla = try cache.authorization(appID: "a", audience: "https://updates.push.services.mozilla.com", web: web, now: start)
        #expect(mozilla != first)
        #expect(try cache.authorization(appID: "b", audience: "https://fcm.googleapis.com", web: web, now: start) != first)
        // Renewed before the 12 h lifetime runs out (10 min margin), far from the 24 h limit.
        let renewed = try cache.authorization(appID: "a", audience: "https://fcm.googleapis.com", web: web, now: start + 12 * 3600 - 300)
        #expect(renewed != first)
        #expect(VAPIDCache.lifetimeSeconds < 24 * 3600)
        #expect(metrics.counter("pushworker_token_refreshes_total", [("provider", "webpush")]) == 4)
    }
}

/// The Deliverer's auth refresh against the sandbox (real HTTP/2, real JWT checks).
@Suite("Provider auth refresh", .serialized)
struct ProviderAuthRefreshTests {
    struct Fixture {
        let sandbox: SandboxServer
        let http: HTTP2Client
        let deliverer: Deliverer
        let clock: TestClock
        let credentials: AppCredentials
        let planner: JobPlanner

        init(clockStart: Double) throws {
            sandbox = try SandboxServer(apps: ["app_cli"])
            var configuration = HTTPClientConfiguration()
            configuration.caFile = sandbox.certificatePath
            http = try HTTP2Client(configuration: configuration)
            let clock = TestClock(clockStart)
            self.clock = clock
            deliverer = Deliverer(http: http, metrics: Metrics(), logger: Logger(level: .critical), requestTimeout: .seconds(10),
                                  clock: { clock.now })
            credentials = AppCredentials.load(appID: "app_cli", folder: URL(fileURLWithPath: sandbox.credentialsPath + "/app_cli"))
            planner = JobPlanner(keyring: try MsgIDKeyring(parsing: CLITest.keys), webPushPolicy: WebPushPolicy(extraAllowedHosts: ["127.0.0.1"]))
        }

        func request(_ recipient: String) throws -> ProviderRequest {
            let job = try JobDecoder.decode(Array(CLITest.job(recipients: [recipient]).utf8))
            guard case .ready(let request) = planner.plan(job, profile: credentials.profile, now: Date())[0].state else {
                throw TestSupportError("recipient not ready")
            }
            return request
        }

        func deliver(_ request: ProviderRequest) -> Deliverer.Attempt? {
            return deliverer.deliverWaiting(request, credentials: credentials)
        }

        func fault(_ json: String) throws {
            try sandbox.setFaults(json)
        }

        func shutdown() { http.shutdown(drainTimeout: .seconds(1)) }
    }

    static let ios = #"{"subscriptionId":"i1","platform":"ios","token":"\#(CLITest.iosToken)"}"#

    @Test("APNs ExpiredProviderToken on a 25-min-old token: re-minted, the retry succeeds (2 attempts)")
    func apnsRefreshAfterExpiry() throws {
        let real = Date().timeIntervalSince1970
        let fixture = try Fixture(clockStart: real - 25 * 60)
        defer { fixture.shutdown() }
        let request = try fixture.request(Self.ios)
        let first = try #require(fixture.deliver(request))
        guard case .sent = first.outcome else { Issue.record("first delivery not sent: \(first.outcome)"); return }
        #expect(first.attempts == 1)
        try fixture.fault(#"{"expireProviderTokensIssuedBefore":\#(Int(real) - 60)}"#)
        fixture.clock.set(real)
        let second = try #require(fixture.deliver(request))
        guard case .sent = second.outcome else { Issue.record("expected sent, got \(second.outcome)"); return }
        #expect(second.attempts == 2)
        #expect(second.httpStatus == 200)
        let responses = try fixture.sandbox.stats()["responses"] as? [String: Any]
        #expect(responses?["403"] as? Int == 1)
    }

    @Test("APNs ExpiredProviderToken on a 5-min-old token: no re-mint, retried later with the same token")
    func apnsNoRefreshWhenYoung() throws {
        let real = Date().timeIntervalSince1970
        // The token is minted at real − 25 min and rejected when it is 5 min old (clock at real − 20 min).
        let fixture = try Fixture(clockStart: real - 25 * 60)
        defer { fixture.shutdown() }
        let request = try fixture.request(Self.ios)
        guard case .sent = try #require(fixture.deliver(request)).outcome else { Issue.record("first delivery not sent"); return }
        try fixture.fault(#"{"expireProviderTokensIssuedBefore":\#(Int(real) - 60)}"#)
        fixture.clock.set(real - 20 * 60)
        let second = try #require(fixture.deliver(request))
        #expect(second.outcome == .retry(reason: "ExpiredProviderToken", retryAfterSeconds: nil, scope: .provider))
        #expect(second.attempts == 1)
        #expect(second.outcome.finalStatus == .failed)
        // Once the token reaches 20 min, the next ExpiredProviderToken re-mints and the send goes through.
        fixture.clock.set(real)
        guard case .sent = try #require(fixture.deliver(request)).outcome else { Issue.record("not sent after 20 min"); return }
    }

    @Test("FCM 401: the access token is dropped, a new one fetched, the request retried once")
    func fcmUnauthenticated() throws {
        let fixture = try Fixture(clockStart: Date().timeIntervalSince1970)
        defer { fixture.shutdown() }
        let request = try fixture.request(#"{"subscriptionId":"a1","platform":"android","token":"\#(CLITest.fcmToken)"}"#)
        guard case .sent = try #require(fixture.deliver(request)).outcome else { Issue.record("first delivery not sent"); return }
        #expect(try fixture.sandbox.stats()["tokenRequests"] as? Int == 1)
        try fixture.fault(#"{"fcmUnauthenticatedOnce":true}"#)
        let second = try #require(fixture.deliver(request))
        guard case .sent = second.outcome else { Issue.record("expected sent, got \(second.outcome)"); return }
        #expect(second.attempts == 2)
        let stats = try fixture.sandbox.stats()
        #expect(stats["tokenRequests"] as? Int == 2)
        #expect((stats["responses"] as? [String: Any])?["401"] as? Int == 1)
        // Cached again: no third token request.
        guard case .sent = try #require(fixture.deliver(request)).outcome else { Issue.record("third delivery not sent"); return }
        #expect(try fixture.sandbox.stats()["tokenRequests"] as? Int == 2)
    }

    @Test("FCM: a cached token's completion runs outside the cache's lock (it may ask for a token again)")
    func fcmCompletionOutsideLock() throws {
        let fixture = try Fixture(clockStart: Date().timeIntervalSince1970)
        defer { fixture.shutdown() }
        let fcm = try #require(fixture.credentials.fcm)
        let cache = FCMTokenCache(http: fixture.http, metrics: Metrics(), logger: Logger(level: .critical))
        let now = fixture.clock.now
        let fetched = DispatchSemaphore(value: 0)
        cache.withToken(fcm, now: now) { _ in fetched.signal() }
        #expect(fetched.wait(timeout: .now() + 10) == .success, "the token was fetched")
        // Cached now: the completion runs at once, on the calling thread; under the lock, the
        // nested call would wait for that lock forever.
        let results = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            cache.withToken(fcm, now: now) { outer in
                cache.withToken(fcm, now: now) { inner in
                    results.withLock { $0 = [(try? outer.get()) ?? "-", (try? inner.get()) ?? "-"] }
                    done.signal()
                }
            }
        }
        #expect(done.wait(timeout: .now() + 5) == .success, "the nested request for a token completed")
        let tokens = results.withLock { $0 }
        #expect(tokens.count == 2 && tokens[0] == tokens[1] && tokens[0] != "-")
        #expect(try fixture.sandbox.stats()["tokenRequests"] as? Int == 1)
    }
}


/// The header blocks the `Deliverer` reuses from one request to the next (`SharedHeaderBlocks`).
@Suite("Shared header blocks")
struct SharedHeaderBlocksTests {
    static func fields(_ block: HTTPHeaderBlock) -> [String] { block.headers.map { "\($0.name): \($0.value)" } }

    @Test("a job's headers and token give one block for all its requests; a new token, other headers or extra fields a new one")
    func reuse() throws {
        var blocks = SharedHeaderBlocks()
        let job = [KeyValue("apns-topic", "a.app"), KeyValue("apns-push-type", "alert")]
        let first = try blocks.block(platform: .ios, headers: job, authorization: "bearer A", extra: [])
        #expect(Self.fields(first) == ["apns-topic: a.app", "apns-push-type: alert", "authorization: bearer A"])
        #expect(try blocks.block(platform: .ios, headers: job, authorization: "bearer A", extra: []) === first)
        // Equal values in other storage find it too.
        #expect(try blocks.block(platform: .ios, headers: job.map { KeyValue(String($0.key), String($0.value)) },
                                 authorization: "bearer " + "A", extra: []) === first)
        let renewed = try blocks.block(platform: .ios, headers: job, authorization: "bearer B", extra: [])
        #expect(renewed !== first)
        #expect(Self.fields(renewed).last == "authorization: bearer B")
        let certificate = try blocks.block(platform: .ios, headers: job, authorization: nil, extra: [])
        #expect(Self.fields(certificate) == ["apns-topic: a.app", "apns-push-type: alert"], "certificate auth: no authorization")
        let web = try blocks.block(platform: .web, headers: [KeyValue("ttl", "60")], authorization: "vapid t=x, k=y",
                                   extra: [HTTPHeader(name: "content-encoding", value: "aes128gcm")])
        #expect(Self.fields(web) == ["ttl: 60", "authorization: vapid t=x, k=y", "content-encoding: aes128gcm"])
        #expect(try blocks.block(platform: .web, headers: [KeyValue("ttl", "60")], authorization: "vapid t=x, k=y", extra: []) !== web)
        #expect(try blocks.block(platform: .android, headers: job, authorization: "bearer A", extra: []) !== first, "one list per platform")
    }

    @Test("a few blocks per platform are kept, the oldest replaced first; a refused header throws and is not kept")
    func replacement() throws {
        var blocks = SharedHeaderBlocks()
        let count = SharedHeaderBlocks.entriesPerPlatform
        let audiences = (0...count).map { "vapid t=\($0)" }
        let made = try audiences.map { try blocks.block(platform: .web, headers: [], authorization: $0, extra: []) }
        // The first was replaced by the last; the others are still found.
        for index in 1...count { #expect(try blocks.block(platform: .web, headers: [], authorization: audiences[index], extra: []) === made[index]) }
        #expect(try blocks.block(platform: .web, headers: [], authorization: audiences[0], extra: []) !== made[0])
        #expect(throws: HTTPTransportError.invalidRequest("header authorization contains CR, LF or NUL")) {
            try blocks.block(platform: .ios, headers: [KeyValue("apns-topic", "a")], authorization: "bearer x\r\ny: z", extra: [])
        }
        #expect(throws: HTTPTransportError.invalidRequest("invalid header name")) {
            try blocks.block(platform: .ios, headers: [KeyValue("bad name", "a")], authorization: nil, extra: [])
        }
    }
}

/// The VAPID audience of a push endpoint (`Deliverer.origin(of:)`, RFC 8292 §2).
@Suite("VAPID audience")
struct VAPIDAudienceTests {
    @Test("the audience is the endpoint's origin: scheme, host in lower case, an explicit port kept, IPv6 in brackets", arguments: [
        ("https://fcm.googleapis.com/fcm/send/abc:def", "https://fcm.googleapis.com"),
        ("https://updates.push.services.mozilla.com/wpush/v2/gAAAA", "https://updates.push.services.mozilla.com"),
        ("https://Web.Push.Apple.COM/QGuQyavXutnMH4?x=1#f", "https://web.push.apple.com"),
        ("https://push.example:8443/p", "https://push.example:8443"),
        ("HTTPS://push.example", "https://push.example"),
        ("https://[2001:DB8::1]:4433/p", "https://[2001:db8::1]:4433"),
    ])
    func audience(endpoint: String, expected: String) throws {
        #expect(try Deliverer.origin(of: endpoint) == expected)
    }

    @Test("an endpoint the endpoint parser refuses has no audience", arguments: [
        "", "push.example/p", "https://", "https://user@push.example/p", "https://push.example:0/p", "https://push.example:99999/",
        "https://127.1/p", "https://push example/p", "https://push.example\\@evil/",
    ])
    func refused(endpoint: String) {
        #expect(throws: Deliverer.CredentialsErrorBox.self) { try Deliverer.origin(of: endpoint) }
    }
}
