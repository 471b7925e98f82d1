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
