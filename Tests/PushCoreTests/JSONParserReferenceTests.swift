import Foundation
import Testing
import PushCore
import PushEncoding

/// The parser and the recipient decoding as they were before their fast paths (main b0f0477),
/// kept verbatim as a reference: on every input — valid jobs, and thousands of seeded
/// mutations of them (broken strings, escapes, UTF-8, numbers, duplicate keys, truncations,
/// malformed recipient arrays) — today's parser must return the same value, number literals
/// included, or the same error at the same byte, and the decoder the same recipients.
@Suite("JSON parser against its reference")
struct JSONParserReferenceTests {
    static let root: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }()

    /// examples/*.json and Tests/Fixtures/job/{valid,invalid}/*.json.
    static let corpus: [[UInt8]] = {
        var documents: [[UInt8]] = []
        for folder in ["examples", "Tests/Fixtures/job/valid", "Tests/Fixtures/job/invalid"] {
            let url = root.appendingPathComponent(folder)
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
            for name in names {
                if let data = try? Data(contentsOf: url.appendingPathComponent(name)) { documents.append(Array(data)) }
            }
        }
        // A job whose texts are long non-ASCII strings (as the fuzz drill's corpus has).
        let long = String(repeating: "Ünïcödé 👩‍👩‍👧‍👦 e\u{301} ", count: 40)
        documents.append(Array((#"{"schemaVersion":1,"jobId":"j","appId":"a","campaignId":"c","content":{"defaultLanguage":"en","languages":{"en":{"title":"\#(long)","body":"\#(long)"}}},"recipients":[{"subscriptionId":"s","platform":"ios","token":"t","properties":{"name":"Ayşe \#(long)"}}]}"#).utf8))
        return documents
    }()

    /// Bytes the mutations insert: everything the parser decides on.
    static let fragments: [[UInt8]] = [
        [0x22], [0x5C], [0x5C, 0x22], [0x5C, 0x75], [0x00], [0x1F], [0x09], [0x0A], [0x7F], [0x80], [0xBF], [0xC0, 0xAF],
        [0xC3], [0xC3, 0x28], [0xC3, 0xA9], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xEF, 0xBB, 0xBF], [0xF0, 0x9F, 0x98, 0x80],
        [0xF4, 0x90, 0x80, 0x80], [0xF8, 0x88, 0x80, 0x80, 0x80], [0xFF],
        Array(#"\ud800"#.utf8), Array(#"\udc00"#.utf8), Array(#"\ud83d\ude00"#.utf8), Array(#"\u00e9"#.utf8), Array(#"\uZZZZ"#.utf8),
        Array(#"\x"#.utf8), Array("-".utf8), Array("0".utf8), Array("01".utf8), Array("1e".utf8), Array("1.".utf8), Array("-0".utf8),
        Array("1e999".utf8), Array("123456789012345".utf8), Array("1234567890123456".utf8), Array("9007199254740993".utf8),
        Array(".".utf8), Array("e+".utf8), Array("{".utf8), Array("}".utf8), Array("[".utf8), Array("]".utf8), Array(",".utf8),
        Array(":".utf8), Array(" ".utf8), Array("null".utf8), Array("tru".utf8), Array(#""userId":"u","#.utf8),
        Array(#""token":"#.utf8), Array(#"{"userId":"u","userId":"v"}"#.utf8), Array(#"[{},1,"x",[],null]"#.utf8),
        // Some of `pushworker-dev chaos --drill fuzz`'s tokens.
        Array("9223372036854775808".utf8), Array("0.0000001".utf8), Array("\u{202E}\u{FEFF}e\u{301}👩‍👩‍👧‍👦".utf8),
        Array(String(repeating: "x", count: 300).utf8), Array(String(repeating: "🎉", count: 100).utf8),
        Array(String(repeating: "ğ", count: 200).utf8), Array(#""platform":"web""#.utf8), Array(#""tokenUpdatedAt":"2020-01-01T00:00:00Z""#.utf8),
    ]

    static func mutate(_ input: [UInt8], _ generator: inout SplitMix64) -> [UInt8] {
        var bytes = input
        for _ in 0..<(1 + Int(generator.next() % 3)) {
            guard !bytes.isEmpty else { return bytes }
            let at = Int(generator.next() % UInt64(bytes.count))
            switch generator.next() % 7 {
            case 0: bytes[at] = UInt8(truncatingIfNeeded: generator.next())
            case 1, 2: bytes.insert(contentsOf: fragments[Int(generator.next() % UInt64(fragments.count))], at: at)
            case 3: bytes.removeSubrange(at..<min(bytes.count, at + 1 + Int(generator.next() % 8)))
            case 4: bytes = Array(bytes.prefix(at))
            case 5:  // a copy of a stretch elsewhere (duplicate members, recipients)
                let length = min(bytes.count - at, 1 + Int(generator.next() % 200))
                let piece = Array(bytes[at..<(at + length)])
                bytes.insert(contentsOf: piece, at: Int(generator.next() % UInt64(bytes.count)))
            default: bytes[at] = fragments[Int(generator.next() % UInt64(fragments.count))].first ?? 0x20
            }
        }
        return bytes
    }

    /// Same value, number literals and member order included (`==` ignores literals).
    static func same(_ left: JSONValue, _ right: JSONValue) -> Bool {
        switch (left, right) {
        case (.number(let a), .number(let b)): a.literal == b.literal && a == b && a.double.sign == b.double.sign
        case (.array(let a), .array(let b)): a.count == b.count && zip(a, b).allSatisfy { same($0, $1) }
        case (.object(let a), .object(let b)):
            a.count == b.count && zip(a.members, b.members).allSatisfy { $0.key == $1.key && same($0.value, $1.value) }
        default: left == right
        }
    }

    static func text(_ input: [UInt8]) -> String { String(String(decoding: input, as: UTF8.self).prefix(300)) }

    /// The parse of `input` by both: the value, and a message when they disagree.
    static func compare(_ input: [UInt8], maxDepth: Int = JSONParser.defaultMaxDepth) -> (value: JSONValue?, problem: String?) {
        let reference = Result { () throws(JSONParseError) in try ReferenceJSONParser.parse(input, maxDepth: maxDepth) }
        let parsed = Result { () throws(JSONParseError) in try JSONParser.parse(input, maxDepth: maxDepth) }
        switch (reference, parsed) {
        case (.success(let a), .success(let b)):
            return same(a, b) ? (b, nil) : (b, "different values for \(text(input))")
        case (.failure(let a), .failure(let b)):
            return a == b ? (nil, nil) : (nil, "\(a) vs \(b) for \(text(input))")
        case (.success, .failure(let b)): return (nil, "refused (\(b)) what the reference accepts: \(text(input))")
        case (.failure(let a), .success): return (nil, "accepted what the reference refuses (\(a)): \(text(input))")
        }
    }

    /// The recipients as the reference decoding reads them from `document`.
    static func referenceRecipients(_ document: JSONValue) -> [Recipient] {
        (document["recipients"]?.arrayValue ?? []).compactMap { value in
            value.objectValue.map { ReferenceRecipientDecoding.decode($0, source: value) }
        }
    }

    static let jobHead = #"{"schemaVersion":1,"jobId":"j","appId":"a","campaignId":"c","content":{"defaultLanguage":"en","languages":{"en":{"title":"t"}}},"recipients":"#

    @Test("every corpus document parses as the reference parses it")
    func corpusAgrees() {
        #expect(Self.corpus.count >= 40)
        for input in Self.corpus {
            #expect(Self.compare(input).problem == nil)
        }
    }

    @Test("seeded mutations of the corpus: same value or same error at the same byte, same recipients")
    func mutationsAgree() {
        var generator = SplitMix64(seed: 14)
        var problems: [String] = []
        var decoded = 0, refused = 0
        for _ in 0..<6_000 {
            let input = Self.mutate(Self.corpus[Int(generator.next() % UInt64(Self.corpus.count))], &generator)
            let (value, problem) = Self.compare(input)
            if let problem { problems.append(problem); continue }
            guard let value else { refused += 1; continue }
            if let job = try? JobDecoder.decode(input) {
                decoded += 1
                if job.recipients != Self.referenceRecipients(value) { problems.append("different recipients: \(Self.text(input))") }
                if !Self.same(job.document, value) { problems.append("different document: \(Self.text(input))") }
            }
        }
        #expect(problems.isEmpty, "\(problems.prefix(3))")
        // The mutations reach both sides: many refused, many still decoded.
        #expect(refused > 1_000)
        #expect(decoded > 100)
    }

    @Test("depth and size bounds as the reference", arguments: [1, 2, 3, 64])
    func bounds(maxDepth: Int) {
        let deep = "[" + String(repeating: "[", count: 70) + String(repeating: "]", count: 71)
        for text in ["[[[[]]]]", #"{"a":{"b":{"c":{}}}}"#, #"[{"a":[{"b":1}]}]"#, deep] {
            #expect(Self.compare(Array(text.utf8), maxDepth: maxDepth).problem == nil)
        }
        let big = Array(#"{"a":"bcdefgh"}"#.utf8)
        #expect(throws: JSONParseError(.tooLarge, at: big.count - 1)) { try JSONParser.parse(big, maxBytes: big.count - 1) }
    }

    @Test("strings: ASCII, escapes, UTF-8 and control characters around each other")
    func strings() {
        let pieces: [String] = ["a", #"\n"#, "é", #"\u00e9"#, "\u{1}", #"\ud800"#, #"\ud800\udc00"#, "😀", #"\"#, #"\""#]
        for first in pieces {
            for second in pieces {
                for text in ["\"\(first)\(second)\"", "\"\(first)x\(second)", #"{"\#(first)":1,"\#(second)":2}"#,
                             #"{"k\#(first)":"v\#(second)","k\#(first)":0}"#] {
                    #expect(Self.compare(Array(text.utf8)).problem == nil)
                }
            }
            for bad: [UInt8] in [[0xC3], [0xC3, 0x28], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xFF], [0x00], [0x22]] {
                let input = Array("[\"\(first)".utf8) + bad + Array("z\",\"ok\"]".utf8)
                #expect(Self.compare(input).problem == nil)
            }
        }
    }

    @Test("strings read eight bytes at a time: every byte that stops the scan, at every offset of the first three words, as the reference")
    func stopBytesAtEveryOffset() {
        // Each byte class the word test must see: the closing quote, an escape, controls, DEL
        // (allowed), UTF-8 lead and continuation bytes, an invalid byte, and the word's edges.
        let stops: [[UInt8]] = [[0x22], [0x5C, 0x6E], [0x5C, 0x22], [0x00], [0x1F], [0x0A], [0x20], [0x21], [0x7F], [0xC3, 0xA9],
                                [0xE2, 0x82, 0xAC], [0xF0, 0x9F, 0x98, 0x80], [0x80], [0xFF], [0x5B], [0x5D], [0x23], [0x5D, 0x22]]
        for length in 0..<26 {
            for offset in 0...length {
                for stop in stops {
                    let text = [UInt8](repeating: UInt8(ascii: "a"), count: offset) + stop
                        + [UInt8](repeating: UInt8(ascii: "b"), count: length - offset)
                    for input in [[0x22] + text + [0x22], Array("[\"".utf8) + text + Array("\",1]".utf8),
                                  Array("{\"".utf8) + text + Array("\":\"".utf8) + text + Array("\"}".utf8)] {
                        let result = Self.compare(input)
                        #expect(result.problem == nil, "length \(length), offset \(offset), stop \(stop)")
                    }
                }
            }
        }
    }

    @Test("numbers: value, literal and sign as the reference (the exact integer path and strtod)", arguments: [
        "0", "-0", "7", "-7", "10", "123456789012345", "-123456789012345", "1234567890123456", "9007199254740993",
        "99999999999999999999", "1.0", "-0.0", "1e3", "1E-2", "0.1", "1e308", "1e309", "-1e309", "01", "-", "1.", "1e", "-01", "2.5e+3",
    ])
    func numbers(text: String) {
        for wrapped in [text, "[\(text)]", #"{"n":\#(text)}"#] {
            #expect(Self.compare(Array(wrapped.utf8)).problem == nil)
        }
    }

    @Test("strings repeated across many objects (the interned ones) come back right, also when their slots collide")
    func internedStrings() throws {
        var text = "["
        for index in 0..<300 {
            text += #"{"userId":"u\#(index)","subscriptionId":"s\#(index % 7)","platform":"\#(["ios", "android", "IOS", "web"][index % 4])","#
            text += #""k\#(index % 13)":"\#(String(repeating: "x", count: index % 40))","ab":"ba","ba":"ab","aab":1}"#
            text += index == 299 ? "]" : ","
        }
        #expect(Self.compare(Array(text.utf8)).problem == nil)
        let parsed = try JSONParser.parse(text)
        #expect(parsed.arrayValue?[123]["userId"] == .string("u123"))
        #expect(parsed.arrayValue?[38]["k12"] == .string(String(repeating: "x", count: 38)))
        #expect(parsed.arrayValue?[38]["ba"] == .string("ab"))
    }

    @Test("malformed recipient arrays: the same error, or the same recipients, rejected one by one later")
    func malformedRecipients() throws {
        let bodies = [
            #"[{"subscriptionId":"s1","platform":"ios","token":"t"},]"#,
            #"[{"subscriptionId":"s1","subscriptionId":"s2"}]"#,
            #"[{"subscriptionId":"s1","platform":"ios"}"#,
            #"[{"subscriptionId":"s1" "platform":"ios"}]"#,
            #"[{"subscriptionId":"s\u00"}]"#,
            #"[{"subscriptionId":"s\ud800"}]"#,
            #"[{"subscriptionId":1e999}]"#,
            #"[1,"x",null,[],{"subscriptionId":"s"}]"#,
            #"[{"subscriptionId":"s"},{"userId":7,"subscriptionId":true,"platform":"ANDROID","token":5,"properties":{"a":1,"b":false,"c":null,"d":[]}}]"#,
            #"[{"platform":"Ios","subscriptionId":"s","subscription":{"endpoint":"https://e","keys":{"p256dh":"p","auth":"a"}},"tokenUpdatedAt":"2026-01-01T00:00:00Z"}]"#,
            #"{"subscriptionId":"s"}"#,
            "[" + String(repeating: #"{"subscriptionId":"s","platform":"ios","token":"tok"},"#, count: 60) + "{}]",
        ]
        for body in bodies {
            let input = Array((Self.jobHead + body + "}").utf8)
            let (value, problem) = Self.compare(input)
            #expect(problem == nil)
            do throws(JobValidationError) {
                let job = try JobDecoder.decode(input)
                #expect(job.recipients == Self.referenceRecipients(value ?? .null), "\(body)")
            } catch {
                if value == nil { #expect(error.path == "$" && error.reason.hasPrefix("invalid JSON: "), "\(body)") }
                else { #expect(error.path.hasPrefix("$.recipients"), "\(body): \(error)") }
            }
        }
        // Elements that are not objects are whole-job problems, each at its index.
        #expect(throws: JobValidationError(problems: ["number", "string", "null", "array"].enumerated().map {
            JobProblem(path: "$.recipients[\($0.offset)]", reason: "expected an object, got \($0.element)")
        })) { try JobDecoder.decode(Array((Self.jobHead + bodies[7] + "}").utf8)) }
        // Wrong member types are the recipient's own problems: decoded leniently.
        let mixed = try JobDecoder.decode(Array((Self.jobHead + bodies[8] + "}").utf8))
        #expect(mixed.recipients.count == 2)
        #expect(mixed.recipients[1].userID == "7" && mixed.recipients[1].subscriptionID == "true" && mixed.recipients[1].token == nil)
        #expect(mixed.recipients[1].properties == ["a": "1", "b": "false"])
        #expect(mixed.recipients[1].platform == .android)
    }

    @Test("a recipient built in code with a member twice: the first one counts, as before")
    func duplicateMembersInCode() throws {
        let object = JSONObject([(key: "subscriptionId", value: .string("first")), (key: "platform", value: .number(JSONNumber(1))),
                                 (key: "subscriptionId", value: .string("second")), (key: "platform", value: .string("ios")),
                                 (key: "token", value: .string("t"))])
        var root = try JSONParser.parse(Array((Self.jobHead + "[]}").utf8)).objectValue ?? JSONObject()
        root["recipients"] = .array([.object(object)])
        let expected = Self.referenceRecipients(.object(root))
        #expect(expected.first?.subscriptionID == "first")
        #expect(expected.first?.platformName == nil)
        let job = try JobDecoder.decode(JSONValue.object(root))
        #expect(job.recipients == expected)
    }

    @Test("RecipientField.named is RecipientField(rawValue:)")
    func recipientFieldNames() {
        let names = RecipientField.allCases.map(\.rawValue)
            + ["", "Token", "tokens", "toke", "userid", "subscriptionID", "tokenUpdatedAtX", "é", "platforM", "languagE", "timezonE", "timeZone"]
        for name in names { #expect(RecipientField.named(name) == RecipientField(rawValue: name), "\(name)") }
    }
}

/// `JobDecoder.decodeRecipient` as it was (one `object[name]` look-up per field).
enum ReferenceRecipientDecoding {
    static func decode(_ object: JSONObject, source: JSONValue) -> Recipient {
        func member(_ field: RecipientField) -> JSONValue? { object[field.rawValue] }
        var subscription: Recipient.Subscription?
        if case .object(let subscriptionObject)? = member(.subscription) {
            let keys = subscriptionObject[SubscriptionField.keys.rawValue]
            subscription = Recipient.Subscription(endpoint: subscriptionObject[SubscriptionField.endpoint.rawValue]?.stringValue,
                                                  p256dh: keys?[SubscriptionKeysField.p256dh.rawValue]?.stringValue,
                                                  auth: keys?[SubscriptionKeysField.auth.rawValue]?.stringValue)
        }
        var properties: [String: String] = [:]
        for member in member(.properties)?.objectValue?.members ?? [] {
            if let text = scalarText(member.value) { properties[member.key] = text }
        }
        var recipient = Recipient(userID: member(.userId).flatMap(scalarText),
                                  subscriptionID: member(.subscriptionId).flatMap(scalarText) ?? "",
                                  platformName: member(.platform)?.stringValue, token: member(.token)?.stringValue,
                                  language: member(.language)?.stringValue, browser: member(.browser)?.stringValue,
                                  subscription: subscription, properties: properties,
                                  tokenUpdatedAt: member(.tokenUpdatedAt)?.stringValue.flatMap(RFC3339Timestamp.parse),
                                  source: source)
        // As the initializer read the platform before its fast path.
        recipient.platform = recipient.platformName.flatMap { Platform(rawValue: $0.lowercased()) }
        recipient.timezone = member(.timezone)?.stringValue
        return recipient
    }

    static func scalarText(_ value: JSONValue) -> String? {
        switch value {
        case .string(let text): text
        case .number(let number): number.literal
        case .bool(let flag): flag ? "true" : "false"
        default: nil
        }
    }
}

/// `JSONParser.parse` as it was.
enum ReferenceJSONParser {
    static func parse(_ bytes: [UInt8], maxDepth: Int = JSONParser.defaultMaxDepth,
                      maxBytes: Int = JSONParser.defaultMaxBytes) throws(JSONParseError) -> JSONValue {
        guard bytes.count <= maxBytes else { throw JSONParseError(.tooLarge, at: maxBytes) }
        var reader = ReferenceJSONReader(bytes: bytes, maxDepth: maxDepth)
        reader.skipWhitespace()
        let value = try reader.parseValue(depth: 0)
        reader.skipWhitespace()
        guard reader.index == bytes.count else { throw JSONParseError(.trailingData, at: reader.index) }
        return value
    }
}

private enum ReferenceASCII {
    static let quote: UInt8 = 0x22, backslash: UInt8 = 0x5C, slash: UInt8 = 0x2F
    static let comma: UInt8 = 0x2C, colon: UInt8 = 0x3A
    static let openBrace: UInt8 = 0x7B, closeBrace: UInt8 = 0x7D
    static let openBracket: UInt8 = 0x5B, closeBracket: UInt8 = 0x5D
    static let minus: UInt8 = 0x2D, plus: UInt8 = 0x2B, dot: UInt8 = 0x2E
    static let zero: UInt8 = 0x30, nine: UInt8 = 0x39
    static let lowerE: UInt8 = 0x65, upperE: UInt8 = 0x45
}

private struct ReferenceJSONReader {
    let bytes: [UInt8]
    let maxDepth: Int
    var index = 0

    init(bytes: [UInt8], maxDepth: Int) { self.bytes = bytes; self.maxDepth = maxDepth }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    func peek() throws(JSONParseError) -> UInt8 {
        guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, at: index) }
        return bytes[index]
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        var offset = 0
        while offset < count {
            let expected = literal.utf8Start[offset]
            guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, at: index) }
            guard bytes[index] == expected else { throw JSONParseError(.unexpectedByte, at: index) }
            index += 1
            offset += 1
        }
    }

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        switch try peek() {
        case ReferenceASCII.openBrace: return try parseObject(depth: depth + 1)
        case ReferenceASCII.openBracket: return try parseArray(depth: depth + 1)
        case ReferenceASCII.quote:
            index += 1
            return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case ReferenceASCII.minus, ReferenceASCII.zero...ReferenceASCII.nine:
            return .number(try parseNumber())
        default:
            throw JSONParseError(.unexpectedByte, at: index)
        }
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw JSONParseError(.tooDeep, at: index) }
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        var seen: Set<String>?
        skipWhitespace()
        if try peek() == ReferenceASCII.closeBrace {
            index += 1
            return .object(JSONObject(members))
        }
        while true {
            skipWhitespace()
            let keyOffset = index
            guard try peek() == ReferenceASCII.quote else { throw JSONParseError(.unexpectedByte, at: index) }
            index += 1
            let key = try parseString()
            if members.count < 16 {
                if members.contains(where: { $0.key == key }) { throw JSONParseError(.duplicateKey, at: keyOffset) }
            } else {
                if seen == nil { seen = Set(members.map(\.key)) }
                if seen?.insert(key).inserted == false { throw JSONParseError(.duplicateKey, at: keyOffset) }
            }
            skipWhitespace()
            guard try peek() == ReferenceASCII.colon else { throw JSONParseError(.unexpectedByte, at: index) }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            members.append((key: key, value: value))
            skipWhitespace()
            switch try peek() {
            case ReferenceASCII.comma: index += 1
            case ReferenceASCII.closeBrace:
                index += 1
                return .object(JSONObject(members))
            default: throw JSONParseError(.unexpectedByte, at: index)
            }
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw JSONParseError(.tooDeep, at: index) }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if try peek() == ReferenceASCII.closeBracket {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            switch try peek() {
            case ReferenceASCII.comma: index += 1
            case ReferenceASCII.closeBracket:
                index += 1
                return .array(elements)
            default: throw JSONParseError(.unexpectedByte, at: index)
            }
        }
    }

    /// Parses a string body; `index` is just after the opening quote.
    mutating func parseString() throws(JSONParseError) -> String {
        let start = index
        var position = start
        // Fast path: no escapes, validate UTF-8 in place and decode once.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == ReferenceASCII.quote {
                index = position + 1
                return String(decoding: bytes[start..<position], as: UTF8.self)
            }
            if byte == ReferenceASCII.backslash { break }
            if byte < 0x20 { throw JSONParseError(.controlCharacter, at: position) }
            position = byte < 0x80 ? position + 1 : try validatedMultibyteEnd(at: position)
        }
        guard position < bytes.count else { throw JSONParseError(.unexpectedEnd, at: position) }
        var buffer = Array(bytes[start..<position])
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case ReferenceASCII.quote:
                index = position + 1
                return String(decoding: buffer, as: UTF8.self)
            case ReferenceASCII.backslash:
                position += 1
                guard position < bytes.count else { throw JSONParseError(.unexpectedEnd, at: position) }
                let escape = bytes[position]
                position += 1
                switch escape {
                case ReferenceASCII.quote, ReferenceASCII.backslash, ReferenceASCII.slash: buffer.append(escape)
                case UInt8(ascii: "b"): buffer.append(0x08)
                case UInt8(ascii: "f"): buffer.append(0x0C)
                case UInt8(ascii: "n"): buffer.append(0x0A)
                case UInt8(ascii: "r"): buffer.append(0x0D)
                case UInt8(ascii: "t"): buffer.append(0x09)
                case UInt8(ascii: "u"):
                    let escapeStart = position - 2
                    let unit = try hex4(at: position)
                    position += 4
                    var scalarValue = UInt32(unit)
                    if unit >= 0xD800 && unit <= 0xDBFF {
                        guard position + 1 < bytes.count, bytes[position] == ReferenceASCII.backslash,
                              bytes[position + 1] == UInt8(ascii: "u") else {
                            throw JSONParseError(.loneSurrogate, at: escapeStart)
                        }
                        let low = try hex4(at: position + 2)
                        guard low >= 0xDC00 && low <= 0xDFFF else { throw JSONParseError(.loneSurrogate, at: escapeStart) }
                        position += 6
                        scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                    } else if unit >= 0xDC00 && unit <= 0xDFFF {
                        throw JSONParseError(.loneSurrogate, at: escapeStart)
                    }
                    guard let scalar = Unicode.Scalar(scalarValue) else { throw JSONParseError(.invalidEscape, at: escapeStart) }
                    buffer.append(contentsOf: scalar.utf8)
                default:
                    throw JSONParseError(.invalidEscape, at: position - 2)
                }
            default:
                if byte < 0x20 { throw JSONParseError(.controlCharacter, at: position) }
                if byte < 0x80 {
                    buffer.append(byte)
                    position += 1
                } else {
                    let end = try validatedMultibyteEnd(at: position)
                    buffer.append(contentsOf: bytes[position..<end])
                    position = end
                }
            }
        }
        throw JSONParseError(.unexpectedEnd, at: position)
    }

    func hex4(at position: Int) throws(JSONParseError) -> UInt16 {
        var value: UInt16 = 0
        for offset in 0..<4 {
            guard position + offset < bytes.count else { throw JSONParseError(.unexpectedEnd, at: bytes.count) }
            let byte = bytes[position + offset]
            let digit: UInt8
            switch byte {
            case ReferenceASCII.zero...ReferenceASCII.nine: digit = byte - ReferenceASCII.zero
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONParseError(.invalidEscape, at: position + offset)
            }
            value = value << 4 | UInt16(digit)
        }
        return value
    }

    /// Validates one multi-byte UTF-8 sequence starting at `position` (RFC 3629 §4) and
    /// returns the index after it.
    func validatedMultibyteEnd(at position: Int) throws(JSONParseError) -> Int {
        let lead = bytes[position]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; secondRange = 0x80...0x9F
        case 0xF0: length = 4; secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondRange = 0x80...0x8F
        default: throw JSONParseError(.invalidUTF8, at: position)
        }
        guard position + length <= bytes.count else { throw JSONParseError(.invalidUTF8, at: position) }
        guard secondRange.contains(bytes[position + 1]) else { throw JSONParseError(.invalidUTF8, at: position) }
        var offset = 2
        while offset < length {
            guard bytes[position + offset] & 0xC0 == 0x80 else { throw JSONParseError(.invalidUTF8, at: position) }
            offset += 1
        }
        return position + length
    }

    mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let start = index
        var isInteger = true
        if bytes[index] == ReferenceASCII.minus { index += 1 }
        guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, at: index) }
        if bytes[index] == ReferenceASCII.zero {
            index += 1
        } else if bytes[index] > ReferenceASCII.zero && bytes[index] <= ReferenceASCII.nine {
            skipDigits()
        } else {
            throw JSONParseError(.invalidNumber, at: index)
        }
        if index < bytes.count && bytes[index] == ReferenceASCII.dot {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw JSONParseError(.invalidNumber, at: index) }
            skipDigits()
        }
        if index < bytes.count && (bytes[index] == ReferenceASCII.lowerE || bytes[index] == ReferenceASCII.upperE) {
            isInteger = false
            index += 1
            if index < bytes.count && (bytes[index] == ReferenceASCII.plus || bytes[index] == ReferenceASCII.minus) { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw JSONParseError(.invalidNumber, at: index) }
            skipDigits()
        }
        let literal = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let value = Double(literal), value.isFinite else { throw JSONParseError(.numberOutOfRange, at: start) }
        return JSONNumber(double: value, isIntegerLiteral: isInteger, literal: literal)
    }

    func isDigit(_ byte: UInt8) -> Bool { byte >= ReferenceASCII.zero && byte <= ReferenceASCII.nine }

    mutating func skipDigits() {
        while index < bytes.count && isDigit(bytes[index]) { index += 1 }
    }
}
