/// One app × provider endpoint's circuit breaker (docs/reliability.md "Breakers").
///
/// Closed, it counts consecutive failures (a connect or TLS failure before the write, a 5xx
/// without `Retry-After`: ``AttemptRule/isBreakerFailure(_:)``); at ``threshold`` it opens for
/// ``baseSeconds``, doubling each time it opens again, at most ``maxSeconds``. While open, the
/// endpoint's recipients wait in the claim queue (no slot, no attempt). When the time is up it is
/// half-open: one recipient goes as a probe; the probe's success closes it, its failure opens it
/// again for twice as long. Any answer below 500 closes it.
///
/// Pure: times are the caller's monotonic seconds.
public struct CircuitBreaker: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        case closed(failures: Int)
        case open(until: Double, level: Int)
        /// `probeSince`: when the probe in flight went out (nil: none yet).
        case halfOpen(level: Int, probeSince: Double?)
    }

    /// What the claim queue may do with the endpoint's recipients now.
    public enum Admission: Sendable, Equatable {
        /// As many as the other limits allow.
        case open
        /// One, as the probe (``probeSent(now:)`` once it is taken).
        case probe
        /// None before `until`.
        case held(until: Double)
    }

    public private(set) var state: State = .closed(failures: 0)
    /// Consecutive failures that open it. Default 5.
    public var threshold: Int
    /// The first open period. Default 1 s.
    public var baseSeconds: Double
    /// The longest open period. Default 60 s.
    public var maxSeconds: Double
    /// A probe that got no outcome within this long no longer blocks another one. Default 30 s.
    public var probeTimeoutSeconds: Double

    public init(threshold: Int = 5, baseSeconds: Double = 1, maxSeconds: Double = 60, probeTimeoutSeconds: Double = 30) {
        self.threshold = max(1, threshold)
        self.baseSeconds = baseSeconds
        self.maxSeconds = maxSeconds
        self.probeTimeoutSeconds = probeTimeoutSeconds
    }

    public var isOpen: Bool {
        if case .closed = state { return false }
        return true
    }

    /// Counts a failure at `now`; returns whether the breaker is open (or half-open) afterwards.
    @discardableResult
    public mutating func failure(now: Double) -> Bool {
        switch state {
        case .closed(let failures):
            if failures + 1 >= threshold {
                state = .open(until: now + openSeconds(level: 1), level: 1)
            } else {
                state = .closed(failures: failures + 1)
            }
        case .open:
            break // an answer to a request sent before it opened
        case .halfOpen(let level, _):
            state = .open(until: now + openSeconds(level: level + 1), level: level + 1)
        }
        return isOpen
    }

    /// The provider answered (below 500): closed again.
    public mutating func success() {
        state = .closed(failures: 0)
    }

    /// What the endpoint's queued recipients may do at `now` (an open period that ended turns
    /// half-open here).
    public mutating func admission(now: Double) -> Admission {
        switch state {
        case .closed:
            return .open
        case .open(let until, let level):
            guard now >= until else { return .held(until: until) }
            state = .halfOpen(level: level, probeSince: nil)
            return .probe
        case .halfOpen(let level, let probeSince):
            guard let probeSince else { return .probe }
            if now - probeSince >= probeTimeoutSeconds {
                state = .halfOpen(level: level, probeSince: nil)
                return .probe
            }
            return .held(until: probeSince + probeTimeoutSeconds)
        }
    }

    /// The probe was taken at `now`: the others wait for its outcome.
    public mutating func probeSent(now: Double) {
        if case .halfOpen(let level, nil) = state { state = .halfOpen(level: level, probeSince: now) }
    }

    func openSeconds(level: Int) -> Double {
        var seconds = baseSeconds
        var remaining = level - 1
        while remaining > 0 && seconds < maxSeconds { seconds *= 2; remaining -= 1 }
        return min(maxSeconds, seconds)
    }
}
