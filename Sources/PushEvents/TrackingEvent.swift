import Foundation
import PushCore
import PushEncoding

/// What happened to a message, as the SDKs report it (docs/reference/tracking-api.md): the letter in
/// `POST /v1/e/<letter>/<msgId>`.
public enum TrackingEventType: String, Sendable, CaseIterable {
    case delivered, opened, clicked, dismissed

    /// `d`, `o`, `c`, `x` (the path segment).
    public init?(pathByte: UInt8) {
        switch pathByte {
        case UInt8(ascii: "d"): self = .delivered
        case UInt8(ascii: "o"): self = .opened
        case UInt8(ascii: "c"): self = .clicked
        case UInt8(ascii: "x"): self = .dismissed
        default: return nil
        }
    }

    /// Index into per-type tables.
    var index: Int {
        switch self {
        case .delivered: 0
        case .opened: 1
        case .clicked: 2
        case .dismissed: 3
        }
    }
}

/// One accepted tracking event: the value on `push.events.v1` (docs/reference/tracking-api.md,
/// `topics/schemas/event.v1.schema.json`), keyed by msgId. Every field except `at` and
/// `ipHash` comes from the verified msgId.
public struct TrackingEvent: Sendable, Equatable {
    public var type: TrackingEventType
    public var msgID: String
    public var fields: MsgIDFields
    /// Milliseconds since 1970 (UTC).
    public var atMilliseconds: Int64
    /// Keyed hash of the client IP (never the IP itself); nil when the address is unknown.
    public var ipHash: String?

    public init(type: TrackingEventType, msgID: String, fields: MsgIDFields, atMilliseconds: Int64, ipHash: String?) {
        self.type = type; self.msgID = msgID; self.fields = fields; self.atMilliseconds = atMilliseconds; self.ipHash = ipHash
    }

    /// `{schemaVersion:1, type, msgId, appId, campaignId, variant, userId, subscriptionId, platform, at, ipHash}`.
    public func json() -> [UInt8] {
        var writer = JSONWriter(capacity: 384)
        writer.beginObject()
        writer.key("schemaVersion"); writer.int(1)
        writer.key("type"); writer.string(type.rawValue)
        writer.key("msgId"); writer.string(msgID)
        writer.key("appId"); writer.string(fields.appID)
        writer.key("campaignId"); writer.string(fields.campaignID)
        writer.key("variant"); if let variant = fields.variant { writer.string(variant) } else { writer.null() }
        writer.key("userId"); if let userID = fields.userID { writer.string(userID) } else { writer.null() }
        writer.key("subscriptionId"); writer.string(fields.subscriptionID)
        writer.key("platform"); writer.string(fields.platform)
        writer.key("at"); writer.string(RFC3339Timestamp.format(Date(timeIntervalSince1970: Double(atMilliseconds) / 1000), milliseconds: true))
        writer.key("ipHash"); if let ipHash { writer.string(ipHash) } else { writer.null() }
        writer.endObject()
        return writer.bytes
    }
}

/// Hashes client addresses for events: HMAC-SHA256 under a key derived from the msgId keys
/// (so the same IP hashes alike across the fleet, and a table of all IPv4 addresses cannot be
/// built without the key), truncated to 128 bits, base64url. Changes when the keys rotate.
public struct ClientAddressHasher: Sendable {
    private let hmac: HMACSHA256

    /// `secret`: any fleet-wide secret bytes (the `PUSHWORKER_MSGID_KEYS` text is used).
    public init(secret: [UInt8]) {
        hmac = HMACSHA256(key: SHA256.hash(Array("pushworker.events.ipHash.v1|".utf8) + secret))
    }

    public func hash(_ address: String) -> String {
        Base64URL.encode(Array(hmac.authenticationCode(for: Array(address.utf8)).prefix(16)))
    }
}
