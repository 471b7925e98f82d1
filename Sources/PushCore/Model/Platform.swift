/// The delivery platforms (docs/reference/job.md `recipients[].platform`).
public enum Platform: String, Sendable, Hashable, CaseIterable, Codable {
    case ios
    case android
    case web
    /// Huawei Push Kit (HMS) devices: batched sends of up to 1000 tokens (docs/providers.md).
    case huawei
}

/// A recipient's final delivery status (contract: docs/reference/records.md).
public enum DeliveryStatus: String, Sendable, Hashable, CaseIterable, Codable {
    /// The provider accepted the notification.
    case sent
    /// The token is known dead or the provider said so; not retried.
    case invalidToken = "invalid_token"
    /// Permanent for this message: bad token format, payload cannot fit, missing credentials,
    /// disallowed endpoint, provider 4xx.
    case rejected
    /// Transient errors, retries exhausted.
    case failed
    /// Nothing sent: `expiresAt` had passed, or the recipient waited past its job's lifetime
    /// (the reason says which: ``ExpiryReason``).
    case expired
    /// Already sent according to Redis.
    case duplicate
    /// Nothing sent: its campaign was cancelled (docs/campaigns.md).
    case cancelled
    /// Nothing sent: its user reached a frequency cap of the job's `capCategory` (docs/caps.md).
    case capped
}

/// Why a recipient is `expired` (its result's `reason`; docs/reference/records.md).
public enum ExpiryReason: String, Sendable, CaseIterable {
    /// The job's `expiresAt` had passed when it was planned: nothing was sent.
    case expiresAtPassed = "expires_at_passed"
    /// The recipient waited for its app × provider (a backoff, an open breaker) past the job's
    /// `expiresAt`, `createdAt` + `ttlSeconds` or the de-duplication retention.
    case whileHeld = "expired_while_held"
    /// The campaign's deadline (`sendBy`, the job's or the campaign control's) passed before it
    /// was sent.
    case sendByPassed = "send_by_passed"
    /// The recipient's quiet hours end after the job's `expiresAt` or `sendBy` (docs/local-time.md).
    case inQuietHours = "expired_in_quiet_hours"
    /// The recipient's next local send time (`sendAtLocal`) is after the job's `expiresAt` or
    /// `sendBy` (docs/local-time.md).
    case beforeSendAtLocal = "expired_before_send_at_local"
}
