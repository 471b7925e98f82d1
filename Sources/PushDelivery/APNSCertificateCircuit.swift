import Foundation
import PushCore
import PushHTTP
import Synchronization

/// Stops an app's APNs sends once APNs refused its TLS client certificate (docs/providers.md):
/// 403 `BadCertificate`/`BadCertificateEnvironment`, or a TLS handshake the server aborted
/// over the certificate. Every request of the app would get the same answer, so instead of one
/// refused request per recipient (and per retry) the app's recipients are `rejected` at once,
/// with the same reason, for ``holdSeconds``; then one request probes again. A new certificate
/// (another fingerprint, after the Secret was updated) is never held back.
///
/// Keyed by certificate fingerprint. Thread safety: a `Mutex` guards the table.
final class APNSCertificateCircuit: Sendable {
    /// How long a refused certificate stays refused before one request probes it. Seconds.
    /// Default: 300.
    let holdSeconds: Double
    private struct Open { var reason: String; var until: Double }
    private let open = Mutex<[String: Open]>([:])

    init(holdSeconds: Double = 300) { self.holdSeconds = holdSeconds }

    /// The reason to reject with when `fingerprint` is held back at `now`; nil: send. When the
    /// hold has passed, the first caller gets nil (the probe) and the others wait another hold.
    func refusal(for fingerprint: String, now: Double) -> String? {
        open.withLock { table in
            guard let entry = table[fingerprint] else { return nil }
            if now < entry.until { return entry.reason }
            table[fingerprint]?.until = now + holdSeconds
            return nil
        }
    }

    /// Records a refusal; true when the circuit was closed until now (log it loudly once).
    func trip(_ fingerprint: String, reason: String, now: Double) -> Bool {
        open.withLock { table in
            let wasOpen = table[fingerprint].map { _ in true } ?? false
            table[fingerprint] = Open(reason: reason, until: now + holdSeconds)
            return !wasOpen
        }
    }

    /// A success through the certificate closes the circuit.
    func reset(_ fingerprint: String) {
        open.withLock { table in if table[fingerprint] != nil { table[fingerprint] = nil } }
    }

    /// Reason for a TLS refusal of the client certificate.
    static let handshakeRefusalReason = "certificate_refused"

    /// Whether a transport failure is the server refusing our client certificate in the TLS
    /// handshake: the TLS alerts RFC 8446 §6.2 defines for it, as OpenSSL words them
    /// ("tlsv1 alert unknown ca", "sslv3 alert bad certificate", "… certificate expired", …).
    static func isHandshakeRefusal(_ error: HTTPTransportError) -> Bool {
        let detail: String
        switch error {
        case .tls(let text), .protocolError(let text), .connect(let text): detail = text
        case .other(_, let message): detail = message
        case .timeout, .shutdown, .invalidRequest, .addressRefused, .unanswered: return false
        }
        let lower = detail.lowercased()
        guard lower.contains("alert") else { return false }
        return ["unknown ca", "bad certificate", "certificate expired", "certificate revoked", "certificate unknown",
                "unsupported certificate", "certificate required", "access denied"].contains { lower.contains($0) }
    }
}
