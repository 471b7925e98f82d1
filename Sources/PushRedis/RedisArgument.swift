/// One argument of a Redis command; binary-safe.
public enum RedisArgument: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    case bytes([UInt8])
    case string(String)
    /// Sent as its decimal text, as Redis expects.
    case int(Int64)

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }

    func append(to buffer: inout [UInt8]) {
        switch self {
        case .bytes(let bytes): buffer.append(contentsOf: bytes)
        case .string(let string): buffer.append(contentsOf: string.utf8)
        case .int(let value): Self.appendDecimal(value, to: &buffer)
        }
    }

    /// `value` in decimal, written straight into `buffer` (no String: claims send one 19-digit
    /// fingerprint per recipient).
    static func appendDecimal(_ value: Int64, to buffer: inout [UInt8]) {
        if value < 0 { buffer.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { raw in
            repeat {
                raw[19 - count] = UInt8(truncatingIfNeeded: magnitude % 10) + UInt8(ascii: "0")
                magnitude /= 10
                count += 1
            } while magnitude > 0
            buffer.append(contentsOf: raw[(20 - count)...])
        }
    }
}
