/// One RESP2 reply, as hiredis 0.14.1 parses it.
public enum RedisReply: Sendable, Equatable {
    /// A bulk string (binary-safe).
    case string([UInt8])
    /// A simple status such as `OK` or `PONG`.
    case status(String)
    case integer(Int64)
    case array([RedisReply])
    /// A nil bulk string or nil array.
    case null
    /// An error reply (`ERR …`, `WRONGTYPE …`, `NOSCRIPT …`): a value, not a thrown error.
    case error(String)
}

extension RedisReply {
    /// The bulk string or status decoded as UTF-8; nil for other replies.
    public var text: String? {
        switch self {
        case .string(let bytes): String(decoding: bytes, as: UTF8.self)
        case .status(let status): status
        default: nil
        }
    }

    /// An integer reply, or a bulk string holding a decimal integer; nil otherwise.
    public var integerValue: Int64? {
        switch self {
        case .integer(let value): value
        case .string(let bytes): Int64(String(decoding: bytes, as: UTF8.self))
        default: nil
        }
    }

    /// The error message if this is an error reply.
    public var errorMessage: String? {
        if case .error(let message) = self { return message }
        return nil
    }

    public var isNull: Bool { self == .null }
}
