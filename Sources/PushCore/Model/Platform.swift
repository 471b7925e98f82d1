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
    /// `expiresAt` passed; nothing sent.
    case expired
    /// Already sent according to Redis.
    case duplicate
}
