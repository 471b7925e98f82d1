import PushCore
import PushPipeline
import PushProviders
import Testing

/// The once-promise's rule for one attempt, row by row (docs/reliability.md "When the provider
/// does not answer"). Pure: no services, no clock.
@Suite("AttemptRule")
struct AttemptRuleTests {
    static let rule = AttemptRule(policy: .replace, retryPolicy: RetryPolicy(maxAttempts: 3))
    static let never = AttemptRule(policy: .never, retryPolicy: RetryPolicy(maxAttempts: 3))

    static func facts(_ outcome: ProviderOutcome, _ certainty: AttemptCertainty, transport: TransportFailure? = nil, status: Int? = nil,
                      attempts: Int = 1, resend: Bool = false, audience: Bool = false) -> AttemptFacts {
        AttemptFacts(outcome: outcome, certainty: certainty, transport: transport, httpStatus: status, attemptsMade: attempts,
                     isResend: resend, isAudience: audience)
    }

    static let timeout = ProviderOutcome.retry(reason: "unanswered", retryAfterSeconds: nil, scope: .recipient)

    @Test("a request written and never answered is resent once under replace, with attempts left")
    func unknownResent() {
        #expect(Self.rule.decide(Self.facts(Self.timeout, .unknown, transport: .unanswered), breakerOpen: false, draining: false, jitter: 0.5)
                == .resend)
    }

    @Test("the resend unanswered too is final: failed/unanswered, never a third send")
    func resendUnanswered() {
        #expect(Self.rule.decide(Self.facts(Self.timeout, .unknown, attempts: 2, resend: true), breakerOpen: false, draining: false, jitter: 0)
                == .unanswered)
    }

    @Test("under never an unknown outcome is final at once")
    func neverResends() {
        #expect(Self.never.decide(Self.facts(Self.timeout, .unknown), breakerOpen: false, draining: false, jitter: 0) == .unanswered)
        #expect(UnansweredPolicy.never.claimLimit == 1)
        #expect(UnansweredPolicy.replace.claimLimit == 2)
    }

    @Test("an unknown outcome with no attempt left is final")
    func unknownWithoutAttemptsLeft() {
        #expect(Self.rule.decide(Self.facts(Self.timeout, .unknown, attempts: 3), breakerOpen: false, draining: false, jitter: 0) == .unanswered)
    }

    @Test("while draining, an unknown outcome is counted and left for the job's next processing; never still fails it")
    func drainUnknown() {
        #expect(Self.rule.decide(Self.facts(Self.timeout, .unknown), breakerOpen: false, draining: true, jitter: 0) == .leaveUnanswered)
        #expect(Self.never.decide(Self.facts(Self.timeout, .unknown), breakerOpen: false, draining: true, jitter: 0) == .unanswered)
    }

    @Test("an FCM topic send that may have been accepted is never repeated")
    func audienceUnknown() {
        #expect(Self.rule.decide(Self.facts(Self.timeout, .unknown, audience: true), breakerOpen: false, draining: false, jitter: 0)
                == .failed(reason: "unanswered"))
    }

    @Test("a resend that was accepted says so in its certainty")
    func resentSent() {
        #expect(Self.rule.decide(Self.facts(.sent(providerMessageID: "a"), .answered, status: 200, attempts: 2, resend: true),
                                 breakerOpen: false, draining: false, jitter: 0)
                == .sent(providerMessageID: "a", certainty: .unansweredResent))
        #expect(Self.rule.decide(Self.facts(.sent(providerMessageID: "a"), .answered, status: 200), breakerOpen: false, draining: false, jitter: 0)
                == .sent(providerMessageID: "a", certainty: nil))
    }

    @Test("not delivered is retried as before: backoff with Retry-After, then failed when attempts run out")
    func notDeliveredRetried() {
        let busy = ProviderOutcome.retry(reason: "TooManyRequests", retryAfterSeconds: 7, scope: .recipient)
        #expect(Self.rule.decide(Self.facts(busy, .answered, status: 429), breakerOpen: false, draining: false, jitter: 0)
                == .retry(reason: "TooManyRequests", delaySeconds: 7))
        #expect(Self.rule.decide(Self.facts(busy, .answered, status: 429, attempts: 3), breakerOpen: false, draining: false, jitter: 0)
                == .failed(reason: "TooManyRequests"))
        let refused = ProviderOutcome.retry(reason: "protocol_error", retryAfterSeconds: nil, scope: .recipient)
        #expect(Self.rule.decide(Self.facts(refused, .notDelivered, transport: .protocolError), breakerOpen: false, draining: false, jitter: 0)
                == .retry(reason: "protocol_error", delaySeconds: 0.5))
    }

    @Test("a connect failure while the endpoint's breaker is open waits for it without spending an attempt")
    func breakerWait() {
        let connect = ProviderOutcome.retry(reason: "connect_error", retryAfterSeconds: nil, scope: .provider)
        #expect(Self.rule.decide(Self.facts(connect, .notDelivered, transport: .connect, attempts: 3), breakerOpen: true, draining: false, jitter: 0)
                == .requeue)
        #expect(Self.rule.decide(Self.facts(connect, .notDelivered, transport: .connect), breakerOpen: false, draining: false, jitter: 0)
                == .retry(reason: "connect_error", delaySeconds: 0.5))
        #expect(Self.rule.decide(Self.facts(connect, .notDelivered, transport: .tls), breakerOpen: true, draining: true, jitter: 0) == .release)
    }

    @Test("a withheld write is queued again, or given back while draining")
    func withheld() {
        #expect(Self.rule.decide(Self.facts(Self.timeout, .withheld, attempts: 0), breakerOpen: false, draining: false, jitter: 0) == .requeue)
        #expect(Self.rule.decide(Self.facts(Self.timeout, .withheld, attempts: 0), breakerOpen: false, draining: true, jitter: 0) == .release)
    }

    @Test("final answers stay final", arguments: [
        (ProviderOutcome.invalidToken(reason: "Unregistered", invalidSinceMs: 5), AttemptDecision.invalidToken(reason: "Unregistered", invalidSinceMs: 5)),
        (.rejected(reason: "BadTopic"), .rejected(reason: "BadTopic")),
    ])
    func finals(outcome: ProviderOutcome, decision: AttemptDecision) {
        #expect(Self.rule.decide(Self.facts(outcome, .answered, status: 400), breakerOpen: false, draining: false, jitter: 0) == decision)
    }

    @Test("what counts against a breaker: connect and TLS failures, 5xx without Retry-After; not a timeout, not a 503 that names when")
    func breakerFailures() {
        let connect = ProviderOutcome.retry(reason: "connect_error", retryAfterSeconds: nil, scope: .provider)
        #expect(AttemptRule.isBreakerFailure(Self.facts(connect, .notDelivered, transport: .connect)))
        #expect(AttemptRule.isBreakerFailure(Self.facts(connect, .notDelivered, transport: .tls)))
        let internalError = ProviderOutcome.retry(reason: "InternalServerError", retryAfterSeconds: nil, scope: .recipient)
        #expect(AttemptRule.isBreakerFailure(Self.facts(internalError, .answered, status: 500)))
        let unavailable = ProviderOutcome.retry(reason: "ServiceUnavailable", retryAfterSeconds: 30, scope: .provider)
        #expect(!AttemptRule.isBreakerFailure(Self.facts(unavailable, .answered, status: 503)))
        #expect(!AttemptRule.isBreakerFailure(Self.facts(Self.timeout, .unknown, transport: .unanswered)))
        #expect(AttemptRule.isBreakerSuccess(Self.facts(.rejected(reason: "BadTopic"), .answered, status: 400)))
        #expect(!AttemptRule.isBreakerSuccess(Self.facts(internalError, .answered, status: 500)))
    }
}

@Suite("CircuitBreaker")
struct CircuitBreakerTests {
    @Test("five consecutive failures open it for 1 s; the probe's failure doubles it, up to 60 s; a success closes it")
    func lifecycle() {
        var breaker = CircuitBreaker()
        for _ in 0..<4 { let open = breaker.failure(now: 0); #expect(!open) }
        #expect(breaker.admission(now: 0) == .open)
        let opened = breaker.failure(now: 0)
        #expect(opened)
        #expect(breaker.admission(now: 0.5) == .held(until: 1))
        // Half-open: one probe; the rest wait for its outcome.
        #expect(breaker.admission(now: 1) == .probe)
        breaker.probeSent(now: 1)
        #expect(breaker.admission(now: 1.1) == .held(until: 31))
        let reopened = breaker.failure(now: 1.2)
        #expect(reopened)
        #expect(breaker.admission(now: 2) == .held(until: 3.2))
        var now = 3.2
        for _ in 0..<10 {
            #expect(breaker.admission(now: now) == .probe)
            breaker.probeSent(now: now)
            breaker.failure(now: now)
            guard case .open(let until, _) = breaker.state else { Issue.record("not open: \(breaker.state)"); return }
            #expect(until - now <= 60)
            now = until
        }
        #expect(breaker.admission(now: now) == .probe)
        breaker.success()
        #expect(breaker.admission(now: now) == .open)
        #expect(!breaker.isOpen)
    }

    @Test("a success between failures resets the count")
    func successResets() {
        var breaker = CircuitBreaker(threshold: 3)
        breaker.failure(now: 0); breaker.failure(now: 0)
        breaker.success()
        breaker.failure(now: 0); breaker.failure(now: 0)
        #expect(!breaker.isOpen)
    }

    @Test("a probe that never reports back stops blocking after the probe timeout")
    func lostProbe() {
        var breaker = CircuitBreaker(threshold: 1, probeTimeoutSeconds: 10)
        breaker.failure(now: 0)
        #expect(breaker.admission(now: 1) == .probe)
        breaker.probeSent(now: 1)
        #expect(breaker.admission(now: 5) == .held(until: 11))
        #expect(breaker.admission(now: 11) == .probe)
    }
}

@Suite("Admission")
struct AdmissionTests {
    typealias Candidate = Admission.Candidate
    static let admission = Admission(maxInFlightPerEndpoint: 2, holdMaxSeconds: 30)

    @Test("due recipients are taken up to the room and each endpoint's cap; the others stay queued")
    func caps() {
        let queue = [Candidate(due: 0, endpoint: 0), Candidate(due: 0, endpoint: 0), Candidate(due: 0, endpoint: 0),
                     Candidate(due: 0, endpoint: 1), Candidate(due: 5, endpoint: 1)]
        #expect(Self.admission.choose(queue, room: 10, now: 1, inFlight: [0, 0], gates: []) == [.take, .take, .keep, .take, .keep])
        // One of endpoint 0's already in flight: one more.
        #expect(Self.admission.choose(queue, room: 10, now: 1, inFlight: [1, 0], gates: []) == [.take, .keep, .keep, .take, .keep])
        // Room for two in all.
        #expect(Self.admission.choose(queue, room: 2, now: 1, inFlight: [], gates: []) == [.take, .take, .keep, .keep, .keep])
    }

    @Test("an endpoint held briefly keeps its recipients queued without a slot; held longer than the hold maximum, they are parked until the end")
    func holds() {
        let queue = [Candidate(due: 0, endpoint: 0), Candidate(due: 0, endpoint: 1), Candidate(due: 0, endpoint: 0)]
        let brief: [Admission.Gate] = [.held(until: 20), .open]
        #expect(Self.admission.choose(queue, room: 1, now: 0, inFlight: [], gates: brief) == [.keep, .take, .keep])
        let long: [Admission.Gate] = [.held(until: 3600), .open]
        #expect(Self.admission.choose(queue, room: 1, now: 0, inFlight: [], gates: long) == [.park(until: 3600), .take, .park(until: 3600)])
        // Saturated by load: held ones are parked whatever the wait.
        #expect(Self.admission.choose(queue, room: 1, now: 0, inFlight: [], gates: brief, parkHeld: true)
                == [.park(until: 20), .take, .park(until: 20)])
    }

    @Test("a half-open breaker lets one probe through")
    func probe() {
        let queue = [Candidate(due: 0, endpoint: 0), Candidate(due: 0, endpoint: 0)]
        #expect(Self.admission.choose(queue, room: 5, now: 0, inFlight: [], gates: [.probe]) == [.take, .keep])
    }

    @Test("one app held by a long backoff takes no slot from another app's recipients")
    func tenantsIndependent() {
        let big = (0..<150).map { _ in Candidate(due: 0, endpoint: 0) }
        let small = (0..<10).map { _ in Candidate(due: 0, endpoint: 1) }
        let admission = Admission(maxInFlightPerEndpoint: 50, holdMaxSeconds: 30)
        let choices = admission.choose(big + small, room: 100, now: 0, inFlight: [], gates: [.held(until: 3600), .open])
        #expect(choices.prefix(150).allSatisfy { $0 == .park(until: 3600) })
        #expect(choices.suffix(10).allSatisfy { $0 == .take })
    }
}

@Suite("LeaseRule")
struct LeaseRuleTests {
    @Test("a request is written only while the local estimate of the lease outlasts it")
    func mayWrite() {
        #expect(LeaseRule.mayWrite(confirmedAt: 100, now: 100, leaseSeconds: 30, requestTimeoutSeconds: 10))
        #expect(LeaseRule.mayWrite(confirmedAt: 100, now: 119.9, leaseSeconds: 30, requestTimeoutSeconds: 10))
        #expect(!LeaseRule.mayWrite(confirmedAt: 100, now: 120, leaseSeconds: 30, requestTimeoutSeconds: 10))
        #expect(LeaseRule.needsRenewal(confirmedAt: 100, now: 110, leaseSeconds: 30))
        #expect(!LeaseRule.needsRenewal(confirmedAt: 100, now: 109, leaseSeconds: 30))
    }
}
