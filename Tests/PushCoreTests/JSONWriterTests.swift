import Foundation
import Testing
@testable import PushCore
@testable import PushEncoding

@Suite("JSONWriter")
struct JSONWriterTests {
    private func text(_ build: (inout JSONWriter) -> Void) -> String {
        var writer = JSONWriter()
        build(&writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    @Test("the escape check agrees with a plain byte-by-byte one: every byte value at every offset of strings up to 27 bytes, beside plain ASCII and non-ASCII neighbours")
    func needsNoEscapeEveryByteEveryOffset() {
        func reference(_ bytes: [UInt8]) -> Bool { !bytes.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C } }
        var mismatches: [String] = []
        for filler in [UInt8(ascii: "a"), 0x7F, 0x80, 0xFF, 0x21, 0x5B, 0x5D, 0x20] {
            for length in 0...27 {
                let plain = [UInt8](repeating: filler, count: length)
                if JSONWriter.needsNoEscape(plain.span) != reference(plain) { mismatches.append("filler \(filler) length \(length)") }
                for offset in 0..<length {
                    for value in 0...255 {
                        var bytes = plain
                        bytes[offset] = UInt8(value)
                        if JSONWriter.needsNoEscape(bytes.span) != reference(bytes) {
                            mismatches.append("filler \(filler) length \(length) byte \(value) at \(offset)")
                        }
                    }
                }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
        // Through the writer: a string that needs escaping in its last word or its tail is escaped.
        #expect(text { $0.string("abcdefgh\"ijklmno") } == #""abcdefgh\"ijklmno""#)
        #expect(text { $0.string("abcdefghijklmnop\n") } == #""abcdefghijklmnop\n""#)
    }

    @Test("commas and nesting")
    func structure() {
        let json = text { w in
            w.beginObject()
            w.key("a")
            w.beginArray(); w.int(1); w.int(2); w.beginObject(); w.key("b"); w.null(); w.endObject(); w.endArray()
            w.member("c", true)
            w.key("d"); w.beginObject(); w.endObject()
            w.key("e"); w.beginArray(); w.endArray()
            w.member("f", "x")
            w.endObject()
        }
        #expect(json == #"{"a":[1,2,{"b":null}],"c":true,"d":{},"e":[],"f":"x"}"#)
    }

    @Test("escapes quote, backslash and control characters; passes non-ASCII through")
    func escaping() {
        #expect(text { $0.string("a\"b\\c/d") } == #""a\"b\\c/d""#)
        #expect(text { $0.string("\n\r\t\u{8}\u{C}") } == #""\n\r\t\b\f""#)
        #expect(text { $0.string("\u{0}\u{1}\u{1F}\u{7F}") } == "\"\\u0000\\u0001\\u001f\u{7F}\"")
        let unicode = "Ayşe 모든 Ўзбек 👨‍👩‍👧‍👦 🇺🇿 e\u{301}"
        #expect(JSONWriter.quoted(unicode) == [UInt8(ascii: "\"")] + Array(unicode.utf8) + [UInt8(ascii: "\"")])
    }

    @Test("every string round-trips through a JSON parser", arguments: [
        "", "plain", "\u{0}\u{1}\u{2}\u{3}\u{4}\u{5}\u{6}\u{7}\u{8}\u{9}\u{A}\u{B}\u{C}\u{D}\u{E}\u{F}",
        "\u{10}\u{11}\u{12}\u{13}\u{14}\u{15}\u{16}\u{17}\u{18}\u{19}\u{1A}\u{1B}\u{1C}\u{1D}\u{1E}\u{1F}",
        "\"\\\"\\", "\u{2028}\u{2029}", "İstanbul ığüşöç", "한국어", "Oʻzbekiston", "Ўзбекистон", "🏳️‍🌈🇰🇷",
    ])
    func roundTrip(value: String) throws {
        var writer = JSONWriter()
        writer.beginArray(); writer.string(value); writer.endArray()
        let parsed = try JSONSerialization.jsonObject(with: Data(writer.bytes)) as? [String]
        #expect(parsed == [value])
        #expect(JSONWriter.escapedCount(value) == JSONWriter.quoted(value).count - 2)
    }

    @Test("integers", arguments: [0, 1, -1, 42, 1_796_036_400, Int.max, Int.min])
    func integers(value: Int) {
        #expect(text { $0.int(value) } == String(value))
    }

    @Test("doubles: shortest round-trip, non-finite as null", arguments: [
        (0.8, "0.8"), (0.1 + 0.2, "0.30000000000000004"), (1.0, "1.0"), (-2.0, "-2.0"), (0.0, "0.0"),
        (0.25, "0.25"), (1e-7, "1e-07"), (1e300, "1e+300"),
        (Double.nan, "null"), (Double.infinity, "null"), (-Double.infinity, "null"),
    ] as [(Double, String)])
    func doubles(value: Double, expected: String) throws {
        let json = text { $0.double(value) }
        #expect(json == expected)
        if value.isFinite {
            // Linux JSONSerialization parses some doubles imprecisely: check with Double(_:).
            #expect(Double(json) == value)
        }
    }

    @Test("raw fragments and optional members")
    func rawAndOptional() {
        let json = text { w in
            w.beginObject()
            w.member("a", ifPresent: nil)
            w.member("b", ifPresent: "x")
            w.key("c"); w.raw(Array("[1]".utf8))
            w.member("d", strings: ["p", "q"])
            w.member("e", 0.5)
            w.endObject()
        }
        #expect(json == #"{"b":"x","c":[1],"d":["p","q"],"e":0.5}"#)
    }
}

/// The one JSON quoting (``JSONWriter``): the log, Kafka-log, VAPID, sandbox and `JSONValue`
/// writers each had their own until they moved here; these pin what they now share.
@Suite("JSON quoting")
struct JSONQuotingTests {
    @Test("every control character: the short escapes where JSON has them, \\u00XX otherwise")
    func controlCharacters() {
        let short: [UInt8: String] = [0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"]
        let hex = Array("0123456789abcdef")
        for byte in UInt8(0)..<0x20 {
            let expected = short[byte] ?? "\\u00\(hex[Int(byte >> 4)])\(hex[Int(byte & 0xF)])"
            #expect(JSONWriter.quotedString(String(UnicodeScalar(byte))) == "\"\(expected)\"")
        }
        #expect(JSONWriter.quotedString("\u{7F}") == "\"\u{7F}\"")
    }

    @Test("U+2028 and U+2029 pass through raw (valid JSON) and round-trip")
    func lineSeparators() throws {
        let text = "a\u{2028}b\u{2029}c"
        #expect(JSONWriter.quoted(text) == Array("\"\(text)\"".utf8))
        #expect(try JSONParser.parse(JSONWriter.quoted(text)) == .string(text))
    }

    @Test("bytes that are not UTF-8 arrive as U+FFFD (String(decoding:)) and are written as UTF-8")
    func invalidUTF8() throws {
        let text = String(decoding: [0x61, 0xFF, 0x62, 0xC3, 0x28], as: UTF8.self)
        #expect(text == "a\u{FFFD}b\u{FFFD}(")
        let quoted = JSONWriter.quoted(text)
        #expect(quoted == [0x22, 0x61, 0xEF, 0xBF, 0xBD, 0x62, 0xEF, 0xBF, 0xBD, 0x28, 0x22])
        #expect(try JSONParser.parse(quoted) == .string(text))
    }

    @Test("JSONValue is written with the same quoting as JSONWriter", arguments: [
        "", "plain", "\u{0}\u{8}\u{C}\u{1F}", "\"\\/", "\u{2028}", "é 모든 🇺🇿",
    ])
    func valueQuoting(text: String) {
        #expect(JSONValue.string(text).jsonBytes() == JSONWriter.quoted(text))
    }

    @Test("a parsed document is written back as it came (member order, number literals)")
    func valueDocument() throws {
        let document = try JSONParser.parse(#"{"k":[1.50e3,true,null,"x"],"n":{}}"#)
        var writer = JSONWriter()
        writer.value(document)
        #expect(writer.text == #"{"k":[1.50e3,true,null,"x"],"n":{}}"#)
        #expect(document.jsonString() == writer.text)
    }

    @Test("object builders, nested objects and nullable members")
    func builders() {
        let json = JSONWriter.object { w in
            w.member("a", orNull: nil)
            w.member("b", orNull: "x")
            w.member("c") { inner in inner.member("d", 1); inner.key("e"); inner.int(orNull: nil) }
            w.key("f"); w.string(orNull: "y")
        }.text
        #expect(json == #"{"a":null,"b":"x","c":{"d":1,"e":null},"f":"y"}"#)
    }

    /// What RFC 8259 §7 asks for, one byte at a time: the reference the one-pass quoting must match.
    private static func referenceQuoted(_ text: String) -> [UInt8] {
        let short: [UInt8: String] = [0x22: "\\\"", 0x5C: "\\\\", 0x08: "\\b", 0x09: "\\t", 0x0A: "\\n",
                                      0x0C: "\\f", 0x0D: "\\r"]
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = [0x22]
        for byte in text.utf8 {
            if let escape = short[byte] {
                out += Array(escape.utf8)
            } else if byte < 0x20 {
                out += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            } else {
                out.append(byte)
            }
        }
        out.append(0x22)
        return out
    }

    @Test("one-pass quoting matches the byte-by-byte reference: every ASCII byte, every escape class, non-ASCII, empty, at and past the worst-case reservation limit")
    func onePassMatchesReference() {
        var cases: [String] = ["", "a", "\"", "\\", "\u{0}", "\u{1F}", "\u{7F}", "é", "모든 🇺🇿", "e\u{301}"]
        cases.append(String(decoding: (0..<0x80).map { UInt8($0) }, as: UTF8.self))
        let mixed = "ab\"c\\d\n\u{1}é🇺🇿\t"
        let limit = JSONWriter.worstCaseReservationLimit
        for length in [limit - 1, limit, limit + 1, 4 * limit, 20_000] {
            cases.append(String(repeating: "x", count: length))
            cases.append(String(repeating: "\u{0}", count: length)) // every byte six bytes out
            cases.append(String(repeating: mixed, count: length / mixed.utf8.count + 1))
        }
        for text in cases {
            #expect(JSONWriter.quoted(text) == Self.referenceQuoted(text), "\(text.utf8.count) bytes")
            #expect(JSONWriter.escapedCount(text) == Self.referenceQuoted(text).count - 2)
        }
    }

    @Test("strings not born native (Foundation-bridged, substrings, interpolated, small and large) quote like the same text")
    func bridgedAndDerivedStrings() {
        let large = "Merhaba \"Ayşe\"\n" + String(repeating: "ğ", count: 40)
        let sources: [String] = [
            NSString(string: large) as String, NSString(string: "kısa\t") as String,
            String(large.dropFirst(3)), String(Substring("small\u{1}")), "\(large)\(7)",
            String(decoding: Array(large.utf8), as: UTF8.self),
        ]
        for text in sources {
            #expect(JSONWriter.quoted(text) == Self.referenceQuoted(text))
        }
    }

    @Test("commas and colons around quoted keys and values land where the separate appends put them")
    func separatorsAroundQuotedStrings() {
        var writer = JSONWriter(capacity: 0) // growing from nothing: each quoted run reserves its own room
        writer.beginObject()
        writer.member("", "")
        writer.member("k\"", "v\n")
        writer.key("arr"); writer.beginArray(); writer.string("a"); writer.string(""); writer.int(1); writer.string("é"); writer.endArray()
        writer.member("z", ifPresent: "last")
        writer.endObject()
        #expect(writer.text == #"{"":"","k\"":"v\n","arr":["a","",1,"é"],"z":"last"}"#)
    }

    @Test("a string member written in one reservation equals its key and value written one after the other")
    func memberEqualsKeyThenString() {
        let texts = ["", "a", "on.msgId", "k\"", "v\n", "é 모든 🇺🇿", "\u{1F}", String(repeating: "x", count: 300),
                     String(repeating: "\\", count: 300)]
        for name in texts {
            for value in texts {
                var joined = JSONWriter(capacity: 0)
                var separate = JSONWriter(capacity: 0)
                joined.beginObject(); separate.beginObject()
                for _ in 0..<2 {
                    joined.member(name, value)
                    separate.key(name); separate.string(value)
                    joined.member(name, ifPresent: value)
                    separate.key(name); separate.string(value)
                }
                joined.endObject(); separate.endObject()
                #expect(joined.bytes == separate.bytes)
                #expect(joined.text.hasPrefix("{" + JSONWriter.quotedString(name) + ":" + JSONWriter.quotedString(value) + ","))
            }
        }
    }
}
