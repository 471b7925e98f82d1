import PushCore
/// What one provider response means for a recipient (docs/providers.md).
///
/// Outcomes are data, not thrown errors: the pipeline switches over them exhaustively.
public enum ProviderOutcome: Sendable, Equatable {
    /// Accepted. `providerMessageID` is the `apns-id`, the FCM message `name`, or the Web Push `location`.
    case sent(providerMessageID: String?)
    /// The token is dead: record it (with the provider's timestamp when given) and publish it to
    /// `push.tokens.v1`. `reason` is the provider's string verbatim (nil for Web Push 404/410).
    case invalidToken(reason: String?, invalidSinceMs: Int64?)
    /// Transient: retry after max(backoff, `retryAfterSeconds`).
    case retry(reason: String?, retryAfterSeconds: Double?, scope: RetryScope)
    /// Permanent for this message. `reason` is the provider's string verbatim or one of ours.
    case rejected(reason: String?)
    /// The provider rejected our credentials as expired (APNs `ExpiredProviderToken`, FCM 401):
    /// refresh once and retry; the refresh counts as an attempt.
    case authExpired(reason: String)

    /// The result status (docs/reference/records.md) this outcome ends in when it is final.
    public var finalStatus: DeliveryStatus {
        switch self {
        case .sent: .sent
        case .invalidToken: .invalidToken
        case .retry, .authExpired: .failed
        case .rejected: .rejected
        }
    }

    /// The reason string carried to the result, if any.
    public var reason: String? {
        switch self {
        case .sent: nil
        case .invalidToken(let reason, _): reason
        case .retry(let reason, _, _): reason
        case .rejected(let reason): reason
        case .authExpired(let reason): reason
        }
    }
}

/// Who a retry-worthy answer applies to (docs/providers.md).
public enum RetryScope: Sendable, Equatable {
    /// Only this recipient waits (APNs `TooManyRequests`: one device, too many pushes).
    case recipient
    /// The whole app+provider pair waits, fleet-wide, until `Retry-After` (FCM `QUOTA_EXCEEDED`,
    /// any 429 that names no device).
    case provider
}

/// A transport failure before any HTTP status arrived.
public enum TransportFailure: Sendable, Equatable {
    case timeout
    case connect
    case tls
    case protocolError
    case shutdown
    /// The request could not be sent as built (e.g. a control character in a header): permanent.
    case invalidRequest
    /// The address the connection was about to be made to is not allowed (a Web Push endpoint
    /// that resolved to a private address at connect time, docs/security.md): permanent.
    case addressRefused
    case other
    /// Written (or possibly written) and never answered: timeout, reset or connection loss after
    /// the write, or aborted at the drain deadline (``AttemptCertainty/unknown``).
    case unanswered
}

/// Whether a delivery attempt may have reached the provider (the once-promise's three cases).
public enum AttemptCertainty: Sendable, Equatable {
    /// The provider answered with a status: its outcome says what happened.
    case answered
    /// Nothing reached the provider (connect or TLS failure before the request was written, a
    /// refused stream, a stream above a GOAWAY's last-stream-id, a timeout before the write):
    /// safe to send again.
    case notDelivered
    /// The request was (or may have been) written and no answer came: the provider may have
    /// accepted and shown it.
    case unknown
    /// Never written: the worker withheld it (its claim was lost or ran out, or the worker is
    /// draining). No attempt was spent.
    case withheld
}
