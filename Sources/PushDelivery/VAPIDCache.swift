import PushCrypto
import PushRuntime
import Synchronization

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
