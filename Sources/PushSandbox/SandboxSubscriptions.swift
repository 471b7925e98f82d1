import PushCore
import PushCrypto
import PushEncoding

/// Deterministic Web Push subscriptions: the keys of subscription `id` derive from a seed, so
/// `pushworker-dev sandbox subscriptions` and a running sandbox with the same `--seed` agree without sharing state.
///
/// - private key: the first valid P-256 scalar among HMAC-SHA256(seed, "p256:" + id),
///   HMAC-SHA256(seed, "p256:" + id + "#1"), "#2", … (a digest is invalid when 0 or ≥ the group order, p ≈ 2⁻³²);
/// - auth secret: the first 16 bytes of HMAC-SHA256(seed, "auth:" + id).
public enum SandboxSubscriptions {
    /// The seed used when `--seed` is not given.
    public static let defaultSeed = "pushworker-sandbox"

    /// The user agent's key pair and auth secret for subscription `id`.
    static func keys(seed: String, id: String) throws(CryptoError) -> (privateKey: P256PrivateKey, auth: [UInt8]) {
        let seedBytes = Array(seed.utf8)
        var lastError = CryptoError("no valid scalar")
        for attempt in 0..<8 {
            let label = attempt == 0 ? "p256:\(id)" : "p256:\(id)#\(attempt)"
            let scalar = Digest.hmacSHA256(key: seedBytes, message: Array(label.utf8))
            do {
                let key = try P256PrivateKey(rawScalar: scalar)
                let auth = Array(Digest.hmacSHA256(key: seedBytes, message: Array("auth:\(id)".utf8)).prefix(16))
                return (key, auth)
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// The subscription JSON (as the browser's `PushSubscription.toJSON()`) for `id` at `origin`;
    /// `browser` ends the endpoint with `?browser=` (the inbox's hint, docs/sandbox.md).
    package static func subscriptionJSON(origin: String, seed: String, id: String, browser: String? = nil) throws(CryptoError) -> String {
        let keys = try keys(seed: seed, id: id)
        return JSONWriter.object { w in
            w.member("endpoint", "\(origin)/wp/\(id)" + (browser.map { "?browser=\($0)" } ?? ""))
            w.member("keys") { k in
                k.member("p256dh", Base64URL.encode(keys.privateKey.publicKey.uncompressed))
                k.member("auth", Base64URL.encode(keys.auth))
            }
        }.text
    }

    /// Whether `id` may name a subscription: 1–128 characters of `[A-Za-z0-9_-]`.
    package static func isValidID(_ id: Substring) -> Bool {
        !id.isEmpty && id.utf8.count <= 128 && id.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }
}
