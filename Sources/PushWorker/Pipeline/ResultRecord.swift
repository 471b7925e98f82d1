import Foundation
import PushCore

/// A delivery result (DESIGN §4, contract), one per recipient, on `push.results.v1`.
public struct ResultRecord: Sendable {
    public var jobID: String
    public var msgID: String?
    public var appID: String
    public var campaignID: String
    public var variant: String?
    public var userID: String?
    public var subscriptionID: String
    public var platform: String
    public var status: DeliveryStatus
    public var reason: String?
    public var httpStatus: Int?
    public var providerMessageID: String?
    public var attempts: Int
    public var latencyMs: Double?
    public var atUnixMs: Int64

    package init(jobID: String, msgID: String? = nil, appID: String, campaignID: String, variant: String? = nil, userID: String? = nil, subscriptionID: String, platform: String, status: DeliveryStatus, reason: String? = nil, httpStatus: Int? = nil, providerMessageID: String? = nil, attempts: Int, latencyMs: Double? = nil, atUnixMs: Int64) {
        self.jobID = jobID; self.msgID = msgID; self.appID = appID; self.campaignID = campaignID; self.variant = variant; self.userID = userID; self.subscriptionID = subscriptionID; self.platform = platform; self.status = status; self.reason = reason; self.httpStatus = httpStatus; self.providerMessageID = providerMessageID; self.attempts = attempts; self.latencyMs = latencyMs; self.atUnixMs = atUnixMs
    }

    /// The JSON line (no trailing newline), keys in the contract's order.
    public func json() -> String { String(decoding: jsonBytes(), as: UTF8.self) }

    /// ``json()`` as UTF-8 bytes, written straight into one buffer (one per result: this is on
    /// the per-notification path, docs/performance.md).
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter(capacity: 384)
        writer.beginObject()
        writer.member("schemaVersion", 1)
        func field(_ name: String, _ value: String?) {
            writer.key(name)
            if let value { writer.string(value) } else { writer.null() }
        }
        field("jobId", jobID)
        field("msgId", msgID)
        field("appId", appID)
        field("campaignId", campaignID)
        field("variant", variant)
        field("userId", userID)
        field("subscriptionId", subscriptionID)
        field("platform", platform)
        field("status", status.rawValue)
        field("reason", reason)
        writer.key("httpStatus")
        if let httpStatus { writer.int(httpStatus) } else { writer.null() }
        field("providerMessageId", providerMessageID)
        writer.member("attempts", attempts)
        writer.key("latencyMs")
        if let latencyMs { writer.raw(Array(String(((latencyMs * 10).rounded()) / 10).utf8)) } else { writer.null() }
        writer.key("at")
        writer.raw(Timestamp.rfc3339MillisQuotedBytes(unixMillis: atUnixMs))
        writer.endObject()
        return writer.bytes
    }
}

/// A token invalidation (DESIGN §4), on the compacted `push.tokens.v1`, keyed by subscriptionId.
public struct TokenRecord: Sendable {
    public var appID: String
    public var platform: String
    public var subscriptionID: String
    public var userID: String?
    public var tokenHash: String
    public var reason: String?
    public var invalidSinceMs: Int64
    public var atUnixMs: Int64

    public func json() -> String {
        "{\"schemaVersion\":1,\"appId\":\(JSONText.quote(appID)),\"platform\":\(JSONText.quote(platform))," +
            "\"subscriptionId\":\(JSONText.quote(subscriptionID)),\"userId\":\(userID.map(JSONText.quote) ?? "null")," +
            "\"tokenHash\":\(JSONText.quote(tokenHash)),\"reason\":\(reason.map(JSONText.quote) ?? "null")," +
            "\"invalidSince\":\(JSONText.quote(Timestamp.rfc3339Millis(unixMillis: invalidSinceMs)))," +
            "\"at\":\(JSONText.quote(Timestamp.rfc3339Millis(unixMillis: atUnixMs)))}"
    }
}
