import Testing
import PushCore
import PushEncoding

@Suite("JSON parser")
struct JSONParserTests {
    @Test("valid documents parse to the expected values", arguments: [
        ("null", JSONValue.null),
        ("true", .bool(true)),
        (" false ", .bool(false)),
        ("\"\"", .string("")),
        ("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", .string("a\"b\\c/d\u{8}\u{c}\n\r\t")),
        ("\"\\u00e9\\u4e2d\"", .string("é中")),
        ("\"\\ud83d\\ude00\"", .string("😀")),
        ("\"İı 한국어 👩‍👩‍👧 e\u{301}\"", .string("İı 한국어 👩‍👩‍👧 e\u{301}")),
        ("[]", .array([])),
        ("[1,[2,[]]]", .array([.number(JSONNumber(1)), .array([.number(JSONNumber(2)), .array([])])])),
        ("{}", .object(JSONObject())),
    ])
    func parsesValid(text: String, expected: JSONValue) throws {
        #expect(try JSONParser.parse(text) == expected)
    }

    @Test("numbers keep their value, literal and integer-ness", arguments: [
        ("0", 0.0, true), ("-0", 0.0, true), ("42", 42, true), ("-7", -7, true),
        ("1.5", 1.5, false), ("1e3", 1000, false), ("1E+2", 100, false), ("2.5e-1", 0.25, false),
        ("123456789012345678901234567890", 1.2345678901234568e29, true),
    ])
    func numbers(text: String, value: Double, isInteger: Bool) throws {
        guard case .number(let number) = try JSONParser.parse(text) else {
            Issue.record("not a number")
            return
        }
        #expect(number.double == value)
        #expect(number.isIntegerLiteral == isInteger)
        #expect(number.literal == text)
    }

    @Test("object members keep document order")
    func objectOrder() throws {
        let value = try JSONParser.parse(#"{"z":1,"a":2,"m":{"y":true,"b":null}}"#)
        #expect(value.objectValue?.keys == ["z", "a", "m"])
        #expect(value["m"]?.objectValue?.keys == ["y", "b"])
        #expect(value["a"] == .number(JSONNumber(2)))
    }

    @Test("malformed documents fail with the kind and byte offset", arguments: [
        ("", JSONParseError.Kind.unexpectedEnd, 0),
        ("   ", .unexpectedEnd, 3),
        ("nul", .unexpectedEnd, 3),
        ("nulL", .unexpectedByte, 3),
        ("[1,]", .unexpectedByte, 3),
        ("[1 2]", .unexpectedByte, 3),
        ("{\"a\" 1}", .unexpectedByte, 5),
        ("{\"a\":1,}", .unexpectedByte, 7),
        ("{a:1}", .unexpectedByte, 1),
        ("01", .trailingData, 1),
        ("1.", .invalidNumber, 2),
        (".5", .unexpectedByte, 0),
        ("-", .unexpectedEnd, 1),
        ("-a", .invalidNumber, 1),
        ("1e", .invalidNumber, 2),
        ("+1", .unexpectedByte, 0),
        ("NaN", .unexpectedByte, 0),
        ("1e400", .numberOutOfRange, 0),
        ("-1e999", .numberOutOfRange, 0),
        ("\"abc", .unexpectedEnd, 4),
        ("\"a\\", .unexpectedEnd, 3),
        ("\"a\\x\"", .invalidEscape, 2),
        ("\"\\u12\"", .invalidEscape, 5),
        ("\"\\u12", .unexpectedEnd, 5),
        ("\"\\ud800\"", .loneSurrogate, 1),
        ("\"\\udc00\"", .loneSurrogate, 1),
        ("\"\\ud800\\u0041\"", .loneSurrogate, 1),
        ("\"tab\there\"", .controlCharacter, 4),
        ("{\"a\":1,\"a\":2}", .duplicateKey, 7),
        ("[] []", .trailingData, 3),
        ("// c\n1", .unexpectedByte, 0),
        ("[1]x", .trailingData, 3),
    ])
    func rejectsMalformed(text: String, kind: JSONParseError.Kind, offset: Int) {
        #expect(throws: JSONParseError(kind, at: offset)) { try JSONParser.parse(text) }
    }

    @Test("invalid UTF-8 is refused", arguments: [
        [0x22, 0xC3, 0x22],                   // truncated 2-byte sequence
        [0x22, 0xC0, 0xAF, 0x22],             // overlong '/'
        [0x22, 0xE0, 0x80, 0xAF, 0x22],       // overlong 3-byte
        [0x22, 0xED, 0xA0, 0x80, 0x22],       // encoded surrogate U+D800
        [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], // above U+10FFFF
        [0x22, 0xFF, 0x22],
        [0x22, 0x80, 0x22],                   // lone continuation byte
        [0x22, 0xF0, 0x9F, 0x98],             // truncated at end of input
        [0xEF, 0xBB, 0xBF, 0x31],             // BOM before the value
    ] as [[UInt8]])
    func rejectsInvalidUTF8(bytes: [UInt8]) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(bytes) }
    }

    @Test("deep nesting stops at the depth limit instead of overflowing the stack")
    func depthLimit() throws {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONParseError(.tooDeep, at: 64)) { try JSONParser.parse(deep) }
        let objects = String(repeating: "{\"a\":", count: 70) + "1" + String(repeating: "}", count: 70)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(objects) }
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try JSONParser.parse(ok) }
        #expect(throws: JSONParseError(.tooDeep, at: 3)) { try JSONParser.parse("[[[[]]]]", maxDepth: 3) }
    }

    @Test("input over the size limit is refused before parsing")
    func sizeLimit() {
        let bytes = Array("[1,2,3]".utf8)
        #expect(throws: JSONParseError(.tooLarge, at: 4)) { try JSONParser.parse(bytes, maxBytes: 4) }
        #expect(throws: Never.self) { try JSONParser.parse(bytes, maxBytes: 7) }
    }

    @Test("every truncation of a valid document fails cleanly")
    func truncations() throws {
        let bytes = Array(#"{"a":[1,-2.5e3,"x\u00e9\ud83d\ude00",true,null],"b":{"c":"İ"}}"#.utf8)
        #expect(throws: Never.self) { try JSONParser.parse(bytes) }
        for length in 0..<bytes.count {
            #expect(throws: JSONParseError.self) { try JSONParser.parse(Array(bytes[0..<length])) }
        }
    }

    @Test("random bytes never crash the parser")
    func fuzz() {
        var generator = SplitMix64(seed: 0x5EED)
        let alphabet = Array("{}[]\":,.-+eE0123456789tfnrule\\ \u{7f}".utf8) + [0xC3, 0xA9, 0xF0, 0x9F, 0xED, 0xA0]
        for _ in 0..<3000 {
            let length = Int(generator.next() % 40)
            let bytes = (0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }
            _ = try? JSONParser.parse(bytes)
        }
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x7B]) }
    }

    @Test("huge number literals and long strings are handled")
    func hugeValues() throws {
        let digits = String(repeating: "9", count: 400)
        #expect(throws: JSONParseError(.numberOutOfRange, at: 0)) { try JSONParser.parse(digits) }
        let longString = "\"" + String(repeating: "ş", count: 100_000) + "\""
        #expect(try JSONParser.parse(longString).stringValue?.count == 100_000)
        #expect(try JSONParser.parse("0." + String(repeating: "0", count: 5000) + "1") != .null)
    }

    @Test("element ranges of the root's array member: each element's bytes exactly, whitespace outside")
    func elementRanges() throws {
        let text = #"{ "a": [1], "recipients" : [ {"x": [2, 3]} ,"é\n",  4 , [ ] , {"recipients": [5]} ], "b": {"recipients": [6]} }"#
        let bytes = Array(text.utf8)
        let parsed = try JSONParser.parse(bytes, elementRangesOf: "recipients")
        #expect(parsed.value == (try JSONParser.parse(bytes)))
        let elements = parsed.elementRanges.map { String(decoding: bytes[$0], as: UTF8.self) }
        #expect(elements == [#"{"x": [2, 3]}"#, #""é\n""#, "4", "[ ]", #"{"recipients": [5]}"#])
        // Each range parses alone to the element of the tree.
        let tree = try #require(parsed.value["recipients"]?.arrayValue)
        #expect(try parsed.elementRanges.map { try JSONParser.parse(Array(bytes[$0])) } == tree)
    }

    @Test("no element ranges when the member is missing, not an array, empty or not at the root", arguments: [
        #"{"a": 1}"#, #"{"recipients": {"0": 1}}"#, #"{"recipients": []}"#, #"{"b": {"recipients": [1, 2]}}"#,
        #"[{"recipients": [1]}]"#, #""recipients""#,
    ])
    func noElementRanges(text: String) throws {
        let parsed = try JSONParser.parse(Array(text.utf8), elementRangesOf: "recipients")
        #expect(parsed.elementRanges.isEmpty)
        #expect(parsed.value == (try JSONParser.parse(text)))
    }

    @Test("with element ranges a document is refused exactly as without", arguments: [
        #"{"recipients": [1,]}"#, #"{"recipients": [{"a": 1, "a": 2}]}"#, #"{"recipients": [1], "recipients": [2]}"#,
        #"{"recipients": ["\ud800"]}"#, #"{"recipients": [1] } x"#, #"{"recipients": [[[[1]]]]}"#,
    ])
    func elementRangesRefuse(text: String) {
        var plain: JSONParseError?
        do { _ = try JSONParser.parse(Array(text.utf8), maxDepth: 3) } catch { plain = error }
        var ranged: JSONParseError?
        do { _ = try JSONParser.parse(Array(text.utf8), elementRangesOf: "recipients", maxDepth: 3) } catch { ranged = error }
        #expect(plain != nil)
        #expect(ranged == plain)
    }

    @Test("serializing a parsed value and parsing it again gives the same value")
    func roundTrip() throws {
        let text = #"{"s":"q\"\\\n\t\u0001é😀","n":[0,-1.50,1e3,12345678901234567890],"b":[true,false,null],"o":{}}"#
        let value = try JSONParser.parse(text)
        let bytes = value.jsonBytes()
        #expect(try JSONParser.parse(bytes) == value)
        #expect(value.jsonString().contains("-1.50"))
        #expect(value.jsonString().contains("12345678901234567890"))
        #expect(value.jsonString().contains("\\u0001"))
    }
}

/// A tiny deterministic PRNG for fuzz-style tests.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
