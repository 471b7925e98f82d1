import Testing
import PushCore

@Suite("Base64URL")
struct Base64URLTests {
    @Test("encodes without padding in the URL-safe alphabet (RFC 4648 §10 vectors)", arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
    ])
    func encodesRFCVectors(plain: String, encoded: String) {
        #expect(Base64URL.encode(plain.utf8) == encoded)
        #expect(Base64URL.decode(encoded, .lenient) == Array(plain.utf8))
    }

    @Test("uses - and _ instead of + and /")
    func urlSafeAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URL.decode("-_-_", .lenient) == [0xFB, 0xFF, 0xBF])
        #expect(Base64URL.decode("+/+/", .lenient) == [0xFB, 0xFF, 0xBF])
    }

    @Test("accepts correct padding", arguments: [("Zg==", "f"), ("Zm8=", "fo"), ("Zm9v", "foo")])
    func acceptsPadding(encoded: String, plain: String) {
        #expect(Base64URL.decode(encoded, .lenient) == Array(plain.utf8))
    }

    @Test("rejects invalid input", arguments: ["Z", "Zg=", "Zg===", "=", "==", "Z=g=", "Zm 9v", "Zm9v\n", "Zm*v", "Zm9vä", "Zm8=Zm8="])
    func rejectsInvalid(text: String) {
        #expect(Base64URL.decode(text, .lenient) == nil)
    }

    @Test("round-trips every length up to 64 over all byte values")
    func roundTrips() {
        for length in 0...64 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 37 + 250) }
            let encoded = Base64URL.encode(bytes)
            #expect(!encoded.contains("="))
            #expect(Base64URL.decode(encoded, .lenient) == bytes)
        }
    }

    @Test("strict JWS decoding refuses padding and the standard alphabet")
    func strictMode() {
        #expect(Base64URL.decode(utf8: Array("Zm8=".utf8), .strict) == nil)
        #expect(Base64URL.decode(utf8: Array("+/+/".utf8), .strict) == nil)
        #expect(Base64URL.decode(utf8: Array("-_-_".utf8), .strict) == [0xFB, 0xFF, 0xBF])
    }
}
