import PushCore
import PushProviders

/// What to do when a request was written and the provider never answered
/// (`PUSHWORKER_RESEND_UNANSWERED`).
public enum UnansweredPolicy: String, Sendable, CaseIterable {
    /// Send it once more, with the same replace key, so that two copies show once. Default.
    case replace
    /// Never send it again: the recipient ends `failed` with reason `unanswered`.
    case never

    /// The number of unknown attempts at which the fleet's claim refuses a msgId for good
    /// (``PushCore/ClaimReply/unansweredFinal``): one resend under `replace`, none under `never`.
    public var claimLimit: Int { self == .replace ? 2 : 1 }
}

/// How sure a `sent` result is, when it is not plainly sure (the `certainty` field of a result).
public enum ResultCertainty: String, Sendable, Equatable {
    /// An earlier attempt was written and never answered, and this resend was accepted: the
    /// device may have received both copies; they carry one replace key, so it shows one.
    case unansweredResent = "unanswered_resent"
}

/// One delivery attempt as the pipeline saw it: the provider's outcome and how sure it is that the
/// request reached the provider.
public struct AttemptFacts: Sendable, Equatable {
    public var outcome: ProviderOutcome
    public var certainty: AttemptCertainty
    /// The transport failure, when the attempt got no status.
    public var transport: TransportFailure?
    public var httpStatus: Int?
    /// Attempts made for the recipient so far, this one included (earlier processings too).
    public var attemptsMade: Int
    /// This attempt was the one resend after an unknown outcome (the claim said so).
    public var isResend: Bool
    /// An FCM topic or condition send: a fan-out by Google that must never be repeated.
    public var isAudience: Bool

    public init(outcome: ProviderOutcome, certainty: AttemptCertainty, transport: TransportFailure? = nil, httpStatus: Int? = nil,
                attemptsMade: Int, isResend: Bool = false, isAudience: Bool = false) {
        self.outcome = outcome; self.certainty = certainty; self.transport = transport; self.httpStatus = httpStatus
        self.attemptsMade = attemptsMade; self.isResend = isResend; self.isAudience = isAudience
    }
}

/// What becomes of a recipient after one attempt.
public enum AttemptDecision: Sendable, Equatable {
    /// Final `sent`; `certainty` set when an earlier attempt's outcome was unknown.
    case sent(providerMessageID: String?, certainty: ResultCertainty?)
    /// Final `invalid_token`: record the dead token and publish it.
    case invalidToken(reason: String?, invalidSinceMs: Int64?)
    /// Final `rejected`.
    case rejected(reason: String?)
    /// Final `failed` (attempts used up, or an audience send that may have been accepted).
    case failed(reason: String?)
    /// Through the retry topic after `delaySeconds`; the attempt counted.
    case retry(reason: String?, delaySeconds: Double)
    /// Written, never answered, first time: count the unknown attempt in the fleet's state, then
    /// claim it again and send it once more (same msgId, same replace key).
    case resend
    /// Written, never answered, while draining: count the unknown attempt and give the claim
    /// back, publish nothing. The job is not committed; whoever processes it next makes the one
    /// resend (or, under `never`, reports it `unanswered`).
    case leaveUnanswered
    /// Written, never answered, no resend allowed (policy `never`, or this was the resend): count
    /// the unknown attempt, final `failed` with reason `unanswered`.
    case unanswered
    /// Not written, or nothing reached the provider while its breaker is open: give the claim
    /// back and queue it again, no attempt spent.
    case requeue
    /// Not written while draining: give the claim back, publish nothing (the job is redone).
    case release
}

/// The once-promise's rule for one attempt (docs/reliability.md "When the provider does not
/// answer"): an answer is classified as today; nothing delivered is retried as today; an unknown
/// outcome is resent at most once, with the same replace key, and only under `replace`.
///
/// Pure: the caller supplies the facts, whether the app × provider breaker is open after this
/// attempt, whether the worker drains, and the jitter.
public struct AttemptRule: Sendable, Equatable {
    public var policy: UnansweredPolicy
    public var retryPolicy: RetryPolicy

    public init(policy: UnansweredPolicy = .replace, retryPolicy: RetryPolicy = RetryPolicy()) {
        self.policy = policy
        self.retryPolicy = retryPolicy
    }

    /// - Parameters:
    ///   - breakerOpen: the app × provider breaker is open once this attempt is counted: a
    ///     connect or TLS failure then waits for it instead of spending an attempt.
    ///   - draining: the worker stopped claiming (SIGTERM).
    ///   - jitter: uniform in 0..<1, for the retry delay; evaluated only for a retry, so a
    ///     delivered attempt draws no random number.
    public func decide(_ facts: AttemptFacts, breakerOpen: Bool, draining: Bool, jitter: @autoclosure () -> Double) -> AttemptDecision {
        switch facts.certainty {
        case .withheld:
            return draining ? .release : .requeue
        case .unknown:
            if facts.isAudience { return .failed(reason: "unanswered") } // FCM may have fanned it out: never twice
            guard policy == .replace, !facts.isResend, retryPolicy.allowsRetry(afterAttempts: facts.attemptsMade) else {
                return .unanswered
            }
            return draining ? .leaveUnanswered : .resend
        case .answered, .notDelivered:
            break
        }
        let certainty: ResultCertainty? = facts.isResend ? .unansweredResent : nil
        switch facts.outcome {
        case .sent(let id):
            return .sent(providerMessageID: id, certainty: certainty)
        case .invalidToken(let reason, let since):
            return .invalidToken(reason: reason, invalidSinceMs: since)
        case .rejected(let reason):
            return .rejected(reason: reason)
        case .retry(let reason, let retryAfter, _):
            if facts.certainty == .notDelivered && breakerOpen && Self.isConnectFailure(facts.transport) {
                return draining ? .release : .requeue
            }
            return retryOrFail(reason, retryAfter, facts.attemptsMade, jitter: jitter)
        case .authExpired(let reason):
            return retryOrFail(reason, nil, facts.attemptsMade, jitter: jitter)
        }
    }

    private func retryOrFail(_ reason: String?, _ retryAfter: Double?, _ attempts: Int, jitter: () -> Double) -> AttemptDecision {
        guard retryPolicy.allowsRetry(afterAttempts: attempts) else { return .failed(reason: reason) }
        return .retry(reason: reason, delaySeconds: retryPolicy.delay(afterAttempts: attempts, retryAfterSeconds: retryAfter, jitter: jitter()))
    }

    /// A connect or TLS failure before anything was written.
    static func isConnectFailure(_ transport: TransportFailure?) -> Bool {
        transport == .connect || transport == .tls
    }

    /// Whether an attempt counts against its app × provider breaker: a connect or TLS failure
    /// before the write, or a 5xx without `Retry-After` (a provider asking to wait names when).
    public static func isBreakerFailure(_ facts: AttemptFacts) -> Bool {
        switch facts.certainty {
        case .notDelivered: return isConnectFailure(facts.transport)
        case .answered:
            guard let status = facts.httpStatus, status >= 500, case .retry(_, let retryAfter, _) = facts.outcome else { return false }
            return retryAfter == nil
        case .unknown, .withheld: return false
        }
    }

    /// Whether an attempt shows the provider working (closes its breaker): any answer below 500.
    public static func isBreakerSuccess(_ facts: AttemptFacts) -> Bool {
        facts.certainty == .answered && (facts.httpStatus ?? 0) < 500
    }
}
