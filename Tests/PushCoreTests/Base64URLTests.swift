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

/// ``Base64URL/decode(_:_:)`` on a `String` reads its bytes in place; it must answer exactly as
/// the collection decoder (``Base64URL/decode(utf8:_:)``) on every input, valid or not.
@Suite("Base64URL string decoding")
struct Base64URLStringDecodeTests {
    @Test("same result as the collection decoder, both strictnesses, on edge cases and generated inputs")
    func matchesCollectionDecoder() {
        var inputs = ["", "=", "==", "===", "A", "AA", "AAA", "AAAA", "AB==", "AB=", "ABC=", "ABC==", "AQ", "AR", "AQID", "A===", "+/+/",
                      "-_-_", "a b", "é", "AAAA====", "QUJD", "QUI", "QUI=", "QQ", "QR", "QQ==", "QQ=", "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-J"]
        var rng = SplitMix64(seed: 7)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=".utf8)
        for _ in 0..<2000 {
            let length = Int(rng.next() % 40)
            inputs.append(String(decoding: (0..<length).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }, as: UTF8.self))
        }
        for bytes in [[UInt8](), [0], [1, 2], [255, 254, 253], Array(0..<65)] { inputs.append(Base64URL.encode(bytes)) }
        for input in inputs {
            for strictness in [Base64URL.Strictness.strict, .lenient] {
                #expect(Base64URL.decode(input, strictness) == Base64URL.decode(utf8: Array(input.utf8), strictness), "\(input)")
            }
        }
    }
}
