import Foundation
import PushRuntime
import PushCore
import PushCrypto
import PushHTTP
import Synchronization
import PushEncoding

/// APNs provider tokens (ES256 JWT), one per team+key, shared by every request of the process.
///
/// Apple: "Refresh your token no more than once every 20 minutes and no less than once every
/// 60 minutes" (Establishing a token-based connection to APNs). We reuse a token for 50 min,
/// and after `ExpiredProviderToken` mint a new one only if the rejected one is at least 20 min
/// old — earlier re-minting earns `TooManyProviderTokenUpdates`.
package final class APNSTokenCache: Sendable {
    static let reuseSeconds: Double = 50 * 60
    static let minimumAgeToRefresh: Double = 20 * 60
    /// A minted provider token and the `authorization` value that carries it.
    package struct Token: Sendable {
        package var jwt: String
        package var authorization: String
        var mintedAt: Double
    }
    private struct Key: Hashable { var teamID: String; var keyID: String }
    private struct State {
        var tokens: [Key: Token] = [:]
        /// The token handed out last: the recipients of a job share one key, so the look-up
        /// is two string comparisons of the same storage, no hashing (docs/performance.md).
        var last: (key: Key, token: Token)?
    }
    private let state = Mutex(State())
    private let metrics: Metrics

    package init(metrics: Metrics) { self.metrics = metrics }

    package func token(for apns: AppCredentials.APNS, now: Double) throws(CryptoError) -> String {
        try current(for: apns, now: now).jwt
    }

    /// The token to send (minted when there is none or it is older than `reuseSeconds`), with
    /// its `authorization` header value (`bearer <jwt>`).
    package func current(for apns: AppCredentials.APNS, now: Double) throws(CryptoError) -> Token {
        let key = Key(teamID: apns.teamID, keyID: apns.keyID)
        let cached: Token? = state.withLock { state in
            if let last = state.last, last.key == key { return last.token }
            guard let token = state.tokens[key] else { return nil }
            state.last = (key, token)
            return token
        }
        if let cached, now - cached.mintedAt < Self.reuseSeconds, now >= cached.mintedAt { return cached }
        return try mint(apns, key: key, now: now)
    }

    /// After `ExpiredProviderToken` for `rejected`: true when a fresh token is available.
    func refresh(after rejected: String, for apns: AppCredentials.APNS, now: Double) -> Bool {
        let key = Key(teamID: apns.teamID, keyID: apns.keyID)
        guard let current = state.withLock({ $0.tokens[key] }) else { return (try? mint(apns, key: key, now: now)) != nil }
        if current.jwt != rejected { return true }  // another request refreshed it already
        guard now - current.mintedAt >= Self.minimumAgeToRefresh else { return false }
        return (try? mint(apns, key: key, now: now)) != nil
    }

    private func mint(_ apns: AppCredentials.APNS, key: Key, now: Double) throws(CryptoError) -> Token {
        let header = JSONWriter.object { w in w.member("alg", "ES256"); w.member("kid", apns.keyID) }.text
        let claims = JSONWriter.object { w in w.member("iss", apns.teamID); w.member("iat", Int(now)) }.text
        let jwt = try JWT.signES256(headerJSON: header, claimsJSON: claims, key: apns.key)
        let token = Token(jwt: jwt, authorization: "bearer " + jwt, mintedAt: now)
        state.withLock { state in
            state.tokens[key] = token
            state.last = (key, token)
        }
        metrics.increment("pushworker_token_refreshes_total", [("provider", "apns")])
        return token
    }
}

/// VAPID authorization per app and push-service origin (RFC 8292), cached for 12 h (< 24 h, the
/// longest `exp` push services accept).
final class VAPIDCache: Sendable {
    static let lifetimeSeconds: Double = 12 * 3600
    private struct Entry { var header: String; var expiresAt: Double }
    private let entries = Mutex<[String: Entry]>([:])
    private let metrics: Metrics

    init(metrics: Metrics) { self.metrics = metrics }

    func authorization(appID: String, audience: String, web: AppCredentials.WebPush, now: Double) throws(CryptoError) -> String {
        let key = appID + "|" + audience
        if let entry = entries.withLock({ $0[key] }), entry.expiresAt - now > 600 { return entry.header }
        let expiresAt = now + Self.lifetimeSeconds
        let header = try VAPID.authorization(audience: audience, subject: web.subject, expiresAt: Int(expiresAt), key: web.key)
        entries.withLock { $0[key] = Entry(header: header, expiresAt: expiresAt) }
        metrics.increment("pushworker_token_refreshes_total", [("provider", "webpush")])
        return header
    }
}

/// FCM OAuth 2.0 access tokens from a service account (JWT bearer grant, RFC 7523), cached until
/// five minutes before expiry; concurrent requests wait for one fetch.
final class FCMTokenCache: Sendable {
    typealias Waiter = @Sendable (Result<String, FCMAuthError>) -> Void
    private enum State { case fetching([Waiter]); case ready(token: String, expiresAt: Double) }
    private let states = Mutex<[String: State]>([:])
    private let http: HTTP2Client
    private let metrics: Metrics
    private let logger: Logger

    init(http: HTTP2Client, metrics: Metrics, logger: Logger) {
        self.http = http
        self.metrics = metrics
        self.logger = logger
    }

    /// `completion` runs on the calling thread when a token is ready (outside the lock: it
    /// sends the request), else when the fetch ends.
    func withToken(_ fcm: AppCredentials.FCM, now: Double, _ completion: @escaping Waiter) {
        let key = fcm.clientEmail
        enum Next { case ready(String), wait, fetch }
        let next: Next = states.withLock { states in
            switch states[key] {
            case .ready(let token, let expiresAt) where expiresAt - now > 300:
                return .ready(token)
            case .fetching(var waiters):
                waiters.append(completion)
                states[key] = .fetching(waiters)
                return .wait
            default:
                states[key] = .fetching([completion])
                return .fetch
            }
        }
        switch next {
        case .ready(let token): completion(.success(token))
        case .wait: break
        case .fetch: fetch(fcm, key: key, now: now)
        }
    }

    /// Forgets `token` after a 401, so the next request fetches a new one.
    func invalidate(_ fcm: AppCredentials.FCM, token: String) {
        states.withLock { states in
            if case .ready(let current, _) = states[fcm.clientEmail], current == token { states[fcm.clientEmail] = nil }
        }
    }

    private func fetch(_ fcm: AppCredentials.FCM, key: String, now: Double) {
        let assertion: String
        do {
            let header = JSONWriter.object { w in
                w.member("alg", "RS256")
                w.member("typ", "JWT")
                w.member("kid", ifPresent: fcm.privateKeyID)
            }.text
            let claims = JSONWriter.object { w in
                w.member("iss", fcm.clientEmail)
                w.member("scope", "https://www.googleapis.com/auth/firebase.messaging")
                w.member("aud", fcm.tokenURI)
                w.member("iat", Int(now))
                w.member("exp", Int(now) + 3600)
            }.text
            assertion = try JWT.signRS256(headerJSON: header, claimsJSON: claims, key: fcm.key)
        } catch {
            finish(key, .failure(FCMAuthError(reason: "cannot sign the token request: \(error)")))
            return
        }
        let body = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        let request = HTTPRequest(method: "POST", url: fcm.tokenURI,
                                  headers: [HTTPHeader(name: "content-type", value: "application/x-www-form-urlencoded")],
                                  body: Array(body.utf8), timeout: .seconds(10))
        http.submit(request) { [self] result in
            switch result {
            case .success(let response) where response.status == 200:
                guard let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
                      let token = object["access_token"] as? String else {
                    finish(key, .failure(FCMAuthError(reason: "token endpoint answered without access_token")))
                    return
                }
                let lifetime = (object["expires_in"] as? NSNumber)?.doubleValue ?? 3600
                metrics.increment("pushworker_token_refreshes_total", [("provider", "fcm")])
                finish(key, .success(token), expiresAt: now + lifetime)
            case .success(let response):
                let text = String(decoding: response.body.prefix(300), as: UTF8.self)
                logger.error("FCM token request refused", ["http.status": "\(response.status)", "fcm.error": text])
                finish(key, .failure(FCMAuthError(reason: "token endpoint answered \(response.status)", isRetryable: response.status >= 500)))
            case .failure(let error):
                finish(key, .failure(FCMAuthError(reason: "token endpoint unreachable: \(error)", isRetryable: true)))
            }
        }
    }

    /// Hands the result to every waiter; a token is stored (until `expiresAt`) in the same step.
    private func finish(_ key: String, _ result: Result<String, FCMAuthError>, expiresAt: Double = 0) {
        let waiters: [Waiter] = states.withLock { states in
            guard case .fetching(let queued) = states[key] else { return [] }
            if case .success(let token) = result { states[key] = .ready(token: token, expiresAt: expiresAt) }
            else { states[key] = nil }
            return queued
        }
        for waiter in waiters { waiter(result) }
    }
}

struct FCMAuthError: Error, Sendable {
    var reason: String
    var isRetryable = false
}
