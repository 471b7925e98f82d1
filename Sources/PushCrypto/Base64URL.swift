/// Base64url (RFC 4648 §5) as used by JOSE (RFC 7515 §2) and Web Push keys (RFC 8291).
public enum Base64URL {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Maps an ASCII byte to its 6-bit value; 0xFF marks a byte outside both alphabets.
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        return table
    }()

    /// Encodes without padding, in the URL-safe alphabet.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let input = Array(bytes)
        let outputCount = (input.count * 4 + 2) / 3
        return String(unsafeUninitializedCapacity: outputCount) { out in
            var o = 0
            var i = 0
            while i + 3 <= input.count {
                let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
                out[o] = alphabet[Int(n >> 18 & 63)]
                out[o + 1] = alphabet[Int(n >> 12 & 63)]
                out[o + 2] = alphabet[Int(n >> 6 & 63)]
                out[o + 3] = alphabet[Int(n & 63)]
                i += 3
                o += 4
            }
            let rest = input.count - i
            if rest == 1 {
                let n = UInt32(input[i]) << 16
                out[o] = alphabet[Int(n >> 18 & 63)]
                out[o + 1] = alphabet[Int(n >> 12 & 63)]
                o += 2
            } else if rest == 2 {
                let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8
                out[o] = alphabet[Int(n >> 18 & 63)]
                out[o + 1] = alphabet[Int(n >> 12 & 63)]
                out[o + 2] = alphabet[Int(n >> 6 & 63)]
                o += 3
            }
            return o
        }
    }

    /// Decodes base64url or standard base64, with or without `=` padding (padded input must
    /// be a multiple of 4 long). Returns nil for any other character, including whitespace,
    /// and for impossible lengths.
    public static func decode(_ text: String) -> [UInt8]? {
        decode(utf8: text.utf8, strict: false)
    }

    /// `strict`: URL-safe alphabet only, no padding (JWS compact serialization, RFC 7515 §7.1).
    static func decode(utf8 input: some Collection<UInt8>, strict: Bool) -> [UInt8]? {
        var chars = Array(input)
        var padding = 0
        while let last = chars.last, last == UInt8(ascii: "=") {
            if strict || padding == 2 { return nil }
            chars.removeLast()
            padding += 1
        }
        if padding > 0, (chars.count + padding) % 4 != 0 { return nil }
        if chars.count % 4 == 1 { return nil }

        var output = [UInt8]()
        output.reserveCapacity(chars.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for char in chars {
            if strict, char == UInt8(ascii: "+") || char == UInt8(ascii: "/") { return nil }
            let value = decodeTable[Int(char)]
            if value == 0xFF { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return output
    }
}
