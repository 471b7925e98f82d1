import Foundation
import PushCore
import PushCrypto
import PushEncoding
import PushHTTP
import PushProviders
import PushRuntime
import Synchronization

/// How one provider obtains an OAuth 2.0 access token (docs/providers.md): its token endpoint
/// and the form body of its grant. The fetch, the caching, the single flight, the invalidation
/// and the error mapping are ``OAuthTokenFetcher``'s, the same for every provider.
package protocol OAuthGrant: Sendable {
    /// The `provider` label of `pushworker_token_refreshes_total` (and of the log keys).
    static var provider: String { get }
    /// The provider's name in log messages.
    static var providerName: String { get }
    /// One cached token per key: a service account, an app's client.
    var tokenCacheKey: String { get }
    var tokenEndpoint: String { get }
    /// The `application/x-www-form-urlencoded` body of the grant, signed at `now` (Unix seconds)
    /// where the grant is signed.
    func grantBody(now: Double) throws(OAuthError) -> String
}

/// Why no access token could be had; `reason` names no secret.
package struct OAuthError: Error, Sendable {
    package var reason: String
    /// A failure that may pass (the endpoint unreachable, 5xx, 429): the send is retried later.
    package var isRetryable = false
}

package typealias FCMAuthError = OAuthError
package typealias HMSAuthError = OAuthError
/// FCM access tokens from a service account: ``OAuthTokenFetcher`` with the JWT bearer grant.
package typealias FCMTokenCache = OAuthTokenFetcher<AppCredentials.FCM>
/// Huawei Push Kit access tokens: ``OAuthTokenFetcher`` with the client-credentials grant.
package typealias HMSTokenCache = OAuthTokenFetcher<AppCredentials.HMS>

/// OAuth 2.0 access tokens of one provider, one per ``OAuthGrant/tokenCacheKey``, shared by every
/// request of the process. The rules are ``AccessTokenState``'s (pure, tested without I/O): a
/// token is used until shortly before it expires, the requests that arrive during a fetch wait
/// for that one fetch, and a token the provider refused is forgotten once. This class holds one
/// state per key behind a lock and performs its steps; completions always run outside the lock.
package final class OAuthTokenFetcher<Grant: OAuthGrant>: Sendable {
    package typealias Waiter = @Sendable (Result<String, OAuthError>) -> Void
    private let states = Mutex<[String: AccessTokenState<Waiter>]>([:])
    private let http: HTTP2Client
    private let metrics: Metrics
    private let logger: Logger
    /// Unix seconds (injectable for tests).
    private let clock: @Sendable () -> Double

    package init(http: HTTP2Client, metrics: Metrics, logger: Logger, clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.http = http
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
    }

    /// Calls `completion` with a token valid at `now`: at once on the calling thread, or after
    /// the one fetch under way.
    package func withToken(_ grant: Grant, now: Double, _ completion: @escaping Waiter) {
        let key = grant.tokenCacheKey
        let step = states.withLock { $0[key, default: AccessTokenState()].request(now: now, waiter: completion) }
        switch step {
        case .use(let token): completion(.success(token))
        case .wait: return
        case .fetch: fetch(grant, key: key, now: now)
        }
    }

    /// Forgets `token` after the provider refused it (FCM 401, Huawei 80200001/80200003), unless
    /// it was replaced already.
    package func invalidate(_ grant: Grant, token: String) {
        states.withLock { _ = $0[grant.tokenCacheKey]?.invalidate(token) }
    }

    private func fetch(_ grant: Grant, key: String, now: Double) {
        let body: String
        do { body = try grant.grantBody(now: now) } catch {
            return finish(key, .failure(error), expiresIn: nil)
        }
        let request = HTTPRequest(method: "POST", url: grant.tokenEndpoint,
                                  headers: [HTTPHeader(name: "content-type", value: "application/x-www-form-urlencoded")],
                                  body: Array(body.utf8), timeout: .seconds(10))
        http.submit(request) { [self] result in
            switch result {
            case .success(let response) where response.status == 200:
                let answer = try? JSONParser.parse(response.body, maxDepth: 8, maxBytes: 65_536)
                guard let token = answer?["access_token"]?.stringValue, !token.isEmpty else {
                    return finish(key, .failure(OAuthError(reason: "token endpoint answered without access_token")), expiresIn: nil)
                }
                metrics.increment("pushworker_token_refreshes_total", [("provider", Grant.provider)])
                finish(key, .success(token), expiresIn: answer?["expires_in"]?.numberValue)
            case .success(let response):
                // Error answers name no secret: {"error":"invalid_grant","error_description":"…"}.
                let text = String(decoding: response.body.prefix(300), as: UTF8.self)
                logger.error("\(Grant.providerName) token request refused", ["http.status": "\(response.status)", "\(Grant.provider).error": text])
                finish(key, .failure(OAuthError(reason: "token endpoint answered \(response.status): \(text)",
                                                isRetryable: response.status >= 500 || response.status == 429)), expiresIn: nil)
            case .failure(let error):
                finish(key, .failure(OAuthError(reason: "token endpoint unreachable: \(error.detail ?? "\(error)")", isRetryable: true)),
                       expiresIn: nil)
            }
        }
    }

    /// Hands the answer to every waiter; a token is stored in the same step.
    private func finish(_ key: String, _ result: Result<String, OAuthError>, expiresIn: Double?) {
        let now = clock()
        let waiters = states.withLock { states -> [Waiter] in
            states[key]?.fetched(token: try? result.get(), expiresIn: expiresIn, now: now) ?? []
        }
        for waiter in waiters { waiter(result) }
    }
}

/// `application/x-www-form-urlencoded` value: unreserved characters as they are, the rest
/// percent-encoded (a client secret may hold `+`, `/`, `=`).
func formEncoded(_ value: String) -> String {
    var output = ""
    output.reserveCapacity(value.utf8.count)
    let hex = Array("0123456789ABCDEF")
    for byte in value.utf8 {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            output.append(Character(UnicodeScalar(byte)))
        default:
            output.append("%")
            output.append(hex[Int(byte >> 4)])
            output.append(hex[Int(byte & 0x0F)])
        }
    }
    return output
}

/// Google's JWT bearer grant (RFC 7523) for FCM: an RS256 assertion signed with the service
/// account's key, valid for an hour, scoped to Firebase Cloud Messaging.
extension AppCredentials.FCM: OAuthGrant {
    package static var provider: String { "fcm" }
    package static var providerName: String { "FCM" }
    package var tokenCacheKey: String { clientEmail }
    package var tokenEndpoint: String { tokenURI }

    package func grantBody(now: Double) throws(OAuthError) -> String {
        let header = JSONWriter.object { w in
            w.member("alg", "RS256")
            w.member("typ", "JWT")
            w.member("kid", ifPresent: privateKeyID)
        }.text
        let claims = JSONWriter.object { w in
            w.member("iss", clientEmail)
            w.member("scope", "https://www.googleapis.com/auth/firebase.messaging")
            w.member("aud", tokenURI)
            w.member("iat", Int(now))
            w.member("exp", Int(now) + 3600)
        }.text
        let assertion: String
        do { assertion = try JWT.signRS256(headerJSON: header, claimsJSON: claims, key: key) } catch {
            throw OAuthError(reason: "cannot sign the token request: \(error)")
        }
        return "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
    }
}

/// Huawei's client-credentials grant (docs/providers.md): `POST` to the token endpoint with
/// `grant_type=client_credentials&client_id=…&client_secret=…`, answered with
/// `{"access_token","expires_in":3600,"token_type":"Bearer"}`.
extension AppCredentials.HMS: OAuthGrant {
    package static var provider: String { "hms" }
    package static var providerName: String { "Huawei" }
    package var tokenCacheKey: String { tokenEndpoint + "|" + clientID }

    package func grantBody(now: Double) throws(OAuthError) -> String {
        "grant_type=client_credentials&client_id=\(formEncoded(clientID))&client_secret=\(formEncoded(clientSecret))"
    }
}
