/// One argument of a Redis command; binary-safe.
public enum RedisArgument: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    case bytes([UInt8])
    case string(String)
    /// Sent as its decimal text, as Redis expects.
    case int(Int64)
    /// A de-duplication key, written from its campaign's prefix (``DedupKeyName``): the same
    /// bytes as `.string(name.text)`.
    case dedupKey(DedupKeyName)

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
}
