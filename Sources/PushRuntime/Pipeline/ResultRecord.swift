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

    /// The JSON line (no trailing newline), keys in the contract's order.
    public func json() -> String {
        var out = "{\"schemaVersion\":1"
        func field(_ name: String, _ value: String?) {
            out += ",\"\(name)\":" + (value.map(JSONText.quote) ?? "null")
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
        out += ",\"httpStatus\":" + (httpStatus.map(String.init) ?? "null")
        field("providerMessageId", providerMessageID)
        out += ",\"attempts\":\(attempts)"
        out += ",\"latencyMs\":" + (latencyMs.map { String((($0 * 10).rounded()) / 10) } ?? "null")
        field("at", Timestamp.rfc3339Millis(unixMillis: atUnixMs))
        out += "}"
        return out
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
