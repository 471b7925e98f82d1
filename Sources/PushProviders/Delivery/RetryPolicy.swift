import PushCore
/// Exponential backoff with jitter, honouring `Retry-After` (docs/providers.md, docs/reference/cli.md `send`).
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts in all, the first included. Default: 5 for the worker, 3 for `send`.
    public var maxAttempts: Int
    /// Delay before the second attempt. Default: 1 s.
    public var baseDelaySeconds: Double
    /// Upper bound of any delay, `Retry-After` included. Default: 30 s.
    public var maxDelaySeconds: Double

    public init(maxAttempts: Int = 5, baseDelaySeconds: Double = 1, maxDelaySeconds: Double = 30) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelaySeconds = max(0, baseDelaySeconds)
        self.maxDelaySeconds = max(0, maxDelaySeconds)
    }

    /// Whether another attempt is allowed after `attemptsMade` attempts.
    public func allowsRetry(afterAttempts attemptsMade: Int) -> Bool { attemptsMade < maxAttempts }

    /// Seconds to wait after `attemptsMade` (≥ 1) attempts: max(backoff with jitter, Retry-After),
    /// capped at `maxDelaySeconds`. `jitter` is a uniform random number in 0..<1 (injected so the
    /// policy stays pure); the backoff is drawn from [½·b, b] with b = base·2^(attempts−1).
    public func delay(afterAttempts attemptsMade: Int, retryAfterSeconds: Double?, jitter: Double) -> Double {
        let exponent = Double(min(max(attemptsMade - 1, 0), 30))
        let ceiling = min(maxDelaySeconds, baseDelaySeconds * pow2(exponent))
        let clampedJitter = min(max(jitter, 0), 1)
        let backoff = ceiling * (0.5 + 0.5 * clampedJitter)
        return min(maxDelaySeconds, max(backoff, retryAfterSeconds ?? 0))
    }

    private func pow2(_ exponent: Double) -> Double {
        var result = 1.0
        var remaining = Int(exponent)
        while remaining > 0 { result *= 2; remaining -= 1 }
        return result
    }
}
