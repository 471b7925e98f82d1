import PushCore

/// The provider side of an FCM audience (docs/providers.md "FCM topics and conditions"): its HTTP v1 target and what FCM's
/// answers mean for it.
extension FCMAudience {
    /// The FCM HTTP v1 target.
    public var messageTarget: FCMMessageTarget {
        switch self {
        case .topic(let name): .topic(name)
        case .condition(let expression): .condition(expression)
        }
    }

    /// What an FCM answer means for an audience send (docs/providers.md "FCM topics and conditions"): the token-send mapping
    /// (docs/providers.md), except the verdicts about a token: an audience has none to invalidate, so
    /// `UNREGISTERED`/`NOT_FOUND` is `rejected` with FCM's reason, never `invalid_token` (no
    /// dead-token record, nothing on `push.tokens.v1`). A 2xx is `sent` and, once recorded,
    /// never sent again under this msgId: FCM's fan-out "is fully committed and cannot be
    /// canceled" [F5].
    public static func outcome(_ outcome: ProviderOutcome) -> ProviderOutcome {
        guard case .invalidToken(let reason, _) = outcome else { return outcome }
        return .rejected(reason: reason ?? "UNREGISTERED")
    }

    /// Transport failures after which FCM may have accepted the request although no answer came
    /// back (the request was written, the answer lost: a timeout, a reset stream, a drain that
    /// aborted it). A retry could fan the message out a second time to every subscriber, and FCM
    /// has no idempotency key, so an audience is not retried after these: its result is `failed`
    /// with the reason, and resending is the operator's decision. A connect or TLS failure (nothing
    /// was sent), a 429 or a 5xx (FCM answered: not accepted) are retried as usual.
    public static let unansweredReasons: Set<String> = ["timeout", "protocol_error", "transport_error", "shutdown"]

    /// Whether `outcome` is a retry after which FCM may nevertheless have fanned the message out.
    public static func mayHaveBeenAccepted(_ outcome: ProviderOutcome) -> Bool {
        guard case .retry(let reason?, _, _) = outcome else { return false }
        return unansweredReasons.contains(reason)
    }
}
