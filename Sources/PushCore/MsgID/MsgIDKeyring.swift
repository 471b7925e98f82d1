import PushEncoding
/// The msgID HMAC keys (docs/reference/msgid.md, `PUSHWORKER_MSGID_KEYS`): the first key signs, every key
/// verifies, so keys rotate by prepending a new one and dropping the old one later.
///
/// Its `description` lists key ids only; key material is never printed.
public struct MsgIDKeyring: Sendable, CustomStringConvertible {
    /// Minimum key length in bytes (HMAC-SHA256 key as long as its output, RFC 2104 §3).
    public static let minimumKeyBytes = 32
    /// Key ids are 1…16 characters of `[A-Za-z0-9_-]`.
    public static let maximumKeyIDLength = 16

    struct Entry: Sendable {
        let keyID: String
        let keyIDBytes: [UInt8]
        let hmac: HMACSHA256
    }

    let entries: [Entry]
    /// The block engine the HMACs use (``using(sha256Engine:)``), for other hashes of the same
    /// plan (``ReplaceKey/derive(msgID:engine:)``); nil: PushCore's own compression.
    public let sha256Engine: (any SHA256BlockEngine)?

    /// The key id that signs.
    public var signingKeyID: String { entries[0].keyID }
    /// Every key id, signing one first.
    public var keyIDs: [String] { entries.map(\.keyID) }

    /// Parses `kid:base64key[,kid:base64key…]` (standard or URL-safe base64, padding optional;
    /// spaces around entries are ignored).
    public init(parsing specification: String) throws(MsgIDKeyringError) {
        var entries: [Entry] = []
        let parts = specification.split(separator: ",", omittingEmptySubsequences: false)
        for (position, rawPart) in parts.enumerated() {
            let number = position + 1
            let part = rawPart.trimmingSpaces()
            guard let colon = part.firstIndex(of: ":") else {
                throw MsgIDKeyringError("entry \(number): expected kid:base64key")
            }
            let keyID = String(part[..<colon])
            let encodedKey = String(part[part.index(after: colon)...])
            guard !keyID.isEmpty, keyID.count <= Self.maximumKeyIDLength,
                  keyID.utf8.allSatisfy(Base64URL.isAlphabetByte) else {
                throw MsgIDKeyringError("entry \(number): key id must be 1 to \(Self.maximumKeyIDLength) characters of [A-Za-z0-9_-]")
            }
            guard !entries.contains(where: { $0.keyID == keyID }) else {
                throw MsgIDKeyringError("entry \(number): duplicate key id \"\(keyID)\"")
            }
            guard let key = Base64URL.decode(encodedKey, .lenient) else {
                throw MsgIDKeyringError("entry \(number) (kid \"\(keyID)\"): key is not valid base64")
            }
            guard key.count >= Self.minimumKeyBytes else {
                throw MsgIDKeyringError("entry \(number) (kid \"\(keyID)\"): key has \(key.count) bytes, needs at least \(Self.minimumKeyBytes)")
            }
            entries.append(Entry(keyID: keyID, keyIDBytes: Array(keyID.utf8), hmac: HMACSHA256(key: key)))
        }
        guard !entries.isEmpty else { throw MsgIDKeyringError("no keys") }
        self.entries = entries
        sha256Engine = nil
    }

    private init(entries: [Entry], sha256Engine: (any SHA256BlockEngine)?) {
        self.entries = entries
        self.sha256Engine = sha256Engine
    }

    /// The same keys, their HMACs' blocks compressed by `engine` (the worker passes PushCrypto's
    /// `LibcryptoSHA256Blocks`, the CPU's SHA extensions; msgIds are the same bytes either way).
    public func using(sha256Engine engine: (any SHA256BlockEngine)?) -> MsgIDKeyring {
        MsgIDKeyring(entries: entries.map { Entry(keyID: $0.keyID, keyIDBytes: $0.keyIDBytes, hmac: $0.hmac.using(engine: engine)) },
                     sha256Engine: engine)
    }

    /// A keyring from raw keys (tests, tools): `(kid, key)` pairs, first signs.
    public init(keys: [(keyID: String, key: [UInt8])]) throws(MsgIDKeyringError) {
        try self.init(parsing: keys.map { "\($0.keyID):\(Base64URL.encode($0.key))" }.joined(separator: ","))
    }

    func entry(for keyID: String) -> Entry? { entries.first { $0.keyID == keyID } }

    public var description: String { "MsgIDKeyring(keyIDs: \(keyIDs))" }
}

/// Why `PUSHWORKER_MSGID_KEYS` was refused. The message names entries by position and key id,
/// never by key material.
public struct MsgIDKeyringError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "PUSHWORKER_MSGID_KEYS: \(message)" }
}

extension Substring {
    fileprivate func trimmingSpaces() -> Substring {
        var result = self
        while result.first == " " { result.removeFirst() }
        while result.last == " " { result.removeLast() }
        return result
    }
}
