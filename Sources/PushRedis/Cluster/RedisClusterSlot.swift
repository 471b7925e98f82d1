/// Redis Cluster key slots: `CRC16(key) mod 16384`, where only the part between the first `{`
/// and the next `}` is hashed if that part is not empty (a hash tag). The Redis Cluster
/// specification, "Keys distribution model" and appendix A (CRC16-XMODEM: polynomial 0x1021,
/// initial value 0, no reflection, no final XOR).
public enum RedisClusterSlot {
    /// Slots in a Redis Cluster.
    public static let count = 16384

    /// The slot of `key` (its UTF-8 bytes).
    public static func of(_ key: String) -> Int {
        of(bytes: key.utf8)
    }

    /// The slot of a key given as bytes.
    public static func of<Bytes: Collection<UInt8>>(bytes key: Bytes) -> Int {
        if let open = key.firstIndex(of: UInt8(ascii: "{")) {
            let afterOpen = key.index(after: open)
            if let close = key[afterOpen...].firstIndex(of: UInt8(ascii: "}")), close != afterOpen {
                return Int(crc16(key[afterOpen..<close]) & 0x3FFF)
            }
        }
        return Int(crc16(key) & 0x3FFF)
    }

    /// The slot of a command argument used as a key.
    static func of(argument: RedisArgument) -> Int {
        switch argument {
        case .string(let text):
            // Native strings have contiguous UTF-8: hash it in place (the hot path: every key of every batch).
            text.utf8.withContiguousStorageIfAvailable { of(bytes: $0) } ?? of(bytes: text.utf8)
        case .bytes(let bytes): bytes.withUnsafeBufferPointer { of(bytes: $0) }
        case .int(let value): of(bytes: String(value).utf8)
        case .dedupKey(let name): of(bytes: name.bytes)
        }
    }

    /// CRC16-XMODEM, as Redis Cluster uses it (`crc16("123456789") == 0x31C3`).
    public static func crc16<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
        }
        return crc
    }

    private static let table: [UInt16] = (0..<256).map { (index: Int) -> UInt16 in
        var crc = UInt16(index) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        return crc
    }
}
