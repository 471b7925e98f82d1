/// Why a JSON document was refused, and where (byte offset into the input).
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable {
        case unexpectedEnd = "unexpected end of input"
        case unexpectedByte = "unexpected byte"
        case invalidUTF8 = "invalid UTF-8"
        case controlCharacter = "unescaped control character in string"
        case invalidEscape = "invalid escape sequence"
        case loneSurrogate = "unpaired UTF-16 surrogate in \\u escape"
        case invalidNumber = "invalid number"
        case numberOutOfRange = "number out of range"
        case duplicateKey = "duplicate object key"
        case tooDeep = "nesting too deep"
        case tooLarge = "input too large"
        case trailingData = "data after the JSON value"
    }

    public var kind: Kind
    /// Offset in bytes from the start of the input.
    public var offset: Int

    public init(_ kind: Kind, at offset: Int) { self.kind = kind; self.offset = offset }

    public var description: String { "\(kind.rawValue) at byte \(offset)" }
}

/// A strict RFC 8259 parser working on UTF-8 bytes.
///
/// Strict means: one value with optional whitespace around it, no comments, no trailing commas,
/// no leading zeros, no BOM, no lone surrogates, invalid UTF-8 refused (RFC 3629 §4: no overlong
/// forms, no encoded surrogates, nothing above U+10FFFF), and duplicate object keys refused
/// (RFC 8259 §4 leaves them undefined, and two readers disagreeing on a job is worse than a DLQ).
/// Numbers whose value does not fit a finite `Double` are refused. It never traps on input: depth
/// and size are bounded by parameters.
public enum JSONParser {
    /// Default maximum nesting of arrays and objects: 64.
    public static let defaultMaxDepth = 64
    /// Default maximum input size: 8 MiB.
    public static let defaultMaxBytes = 8 << 20

    public static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth,
                             maxBytes: Int = defaultMaxBytes) throws(JSONParseError) -> JSONValue {
        try parseDocument(bytes, rangedKey: nil, maxDepth: maxDepth, maxBytes: maxBytes).value
    }

    /// Parses `bytes` as ``parse(_:maxDepth:maxBytes:)`` does and, when the document is an
    /// object whose member `key` is an array, also returns the byte range of each of that
    /// array's elements (in order, without the whitespace around them; empty otherwise). A fan-out
    /// job keeps its recipients as such ranges of the message instead of their parsed trees.
    public static func parse(_ bytes: [UInt8], elementRangesOf key: String, maxDepth: Int = defaultMaxDepth,
                             maxBytes: Int = defaultMaxBytes) throws(JSONParseError) -> (value: JSONValue, elementRanges: [Range<Int>]) {
        try parseDocument(bytes, rangedKey: key, maxDepth: maxDepth, maxBytes: maxBytes)
    }

    /// One document, whitespace around it allowed, nothing after it.
    private static func parseDocument(_ bytes: [UInt8], rangedKey: String?, maxDepth: Int,
                                      maxBytes: Int) throws(JSONParseError) -> (value: JSONValue, elementRanges: [Range<Int>]) {
        guard bytes.count <= maxBytes else { throw JSONParseError(.tooLarge, at: maxBytes) }
        var reader = JSONReader(bytes: bytes, maxDepth: maxDepth)
        reader.rangedKey = rangedKey
        reader.skipWhitespace()
        let value = try reader.parseValue(depth: 0)
        reader.skipWhitespace()
        guard reader.index == bytes.count else { throw JSONParseError(.trailingData, at: reader.index) }
        return (value, reader.elementRanges)
    }

    /// Parses a string's UTF-8 (convenience for tests and CLI input).
    public static func parse(_ text: String, maxDepth: Int = defaultMaxDepth,
                             maxBytes: Int = defaultMaxBytes) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8), maxDepth: maxDepth, maxBytes: maxBytes)
    }
}

private enum ASCII {
    static let quote: UInt8 = 0x22, backslash: UInt8 = 0x5C, slash: UInt8 = 0x2F
    static let comma: UInt8 = 0x2C, colon: UInt8 = 0x3A
    static let openBrace: UInt8 = 0x7B, closeBrace: UInt8 = 0x7D
    static let openBracket: UInt8 = 0x5B, closeBracket: UInt8 = 0x5D
    static let minus: UInt8 = 0x2D, plus: UInt8 = 0x2B, dot: UInt8 = 0x2E
    static let zero: UInt8 = 0x30, nine: UInt8 = 0x39
    static let lowerE: UInt8 = 0x65, upperE: UInt8 = 0x45
}

private struct JSONReader {
    let bytes: [UInt8]
    let maxDepth: Int
    var index = 0
    /// Per nesting depth, the member count of the last object completed there (0: none yet).
    /// A job's recipients (and their `properties`) have about the same members each, so the
    /// next object at that depth reserves exactly that many: no growth 1, 2, 4, 8, and no
    /// 8-member reservation held by a 2-member object for the job's life.
    private var objectSizeHints: [Int]
    /// The member of the root object whose array elements' byte ranges are recorded in
    /// ``elementRanges`` (``JSONParser/parse(_:elementRangesOf:maxDepth:maxBytes:)``).
    var rangedKey: String?
    var elementRanges: [Range<Int>] = []

    init(bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        objectSizeHints = [Int](repeating: 0, count: max(0, min(maxDepth, 1024)) + 1)
    }

    mutating func skipWhitespace() { index = whitespaceEnd(from: index) }

    /// The first index from `position` on that is not JSON whitespace.
    func whitespaceEnd(from start: Int) -> Int {
        let span = bytes.span
        var position = start
        while position < span.count {
            let byte = span[position]
            guard byte <= 0x20, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { break }
            position += 1
        }
        return position
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
        case ASCII.openBrace: return try parseObject(depth: depth + 1)
        case ASCII.openBracket: return try parseArray(depth: depth + 1)
        case ASCII.quote:
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
        case ASCII.minus, ASCII.zero...ASCII.nine:
            return .number(try parseNumber())
        default:
            throw JSONParseError(.unexpectedByte, at: index)
        }
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw JSONParseError(.tooDeep, at: index) }
        index += 1
        skipWhitespace()
        if try peek() == ASCII.closeBrace {
            index += 1
            return .object(JSONObject([]))
        }
        var members: [(key: String, value: JSONValue)] = []
        // Room for the members at once: growing 1, 2, 4, 8 was four allocations per recipient.
        let hint = depth < objectSizeHints.count ? objectSizeHints[depth] : 0
        members.reserveCapacity(hint > 0 ? hint : 8)
        var seen: Set<String>?
        while true {
            skipWhitespace()
            let keyOffset = index
            guard try peek() == ASCII.quote else { throw JSONParseError(.unexpectedByte, at: index) }
            index += 1
            let key = try parseString()
            if members.count < 16 {
                let length = key.utf8.count  // a length differs far more cheaply than a string
                for member in members where member.key.utf8.count == length && member.key == key {
                    throw JSONParseError(.duplicateKey, at: keyOffset)
                }
            } else {
                if seen == nil { seen = Set(members.map(\.key)) }
                if seen?.insert(key).inserted == false { throw JSONParseError(.duplicateKey, at: keyOffset) }
            }
            skipWhitespace()
            guard try peek() == ASCII.colon else { throw JSONParseError(.unexpectedByte, at: index) }
            index += 1
            skipWhitespace()
            let value: JSONValue
            if depth == 1, let rangedKey, key == rangedKey, try peek() == ASCII.openBracket {
                value = try parseArray(depth: depth + 1, recordingRanges: true)
            } else {
                value = try parseValue(depth: depth)
            }
            members.append((key: key, value: value))
            skipWhitespace()
            switch try peek() {
            case ASCII.comma: index += 1
            case ASCII.closeBrace:
                index += 1
                if depth < objectSizeHints.count { objectSizeHints[depth] = members.count }
                return .object(JSONObject(members))
            default: throw JSONParseError(.unexpectedByte, at: index)
            }
        }
    }

    /// `recordingRanges`: each element's byte range goes to ``elementRanges`` (the root's
    /// ``rangedKey`` member; duplicate keys are refused, so there is at most one such array).
    mutating func parseArray(depth: Int, recordingRanges: Bool = false) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw JSONParseError(.tooDeep, at: index) }
        index += 1
        skipWhitespace()
        if try peek() == ASCII.closeBracket {
            index += 1
            return .array([])
        }
        var elements: [JSONValue] = []
        while true {
            skipWhitespace()
            let start = index
            let element = try parseValue(depth: depth)
            if recordingRanges { elementRanges.append(start..<index) }
            elements.append(element)
            skipWhitespace()
            switch try peek() {
            case ASCII.comma: index += 1
            case ASCII.closeBracket:
                index += 1
                return .array(elements)
            default: throw JSONParseError(.unexpectedByte, at: index)
            }
        }
    }

    /// Parses a string body; `index` is just after the opening quote. The common case — ASCII,
    /// no escape, no control character — is one scan; anything else is read again from the
    /// start by ``parseCheckedString()``, which decides every error exactly as it always has.
    mutating func parseString() throws(JSONParseError) -> String {
        let start = index
        guard let end = plainASCIIEnd(from: start) else { return try parseCheckedString() }
        index = end + 1
        return makeASCIIString(start, end)
    }

    /// The index of the closing quote when the string from `start` on is ASCII with no escape
    /// and no control character, else nil. Eight bytes at a time while a word holds none of the
    /// bytes that stop the scan (below 0x20, `"`, `\`, 0x80 and above: each test exact for the
    /// word as a whole, as in `haszero`/`hasless`); in the word that holds one, the lowest
    /// flagged byte is it. The last bytes of the document, fewer than eight, go one by one.
    /// A token or id in a job is 20–150 such bytes.
    func plainASCIIEnd(from start: Int) -> Int? {
        let span = bytes.span
        let raw = span.bytes
        var position = start
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        while position &+ 8 <= span.count {
            let word = raw.unsafeLoadUnaligned(fromByteOffset: position, as: UInt64.self)
            let quote = word ^ (ones &* UInt64(ASCII.quote)), backslash = word ^ (ones &* UInt64(ASCII.backslash))
            let stops = (((word &- ones &* 0x20) & ~word) | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | word) & highs
            if stops != 0 {
                #if _endian(little)
                // The lowest flagged byte is the first stop byte: a borrow only ever flags
                // bytes above (later than) one that is truly flagged.
                let first = position &+ stops.trailingZeroBitCount &>> 3
                return span[first] == ASCII.quote ? first : nil
                #else
                break
                #endif
            }
            position &+= 8
        }
        while position < span.count {
            let byte = span[position]
            // One comparison for "printable ASCII" (0x20...0x7F; below 0x20 wraps around).
            if byte &- 0x20 < 0x60 && byte != ASCII.quote && byte != ASCII.backslash {
                position += 1
                continue
            }
            return byte == ASCII.quote ? position : nil
        }
        return nil
    }

    /// The string of the bytes `start..<end`, known to be ASCII.
    func makeASCIIString(_ start: Int, _ end: Int) -> String {
        String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// Parses a string body with every check; `index` is just after the opening quote.
    mutating func parseCheckedString() throws(JSONParseError) -> String {
        let start = index
        var position = start
        // Fast path: no escapes, validate UTF-8 in place and decode once.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == ASCII.quote {
                index = position + 1
                return String(decoding: bytes[start..<position], as: UTF8.self)
            }
            if byte == ASCII.backslash { break }
            if byte < 0x20 { throw JSONParseError(.controlCharacter, at: position) }
            position = byte < 0x80 ? position + 1 : try validatedMultibyteEnd(at: position)
        }
        guard position < bytes.count else { throw JSONParseError(.unexpectedEnd, at: position) }
        var buffer = Array(bytes[start..<position])
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case ASCII.quote:
                index = position + 1
                return String(decoding: buffer, as: UTF8.self)
            case ASCII.backslash:
                position += 1
                guard position < bytes.count else { throw JSONParseError(.unexpectedEnd, at: position) }
                let escape = bytes[position]
                position += 1
                switch escape {
                case ASCII.quote, ASCII.backslash, ASCII.slash: buffer.append(escape)
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
                        guard position + 1 < bytes.count, bytes[position] == ASCII.backslash,
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
            case ASCII.zero...ASCII.nine: digit = byte - ASCII.zero
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
        if bytes[index] == ASCII.minus { index += 1 }
        guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, at: index) }
        if bytes[index] == ASCII.zero {
            index += 1
        } else if bytes[index] > ASCII.zero && bytes[index] <= ASCII.nine {
            skipDigits()
        } else {
            throw JSONParseError(.invalidNumber, at: index)
        }
        if index < bytes.count && bytes[index] == ASCII.dot {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw JSONParseError(.invalidNumber, at: index) }
            skipDigits()
        }
        if index < bytes.count && (bytes[index] == ASCII.lowerE || bytes[index] == ASCII.upperE) {
            isInteger = false
            index += 1
            if index < bytes.count && (bytes[index] == ASCII.plus || bytes[index] == ASCII.minus) { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw JSONParseError(.invalidNumber, at: index) }
            skipDigits()
        }
        let literal = makeASCIIString(start, index)
        if isInteger, let value = smallIntegerValue(start, index) {
            return JSONNumber(double: value, isIntegerLiteral: true, literal: literal)
        }
        guard let value = Double(literal), value.isFinite else { throw JSONParseError(.numberOutOfRange, at: start) }
        return JSONNumber(double: value, isIntegerLiteral: isInteger, literal: literal)
    }

    /// The value of an integer literal of at most 15 digits (`-?[0-9]+`, already checked),
    /// computed exactly: such an integer is a `Double` exactly, so this is what `Double(literal)`
    /// returns (`-0` included), without `strtod`.
    func smallIntegerValue(_ start: Int, _ end: Int) -> Double? {
        let span = bytes.span
        let negative = span[start] == ASCII.minus
        var position = negative ? start + 1 : start
        guard end - position <= 15 else { return nil }
        var magnitude = 0
        while position < end {
            magnitude = magnitude &* 10 &+ Int(span[position] &- ASCII.zero)
            position += 1
        }
        return negative ? -Double(magnitude) : Double(magnitude)
    }

    func isDigit(_ byte: UInt8) -> Bool { byte >= ASCII.zero && byte <= ASCII.nine }

    mutating func skipDigits() {
        while index < bytes.count && isDigit(bytes[index]) { index += 1 }
    }
}
