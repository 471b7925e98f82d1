import Testing
import PushCore
import PushEncoding

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

/// Where the two strictnesses differ (the code base had two codecs, one for each, until both
/// moved to PushCore).
@Suite("Base64URL strictness")
struct Base64URLStrictnessTests {
    @Test("lenient accepts the standard alphabet and correct padding; strict refuses both", arguments: [
        ("Zm8=", [0x66, 0x6F]), ("Zg==", [0x66]), ("+/+/", [0xFB, 0xFF, 0xBF]), ("aGVsbG8/Pg==", Array("hello?>".utf8)),
        ("-_+/", [0xFB, 0xFF, 0xBF]),
    ] as [(String, [UInt8])])
    func lenientOnly(text: String, bytes: [UInt8]) {
        #expect(Base64URL.decode(text, .lenient) == bytes)
        #expect(Base64URL.decode(text, .strict) == nil)
    }

    @Test("both accept canonical unpadded base64url", arguments: ["", "Zg", "Zm8", "Zm9v", "-_-_", "aGVsbG8_Pg"])
    func both(text: String) {
        #expect(Base64URL.decode(text, .strict) != nil)
        #expect(Base64URL.decode(text, .strict) == Base64URL.decode(text, .lenient))
        #expect(Base64URL.encode(Base64URL.decode(text, .strict) ?? []) == text)
    }

    @Test("both refuse non-zero trailing bits, 4n+1 lengths, bad padding and other bytes", arguments: [
        "AB", "Zh", "Zm9", "A", "Zm9vY", "Zg=", "Zg===", "Zm8==", "=", "==", "Z=g=", "Zm8=Zm8=", "Zm 9v", "Zm9v\n", "Zm*v", "Zm9vä", "Zg\u{0}",
    ])
    func neither(text: String) {
        #expect(Base64URL.decode(text, .strict) == nil)
        #expect(Base64URL.decode(text, .lenient) == nil)
    }

    @Test("decodes a slice of a larger buffer (a JWS part)")
    func slice() {
        let token = Array("eyJhIjoxfQ.Zm9v".utf8)
        let dot = token.firstIndex(of: UInt8(ascii: ".")) ?? 0
        #expect(Base64URL.decode(utf8: token[..<dot], .strict) == Array(#"{"a":1}"#.utf8))
        #expect(Base64URL.decode(utf8: token[(dot + 1)...], .strict) == Array("foo".utf8))
    }

    @Test("the alphabet is exactly [A-Za-z0-9_-]")
    func alphabet() {
        let expected = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        for byte in UInt8.min...UInt8.max {
            #expect(Base64URL.isAlphabetByte(byte) == expected.contains(byte))
        }
    }
}
