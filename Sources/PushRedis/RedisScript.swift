/// A Lua script run with `EVALSHA`, falling back to `EVAL` (which also caches it) when the
/// server answers `NOSCRIPT` (after a restart, a failover or `SCRIPT FLUSH`).
struct RedisScript: Sendable {
    let source: String
    /// Lower-case hex SHA-1 of `source`, as Redis names cached scripts.
    let sha1: String

    init(_ source: String) {
        self.source = source
        self.sha1 = SHA1.hex(Array(source.utf8))
    }

    /// `EVALSHA sha numkeys keys… args…`
    func invocation(keys: [String], arguments: [RedisArgument]) -> [RedisArgument] {
        invocation(keyArguments: keys.map { .string($0) }, arguments: arguments)
    }

    /// `EVALSHA sha numkeys keys… args…` with keys given as arguments (``DedupKeyName``s).
    func invocation(keyArguments keys: [RedisArgument], arguments: [RedisArgument]) -> [RedisArgument] {
        var command: [RedisArgument] = ["EVALSHA", .string(sha1), .int(Int64(keys.count))]
        command.reserveCapacity(3 + keys.count + arguments.count)
        command.append(contentsOf: keys)
        command.append(contentsOf: arguments)
        return command
    }

    /// The same invocation with the script's source (`EVAL`).
    func fallback(for invocation: [RedisArgument]) -> [RedisArgument] {
        var command = invocation
        if command.count >= 2 {
            command[0] = "EVAL"
            command[1] = .string(source)
        }
        return command
    }
}

/// SHA-1 (FIPS 180-4), only to name Lua scripts the way Redis does; not used for security.
enum SHA1 {
    static func hex(_ message: [UInt8]) -> String {
        var h: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
        var data = message
        let bitLength = UInt64(message.count) &* 8
        data.append(0x80)
        while data.count % 64 != 56 { data.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { data.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        var w = [UInt32](repeating: 0, count: 80)
        for chunk in stride(from: 0, to: data.count, by: 64) {
            for i in 0..<16 {
                let j = chunk + 4 * i
                w[i] = UInt32(data[j]) << 24 | UInt32(data[j + 1]) << 16 | UInt32(data[j + 2]) << 8 | UInt32(data[j + 3])
            }
            for i in 16..<80 { w[i] = rotate(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1) }
            var (a, b, c, d, e) = h
            for i in 0..<80 {
                let f: UInt32, k: UInt32
                switch i {
                case 0..<20: f = (b & c) | (~b & d); k = 0x5A82_7999
                case 20..<40: f = b ^ c ^ d; k = 0x6ED9_EBA1
                case 40..<60: f = (b & c) | (b & d) | (c & d); k = 0x8F1B_BCDC
                default: f = b ^ c ^ d; k = 0xCA62_C1D6
                }
                let temp = rotate(a, 5) &+ f &+ e &+ k &+ w[i]
                e = d; d = c; c = rotate(b, 30); b = a; a = temp
            }
            h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
        }
        return [h.0, h.1, h.2, h.3, h.4].map { word in
            let text = String(word, radix: 16)
            return String(repeating: "0", count: 8 - text.count) + text
        }.joined()
    }

    private static func rotate(_ value: UInt32, _ count: UInt32) -> UInt32 {
        (value << count) | (value >> (32 - count))
    }
}
