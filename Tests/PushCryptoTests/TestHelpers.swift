import PushCore
@testable import PushCrypto
import PushEncoding

func hex(_ text: String) -> [UInt8] {
    var out: [UInt8] = []
    var iterator = text.utf8.makeIterator()
    func nibble(_ c: UInt8) -> UInt8 {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        default: 0
        }
    }
    while let high = iterator.next(), let low = iterator.next() {
        out.append(nibble(high) << 4 | nibble(low))
    }
    return out
}

/// Decodes a base64url fixture; an empty array if the fixture itself is broken (the test then fails on it).
func b64(_ text: String) -> [UInt8] {
    Base64URL.decode(text, .lenient) ?? []
}
