/// Base64url (RFC 4648 §5): the one codec of the code base (msgIds, JWS/JWT, Web Push keys,
/// VAPID keys, events' `ipHash`). It always encodes without padding; every decoder call says
/// what it accepts (``Strictness``). Both strictnesses refuse non-zero trailing bits (RFC 4648
/// §3.5: only the canonical encoding of the bytes decodes), lengths of 4n + 1 and whitespace.
public enum Base64URL {
    /// What a decode accepts besides canonical, unpadded, URL-safe base64url.
    public enum Strictness: Sendable, Equatable {
        /// Only `[A-Za-z0-9_-]`, no `=`: what we produce ourselves and what the contracts
        /// require (msgIds, JWS compact serialization, RFC 7515 §2 and §7.1).
        case strict
        /// Also the standard alphabet (`+`, `/`) and `=` padding (at most two, padded length a
        /// multiple of 4): keys pasted from other tools, browser subscription keys
        /// (`p256dh`, `auth`), the `k=` of a VAPID header.
        case lenient
    }

    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Byte → 6-bit value; 0xFF outside the alphabet. The URL-safe alphabet only.
    private static let strictTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// The URL-safe and the standard alphabet.
    private static let lenientTable: [UInt8] = {
        var table = strictTable
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        return table
    }()

    /// Whether `byte` is in the base64url alphabet `[A-Za-z0-9_-]`.
    public static func isAlphabetByte(_ byte: UInt8) -> Bool { strictTable[Int(byte)] != 0xFF }

    /// Encodes without padding, in the URL-safe alphabet.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let input = Array(bytes)
        return encode(count: input.count) { input[$0] }
    }

    /// Encodes the `count` bytes `byte(0) … byte(count - 1)` without padding, in the URL-safe
    /// alphabet, straight into the string's storage: for bytes that are not in an array (a
    /// digest on the stack).
    public static func encode(count: Int, byte: (Int) -> UInt8) -> String {
        let outputCount = (count * 4 + 2) / 3
        return String(unsafeUninitializedCapacity: outputCount) { out in
            var o = 0
            var i = 0
            while i + 3 <= count {
                let n = UInt32(byte(i)) << 16 | UInt32(byte(i + 1)) << 8 | UInt32(byte(i + 2))
                out[o] = alphabet[Int(n >> 18 & 63)]
                out[o + 1] = alphabet[Int(n >> 12 & 63)]
                out[o + 2] = alphabet[Int(n >> 6 & 63)]
                out[o + 3] = alphabet[Int(n & 63)]
                i += 3
                o += 4
            }
            let rest = count - i
            if rest == 1 {
                let n = UInt32(byte(i)) << 16
                out[o] = alphabet[Int(n >> 18 & 63)]
                out[o + 1] = alphabet[Int(n >> 12 & 63)]
                o += 2
            } else if rest == 2 {
                let n = UInt32(byte(i)) << 16 | UInt32(byte(i + 1)) << 8
                out[o] = alphabet[Int(n >> 18 & 63)]
                out[o + 1] = alphabet[Int(n >> 12 & 63)]
                out[o + 2] = alphabet[Int(n >> 6 & 63)]
                o += 3
            }
            return o
        }
    }

    /// The bytes `text` encodes, or nil when it is not base64url as `strictness` allows.
    public static func decode(_ text: String, _ strictness: Strictness) -> [UInt8]? {
        // The same steps as ``decode(utf8:_:)``, on the string's bytes read in place and written
        // through one reservation: no copy into an array, no `append` (capacity and uniqueness
        // checks) per byte; two keys per Web Push recipient are decoded.
        let chars = text.utf8.span
        var count = chars.count
        if strictness == .lenient, count > 0, chars[count - 1] == UInt8(ascii: "=") {
            var padding = 0
            while count > 0, chars[count - 1] == UInt8(ascii: "="), padding <= 2 {
                count -= 1
                padding += 1
            }
            guard padding <= 2, (count + padding) % 4 == 0 else { return nil }
        }
        guard count % 4 != 1 else { return nil }
        let table = strictness == .strict ? strictTable : lenientTable
        var output = [UInt8]()
        var valid = true
        // count characters carry count * 6 bits: exactly count * 3 / 4 whole bytes.
        output.append(addingCapacity: count * 3 / 4) { out in
            var accumulator: UInt32 = 0
            var bits = 0
            for index in 0..<count {
                let value = table[Int(chars[index])]
                guard value != 0xFF else {
                    valid = false
                    return
                }
                accumulator = accumulator << 6 | UInt32(value)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                }
            }
            if accumulator & ((1 << UInt32(bits)) - 1) != 0 { valid = false }
        }
        return valid ? output : nil
    }

    /// ``decode(_:_:)`` on UTF-8 code units (a slice of a larger buffer, e.g. one JWS part).
    public static func decode(utf8 input: some Collection<UInt8>, _ strictness: Strictness) -> [UInt8]? {
        var chars = Array(input)
        if strictness == .lenient, chars.last == UInt8(ascii: "=") {
            var padding = 0
            while chars.last == UInt8(ascii: "="), padding <= 2 {
                chars.removeLast()
                padding += 1
            }
            guard padding <= 2, (chars.count + padding) % 4 == 0 else { return nil }
        }
        guard chars.count % 4 != 1 else { return nil }
        let table = strictness == .strict ? strictTable : lenientTable
        var output = [UInt8]()
        output.reserveCapacity(chars.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for char in chars {
            let value = table[Int(char)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return output
    }
}
