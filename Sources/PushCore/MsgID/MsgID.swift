import PushEncoding
/// The fields a msgID embeds (docs/reference/msgid.md): enough to attribute a tracking event with no database.
public struct MsgIDFields: Sendable, Equatable, Hashable {
    public var appID: String
    public var campaignID: String
    public var userID: String?
    public var subscriptionID: String
    public var platform: String
    public var variant: String?

    public init(appID: String, campaignID: String, userID: String?, subscriptionID: String, platform: String, variant: String?) {
        self.appID = appID; self.campaignID = campaignID; self.userID = userID
        self.subscriptionID = subscriptionID; self.platform = platform; self.variant = variant
    }
}

/// Signed message ids (contract: docs/reference/msgid.md).
///
/// Format: base64url (no padding) of
/// `version(1) · len(kid) · kid · field × 6 · tag(16)`, where each field is a LEB128 length
/// followed by UTF-8 (optional fields store length + 1, 0 meaning absent), the fields in the
/// order appId, campaignId, userId, subscriptionId, platform, variant, and the tag is the first
/// 16 bytes of HMAC-SHA256(key[kid], everything before it). Length prefixes make any value
/// round-trip, including ones with `|` or `.`. Deterministic: the same fields and key give the
/// same id, so it doubles as the de-duplication key. A typical id is 110–140 characters.
public enum MsgID {
    static let version: UInt8 = 1
    /// Truncated HMAC tag length: 128 bits (RFC 2104 §5 allows truncation to ≥ half the output).
    static let tagBytes = 16
    /// Ids longer than this are refused before any work (the events endpoint is public).
    public static let maximumLength = 2048

    public static func sign(_ fields: MsgIDFields, keyring: MsgIDKeyring) -> String {
        let entry = keyring.entries[0]
        var bytes: [UInt8] = []
        bytes.reserveCapacity(96)
        bytes.append(version)
        appendLength(entry.keyIDBytes.count, to: &bytes)
        bytes.append(contentsOf: entry.keyIDBytes)
        appendRequired(fields.appID, to: &bytes)
        appendRequired(fields.campaignID, to: &bytes)
        appendOptional(fields.userID, to: &bytes)
        appendRequired(fields.subscriptionID, to: &bytes)
        appendRequired(fields.platform, to: &bytes)
        appendOptional(fields.variant, to: &bytes)
        let tag = entry.hmac.inlineAuthenticationCode(for: bytes.span)
        for index in 0..<tagBytes { bytes.append(tag[index]) }
        return Base64URL.encode(bytes)
    }

    /// The fields when `msgID` is well-formed and its tag verifies under the key it names.
    public static func verify(_ msgID: String, keyring: MsgIDKeyring) -> MsgIDFields? {
        guard let decoded = decodeParts(msgID), let entry = keyring.entry(for: decoded.keyID) else { return nil }
        let expected = entry.hmac.authenticationCode(for: decoded.signed)
        guard HMACSHA256.constantTimeEquals(Array(expected[0..<tagBytes]), decoded.tag) else { return nil }
        return decoded.fields
    }

    /// The key id and fields, without checking the signature (`pushworker msgid decode`).
    public static func decode(_ msgID: String) -> (keyID: String, fields: MsgIDFields)? {
        guard let decoded = decodeParts(msgID) else { return nil }
        return (decoded.keyID, decoded.fields)
    }

    private struct Parts {
        var keyID: String
        var fields: MsgIDFields
        var signed: ArraySlice<UInt8>
        var tag: [UInt8]
    }

    private static func decodeParts(_ msgID: String) -> Parts? {
        guard msgID.utf8.count <= maximumLength, let bytes = Base64URL.decode(msgID, .strict),
              bytes.count > 1 + tagBytes, bytes[0] == version else { return nil }
        let signedEnd = bytes.count - tagBytes
        var reader = FieldReader(bytes: bytes[0..<signedEnd], index: 1)
        guard let keyIDBytes = reader.read(), !keyIDBytes.isEmpty,
              let keyID = reader.text(keyIDBytes),
              let appID = reader.requiredText(), let campaignID = reader.requiredText(),
              let userID = reader.optionalText(), let subscriptionID = reader.requiredText(),
              let platform = reader.requiredText(), let variant = reader.optionalText(),
              reader.index == signedEnd else { return nil }
        let fields = MsgIDFields(appID: appID, campaignID: campaignID, userID: userID,
                                 subscriptionID: subscriptionID, platform: platform, variant: variant)
        return Parts(keyID: keyID, fields: fields, signed: bytes[0..<signedEnd], tag: Array(bytes[signedEnd...]))
    }

    private static func appendLength(_ length: Int, to bytes: inout [UInt8]) {
        var value = UInt(length)
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    private static func appendRequired(_ text: String, to bytes: inout [UInt8]) {
        appendLength(text.utf8.count, to: &bytes)
        bytes.append(contentsOf: text.utf8)
    }

    private static func appendOptional(_ text: String?, to bytes: inout [UInt8]) {
        guard let text else { bytes.append(0); return }
        appendLength(text.utf8.count + 1, to: &bytes)
        bytes.append(contentsOf: text.utf8)
    }

    private struct FieldReader {
        let bytes: ArraySlice<UInt8>
        var index: Int

        mutating func length() -> Int? {
            var value = 0
            var shift = 0
            while index < bytes.endIndex, shift < 28 {
                let byte = bytes[index]
                index += 1
                value |= Int(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            return nil
        }

        mutating func read() -> ArraySlice<UInt8>? {
            guard let count = length() else { return nil }
            return take(count)
        }

        mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
            guard count <= bytes.endIndex - index else { return nil }
            defer { index += count }
            return bytes[index..<index + count]
        }

        func text(_ slice: ArraySlice<UInt8>) -> String? { String(validating: slice, as: UTF8.self) }

        mutating func requiredText() -> String? { read().flatMap(text) }

        /// `.some(nil)` when absent, nil when malformed.
        mutating func optionalText() -> String?? {
            guard let stored = length() else { return nil }
            if stored == 0 { return .some(nil) }
            guard let slice = take(stored - 1), let value = text(slice) else { return nil }
            return .some(value)
        }
    }
}
