import Foundation
import PushCore
import PushEncoding

/// A delivery result (docs/reference/records.md, contract), one per recipient, on `push.results.v1`.
/// A class, immutable: an outcome carrying it is copied several times between the I/O thread and
/// the finisher (``OutcomeRecorder``), and each copy of a struct would retain and release every
/// one of its eleven strings; a class's copy is one reference.
public final class ResultRecord: Sendable {
    public let jobID: String
    public let msgID: String?
    public let appID: String
    public let campaignID: String
    public let variant: String?
    public let userID: String?
    public let subscriptionID: String
    public let platform: String
    public let status: DeliveryStatus
    public let reason: String?
    public let httpStatus: Int?
    public let providerMessageID: String?
    public let attempts: Int
    public let latencyMs: Double?
    public let atUnixMs: Int64
    /// `unanswered_resent` when an earlier attempt was written and never answered and this
    /// resend was accepted (the member is left out otherwise).
    public let certainty: String?

    package init(jobID: String, msgID: String? = nil, appID: String, campaignID: String, variant: String? = nil, userID: String? = nil, subscriptionID: String, platform: String, status: DeliveryStatus, reason: String? = nil, httpStatus: Int? = nil, providerMessageID: String? = nil, attempts: Int, latencyMs: Double? = nil, atUnixMs: Int64, certainty: String? = nil) {
        self.jobID = jobID; self.msgID = msgID; self.appID = appID; self.campaignID = campaignID; self.variant = variant; self.userID = userID; self.subscriptionID = subscriptionID; self.platform = platform; self.status = status; self.reason = reason; self.httpStatus = httpStatus; self.providerMessageID = providerMessageID; self.attempts = attempts; self.latencyMs = latencyMs; self.atUnixMs = atUnixMs; self.certainty = certainty
    }

    /// The JSON line (no trailing newline), keys in the contract's order.
    public func json() -> String { String(decoding: jsonBytes(), as: UTF8.self) }

    /// ``json()`` as UTF-8 bytes, written straight into one buffer (one per result: this is on
    /// the per-notification path, docs/performance.md): constant member names (``JSONKey``),
    /// numbers and the timestamp formatted into the buffer.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter(capacity: 384)
        writeJSON(into: &writer)
        return writer.bytes
    }

    /// ``jsonBytes()`` appended to `writer` (the finisher reuses one buffer for every result).
    public func writeJSON(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.member(.schemaVersion, 1)
        writer.member(.jobId, jobID)
        writer.member(.msgId, orNull: msgID)
        writer.member(.appId, appID)
        writer.member(.campaignId, campaignID)
        writer.member(.variant, orNull: variant)
        writer.member(.userId, orNull: userID)
        writer.member(.subscriptionId, subscriptionID)
        writer.member(.platform, platform)
        writer.member(.status, status.rawValue)
        writer.member(.reason, orNull: reason)
        writer.key(.httpStatus); writer.int(orNull: httpStatus)
        writer.member(.providerMessageId, orNull: providerMessageID)
        writer.member(.attempts, attempts)
        writer.key(.latencyMs)
        if let latencyMs { writer.raw { Self.appendTenths(latencyMs, to: &$0) } } else { writer.null() }
        writer.key(.at); writer.timestamp(unixMillis: atUnixMs)
        if let certainty { writer.member(.certainty, certainty) }
        writer.endObject()
    }
}

/// The member names of a delivery result, in the contract's order (ResultRecordTests compares
/// each with its literal written through the escaping path).
extension JSONKey {
    static let schemaVersion = JSONKey("schemaVersion")
    static let jobId = JSONKey("jobId")
    static let msgId = JSONKey("msgId")
    static let appId = JSONKey("appId")
    static let campaignId = JSONKey("campaignId")
    static let variant = JSONKey("variant")
    static let userId = JSONKey("userId")
    static let subscriptionId = JSONKey("subscriptionId")
    static let platform = JSONKey("platform")
    static let status = JSONKey("status")
    static let reason = JSONKey("reason")
    static let httpStatus = JSONKey("httpStatus")
    static let providerMessageId = JSONKey("providerMessageId")
    static let attempts = JSONKey("attempts")
    static let latencyMs = JSONKey("latencyMs")
    static let at = JSONKey("at")
    static let certainty = JSONKey("certainty")
}

extension ResultRecord {
    /// `value` rounded to one decimal, as JSON: what `String(rounded / 10)` prints ("12.3",
    /// "5.0", "0.1"), written digit by digit (not through `Double.description`, whose
    /// shortest-representation search and String would be paid for every result); `null` for
    /// NaN and infinities, which JSON cannot carry.
    static func tenths(_ value: Double) -> [UInt8] {
        var bytes: [UInt8] = []
        appendTenths(value, to: &bytes)
        return bytes
    }

    /// ``tenths(_:)`` appended to `bytes` (no array of its own: one per sent result).
    static func appendTenths(_ value: Double, to bytes: inout [UInt8]) {
        let tenths = (value * 10).rounded()
        guard tenths.isFinite else { return bytes.append(contentsOf: "null".utf8) }
        guard tenths.magnitude < 1e15 else { return bytes.append(contentsOf: String(tenths / 10).utf8) }
        let magnitude = UInt64(tenths.magnitude)
        var whole = magnitude / 10
        var scale: UInt64 = 1
        while whole / scale >= 10 { scale &*= 10 }
        if tenths < 0 { bytes.append(UInt8(ascii: "-")) }
        while scale > 0 {
            bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: whole / scale))
            whole %= scale
            scale /= 10
        }
        bytes.append(UInt8(ascii: "."))
        bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10))
    }
}

/// A token invalidation (docs/reference/records.md), on the compacted `push.tokens.v1`, keyed by subscriptionId.
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
        JSONWriter.object(capacity: 320) { w in
            w.member("schemaVersion", 1)
            w.member("appId", appID)
            w.member("platform", platform)
            w.member("subscriptionId", subscriptionID)
            w.member("userId", orNull: userID)
            w.member("tokenHash", tokenHash)
            w.member("reason", orNull: reason)
            w.key("invalidSince"); w.timestamp(unixMillis: invalidSinceMs)
            w.key("at"); w.timestamp(unixMillis: atUnixMs)
        }.text
    }
}
